"""Rendering a release's prompt pack: each builder called under Node with sentinels, once per shape.

A *shape* is one combination of the arguments that change a builder's text beyond its string inputs (multi-thread,
thread title, custom instruction present, compression level, which prior hints are listed...). Each shape gives one
template (:mod:`om_eval.om.exact.template`). Every template is checked as it is made: filled with the sentinel values
it was rendered with, it must give the builder's output back exactly.

The pack is JSON::

    {"format": 1, "version": "1.10.0", "integrity": "sha512-...",
     "variants": {"current": {"texts": {name: text},
                              "templates": {builder: [{"shape": {...}, "parts": [...]}, ...]}}}}

``texts`` holds the constants (the actor's instructions, the continuation reminder, each compression level's
guidance); ``templates`` the per-call texts. An ``actor_context`` entry has ``messages`` (one template per system
message) and ``observation_messages`` (those left out without observations) instead of ``parts``. A history
message's text parts are joined by :data:`PART_BREAK` in its template. Which builders and shapes a release has is
read from its :class:`~om_eval.om.exact.pins.Builders` record.

Lists (prior thread metadata, threads, messages) are found by rendering one item of each kind, two items, and (where
a list can be empty) none: :func:`~om_eval.om.exact.template.derive_list`. A thread count is rendered as
:data:`PADDED_THREADS` (threads without messages pad the list) and cut out as a slot.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from om_eval.om.exact.errors import RenderError
from om_eval.om.exact.lists import ListFinder, RenderedItem
from om_eval.om.exact.node import UNDEFINED, BuilderProcess, js_optional
from om_eval.om.exact.pins import Release
from om_eval.om.exact.template import (
    Sentinels,
    Slot,
    Template,
    Values,
    fill,
    to_json,
)
from om_eval.om.exact.transforms import REFLECTION_VIEWS

PACK_FORMAT = 1
#: Joins a history message's text parts in its template (a private-use character no text holds).
PART_BREAK = "\ue000"
#: The thread count a multi-thread rendering claims: padded with threads that have no message, so the count is a
#: number no prompt contains, found once and cut out as the ``thread_count`` slot.
PADDED_THREADS = 7919
HINTS = ("current-task", "suggested-response")
#: Prior metadata a task prompt can list, in om-eval's names: the plain lines, and (1.27+) each hint extractor's
#: prior value again as a tag block.
PRIOR_KINDS = ("current-task", "suggested-response", "thread-title", "extracted:current-task",
               "extracted:suggested-response", "extracted:thread-title")
_PRIOR_OPTION = {"current-task": "priorCurrentTask", "suggested-response": "priorSuggestedResponse",
                 "thread-title": "priorThreadTitle"}
_METADATA_FIELD = {"current-task": "currentTask", "suggested-response": "suggestedResponse",
                   "thread-title": "threadTitle"}


def _hint_sets() -> list[list[str]]:
    return [list(c) for n in range(len(HINTS), -1, -1) for c in itertools.combinations(HINTS, n)]


def _shapes(**dimensions: Sequence[Any]) -> Iterator[dict[str, Any]]:
    names = list(dimensions)
    for values in itertools.product(*(dimensions[n] for n in names)):
        yield dict(zip(names, values))


def _entry(shape: Mapping[str, Any], template: Template) -> dict[str, Any]:
    return {"shape": dict(shape), "parts": to_json(template)}


class _Renderer:
    def __init__(self, builders: BuilderProcess, release: Release, variant: str) -> None:
        self.node = builders
        self.release = release
        self.shape = release.builders
        self.variant = variant
        self.s = Sentinels()
        self.lists = ListFinder(self.s, release.version)
        self._day = 0

    # -- plumbing ----------------------------------------------------------------------------------------------

    def call(self, name: str, *args: Any) -> Any:
        return self.node.call(name, *args, variant=self.variant)

    def checked(self, template: Template, values: Values, output: str, what: str) -> Template:
        filled = fill(template, values, REFLECTION_VIEWS)
        if filled != output:
            raise RenderError(f"{self.release.version} {what}: the template does not give the builder's text back")
        return template

    def message(self) -> dict[str, Any]:
        """A one-text message on a day of its own (1.15+ repeats no date line only within a day)."""
        self._day += 1
        day = 1 + self._day % 28
        month = 1 + (self._day // 28) % 12
        return {"role": "user", "createdAt": [2024, month, day, 9, 30, 0, 0], "text": self.s.line("text")}

    def formatted(self, messages: Sequence[Mapping[str, Any]]) -> str:
        return str(self.call("formatMessagesForObserver", {"$messages": list(messages)}))

    def extractors(self, kind: str, hints: Sequence[str], thread_title: bool = False) -> dict[str, Any]:
        return {"$extractors": {"kind": kind, "hints": list(hints), "threadTitle": thread_title}}

    def parts(self, content: Any) -> str:
        if not isinstance(content, list) or any(not isinstance(p, str) for p in content):
            raise RenderError("a history message came back with a part that is not text")
        return PART_BREAK.join(content)

    # -- constants ----------------------------------------------------------------------------------------------

    def texts(self) -> dict[str, str]:
        texts = {
            "context_prompt": self.node.get("OBSERVATION_CONTEXT_PROMPT", self.variant),
            "context_instructions": self.node.get("OBSERVATION_CONTEXT_INSTRUCTIONS", self.variant),
            "continuation_hint": self.node.get("OBSERVATION_CONTINUATION_HINT", self.variant),
        }
        guidance = self.node.get("COMPRESSION_GUIDANCE", self.variant)
        if sorted(int(level) for level in guidance) != list(self.shape.compression_levels):
            raise RenderError(f"{self.release.version} has compression levels {sorted(guidance)}, "
                              f"the pin says {self.shape.compression_levels}")
        texts.update({f"compression_guidance/{level}": guidance[str(level)] for level in self.shape.compression_levels})
        if self.shape.retrieval == "flag":
            texts["retrieval_instructions"] = self.node.get("OBSERVATION_RETRIEVAL_INSTRUCTIONS", self.variant)
        return {name: str(text) for name, text in texts.items()}

    # -- system prompts -----------------------------------------------------------------------------------------

    def observer_system(self) -> list[dict[str, Any]]:
        b = self.shape
        entries = []
        for shape in _shapes(
            multi_thread=[False, True],
            **({"thread_title": [False, True]} if b.thread_title else {}),
            **({"instruction": [False, True]} if b.custom_instructions else {}),
            **({"hints": _hint_sets()} if b.hint_extractors else {}),
        ):
            instruction = self.s.value("instruction") if shape.get("instruction") else None
            args: list[Any] = [shape["multi_thread"]]
            if b.custom_instructions:
                args += [js_optional(instruction), shape.get("thread_title", False)]
            if b.hint_extractors:
                args.append(self.extractors("observation", shape["hints"], shape["thread_title"]))
            output = str(self.call("buildObserverSystemPrompt", *args))
            values = {"instruction": instruction} if instruction else {}
            entries.append(_entry(shape, self.checked(self.s.cut(output), values, output, "Observer system prompt")))
        return entries

    def reflector_system(self) -> list[dict[str, Any]]:
        b = self.shape
        entries = []
        for shape in _shapes(
            **({"instruction": [False, True]} if b.custom_instructions else {}),
            **({"hints": _hint_sets()} if b.hint_extractors else {}),
        ):
            instruction = self.s.value("instruction") if shape.get("instruction") else None
            args: list[Any] = [js_optional(instruction)] if b.custom_instructions else []
            if b.hint_extractors:
                args.append(self.extractors("reflection", shape["hints"]))
            output = str(self.call("buildReflectorSystemPrompt", *args))
            values = {"instruction": instruction} if instruction else {}
            entries.append(_entry(shape, self.checked(self.s.cut(output), values, output, "Reflector system prompt")))
        return entries

    # -- the Reflector's request --------------------------------------------------------------------------------

    def reflection_view(self, render: Callable[[str], str]) -> str:
        """Which rewrite of :data:`REFLECTION_VIEWS` the builder applies to the observations (probed)."""
        token = "<o" + self.s.line("observations") + ">"
        template = self.s.cut(render(token), {token: "observations"})
        probes = [
            "Date: Dec 4, 2025\n* 🔴 (14:30) om-eval probe\n  * -> a nested line\n\n\n\n* 🟡 (14:31) [a] second",
            '  <observation-group id="g1" range="m1:m2">\n* 🔴 (09:00) grouped line\n</observation-group>\n\n\n'
            '<observation-group id="g2" range="m3:m4">\n* 🟡 (09:05) another\n  * nested\n</observation-group>  \n',
            "",
        ]
        outputs = [render(probe) for probe in probes]
        for name in REFLECTION_VIEWS:
            view = tuple(Slot(p.name, p.newline, name) if isinstance(p, Slot) else p for p in template)
            if all(fill(view, {"observations": p}, REFLECTION_VIEWS) == o for p, o in zip(probes, outputs)):
                return name
        raise RenderError(f"{self.release.version}: the Reflector shows observations in a way om-eval cannot redo")

    def reflector_prompt(self) -> list[dict[str, Any]]:
        b = self.shape
        base_hints: list[str] = list(HINTS)

        def args(observations: str, manual: str | None, level: int, skip: bool, hints: Sequence[str],
                 prior: Mapping[str, str] | None) -> list[Any]:
            out: list[Any] = [observations, js_optional(manual), level, skip]
            if b.hint_extractors:
                out += [self.extractors("reflection", hints), js_optional(dict(prior) if prior else None)]
            return out

        view = self.reflection_view(
            lambda obs: str(self.call("buildReflectorPrompt", *args(obs, None, 0, False, base_hints, None))))
        entries = []
        for shape in _shapes(
            manual=[False, True], level=list(b.compression_levels), skip_hints=[False, True],
            **({"hints": _hint_sets()} if b.hint_extractors else {}),
            **({"prior": [False, True]} if b.hint_extractors else {}),
        ):
            token = "<o" + self.s.line("observations") + ">"
            literals = {token: "observations"}
            manual = self.s.value("manual_prompt") if shape["manual"] else None
            values: dict[str, Any] = {"observations": token}
            if manual:
                values["manual_prompt"] = manual
            hints = shape.get("hints", [])

            def render(prior: Mapping[str, str] | None, shape: dict[str, Any] = shape, token: str = token,
                       manual: str | None = manual, hints: Sequence[str] = hints) -> str:
                return str(self.call("buildReflectorPrompt",
                                     *args(token, manual, shape["level"], shape["skip_hints"], hints, prior)))

            if shape.get("prior"):
                found = self.lists.list_slot(
                    "prior", lambda kind, key: self._value_item(kind, key), hints,
                    lambda items: render({item.kind: str(item.given) for item in items}), render(None))
                if found is None:
                    continue
                slot, before, after, item_literals = found
                template = self.lists.section(before, slot, after, {**literals, **item_literals})
                items = [self._value_item(kind, kind) for kind in slot.order]
                values["prior"] = [(item.kind, item.values) for item in items]
                output = render({item.kind: str(item.given) for item in items})
            else:
                output = render(None)
                template = self.s.cut(output, literals)
            self.checked(template, values, output, "Reflector prompt")
            template = tuple(Slot(p.name, p.newline, view) if isinstance(p, Slot) and p.name == "observations" else p
                             for p in template)
            entries.append(_entry(shape, template))
        return entries

    def _value_item(self, kind: str, key: str) -> RenderedItem:
        value = self.s.value("value")
        return RenderedItem(key, kind, value, {"value": value}, {}, (value[0], value[-1]))

    # -- the Observer's request ---------------------------------------------------------------------------------

    def observer_prompt(self) -> list[dict[str, Any]]:
        """1.1-1.3: one message with the previous observations, the history and the task."""
        entries = []
        for shape in _shapes(previous=[False, True], skip_hints=[False, True]):
            previous = self.s.value("previous_observations") if shape["previous"] else None
            messages = [self.message(), self.message()]
            history = self.formatted(messages)
            output = str(self.call("buildObserverPrompt", js_optional(previous), {"$messages": messages},
                                   {"skipContinuationHints": shape["skip_hints"]}))
            values = {"history": history, **({"previous_observations": previous} if previous else {})}
            template = self.s.cut(output, {history: "history"})
            entries.append(_entry(shape, self.checked(template, values, output, "Observer prompt")))
        return entries

    def _thread_item(self, kind: str, key: str) -> RenderedItem:
        """A thread with one message: what 1.1-1.3's multi-thread prompt is given for it."""
        thread_id = self.s.line("thread_id")
        messages = [self.message()]
        text = self.formatted(messages)
        return RenderedItem(key, kind, (thread_id, messages), {"thread_id": thread_id, "messages": text},
                     {text: "messages"}, (thread_id, text))

    def _padded(self, ids: Sequence[str]) -> list[str]:
        return [f"om-eval-padding-{i}" for i in range(PADDED_THREADS - len(ids))] + list(ids)

    def count_slot(self, template: Template) -> Template:
        """``template`` with the one occurrence of :data:`PADDED_THREADS` cut out as ``thread_count``."""
        number = str(PADDED_THREADS)
        hits = [(i, part) for i, part in enumerate(template) if isinstance(part, str) and number in part]
        if len(hits) != 1 or hits[0][1].count(number) != 1:
            raise RenderError("the thread count is not shown exactly once")
        index, text = hits[0]
        head, tail = text.split(number)
        middle = tuple(p for p in (head, Slot("thread_count"), tail) if p != "")
        return template[:index] + middle + template[index + 1:]

    def observer_prompt_multi(self) -> list[dict[str, Any]]:
        """1.1-1.3: the multi-thread message, threads in ``<thread>`` blocks."""
        entries = []
        for shape in _shapes(previous=[False, True]):
            previous = self.s.value("previous_observations") if shape["previous"] else None

            def render(items: Sequence[RenderedItem], previous: str | None = previous) -> str:
                ids = [item.given[0] for item in items]
                threads = [[item.given[0], {"$messages": item.given[1]}] for item in items]
                return str(self.call("buildMultiThreadObserverPrompt", js_optional(previous), {"$map": threads},
                                     self._padded(ids)))

            found = self.lists.list_slot("threads", self._thread_item, ["thread"], render, None, repeats=True,
                                   none=render([]))
            assert found is not None
            slot, before, after, literals = found
            template = self.count_slot(self.lists.section(before, slot, after, literals))
            items = [self._thread_item("thread", "a"), self._thread_item("thread", "b")]
            values: dict[str, Any] = {"threads": [("thread", item.values) for item in items],
                                      "thread_count": str(PADDED_THREADS)}
            if previous:
                values["previous_observations"] = previous
            entries.append(_entry(shape, self.checked(template, values, render(items), "multi-thread Observer prompt")))
        return entries

    # 1.9+: a task message and a history message

    def _prior_kinds(self, thread_title: bool, hints: Sequence[str]) -> list[str]:
        kinds = ["current-task", "suggested-response", "thread-title"]
        if self.shape.hint_extractors:
            kinds += [f"extracted:{h}" for h in [*hints, *(["thread-title"] if thread_title else [])]]
        return kinds

    def _prior_options(self, items: Sequence[RenderedItem]) -> dict[str, Any]:
        options: dict[str, Any] = {}
        extracted: dict[str, str] = {}
        for item in items:
            if item.kind.startswith("extracted:"):
                extracted[item.kind.split(":", 1)[1]] = str(item.given)
            else:
                options[_PRIOR_OPTION[item.kind]] = item.given
        if extracted:
            options["priorExtractedValues"] = extracted
        return options

    def observer_task(self) -> list[dict[str, Any]]:
        b = self.shape
        entries = []
        for shape in _shapes(
            previous=[False, True], truncated=[False, True],
            **({"thread_title": [False, True]} if b.thread_title else {}), skip_hints=[False, True],
            **({"hints": _hint_sets()} if b.hint_extractors else {}), prior=[False, True],
        ):
            previous = self.s.value("previous_observations") if shape["previous"] else None
            title = shape.get("thread_title", False)
            hints = shape.get("hints", [])

            def render(items: Sequence[RenderedItem], shape: dict[str, Any] = shape, previous: str | None = previous,
                       title: bool = title, hints: Sequence[str] = hints) -> str:
                options: dict[str, Any] = {"skipContinuationHints": shape["skip_hints"],
                                           "wasTruncated": shape["truncated"], "includeThreadTitle": title,
                                           **self._prior_options(items)}
                if b.hint_extractors:
                    options["extractors"] = self.extractors("observation", hints, title)
                return str(self.call("buildObserverTaskPrompt", js_optional(previous), options))

            values: dict[str, Any] = {"previous_observations": previous} if previous else {}
            if shape["prior"]:
                kinds = self._prior_kinds(title, hints)
                found = self.lists.list_slot("prior", self._value_item, kinds, render, render([]))
                if found is None:
                    continue
                slot, before, after, literals = found
                template = self.lists.section(before, slot, after, literals)
                items = [self._value_item(kind, kind) for kind in slot.order]
                values["prior"] = [(item.kind, item.values) for item in items]
                output = render(items)
            else:
                output = render([])
                template = self.s.cut(output)
            entries.append(_entry(shape, self.checked(template, values, output, "Observer task prompt")))
        return entries

    def observer_task_multi(self) -> list[dict[str, Any]]:
        b = self.shape
        entries = []
        for shape in _shapes(
            previous=[False, True], truncated=[False, True],
            **({"thread_title": [False, True]} if b.thread_title else {}),
            **({"hints": _hint_sets()} if b.hint_extractors else {}), prior=[False, True],
        ):
            previous = self.s.value("previous_observations") if shape["previous"] else None
            title = shape.get("thread_title", False)
            hints = shape.get("hints", [])

            def render(threads: Sequence[tuple[str, Sequence[RenderedItem]]], shape: dict[str, Any] = shape,
                       previous: str | None = previous, title: bool = title, hints: Sequence[str] = hints) -> str:
                metadata = []
                for thread_id, items in threads:
                    fields: dict[str, Any] = {}
                    extracted: dict[str, str] = {}
                    for item in items:
                        if item.kind.startswith("extracted:"):
                            extracted[item.kind.split(":", 1)[1]] = str(item.given)
                        else:
                            fields[_METADATA_FIELD[item.kind]] = item.given
                    if extracted:
                        fields["extracted"] = extracted
                    metadata.append([thread_id, fields])
                args: list[Any] = [js_optional(previous), self._padded([t for t, _ in threads]), {"$map": metadata},
                                   shape["truncated"], title]
                if b.hint_extractors:
                    args.append(self.extractors("observation", hints, title))
                return str(self.call("buildMultiThreadObserverTaskPrompt", *args))

            values: dict[str, Any] = {"previous_observations": previous} if previous else {}
            if not shape["prior"]:
                output = render([])
                entries.append(_entry(shape, self.checked(self.s.cut(output), values, output,
                                                          "multi-thread Observer task prompt")))
                continue
            kinds = self._prior_kinds(title, hints)
            template_values = self.lists.nested(
                "threads", "fields", kinds, self._value_item, render, empty=render([]))
            if template_values is None:
                continue
            template, nested_values, output = template_values
            values.update(nested_values)
            entries.append(_entry(shape, self.checked(template, values, output, "multi-thread Observer task prompt")))
        return entries

    def _message_item(self, kind: str, key: str) -> RenderedItem:
        message = self.message()
        text = self.formatted([message])
        return RenderedItem(key, kind, message, {"text": text}, {text: "text"}, (text,))

    def observer_history(self) -> list[dict[str, Any]]:
        def render(items: Sequence[RenderedItem]) -> str:
            return self.parts(self.call("buildObserverHistoryMessage", {"$messages": [i.given for i in items]}))

        found = self.lists.list_slot("messages", self._message_item, ["message"], render, None, repeats=True,
                               none=render([]))
        assert found is not None
        slot, before, after, literals = found
        template = self.lists.section(before, slot, after, literals)
        items = [self._message_item("message", k) for k in "abc"]
        values = {"messages": [(i.kind, i.values) for i in items]}
        return [_entry({}, self.checked(template, values, render(items), "Observer history message"))]

    def observer_history_multi(self) -> list[dict[str, Any]]:
        def render(threads: Sequence[tuple[str, Sequence[RenderedItem]]]) -> str:
            ids = [thread_id for thread_id, _ in threads]
            by_thread = [[thread_id, {"$messages": [i.given for i in items]}] for thread_id, items in threads]
            return self.parts(self.call("buildMultiThreadObserverHistoryMessage", {"$map": by_thread},
                                        self._padded(ids)))

        found = self.lists.nested("threads", "messages", ["message"], self._message_item, render, None, repeats=True,
                            none=render([]))
        assert found is not None
        template, values, output = found
        template = self.count_slot(template)
        values["thread_count"] = str(PADDED_THREADS)
        return [_entry({}, self.checked(template, values, output, "multi-thread Observer history message"))]

    # -- the actor ----------------------------------------------------------------------------------------------

    def actor_context(self) -> list[dict[str, Any]]:
        b = self.shape
        retrievals: list[Any] = [None]
        if b.retrieval == "flag":
            retrievals.append(True)
        elif b.retrieval == "scoped":
            retrievals += [{"scope": s, "search": f} for s in ("thread", "resource") for f in (True, False)]
        entries = []
        for shape in _shapes(other_conversations=[False, True], current_task=[False, True],
                             suggested_response=[False, True], retrieval=retrievals):
            values: dict[str, str] = {}
            for name in ("other_conversations", "current_task", "suggested_response"):
                if shape[name]:
                    values[name] = self.s.value(name)
            observations = self.s.line("observations")
            values["observations"] = observations

            def render(text: str, shape: dict[str, Any] = shape, values: dict[str, str] = values) -> list[str]:
                task, suggested = js_optional(values.get("current_task")), js_optional(
                    values.get("suggested_response"))
                other = js_optional(values.get("other_conversations"))
                retrieval = shape["retrieval"]
                if b.context_arguments == "v1_3":
                    result = self.node.method("formatObservationsForContext", {}, text, task, suggested, other,
                                              UNDEFINED, variant=self.variant)
                    return [str(result)]
                if b.context_arguments == "v1_10":
                    result = self.node.method("formatObservationsForContext", {}, text, task, suggested, other,
                                              UNDEFINED, bool(retrieval), variant=self.variant)
                else:
                    self_fields = {"observationConfig": {"extractors": []}, "reflectionConfig": {"extractors": []},
                                   "retrievalScope": (retrieval or {}).get("scope", "thread"),
                                   "retrievalSearch": (retrieval or {}).get("search", True)}
                    result = self.node.method("formatObservationsForContext", self_fields, text, task, suggested,
                                              UNDEFINED, other, UNDEFINED, bool(retrieval), variant=self.variant)
                return [str(m) for m in result]

            messages = render(observations)
            templates = [self.checked(self.s.cut(m), values, m, "actor context") for m in messages]
            entry: dict[str, Any] = {"shape": shape, "messages": [to_json(t) for t in templates]}
            if b.actor_messages == "list":
                without = render("")
                entry["observation_messages"] = _vanishing(templates, [self.s.cut(m) for m in without])
            entries.append(entry)
        return entries

    def run(self) -> dict[str, Any]:
        templates: dict[str, list[dict[str, Any]]] = {
            "observer_system": self.observer_system(),
            "reflector_system": self.reflector_system(),
            "reflector_prompt": self.reflector_prompt(),
            "actor_context": self.actor_context(),
        }
        if self.shape.observer_request == "single":
            templates["observer_prompt"] = self.observer_prompt()
            templates["observer_prompt_multi"] = self.observer_prompt_multi()
        else:
            templates["observer_task"] = self.observer_task()
            templates["observer_task_multi"] = self.observer_task_multi()
            templates["observer_history"] = self.observer_history()
            templates["observer_history_multi"] = self.observer_history_multi()
        return {"texts": self.texts(), "templates": templates}


def _vanishing(full: Sequence[Template], without: Sequence[Template]) -> list[int]:
    """Indices of the messages of ``full`` that ``without`` (no observations) lacks; the rest must be equal."""
    gone: list[int] = []
    j = 0
    for i, template in enumerate(full):
        if j < len(without) and without[j] == template:
            j += 1
        else:
            gone.append(i)
    if j != len(without):
        raise RenderError("without observations the actor's messages are not a subset of those with them")
    return gone


def render_variant(builders: BuilderProcess, release: Release, variant: str) -> dict[str, Any]:
    """The templates and texts of one prompt variant of ``release``."""
    return _Renderer(builders, release, variant).run()


def render_pack(builders: BuilderProcess, release: Release) -> dict[str, Any]:
    """Every variant of ``release``, as the pack's JSON (see the module docstring)."""
    return {
        "format": PACK_FORMAT,
        "version": release.version,
        "integrity": release.integrity,
        "variants": {variant: render_variant(builders, release, variant) for variant in release.variants},
    }
