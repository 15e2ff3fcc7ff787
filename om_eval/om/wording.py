"""Whose words the models read: om-eval's paraphrase, or a Mastra release's own (``prompt_variant="mastra_exact"``).

The engine asks for the same things whatever the words: the Observer's system prompt and request for a batch, the
Reflector's at a compression level, the memory messages of the actor. A :class:`Wording` answers them.
:data:`PARAPHRASE` renders om-eval's own texts (``prompts/*.toml``); :class:`MastraWording` fills the templates of a
:class:`~om_eval.om.exact.PromptPack`, the text ``@mastra/memory``'s own builders give for the same inputs. The engine
takes one when it is built (``ObservationalMemory(config, prompts=load_pack("1.10.0"))``) and never asks which.

Why a release's prompts presuppose its engine: each builder is filled with what that release's engine hands it (one
user message or a task and a history message, 1.10's message blocks or 1.15+'s lines, hints as 1.27's extractors,
observations as one text or as chunks). So a pack is used only with the engine settings of its release
(:func:`release_conflicts`, checked when the engine is built); :func:`release_for` names the release an engine
config follows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from om_eval.om.config import ConfigError, OMConfig
from om_eval.om.context import (
    ContextInputs,
    actor_memory_messages,
    dated_observations,
    format_other_conversations,
)
from om_eval.om.exact.pack import PromptPack
from om_eval.om.exact.pins import release
from om_eval.om.history_lines import history_line_sections
from om_eval.om.model import ChatMessage
from om_eval.om.observer import (
    ObserverRequest,
    ThreadHints,
    format_message,
    format_messages,
    render_observer_request,
    render_observer_system_prompt,
)
from om_eval.om.records import Message
from om_eval.om.reflector import OwnWords

#: The engine rules (``OMConfig.mastra_release``) each pinned release's requests are built under.
ENGINE_RELEASE: Mapping[str, str] = {"1.3.0": "v1_10", "1.10.0": "v1_10", "1.31.0": "v1_31"}
#: The prompt identity of om-eval's own words (what a run records instead of a pack's).
PARAPHRASE_IDENTITY = "paraphrase"


class Wording(Protocol):
    """Renders every prompt the engine sends (see the module docstring)."""

    @property
    def identity(self) -> str:
        """``paraphrase``, or the pack's identity (``mastra@1.10.0/current#…``)."""
        ...

    @property
    def max_compression_level(self) -> int:
        """The highest compression level the Reflector can be asked for."""
        ...

    def check(self, config: OMConfig) -> None:
        """Raise :class:`~om_eval.om.config.ConfigError` when ``config`` cannot be worded so."""
        ...

    def observer_system_prompt(self, variant: str, *, multi_thread: bool, instruction: str | None = None,
                               thread_title: bool = False, hint_tags: Sequence[str] | None = None) -> str: ...

    def observer_request(self, request: ObserverRequest, layout: str = "split") -> list[ChatMessage]:
        """The user message(s) of an Observer call."""
        ...

    def reflector_system_prompt(self, variant: str, instruction: str | None = None,
                                hint_tags: Sequence[str] | None = None) -> str: ...

    def reflector_request(self, observations: str, level: int, *, guidance: str | None = None,
                          skip_continuation_hints: bool = False, anchor_ids: bool = True,
                          hint_tags: Sequence[str] = (), prior_hints: Mapping[str, str] | None = None) -> str:
        """The user message of a Reflector call at ``level``; ``observations`` as the engine holds them (each
        wording shows them as its release does: with anchor ids, or without)."""
        ...

    def actor_memory_messages(self, inputs: ContextInputs, layout: str = "chunked") -> list[dict[str, str]]:
        """What the actor is given from memory, the continuation reminder included (nothing without memory)."""
        ...


class Paraphrase(OwnWords):
    """om-eval's own words (``prompts/*.toml``), for every prompt variant but ``mastra_exact``; the Reflector's are
    :class:`~om_eval.om.reflector.OwnWords`."""

    identity = PARAPHRASE_IDENTITY

    def check(self, config: OMConfig) -> None:
        if config.prompt_variant == "mastra_exact":
            raise ConfigError("prompt_variant='mastra_exact' reads Mastra's own prompts: build the memory with "
                              "prompts=om_eval.om.exact.load_pack(<version>)", option="prompt_variant",
                              detail="='mastra_exact' needs a prompt pack (prompts=load_pack(<version>))")

    def observer_system_prompt(self, variant: str, *, multi_thread: bool, instruction: str | None = None,
                               thread_title: bool = False, hint_tags: Sequence[str] | None = None) -> str:
        return render_observer_system_prompt(variant, multi_thread=multi_thread, instruction=instruction,
                                             thread_title=thread_title, hint_tags=hint_tags)

    def observer_request(self, request: ObserverRequest, layout: str = "split") -> list[ChatMessage]:
        return render_observer_request(request, layout)

    def actor_memory_messages(self, inputs: ContextInputs, layout: str = "chunked") -> list[dict[str, str]]:
        return list(actor_memory_messages(inputs, layout))


#: om-eval's own words: the wording of every engine built without a prompt pack.
PARAPHRASE = Paraphrase()


# -- a release's own words -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conflict:
    """An engine setting a release's prompts cannot be filled for: the option (as :class:`OMConfig` names it), its
    value, the value the release needs, and why."""

    option: str
    value: Any
    needed: Any
    why: str

    def describe(self, name: Callable[[str], str] = lambda option: option) -> str:
        return f"{name(self.option)}={self.value!r} (it needs {self.needed!r}: {self.why})"


def release_conflicts(config: OMConfig, version: str) -> list[Conflict]:
    """The engine settings of ``config`` that @mastra/memory ``version``'s prompts do not fit (none: they fit)."""
    builders = release(version).builders
    single = builders.observer_request == "single"
    wanted: list[tuple[str, Any, Any, str]] = [
        ("mastra_release", config.mastra_release, ENGINE_RELEASE[version],
         f"its requests are filled as the {ENGINE_RELEASE[version]} engine fills them"),
        ("observation.request_layout", config.observation.request_layout, "single" if single else "split",
         "its Observer request is one user message" if single else "its Observer gets a task and a history message"),
        ("context_layout", config.context_layout, "single" if builders.actor_messages == "single" else "chunked",
         "its actor reads memory as one system message" if builders.actor_messages == "single"
         else "its actor reads memory as several system messages"),
        ("retrieval", config.retrieval, "off", "prompt=mastra_exact does not word retrieval mode"),
    ]
    if single:
        wanted += [
            ("observation.previous_observer_tokens", config.observation.previous_observer_tokens, False,
             "it shows the Observer every previous observation"),
            ("boundary_delimiters", config.boundary_delimiters, False, "it joins observations with a blank line"),
        ]
    if not builders.thread_title:
        wanted.append(("observation.thread_title", config.observation.thread_title, False,
                       "its Observer cannot be asked for a thread title"))
    if not builders.custom_instructions:
        wanted += [(f"{part}.instruction", getattr(config, part).instruction, None,
                    "its prompts take no custom instructions") for part in ("observation", "reflection")]
    conflicts = [Conflict(option, value, needed, why) for option, value, needed, why in wanted
                 if not _same(value, needed)]
    top = max(builders.compression_levels)
    level = config.reflection.start_level
    if level != "auto" and level > top:
        conflicts.append(Conflict("reflection.start_level", level, f"0-{top}",
                                  f"its Reflector has compression levels 0-{top}"))
    return conflicts


def _same(value: Any, needed: Any) -> bool:
    """``value`` is ``needed`` (a flag compared as a flag: a budget of 0 is not ``False``)."""
    return value is needed if isinstance(needed, bool) else bool(value == needed)


def release_for(config: OMConfig) -> str:
    """The release whose prompts fit ``config``'s engine: 1.31.0 under the 1.31 rules, 1.3.0 with the one-message
    Observer request of the benchmark era (``om=benchmark_era``), else 1.10.0. It may still conflict on other
    settings (:func:`release_conflicts`)."""
    if config.mastra_release == "v1_31":
        return "1.31.0"
    return "1.3.0" if config.observation.request_layout == "single" else "1.10.0"


def _texts(messages: Sequence[Message], line_history: bool) -> list[str]:
    """One formatted text per message, as the release's history message shows each ("" for an empty one)."""
    if line_history:
        return history_line_sections(messages)
    return [format_message(m) or "" for m in messages]


class MastraWording:
    """The prompts of one ``@mastra/memory`` release, filled from its :class:`~om_eval.om.exact.PromptPack`."""

    def __init__(self, pack: PromptPack) -> None:
        self.pack = pack

    @property
    def identity(self) -> str:
        return self.pack.identity

    @property
    def max_compression_level(self) -> int:
        return max(self.pack.builders.compression_levels)

    def check(self, config: OMConfig) -> None:
        if config.prompt_variant != "mastra_exact":
            raise ConfigError(
                f"a @mastra/memory {self.pack.version} prompt pack was given, but prompt_variant="
                f"{config.prompt_variant!r}: set prompt_variant='mastra_exact' (or build without prompts=)",
                option="prompt_variant", detail=f"={config.prompt_variant!r} cannot use a prompt pack")
        conflicts = release_conflicts(config, self.pack.version)
        if conflicts:
            raise ConfigError(f"@mastra/memory {self.pack.version}'s prompts do not fit this engine: "
                              + "; ".join(c.describe() for c in conflicts)
                              + f"; use the engine settings of {self.pack.version} or the pack of "
                              f"{release_for(config)}")

    def _hints(self, hint_tags: Sequence[str] | None) -> list[str] | None:
        """The hint extractors a 1.27+ call is built with; ``None`` for a release without them."""
        if not self.pack.builders.hint_extractors:
            return None
        return None if hint_tags is None else list(hint_tags)

    # -- the Observer --------------------------------------------------------------------------------------

    def observer_system_prompt(self, variant: str, *, multi_thread: bool, instruction: str | None = None,
                               thread_title: bool = False, hint_tags: Sequence[str] | None = None) -> str:
        return self.pack.observer_system_prompt(multi_thread=multi_thread, thread_title=thread_title,
                                                instruction=instruction, hints=self._hints(hint_tags))

    def _prior(self, hints: ThreadHints | None, *, extracted: bool) -> dict[str, str]:
        """A thread's prior hints as the release's task message lists them: the plain lines, and (1.27+, a single
        thread) each extractor's prior value again (the pack shows those its call has)."""
        if hints is None:
            return {}
        pairs = (("current-task", hints.current_task), ("suggested-response", hints.suggested_response),
                 ("thread-title", hints.thread_title))
        prior = {kind: value for kind, value in pairs if value}
        if extracted:
            prior.update({f"extracted:{kind}": value for kind, value in list(prior.items())})
        return prior

    def observer_request(self, request: ObserverRequest, layout: str = "split") -> list[ChatMessage]:
        pack = self.pack
        previous = request.previous_observations or None
        multi = request.thread_count is not None
        if pack.builders.observer_request == "single":
            if multi:
                threads = [(thread_id, format_messages(messages)) for thread_id, messages in request.messages.items()]
                text = pack.observer_prompt_multi(previous, threads, thread_count=request.thread_count)
            else:
                text = pack.observer_prompt(previous, request.history, skip_hints=request.skip_continuation_hints)
            return [{"role": "user", "content": text}]
        hints = self._hints(request.hint_tags)
        if multi:
            task = pack.observer_task_multi(
                previous, [(thread_id, self._prior(request.hints.get(thread_id), extracted=False))
                           for thread_id in request.messages],
                truncated=request.previous_truncated, thread_title=request.thread_title, hints=hints)
            parts = pack.observer_history_multi(
                [(thread_id, _texts(messages, request.line_history))
                 for thread_id, messages in request.messages.items()], thread_count=request.thread_count)
        else:
            prior = self._prior(request.hints.get(""), extracted=pack.builders.hint_extractors)
            task = pack.observer_task(previous, prior=prior, truncated=request.previous_truncated,
                                      thread_title=request.thread_title, skip_hints=request.skip_continuation_hints,
                                      hints=hints)
            parts = pack.observer_history(_texts(request.messages.get("", ()), request.line_history))
        # The agent's message pipeline drops a text part of whitespace alone (the blank line a multi-thread history
        # puts between threads) before the model sees the message: so is it sent here.
        return [{"role": "user", "content": task},
                {"role": "user", "content": [{"type": "text", "text": part} for part in parts if part.strip()]}]

    # -- the Reflector -------------------------------------------------------------------------------------

    def reflector_system_prompt(self, variant: str, instruction: str | None = None,
                                hint_tags: Sequence[str] | None = None) -> str:
        return self.pack.reflector_system_prompt(instruction=instruction, hints=self._hints(hint_tags))

    def reflector_request(self, observations: str, level: int, *, guidance: str | None = None,
                          skip_continuation_hints: bool = False, anchor_ids: bool = True,
                          hint_tags: Sequence[str] = (), prior_hints: Mapping[str, str] | None = None) -> str:
        # The pack shows the observations as the release does (anchored in 1.9-1.10, groups stripped later):
        # they are handed over as the engine holds them, never anchored twice.
        extractors = self.pack.builders.hint_extractors
        return self.pack.reflector_prompt(observations, level=level, manual_prompt=guidance or None,
                                          skip_hints=skip_continuation_hints,
                                          hints=list(hint_tags) if extractors else None,
                                          prior=dict(prior_hints or {}) if extractors else None)

    # -- the actor -----------------------------------------------------------------------------------------

    def actor_memory_messages(self, inputs: ContextInputs, layout: str = "chunked") -> list[dict[str, str]]:
        if not inputs.observations:  # no memory yet: nothing is injected (as every release)
            return []
        chunks = dated_observations(inputs)
        other = format_other_conversations(inputs.other_conversations, line_history=inputs.line_history)
        shown: str | list[str] = "\n\n".join(chunks) if self.pack.builders.actor_messages == "single" else chunks
        texts = self.pack.actor_context(shown, current_task=inputs.current_task or None,
                                        suggested_response=inputs.suggested_response or None,
                                        other_conversations=other or None)
        messages = [{"role": "system", "content": text} for text in texts]
        if inputs.observations.strip():
            messages.append({"role": "user", "content": self.pack.continuation_reminder()})
        return messages


def wording_for(config: OMConfig, prompts: PromptPack | Wording | None = None) -> Wording:
    """The wording an engine built with ``config`` and ``prompts`` uses, checked against ``config``."""
    wording: Wording
    if prompts is None:
        wording = PARAPHRASE
    elif isinstance(prompts, PromptPack):
        wording = MastraWording(prompts)
    else:
        wording = prompts
    wording.check(config)
    return wording


def pack_identity(version: str, variant: str = "current") -> str:
    """What a run records for a pinned release's prompts, without loading the pack (its pinned digest)."""
    chosen = release(version)
    if variant not in chosen.variants:
        raise ConfigError(f"@mastra/memory {version} has no prompt variant {variant!r} "
                          f"(it has {', '.join(chosen.variants)})")
    assert chosen.pack_sha256 is not None
    return f"mastra@{chosen.version}/{variant}#{chosen.pack_sha256[:16]}"


__all__ = ["ENGINE_RELEASE", "PARAPHRASE", "PARAPHRASE_IDENTITY", "Conflict", "MastraWording",
           "Paraphrase", "Wording", "pack_identity", "release_conflicts", "release_for", "wording_for"]
