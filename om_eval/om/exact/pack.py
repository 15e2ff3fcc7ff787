"""A release's own prompts as om-eval reads them: :func:`load_pack` and the :class:`PromptPack` it returns.

Each method of :class:`PromptPack` mirrors one of the package's builders and returns exactly its text for the same
inputs. What a builder formats itself (messages, thread blocks) is passed in already formatted, as om-eval's engine
formats it (:mod:`om_eval.om.observer`, :mod:`om_eval.om.history_lines`); everything else, every word around the
inputs, comes from the pack.

The first :func:`load_pack` of a release obtains and checks the package, renders the pack under Node and keeps it in
the cache (:mod:`om_eval.om.exact.cache`); every later one reads the cached pack, with neither Node nor network.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from om_eval.common.files import held_lock
from om_eval.om.exact.cache import lock_path, pack_digest, pack_path, pack_store, read_pack, write_pack
from om_eval.om.exact.errors import NodeMissingError, PackError
from om_eval.om.exact.fetch import obtain_package
from om_eval.om.exact.node import BuilderProcess, find_node
from om_eval.om.exact.pins import Builders, Release, release
from om_eval.om.exact.render import HINTS, PACK_FORMAT, PART_BREAK, PRIOR_KINDS, render_pack
from om_eval.om.exact.template import Item, ListSlot, Slot, Template, Values, fill, from_json
from om_eval.om.exact.transforms import REFLECTION_VIEWS

#: How every release wraps the continuation hint in its user message (code, not prompt text; the integration
#: tests check the bundle still writes it so).
REMINDER_OPEN, REMINDER_CLOSE = "<system-reminder>", "</system-reminder>"


@dataclass(frozen=True)
class Entry:
    """One shape of one builder: its template, or (the actor's context) one template per message."""

    shape: Mapping[str, Any]
    parts: Template = ()
    messages: tuple[Template, ...] = ()
    observation_messages: tuple[int, ...] = ()
    """Messages left out when there are no observations (list layouts)."""


def shape_key(shape: Mapping[str, Any]) -> str:
    """A shape as a lookup key (its canonical JSON)."""
    return json.dumps(shape, sort_keys=True, separators=(",", ":"))


def _entry(data: Mapping[str, Any]) -> Entry:
    return Entry(
        shape=data["shape"],
        parts=from_json(data.get("parts", [])),
        messages=tuple(from_json(m) for m in data.get("messages", [])),
        observation_messages=tuple(data.get("observation_messages", [])),
    )


def _list_slot(template: Template, name: str) -> ListSlot:
    return next(p for p in template if isinstance(p, ListSlot) and p.name == name)


def _present(items: Mapping[str, str], slot: ListSlot) -> list[Item]:
    """The items a builder shows: those of the kinds it has in this shape, non-empty, in its order."""
    return [(kind, {"value": items[kind]}) for kind in slot.order if items.get(kind)]


def _parts(text: str) -> list[str]:
    """A history message's text parts (the attachments a builder adds after a message's text are not modelled)."""
    return text.split(PART_BREAK)


def _check_kinds(items: Mapping[str, str], known: Sequence[str]) -> None:
    unknown = sorted(set(items) - set(known))
    if unknown:
        raise ValueError(f"unknown prior item(s) {unknown}; known: {list(known)}")


@dataclass(frozen=True)
class PromptPack:
    """The prompts of one ``@mastra/memory`` release and prompt variant.

    Attributes:
        version: the release, e.g. ``1.3.0``.
        integrity: its tarball's pinned SRI hash.
        variant: the prompt variant (``current``; 1.3.0 also ``legacy`` and ``condensed``).
        builders: what the release's builders take (:class:`~om_eval.om.exact.pins.Builders`).
        texts: the fixed texts (``context_prompt``, ``context_instructions``, ``continuation_hint``,
            ``compression_guidance/<level>``, 1.10's ``retrieval_instructions``).
        digest: the pack's hash (:func:`~om_eval.om.exact.cache.pack_digest`), for run records and cache keys.
    """

    version: str
    integrity: str
    variant: str
    builders: Builders
    texts: Mapping[str, str]
    templates: Mapping[str, Mapping[str, Entry]]
    """Builder -> shape key (:func:`shape_key`) -> its template."""
    digest: str

    @property
    def identity(self) -> str:
        """What a run records as its prompt: release, variant and pack hash."""
        return f"mastra@{self.version}/{self.variant}#{self.digest[:16]}"

    def entry(self, builder: str, **shape: Any) -> Entry:
        """The template of ``builder`` for ``shape``; a shape the release has no rendering of is an error."""
        found = self.templates.get(builder, {}).get(shape_key(shape))
        if found is not None:
            return found
        raise PackError(f"@mastra/memory {self.version} has no {builder} rendered for {shape}")

    def _hints(self, hints: Sequence[str] | None) -> dict[str, Any]:
        if not self.builders.hint_extractors:
            if hints is not None:
                raise ValueError(f"@mastra/memory {self.version} has no hint extractors")
            return {}
        chosen = list(HINTS) if hints is None else [h for h in HINTS if h in hints]
        return {"hints": chosen}

    def _title(self, thread_title: bool) -> dict[str, Any]:
        if self.builders.thread_title:
            return {"thread_title": thread_title}
        if thread_title:
            raise ValueError(f"@mastra/memory {self.version} cannot ask for a thread title")
        return {}

    def _instruction(self, instruction: str | None) -> tuple[dict[str, Any], dict[str, str]]:
        if not self.builders.custom_instructions:
            if instruction:
                raise ValueError(f"@mastra/memory {self.version} takes no custom instruction")
            return {}, {}
        return {"instruction": bool(instruction)}, ({"instruction": instruction} if instruction else {})

    # -- system prompts ------------------------------------------------------------------------------------------

    def observer_system_prompt(self, *, multi_thread: bool, thread_title: bool = False,
                               instruction: str | None = None, hints: Sequence[str] | None = None) -> str:
        """``buildObserverSystemPrompt``; ``hints`` (1.27+) the hint sections asked for, after a skip."""
        flag, values = self._instruction(instruction)
        shape = {"multi_thread": multi_thread, **self._title(thread_title), **flag, **self._hints(hints)}
        return fill(self.entry("observer_system", **shape).parts, values)

    def reflector_system_prompt(self, *, instruction: str | None = None, hints: Sequence[str] | None = None) -> str:
        """``buildReflectorSystemPrompt``."""
        flag, values = self._instruction(instruction)
        return fill(self.entry("reflector_system", **flag, **self._hints(hints)).parts, values)

    # -- the Observer's request ----------------------------------------------------------------------------------

    def observer_prompt(self, previous_observations: str | None, history: str, *, skip_hints: bool = False) -> str:
        """1.1-1.3's one-message request (``buildObserverPrompt``); ``history`` as ``formatMessagesForObserver``
        gives it."""
        values: dict[str, Any] = {"history": history}
        if previous_observations:
            values["previous_observations"] = previous_observations
        entry = self.entry("observer_prompt", previous=bool(previous_observations), skip_hints=skip_hints)
        return fill(entry.parts, values)

    def observer_prompt_multi(self, previous_observations: str | None, threads: Sequence[tuple[str, str]],
                              thread_count: int | None = None) -> str:
        """1.1-1.3's multi-thread request: ``threads`` as (id shown, formatted messages), empty ones left out;
        ``thread_count`` the count the prompt states (default: the threads given)."""
        shown = [(thread_id, text) for thread_id, text in threads if text]
        values: dict[str, Any] = {
            "threads": [("thread", {"thread_id": i, "messages": text}) for i, text in shown],
            "thread_count": str(len(threads) if thread_count is None else thread_count),
        }
        if previous_observations:
            values["previous_observations"] = previous_observations
        return fill(self.entry("observer_prompt_multi", previous=bool(previous_observations)).parts, values)

    def observer_task(self, previous_observations: str | None, *, prior: Mapping[str, str] | None = None,
                      truncated: bool = False, thread_title: bool = False, skip_hints: bool = False,
                      hints: Sequence[str] | None = None) -> str:
        """1.9+'s task message (``buildObserverTaskPrompt``).

        ``prior``: kind -> value, kinds from :data:`~om_eval.om.exact.render.PRIOR_KINDS` (``current-task``,
        ``suggested-response``, ``thread-title``, and 1.27+'s ``extracted:<slug>`` blocks); empty values and kinds
        this shape does not show are left out, as the builder leaves them out.
        """
        prior = dict(prior or {})
        _check_kinds(prior, PRIOR_KINDS)
        shape: dict[str, Any] = {"previous": bool(previous_observations), "truncated": truncated,
                                 **self._title(thread_title), "skip_hints": skip_hints, **self._hints(hints)}
        with_list = self.entry("observer_task", **shape, prior=True)
        items = _present(prior, _list_slot(with_list.parts, "prior"))
        values: dict[str, Any] = {"prior": items}
        if previous_observations:
            values["previous_observations"] = previous_observations
        entry = with_list if items else self.entry("observer_task", **shape, prior=False)
        return fill(entry.parts, values)

    def observer_task_multi(self, previous_observations: str | None, threads: Sequence[tuple[str, Mapping[str, str]]],
                            *, truncated: bool = False, thread_title: bool = False,
                            hints: Sequence[str] | None = None) -> str:
        """1.9+'s multi-thread task message: ``threads`` as (id shown, prior kind -> value) in thread order."""
        shape: dict[str, Any] = {"previous": bool(previous_observations), "truncated": truncated,
                                 **self._title(thread_title), **self._hints(hints)}
        with_list = self.entry("observer_task_multi", **shape, prior=True)
        fields = _list_slot(_list_slot(with_list.parts, "threads").items["thread"], "fields")
        shown: list[Item] = []
        for thread_id, prior in threads:
            _check_kinds(prior, PRIOR_KINDS)
            items = _present(prior, fields)
            if items:
                shown.append(("thread", {"thread_id": thread_id, "fields": items}))
        values: dict[str, Any] = {"threads": shown}
        if previous_observations:
            values["previous_observations"] = previous_observations
        entry = with_list if shown else self.entry("observer_task_multi", **shape, prior=False)
        return fill(entry.parts, values)

    def observer_history(self, messages: Sequence[str]) -> list[str]:
        """1.9+'s history message as its text parts; ``messages`` each message's formatted text, in order (empty
        ones are left out, as the builder leaves out a message with nothing to show)."""
        values: Values = {"messages": [("message", {"text": text}) for text in messages if text]}
        return _parts(fill(self.entry("observer_history").parts, values))

    def observer_history_multi(self, threads: Sequence[tuple[str, Sequence[str]]],
                               thread_count: int | None = None) -> list[str]:
        """1.9+'s multi-thread history message as its text parts; ``threads`` as (id shown, formatted messages)."""
        shown: list[Item] = []
        for thread_id, messages in threads:
            texts: list[Item] = [("message", {"text": text}) for text in messages if text]
            if texts:
                shown.append(("thread", {"thread_id": thread_id, "messages": texts}))
        values: Values = {"threads": shown,
                          "thread_count": str(len(threads) if thread_count is None else thread_count)}
        return _parts(fill(self.entry("observer_history_multi").parts, values))

    # -- the Reflector's request ---------------------------------------------------------------------------------

    def reflector_prompt(self, observations: str, *, level: int = 0, manual_prompt: str | None = None,
                         skip_hints: bool = False, hints: Sequence[str] | None = None,
                         prior: Mapping[str, str] | None = None) -> str:
        """``buildReflectorPrompt`` at compression ``level``; ``prior`` (1.27+) slug -> prior value. The
        observations are shown as the release shows them (anchor ids in 1.9-1.10; groups stripped later)."""
        shape: dict[str, Any] = {"manual": bool(manual_prompt), "level": level, "skip_hints": skip_hints}
        values: dict[str, Any] = {"observations": observations}
        if manual_prompt:
            values["manual_prompt"] = manual_prompt
        entry: Entry | None = None
        if self.builders.hint_extractors:
            shape.update(self._hints(hints))
            prior = dict(prior or {})
            _check_kinds(prior, HINTS)
            if shape["hints"]:
                with_list = self.entry("reflector_prompt", **shape, prior=True)
                items = _present(prior, _list_slot(with_list.parts, "prior"))
                if items:
                    entry, values["prior"] = with_list, items
            shape["prior"] = False
        elif prior:
            raise ValueError(f"@mastra/memory {self.version} lists no prior values to the Reflector")
        entry = entry or self.entry("reflector_prompt", **shape)
        return fill(entry.parts, values, REFLECTION_VIEWS)

    def compression_guidance(self, level: int) -> str:
        """``COMPRESSION_GUIDANCE[level]`` (empty at level 0): also the text a retry at that level adds."""
        try:
            return self.texts[f"compression_guidance/{level}"]
        except KeyError:
            raise ValueError(f"@mastra/memory {self.version} has compression levels "
                             f"{list(self.builders.compression_levels)}") from None

    # -- the actor -----------------------------------------------------------------------------------------------

    def actor_context(self, observations: str | Sequence[str], *, current_task: str | None = None,
                      suggested_response: str | None = None, other_conversations: str | None = None,
                      retrieval: bool | Mapping[str, Any] | None = None) -> list[str]:
        """``formatObservationsForContext``: the system texts the actor is given.

        ``observations``: the optimised, dated text (one-text releases, 1.1-1.3) or its chunks (1.9+, one message
        each). ``other_conversations``: the blocks of other threads. ``retrieval``: 1.10 ``True``; 1.2x+
        ``{"scope": "thread"|"resource", "search": bool}``.
        """
        retrieval_shape: Any = None
        if retrieval:
            retrieval_shape = True if retrieval is True else {"scope": retrieval["scope"],
                                                               "search": bool(retrieval["search"])}
        entry = self.entry("actor_context", other_conversations=bool(other_conversations),
                           current_task=bool(current_task), suggested_response=bool(suggested_response),
                           retrieval=retrieval_shape)
        values = {name: value for name, value in (("other_conversations", other_conversations),
                                                  ("current_task", current_task),
                                                  ("suggested_response", suggested_response)) if value}
        if self.builders.actor_messages == "single":
            if not isinstance(observations, str):
                raise TypeError(f"@mastra/memory {self.version} shows observations as one text")
            return [fill(template, {**values, "observations": observations}) for template in entry.messages]
        if isinstance(observations, str):
            raise TypeError(f"@mastra/memory {self.version} shows observations as chunks, one per message")
        out: list[str] = []
        for index, template in enumerate(entry.messages):
            if not observations and index in entry.observation_messages:
                continue
            if template == (Slot("observations"),):
                out += list(observations)
            else:
                out.append(fill(template, values))
        return out

    def continuation_reminder(self) -> str:
        """The text of the user message that follows the memory (``<system-reminder>`` around the hint)."""
        return REMINDER_OPEN + self.texts["continuation_hint"] + REMINDER_CLOSE


def pack_from_json(data: Mapping[str, Any], variant: str = "current") -> PromptPack:
    """The :class:`PromptPack` of ``variant`` in a pack's JSON."""
    chosen = release(data["version"])
    if variant not in data["variants"]:
        raise PackError(f"@mastra/memory {chosen.version} has no prompt variant {variant!r} "
                        f"(it has {', '.join(data['variants'])})")
    rendered = data["variants"][variant]
    templates = {name: {shape_key(e["shape"]): _entry(e) for e in entries}
                 for name, entries in rendered["templates"].items()}
    return PromptPack(chosen.version, chosen.integrity, variant, chosen.builders, dict(rendered["texts"]), templates,
                      pack_digest(dict(data)))


def render_and_store(chosen: Release, source: str | os.PathLike[str] | None,
                     cache_dir: str | os.PathLike[str] | None) -> dict[str, Any]:
    """Obtain, check and render ``chosen`` (Node), store the pack, and return its JSON."""
    store = pack_store(cache_dir)
    store.mkdir(parents=True, exist_ok=True)
    path = pack_path(store, chosen)
    with held_lock(lock_path(store, chosen)):
        cached = read_pack(path, chosen, PACK_FORMAT)
        if cached is not None:
            return cached
        find_node()  # before any download: without Node the pack cannot be rendered anyway
        package = obtain_package(chosen, store, source)
        with BuilderProcess(package, chosen.variants) as builders:
            pack = render_pack(builders, chosen)
        digest = pack_digest(pack)
        if chosen.pack_sha256 is not None and digest != chosen.pack_sha256:
            raise PackError(
                f"the prompts rendered from @mastra/memory {chosen.version} hash to {digest}, not to the pinned "
                f"{chosen.pack_sha256}: om-eval's renderer or Node ({builders.node}) changed what it produces"
            )
        write_pack(path, pack)
        return pack


def load_pack(version: str, source: str | os.PathLike[str] | None = None,
              cache_dir: str | os.PathLike[str] | None = None, variant: str = "current") -> PromptPack:
    """The prompts of ``@mastra/memory`` ``version``, from the cache, else rendered once (Node) and cached.

    Args:
        version: a pinned release (:data:`~om_eval.om.exact.pins.RELEASES`).
        source: a tarball or unpacked folder to use instead of the registry (checked against the pins).
        cache_dir: the cache base; default ``$OM_EVAL_CACHE_DIR``, else the XDG cache.
        variant: the prompt variant (1.3.0: ``current``, ``legacy``, ``condensed``).

    Raises:
        PackError: the package could not be had, checked, or rendered; its subclasses say which
            (:class:`~om_eval.om.exact.errors.IntegrityError`, :class:`~om_eval.om.exact.errors.NodeMissingError`).
    """
    chosen = release(version)
    cached = read_pack(pack_path(pack_store(cache_dir), chosen), chosen, PACK_FORMAT)
    if cached is None:
        try:
            cached = render_and_store(chosen, source, cache_dir)
        except NodeMissingError as error:
            raise NodeMissingError(f"{error} (for @mastra/memory {version})") from None
    return pack_from_json(cached, variant)
