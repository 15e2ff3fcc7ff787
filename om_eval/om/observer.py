"""The Observer: renders its prompts, formats the messages it reads, calls the model, checks the answer.

Prompt assembly follows om-reference §2.1 (system prompt), §2.4 (user side, in the 1.10 "split" layout or the
1.1 "single" layout) and uses the texts in ``prompts/`` (our own words). A degenerate or unusable answer is
retried once and then raised, so that a broken model reply never marks messages as observed. The model is told
what "unusable" means (:func:`~om_eval.om.model.complete_checked`), so a caching model never stores such an
answer, and the retry differs from the first call only by its attempt number: it is a new call, not the cached
bad answer again.

A well-formed answer that only repeats the previous observations or the prompt's example
(:mod:`om_eval.om.suspect`) is refused and retried the same way; when the retry repeats too it is kept (memory
still advances) and marked on the call, so the engine can record an ``observation_suspect`` event. (A retry that
said what was wrong was tried on LoCoMo with the 1.5B local model: it answered every such retry with empty
observations, losing the batch instead of flagging it, so the retry asks the same question again.)
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from om_eval.om.config import ModelSettings, ReplyChecks
from om_eval.om.js.text import utf16_len, utf16_prefix
from om_eval.om.model import ChatMessage, ChatModel, ModelReply, complete_checked
from om_eval.om.parsing import (
    CONTINUATION_HINT_TAGS,
    READING_1_10,
    MultiThreadOutput,
    ObserverOutput,
    ReplyReading,
)
from om_eval.om.prompts import fill, load_prompts
from om_eval.om.records import Message
from om_eval.om.suspect import Suspicion, find_repetition

#: Observer attempts per call: the first, and one retry after a degenerate or unusable answer.
OBSERVER_ATTEMPTS = 2
#: The question marker per variant: 1.5+ marks user questions 🔴; the 1.1-1.3 variants used 🟡.
QUESTION_EMOJI = {"current": "🔴", "current_v1_3": "🟡", "legacy": "🟡", "condensed": "🟡"}


class ObserverOutputError(RuntimeError):
    """The Observer's answer stayed degenerate or unusable after the retry."""


def extraction_instructions(variant: str) -> str:
    """The variant's extraction rules, with the question marker filled in.

    A variant file with ``extraction_from`` is an earlier release of another variant's rules: it takes that
    file's ``extraction`` block and leaves out the ``additions`` made later (``current_v1_3``).
    """
    data = load_prompts(f"observer_{variant}")
    if "extraction_from" in data:
        text = load_prompts(data["extraction_from"])["extraction"]
    else:
        text = data["extraction"]
        if data.get("additions"):
            text = text + "\n\n" + data["additions"]
    return fill(text, question_emoji=QUESTION_EMOJI[variant])


def question_emoji_of(system_prompt: str) -> str | None:
    """The question marker an Observer system prompt asks for, or ``None`` when no variant's rules are in it."""
    for variant, emoji in QUESTION_EMOJI.items():
        if extraction_instructions(variant) in system_prompt:
            return emoji
    return None


def observer_guidelines(variant: str) -> str:
    """Condensed and current_v1_3 carry their own guidelines; current and legacy share the standard set."""
    return str(load_prompts(f"observer_{variant}").get("guidelines") or load_prompts("observer_shared")["guidelines"])


def _custom(instruction: str | None) -> list[str]:
    return ["=== CUSTOM INSTRUCTIONS ===", instruction.strip()] if instruction and instruction.strip() else []


#: Each 1.27+ hint tag and the ``observer_shared`` key with what goes inside it.
HINT_TEXT_KEYS = {
    "current-task": "current_task_hint",
    "suggested-response": "suggested_response_hint",
    "thread-title": "thread_title_hint",
}


def _legacy_hint_blocks(shared: Mapping[str, str]) -> str:
    return "\n\n".join(f"<{tag}>\n{shared[HINT_TEXT_KEYS[tag]]}\n</{tag}>" for tag in CONTINUATION_HINT_TAGS)


def hint_sections_text(hint_tags: Sequence[str]) -> str:
    """1.27+'s optional sections for ``hint_tags`` (the intro, then per tag what goes in it and when); "" for none."""
    if not hint_tags:
        return ""
    shared = load_prompts("observer_shared")
    sections = [
        f"<{tag}>\n{shared[HINT_TEXT_KEYS[tag]]}\n{fill(shared['hint_section_note'], tag=tag)}\n</{tag}>"
        for tag in hint_tags
    ]
    return str(shared["hint_sections_intro"]) + "\n" + "\n\n".join(sections)


def observer_output_format(variant: str | None = None, hint_tags: Sequence[str] | None = None) -> str:
    """The observation format (``variant``'s own, else the shared one) and how to give the hints.

    ``hint_tags=None`` is 1.1-1.10: the format with its ``<current-task>`` and ``<suggested-response>`` blocks.
    A sequence is 1.27+: the format up to its hint blocks, then :func:`hint_sections_text` (nothing for a call that
    asks for no hints).
    """
    shared = load_prompts("observer_shared")
    own = load_prompts(f"observer_{variant}").get("output_format") if variant else None
    text = str(own or shared["output_format"] + "\n\n" + _legacy_hint_blocks(shared))
    if hint_tags is None:
        return text
    head = text.split("\n\n<current-task>", 1)[0]
    sections = hint_sections_text(hint_tags)
    return head + "\n\n" + sections if sections else head


def render_observer_system_prompt(
    variant: str,
    *,
    multi_thread: bool,
    instruction: str | None = None,
    thread_title: bool = False,
    hint_tags: Sequence[str] | None = None,
) -> str:
    """The Observer's system prompt for one variant, single- or multi-thread (§2.1).

    In a multi-thread prompt, a variant with its own ``multi_thread_output`` (the 1.1-1.3 layout) shows only that
    block: the two-thread example and the marker legend. The others show the standard format block, then the
    shared two-thread example.

    ``hint_tags`` (``mastra_release=v1_31``) asks for the hints as 1.27+ does, as optional sections after the
    format: the thread title is one of them rather than a paragraph of its own, and a call that asks for no hints
    (an empty sequence) describes none, shows a two-thread example without them and closes without them.
    """
    shared = load_prompts("observer_shared")
    variant_data = load_prompts(f"observer_{variant}")
    if hint_tags is not None:
        hinted = bool(set(hint_tags) & set(CONTINUATION_HINT_TAGS))
        example = shared["multi_thread_output"] if hinted else shared["multi_thread_output_plain"]
        output = observer_output_format(variant, hint_tags)
        format_sections = [output, example] if multi_thread else [output]
        closing = shared["closing"] + (" " + shared["closing_hints"] if hinted else "")
    else:
        title = "\n\n" + shared["thread_title_format"] if thread_title else ""
        if multi_thread and "multi_thread_output" in variant_data:
            format_sections = [variant_data["multi_thread_output"] + title]
        elif multi_thread:
            format_sections = [observer_output_format() + title, shared["multi_thread_output"]]
        else:
            format_sections = [observer_output_format(variant) + title]
        closing = shared["closing"] + " " + shared["closing_hints"]

    sections = [shared["identity"], shared["extraction_lead"] + "\n\n" + extraction_instructions(variant)]
    if multi_thread:
        sections += ["=== MULTI-THREAD INPUT ===", shared["multi_thread_input"]]
        sections += ["=== OUTPUT FORMAT ===", *format_sections]
        sections += ["=== GUIDELINES ===", observer_guidelines(variant)]
    else:
        sections += ["=== OUTPUT FORMAT ===", *format_sections]
        sections += ["=== GUIDELINES ===", observer_guidelines(variant)]
        sections += ["=== IMPORTANT: THREAD ATTRIBUTION ===", shared["thread_attribution"]]
    sections.append(closing)
    sections += _custom(instruction)
    return "\n\n".join(sections)


# -- message formatting (§2.4) --------------------------------------------------------------------------------


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_message_time(moment: datetime) -> str:
    """en-US style ``Dec 4, 2025, 2:30 PM`` (wall-clock time of the datetime as given). The month's name comes from
    a table, not ``strftime``: en-US whatever the process's locale, and every message of a batch is formatted."""
    hour = moment.hour % 12 or 12
    suffix = "AM" if moment.hour < 12 else "PM"
    return f"{_MONTHS[moment.month - 1]} {moment.day}, {moment.year}, {hour}:{moment.minute:02d} {suffix}"


def _cap(text: str, max_part_length: int | None) -> str:
    """Cut a part to ``max_part_length`` UTF-16 units (as JS counts), the marker on a line of its own.

    No cap (``None`` or 0) leaves the text whole, as 1.10's falsy check does. A cut never splits an emoji
    (:func:`~om_eval.om.js.text.utf16_prefix`); the count in the marker is still the units JS would drop.
    """
    length = utf16_len(text)
    if not max_part_length or length <= max_part_length:
        return text
    return f"{utf16_prefix(text, max_part_length)}\n... [truncated {length - max_part_length} characters]"


def _format_part(part: Mapping[str, Any], counters: dict[str, int], max_part_length: int | None) -> str | None:
    kind = part.get("type", "text")
    if kind == "text":
        return _cap(str(part.get("text", "")), max_part_length) or None
    if kind == "tool-call":
        args = part.get("args", {})
        body = args if isinstance(args, str) else json.dumps(args, indent=2, ensure_ascii=False)
        return _cap(f"[Tool Call: {part.get('tool_name', '')}]\n{body}", max_part_length)
    if kind == "tool-result":
        result = part.get("result", "")
        body = result if isinstance(result, str) else json.dumps(result, indent=2, ensure_ascii=False)
        return _cap(f"[Tool Result: {part.get('tool_name', '')}]\n{body}", max_part_length)
    if kind == "reasoning":
        return _cap(str(part.get("text", "")), max_part_length) or None
    if kind in ("image", "file"):
        counters[kind] = counters.get(kind, 0) + 1
        label = part.get("name") or part.get("mime_type") or kind
        return f"[{kind.capitalize()} #{counters[kind]}: {label}]"
    return None  # data-* markers and unknown parts are not shown to the model


def format_message(message: Message, max_part_length: int | None = None) -> str | None:
    """``**Role (time):**`` then the content; ``None`` when the message has nothing visible."""
    counters: dict[str, int] = {}
    if isinstance(message.content, str):
        # Only an empty string is nothing: 1.10 keeps a whitespace-only message (a falsy check, not a trim).
        parts = [_cap(message.content, max_part_length)] if message.content else []
    else:
        parts = [p for p in (_format_part(part, counters, max_part_length) for part in message.content) if p]
    if not parts:
        return None
    role = message.role[:1].upper() + message.role[1:]
    return f"**{role} ({format_message_time(message.created_at)}):**\n" + "\n".join(parts)


def format_messages(messages: Sequence[Message], max_part_length: int | None = None) -> str:
    """Messages joined by horizontal rules; empty messages are skipped."""
    blocks = [b for b in (format_message(m, max_part_length) for m in messages) if b is not None]
    return "\n\n---\n\n".join(blocks)


def format_thread_blocks(threads: Mapping[str, Sequence[Message]], max_part_length: int | None = None) -> str:
    """Each thread's messages wrapped in ``<thread id="...">`` (ids as the model should see them)."""
    return "\n\n".join(
        f'<thread id="{thread_id}">\n{format_messages(messages, max_part_length)}\n</thread>'
        for thread_id, messages in threads.items()
    )


# -- the user side of the request -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadHints:
    """Continuity hints the Observer left last time for one thread."""

    current_task: str | None = None
    suggested_response: str | None = None
    thread_title: str | None = None

    def lines(self) -> list[str]:
        pairs = (
            ("current-task", self.current_task),
            ("suggested-response", self.suggested_response),
            ("thread-title", self.thread_title),
        )
        return [f"- prior {name}: {value}" for name, value in pairs if value]

    def blocks(self) -> list[str]:
        """1.27+'s second listing of the two continuation hints: each in its tags."""
        pairs = (("current-task", self.current_task), ("suggested-response", self.suggested_response))
        return [f"<{name}>\n{value}\n</{name}>" for name, value in pairs if value]


@dataclass(frozen=True)
class ObserverRequest:
    """Everything the Observer reads besides its system prompt."""

    history: str
    previous_observations: str = ""
    previous_truncated: bool = False
    thread_count: int | None = None
    """Set for multi-thread requests: how many threads ``history`` holds."""
    hints: Mapping[str, ThreadHints] = field(default_factory=dict)
    """Prior hints keyed by thread id as shown to the model ('' for a single thread)."""
    skip_continuation_hints: bool = False
    hint_blocks: bool = False
    """1.27+: a single thread's prior hints are listed, then repeated as their tag blocks."""
    messages: Mapping[str, Sequence[Message]] = field(default_factory=dict)
    """The messages ``history`` shows, by thread id as shown to the model ('' for a single thread), in order: a
    Mastra release's own builders (:mod:`om_eval.om.wording`) format them one by one."""
    line_history: bool = False
    """``history`` is in 1.15+'s line format (:mod:`om_eval.om.history_lines`), not 1.10's message blocks."""
    thread_title: bool = False
    """The Observer is asked for a thread title (``observation.thread_title``)."""
    hint_tags: tuple[str, ...] | None = None
    """1.27+: the hint sections this call asks for (none for a buffered call); ``None`` is 1.10's way of asking."""


def _previous_section(request: ObserverRequest, texts: Mapping[str, str]) -> list[str]:
    if not request.previous_observations:
        return []
    section = [texts["previous_observations_heading"], request.previous_observations, "---"]
    if request.previous_truncated:
        section.append(texts["truncation_notice"])
    section.append(texts["previous_observations_note"])
    return section


def _metadata_section(request: ObserverRequest, texts: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    for thread_id, hints in request.hints.items():
        hint_lines = hints.lines()
        if not hint_lines:
            continue
        if thread_id:
            lines.append(f'<thread id="{thread_id}">')
            lines.extend(hint_lines)
            lines.append("</thread>")
        else:
            lines.extend(hint_lines)
            if request.hint_blocks:
                lines.extend(hints.blocks())
    if not lines:
        return []
    return [texts["prior_metadata_heading"], "\n".join(lines), texts["prior_metadata_note"]]


def _task_section(request: ObserverRequest, texts: Mapping[str, str]) -> list[str]:
    task = texts["task_multi"] if request.thread_count is not None else texts["task_single"]
    section = [texts["task_heading"], task]
    if request.skip_continuation_hints:
        section.append(texts["hints_skipped"])
    return section


def _history_section(request: ObserverRequest, texts: Mapping[str, str]) -> list[str]:
    section = [texts["history_heading"]]
    if request.thread_count is not None:
        section.append(fill(texts["multi_history_intro"], thread_count=request.thread_count))
    section.append(request.history)
    return section


def render_observer_request(request: ObserverRequest, layout: str = "split") -> list[ChatMessage]:
    """The user message(s): ``split`` = task message then history message (1.10); ``single`` = one (1.1)."""
    texts = load_prompts("observer_request")
    if layout == "split":
        task = _previous_section(request, texts) + _metadata_section(request, texts) + _task_section(request, texts)
        return [
            {"role": "user", "content": "\n\n".join(task)},
            {"role": "user", "content": "\n\n".join(_history_section(request, texts))},
        ]
    single = (
        _previous_section(request, texts)
        + _metadata_section(request, texts)
        + _history_section(request, texts)
        + ["---"]
        + _task_section(request, texts)
    )
    return [{"role": "user", "content": "\n\n".join(single)}]


# -- the call -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ObserverCall:
    """A finished Observer call: the parsed answer and every reply it took (retries included)."""

    output: ObserverOutput | MultiThreadOutput
    replies: tuple[ModelReply, ...]
    suspect: Suspicion | None = None
    """Set when every usable reply repeated earlier observations and the last of them was kept."""


def _usable_single(output: ObserverOutput, raw: str) -> bool:
    # An explicit empty <observations> block is a valid "nothing to note"; an empty reply, or text with no tags
    # and no list lines, is a failure (mastra PR#13356: such replies used to mark messages observed).
    return not output.degenerate and (bool(output.observations) or "<observations>" in raw)


class _Reads(Protocol):
    """What the checks below ask of a reading: :class:`ReplyReading`, or one call's :class:`_ReadOnce`."""

    def observer(self, text: str) -> ObserverOutput: ...

    def multi_thread(self, text: str) -> MultiThreadOutput: ...


class _ReadOnce:
    """One call's reading, each reply parsed once: its check, its repeat check and its use ask about the same reply
    (a parse is frozen, and lives only as long as the call, so an engine change never meets an old reading)."""

    def __init__(self, reading: _Reads) -> None:
        self.observer = functools.cache(reading.observer)
        self.multi_thread = functools.cache(reading.multi_thread)


def _single_problem(raw: str, reading: _Reads) -> str | None:
    """What makes a single-thread answer unusable, or ``None``."""
    if not raw.strip():
        return "empty reply"
    output = reading.observer(raw)
    if output.degenerate:
        return "degenerate (repetition loop)"
    if not _usable_single(output, raw):
        return "no <observations> block and no observation lines"
    return None


def _multi_problem(raw: str, thread_ids: Sequence[str], reading: _Reads) -> str | None:
    """What makes a multi-thread answer unusable, or ``None``."""
    if not raw.strip():
        return "empty reply"
    if _read_multi(raw, thread_ids, reading) is not None:
        return None
    if reading.multi_thread(raw).degenerate:
        return "degenerate (repetition loop)"
    return "no <observations> for any thread of the batch"


def _read_multi(raw: str, thread_ids: Sequence[str], reading: _Reads) -> MultiThreadOutput | None:
    """The multi-thread answer, or None when it is unusable.

    Usable: at least one thread of the batch answered; or an explicit, empty ``<observations>`` block (nothing
    to note). A reply whose thread blocks name none of the batch's threads would otherwise mark the whole batch
    observed with nothing recorded. A one-thread batch answered in single-thread format is attributed to it.
    """
    multi = reading.multi_thread(raw)
    if multi.degenerate:
        return None
    if any(thread_id in multi.threads for thread_id in thread_ids) or (not thread_ids and multi.threads):
        return multi
    single = reading.observer(raw)
    if single.observations:
        if len(thread_ids) == 1 and not multi.threads:
            return MultiThreadOutput({thread_ids[0]: single}, degenerate=False)
        return None
    return multi if "<observations>" in raw and not multi.threads else None


def _observations_of(raw: str, *, multi_thread: bool, thread_ids: Sequence[str], reading: _Reads) -> str:
    """The observation text of a usable answer; every thread's observations joined for a multi-thread one."""
    if not multi_thread:
        return reading.observer(raw).observations
    multi = _read_multi(raw, thread_ids, reading)
    return "\n".join(output.observations for output in multi.threads.values()) if multi else ""


def _parsed(
    raw: str, *, multi_thread: bool, thread_ids: Sequence[str], reading: _Reads
) -> ObserverOutput | MultiThreadOutput:
    if multi_thread:
        multi = _read_multi(raw, thread_ids, reading)
        assert multi is not None
        return multi
    return reading.observer(raw)


async def call_observer(
    model: ChatModel,
    settings: ModelSettings,
    system_prompt: str,
    user_messages: Sequence[ChatMessage],
    *,
    multi_thread: bool,
    thread_ids: Sequence[str] = (),
    previous_observations: str = "",
    new_messages: str = "",
    checks: ReplyChecks = "om_eval",
    reading: ReplyReading = READING_1_10,
) -> ObserverCall:
    """Call the Observer, retrying once on a degenerate or unusable answer, then raising.

    ``thread_ids`` (multi-thread only) are the ids the model was shown; an answer must cover one of them. The
    retry sends the same messages as attempt 1; only the attempt number (a cache scope) differs.

    With ``previous_observations`` (what the model was shown of them) and ``new_messages`` (the formatted history
    it was asked to observe), an answer that repeats old observations (:func:`~om_eval.om.suspect.find_repetition`)
    is refused (never cached) and retried too. If no attempt gives a usable answer that is not a repeat, the last
    usable repeat is returned with :attr:`ObserverCall.suspect` set, rather than failing.

    With ``checks="mastra"`` only 1.10's rule applies (see :func:`_call_observer_as_mastra`). ``reading`` is the
    repetition-loop detector and hint rule the replies are read with.
    """
    messages: list[ChatMessage] = [{"role": "system", "content": system_prompt}, *user_messages]
    once = _ReadOnce(reading)
    if checks == "mastra":
        return await _call_observer_as_mastra(model, settings, messages, multi_thread=multi_thread, reading=once)

    def problem(raw: str) -> str | None:
        return _multi_problem(raw, thread_ids, once) if multi_thread else _single_problem(raw, once)

    # What a reply must not merely copy: the previous observations and the instructions' own example lines (a
    # 1.5B Observer answered a whole LoCoMo session with the example's bakery).
    seen = "\n".join(part for part in (previous_observations, system_prompt) if part)

    @functools.cache  # the cache check and the loop below both ask about the same reply
    def suspicion(raw: str) -> Suspicion | None:
        whole = _observations_of(raw, multi_thread=multi_thread, thread_ids=thread_ids, reading=once)
        found = find_repetition(whole, seen, new_messages)
        if found is not None or not multi_thread:
            return found
        # One thread's section copied while the others are honest is still a copy: its lines are judged alone.
        multi = _read_multi(raw, thread_ids, once)
        threads = multi.threads.values() if multi else ()
        return next((f for out in threads if (f := find_repetition(out.observations, seen, new_messages))), None)

    def refusal(raw: str) -> str | None:
        reason = problem(raw)
        if reason is None and (found := suspicion(raw)) is not None:
            return f"repeats earlier observations or the prompt's example ({found.describe()})"
        return reason

    replies: list[ModelReply] = []
    reason: str | None = None
    kept: tuple[str, Suspicion] | None = None
    for attempt in range(OBSERVER_ATTEMPTS):
        reply = await complete_checked(
            model, messages, stage="observer", settings=settings, check=refusal, attempt=attempt
        )
        replies.append(reply)
        reason = problem(reply.text)
        if reason is not None:
            continue
        found = suspicion(reply.text)
        if found is not None:
            kept = (reply.text, found)
            continue
        output = _parsed(reply.text, multi_thread=multi_thread, thread_ids=thread_ids, reading=once)
        return ObserverCall(output, tuple(replies))
    if kept is not None:
        output = _parsed(kept[0], multi_thread=multi_thread, thread_ids=thread_ids, reading=once)
        return ObserverCall(output, tuple(replies), suspect=kept[1])
    kind = "multi-thread " if multi_thread else ""
    raise ObserverOutputError(
        f"the {kind}observer ({settings.model}) returned unusable output {OBSERVER_ATTEMPTS} times (last: {reason}); "
        "no message was marked observed and no bad reply was cached. First 200 characters of the last reply: "
        + repr(replies[-1].text[:200])
    )


async def _call_observer_as_mastra(
    model: ChatModel,
    settings: ModelSettings,
    messages: Sequence[ChatMessage],
    *,
    multi_thread: bool,
    reading: _Reads,
) -> ObserverCall:
    """1.10's Observer call: a degenerate reply is retried once and a second one raises; any other reply, even an
    empty one or one naming none of the batch's threads, is applied as parsed (no repeat check)."""
    def parse(raw: str) -> ObserverOutput | MultiThreadOutput:
        return reading.multi_thread(raw) if multi_thread else reading.observer(raw)

    def problem(raw: str) -> str | None:
        return "degenerate (repetition loop)" if parse(raw).degenerate else None

    replies: list[ModelReply] = []
    for attempt in range(OBSERVER_ATTEMPTS):
        reply = await complete_checked(model, messages, stage="observer", settings=settings, check=problem,
                                       attempt=attempt)
        replies.append(reply)
        if problem(reply.text) is None:
            return ObserverCall(parse(reply.text), tuple(replies))
    kind = "multi-thread " if multi_thread else ""
    raise ObserverOutputError(
        f"the {kind}observer ({settings.model}) returned degenerate output {OBSERVER_ATTEMPTS} times; no message was "
        "marked observed and no bad reply was cached"
    )
