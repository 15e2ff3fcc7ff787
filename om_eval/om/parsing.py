"""Parsing Observer and Reflector output (om-reference §2.5–§2.7, §3.6).

Why a module of its own: the memory is only as good as what survives parsing. Mastra parses the models' XML-ish
output with a handful of regexes whose quirks shape the stored memory (tags must start a line, a missing
``<observations>`` wrapper keeps only list lines for the Observer but the whole text for the Reflector, over-long
lines are cut, looping output is rejected). Reproducing the scores means reproducing those quirks, so they live
here, in one place, with the version they come from; the line cut and the repetition detectors, which look at a
reply's lines whatever its tags, are in :mod:`om_eval.om.reply_lines`.

The 1.10 rules are JavaScript's, and so are the details here (see `om_eval.om.js.text`): line breaks are not
normalised, so a CRLF reply keeps its CRs inside the observations while tags still start a line after a CR;
whitespace and ``trim`` are JS's; lengths are UTF-16 code units, so an emoji counts 2. The single-thread parser,
the degenerate check and the line cut are checked against the published package by
``tests/om/test_mastra_differential.py`` (the multi-thread and Reflector parsers are not exported by it and
follow its source).

Hint sections (1.27+, ``hint_tags``): 1.27 turned ``<current-task>``, ``<suggested-response>`` (and the thread title
when asked for) into "extractor sections". A hint is then the *last* such tag anywhere in the reply (a JSON object in
``<extracted-values>`` taking precedence), and every hint section is cut out of the reply, wherever it sits, before
the observations are read. Without ``hint_tags`` the 1.10 rules above apply (first match, line-anchored for a
single thread); 1.31 itself reads buffered replies that way, because it asks them for no hints.

"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

from om_eval.om.anchors import strip_anchor_ids
from om_eval.om.js.text import LINE_START, LINE_TERMINATORS, WS, js_trim
from om_eval.om.reply_lines import (
    MAX_OBSERVATION_LINE_CHARS,
    DegenerateStrategy,
    detect_degenerate,
    is_degenerate,
    is_degenerate_strict,
    sanitize_lines,
)

__all__ = [
    "CONTINUATION_HINT_TAGS",
    "MAX_OBSERVATION_LINE_CHARS",
    "READING_1_10",
    "DegenerateStrategy",
    "MultiThreadOutput",
    "ObserverOutput",
    "ReflectorOutput",
    "ReplyReading",
    "count_observation_lines",
    "detect_degenerate",
    "extract_list_items",
    "extracted_hints",
    "has_observation_lines",
    "is_degenerate",
    "is_degenerate_strict",
    "parse_multi_thread_output",
    "parse_observer_output",
    "parse_reflector_output",
    "sanitize_lines",
    "strip_hint_sections",
]


# --------------------------------------------------------------------------- regexes

_FLAGS: Final = re.IGNORECASE | re.ASCII | re.DOTALL
_LIST_ITEM = re.compile(rf"^[{WS}]*(?:[-*]|[0-9]+\.)[{WS}]")
#: An observation line: a priority marker (🔴 🟡 🟢 ✅) opening the line, optionally after a list bullet.
_OBSERVATION_LINE = re.compile(r"^[ \t]*(?:(?:[-*]|\d+\.)[ \t]+)?(?:🔴|🟡|🟢|✅)", re.MULTILINE)

# Line-anchored blocks (§2.5): both the opening and the closing tag must start a line.
_OBSERVATIONS_BLOCK = re.compile(rf"{LINE_START}[ \t]*<observations>(.*?){LINE_START}[ \t]*</observations>", _FLAGS)
_CURRENT_TASK_ANCHORED = re.compile(rf"{LINE_START}[ \t]*<current-task>(.*?){LINE_START}[ \t]*</current-task>", _FLAGS)
_SUGGESTED_RESPONSE_ANCHORED = re.compile(
    rf"{LINE_START}[ \t]*<suggested-response>(.*?){LINE_START}[ \t]*</suggested-response>", _FLAGS
)
# The title is short, so only its opening tag has to start a line.
_THREAD_TITLE_ANCHORED = re.compile(rf"{LINE_START}[ \t]*<thread-title>(.*?)</thread-title>", _FLAGS)

# Unanchored forms (multi-thread blocks, Reflector).
_CURRENT_TASK = re.compile(r"<current-task>(.*?)</current-task>", _FLAGS)
_SUGGESTED_RESPONSE = re.compile(r"<suggested-response>(.*?)</suggested-response>", _FLAGS)
_THREAD_TITLE = re.compile(r"<thread-title>(.*?)</thread-title>", _FLAGS)
_THREAD_OPEN = rf'<thread[{WS}]+id="([^"]+)">'
_THREAD_BLOCK = re.compile(rf"{_THREAD_OPEN}(.*?)</thread>", _FLAGS)
_THREAD_HEADER = re.compile(_THREAD_OPEN, _FLAGS)

# 1.27+ hint sections.
#: The continuation hints that 1.27+ reads as extractor sections (``observation.thread_title`` adds "thread-title").
CONTINUATION_HINT_TAGS: Final = ("current-task", "suggested-response")
_EXTRACTED_VALUES = re.compile(r"<extracted-values>(.*?)</extracted-values>", _FLAGS)
_EXTRACTED_VALUES_SECTION = re.compile(rf"[ \t]*<extracted-values>.*?</extracted-values>[{WS}]*", _FLAGS)
#: 1.31 skips an ``<extracted-values>`` block that still holds the placeholder of its own prompt.
_EXTRACTED_VALUES_PLACEHOLDER = "Write only the extracted values JSON object here."
#: A hint that looks like JSON is decoded first (a quoted string loses its quotes), as 1.31's value parser does.
_JSON_LIKE = re.compile(r"(?:[\[{\"-]|\d|true\b|false\b|null\b)", re.ASCII)



# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class ObserverOutput:
    """What one Observer call produced (one thread).

    Attributes:
        observations: Parsed, line-sanitised, stripped observation text ("" when degenerate).
        current_task: Body of ``<current-task>``, or None when absent or empty.
        suggested_response: Body of ``<suggested-response>``, or None when absent or empty.
        thread_title: Body of ``<thread-title>``, or None when absent or empty.
        degenerate: True when the repetition detector fired; the caller retries once, then fails.
    """

    observations: str
    current_task: str | None = None
    suggested_response: str | None = None
    thread_title: str | None = None
    degenerate: bool = False


@dataclass(frozen=True, slots=True)
class MultiThreadOutput:
    """What one batched (multi-thread) Observer call produced.

    Attributes:
        threads: Per thread id, that thread's result, in output order. Threads the model did not write a
            (non-empty) block for are missing; the caller gives them an empty result.
        degenerate: True when the repetition detector fired on the whole output (``threads`` is then empty).
    """

    threads: dict[str, ObserverOutput] = field(default_factory=dict)
    degenerate: bool = False


@dataclass(frozen=True, slots=True)
class ReflectorOutput:
    """What one Reflector call produced.

    Attributes:
        observations: The new observation text, anchors stripped and lines sanitised ("" when degenerate).
        suggested_response: Body of ``<suggested-response>``, or None.
        degenerate: True when the repetition detector fired; counts as a failed attempt.
    """

    observations: str
    suggested_response: str | None = None
    degenerate: bool = False
    current_task: str | None = None
    """Only read with ``hint_tags`` (1.27+ keeps a Reflector's current task; 1.10 ignores it)."""


# --------------------------------------------------------------------------- shared helpers


def _non_empty(value: str) -> str | None:
    stripped = js_trim(value)
    return stripped or None


def _first_group(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return _non_empty(match.group(1)) if match else None


# What the lazy block patterns find, found with str.find: a regex tries the closing tag at every character of a
# block's body, about a millisecond on an Observer reply. Tags are matched in the lower-cased text, which lines up
# with the text unless a character lower-cases to more than one (then the regex decides). Of the others, only U+212A
# lower-cases to an ASCII letter ("k"), which no tag holds.

def _anchored_line_start(text: str, at: int) -> int | None:
    """The start of ``at``'s line when only spaces and tabs lie between them (JS ``^`` under the ``m`` flag)."""
    start = at
    while start and text[start - 1] in " \t":
        start -= 1
    return start if not start or text[start - 1] in LINE_TERMINATORS else None


def _anchored_tag(lowered: str, tag: str, start: int) -> tuple[int, int] | None:
    """The first ``tag`` at or after ``start`` that begins a line: (its line's start, the tag's position)."""
    at = lowered.find(tag, start)
    while at != -1:
        line = _anchored_line_start(lowered, at)
        if line is not None:
            return line, at
        at = lowered.find(tag, at + 1)
    return None


def _observations_bodies(text: str) -> Iterator[str]:
    """The bodies ``_OBSERVATIONS_BLOCK.findall(text)`` gives, in order, each found when asked for."""
    lowered = text.lower()
    if len(lowered) != len(text):
        yield from (match.group(1) for match in _OBSERVATIONS_BLOCK.finditer(text))
        return
    at = 0
    while (opening := _anchored_tag(lowered, "<observations>", at)) is not None:
        body = opening[1] + len("<observations>")
        # The closing line cannot start before the body: the opening tag's ">" is no line break. Later openings
        # cannot do better: a closing tag this body lacks, theirs lack too.
        closing = _anchored_tag(lowered, "</observations>", body)
        if closing is None:
            return
        yield text[body : closing[0]]
        at = closing[1] + len("</observations>")


def _observations_body(text: str) -> str | None:
    """``_OBSERVATIONS_BLOCK.search(text).group(1)``, or None where it finds no block."""
    return next(_observations_bodies(text), None)


def _thread_blocks(text: str) -> list[tuple[str, str]]:
    """``_THREAD_BLOCK.findall(text)``: each ``<thread id="...">`` block's id and body."""
    lowered = text.lower()
    if len(lowered) != len(text):
        return _THREAD_BLOCK.findall(text)
    blocks = []
    at = lowered.find("<thread")
    while at != -1:
        header = _THREAD_HEADER.match(text, at)
        if header is None:
            at = lowered.find("<thread", at + 1)
            continue
        closing = lowered.find("</thread>", header.end())
        if closing == -1:
            break  # no later block can close either
        blocks.append((header.group(1), text[header.end() : closing]))
        at = lowered.find("<thread", closing + len("</thread>"))
    return blocks


def _observation_blocks(text: str) -> str | None:
    """All line-anchored ``<observations>`` blocks, each trimmed, empty ones dropped, joined with ``\\n``.
    None when there is no such block at all (the caller then falls back)."""
    matches = list(_observations_bodies(text))
    if not matches:
        return None
    return "\n".join(body for body in map(js_trim, matches) if body)


def has_observations_block(text: str) -> bool:
    """Whether ``text`` holds a complete, line-anchored ``<observations>`` ... ``</observations>`` block.

    A reply cut off by an output limit opens the block and never closes it; parsers then fall back to its list
    lines, which keeps the bullets but drops ``Date:`` headers and ``<thread>`` blocks.
    """
    return _observations_body(text) is not None


def count_observation_lines(text: str) -> int:
    """How many lines are observations in the format the Observer and Reflector write.

    Such a line opens with a priority marker (🔴 🟡 🟢 ✅), optionally after a list bullet and indentation:
    ``* 🔴 (09:12) User stated ...``. ``Date:`` headers, ``* ->`` sub-steps, tags and prose do not count.

    Args:
        text: Observation text (or a model's answer).

    Returns:
        The number of observation lines.
    """
    return len(_OBSERVATION_LINE.findall(text))


def has_observation_lines(text: str) -> bool:
    """Whether any line of ``text`` is an observation (:func:`count_observation_lines` above 0, found at the
    first one: the Reflector's checks ask this of a whole memory and of each answer)."""
    return _OBSERVATION_LINE.search(text) is not None


def extract_list_items(text: str) -> str:
    """Keep only list lines (``- ``, ``* ``, ``N. ``; indentation allowed), the missing-tags fallback.

    Args:
        text: Model output without a usable ``<observations>`` block.

    Returns:
        The list lines joined with ``\\n`` and trimmed ("" when there are none). Lines are split on ``\\n``
        only, so a CRLF line keeps its CR.
    """
    return js_trim("\n".join(line for line in text.split("\n") if _LIST_ITEM.match(line)))


# --------------------------------------------------------------------------- 1.27+ hint sections


@lru_cache(maxsize=16)
def _tag(tag: str) -> re.Pattern[str]:
    return re.compile(rf"<{tag}>(.*?)</{tag}>", _FLAGS)


@lru_cache(maxsize=16)
def _tag_section(tag: str) -> re.Pattern[str]:
    return re.compile(rf"[ \t]*<{tag}>.*?</{tag}>[{WS}]*", _FLAGS)


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")  # JSON.parse refuses NaN and Infinity


def _json(text: str) -> object:
    return json.loads(text, parse_constant=_reject_constant)


def _hint_value(raw: str) -> str:
    """A tag's trimmed text; decoded when it is a JSON string literal."""
    if _JSON_LIKE.match(raw):
        try:
            value = _json(raw)
        except ValueError:
            value = None
        if isinstance(value, str):
            return value
    return raw


def extracted_hints(text: str, tags: Sequence[str]) -> dict[str, str]:
    """The hint values a 1.27+ reply gives for ``tags``, as 1.31 records them.

    Per tag: a non-empty string in a JSON object inside ``<extracted-values>`` (the last such block wins); else the
    last ``<tag>…</tag>`` anywhere, trimmed, when not empty (a JSON string literal is decoded). Values of another
    type, and blocks that are not a JSON object, are skipped (1.31 logs them as extraction failures).
    """
    values: dict[str, str] = {}
    for match in _EXTRACTED_VALUES.finditer(text):
        body = js_trim(match.group(1))
        if not body or body.startswith(_EXTRACTED_VALUES_PLACEHOLDER):
            continue
        try:
            found = _json(body)
        except ValueError:
            continue
        if not isinstance(found, dict):
            continue
        for tag in tags:
            value = found.get(tag)
            if isinstance(value, str) and value:
                values[tag] = value
    for tag in tags:
        if tag in values:
            continue
        matches = _tag(tag).findall(text)
        raw = js_trim(matches[-1]) if matches else ""
        if raw:
            values[tag] = _hint_value(raw)
    return values


def strip_hint_sections(text: str, tags: Sequence[str]) -> str:
    """``text`` without any ``<extracted-values>`` block or ``tags`` section, wherever it sits: each goes with the
    spaces and tabs before it and all whitespace after it (so a section inside a line joins it to the next).

    No ``tags``, no change: 1.10 has no such sections. (1.31 would still cut ``<extracted-values>`` from a buffered
    reply, which asks for no hints; no model writes one unasked.)
    """
    if not tags:
        return text
    text = _EXTRACTED_VALUES_SECTION.sub("", text)
    for tag in tags:
        text = _tag_section(tag).sub("", text)
    return text


# --------------------------------------------------------------------------- Observer (§2.5)


def parse_observer_output(
    text: str, *, degenerate_strategy: DegenerateStrategy = "v1.10", hint_tags: Sequence[str] = ()
) -> ObserverOutput:
    """Parse one single-thread Observer response.

    Args:
        text: The model's raw output.
        degenerate_strategy: Which repetition detector to run first.
        hint_tags: 1.27+'s hint sections (:data:`CONTINUATION_HINT_TAGS`): read by :func:`extracted_hints` and cut
            out before the rest is parsed. Empty: 1.10's first line-anchored match.

    Returns:
        The parsed result; ``ObserverOutput("", degenerate=True)`` when the detector fired.
    """
    if detect_degenerate(text, degenerate_strategy):
        return ObserverOutput(observations="", degenerate=True)
    values = extracted_hints(text, hint_tags)
    text = strip_hint_sections(text, hint_tags)
    blocks = _observation_blocks(text)
    observations = blocks if blocks is not None else extract_list_items(text)
    return ObserverOutput(
        observations=sanitize_lines(observations),
        current_task=values.get("current-task") or _first_group(_CURRENT_TASK_ANCHORED, text),
        suggested_response=values.get("suggested-response") or _first_group(_SUGGESTED_RESPONSE_ANCHORED, text),
        thread_title=values.get("thread-title") or _first_group(_THREAD_TITLE_ANCHORED, text),
    )


def _take_tag(pattern: re.Pattern[str], block: str, observations: str) -> tuple[str | None, str]:
    """The first unanchored ``pattern`` tag of the thread block: (its trimmed contents or None, the observations
    without the tag's first occurrence). As in 1.10, a tag with nothing inside stays in the observations."""
    match = pattern.search(block)
    if match is None or not match.group(1):
        return None, observations
    return _non_empty(match.group(1)), pattern.sub("", observations, count=1)


def _parse_thread_block(block: str, hint_tags: Sequence[str]) -> ObserverOutput:
    values = extracted_hints(block, hint_tags)
    current_task, body = _take_tag(_CURRENT_TASK, block, strip_hint_sections(block, hint_tags))
    suggested_response, body = _take_tag(_SUGGESTED_RESPONSE, block, body)
    thread_title, body = _take_tag(_THREAD_TITLE, block, body)
    return ObserverOutput(
        observations=sanitize_lines(js_trim(body)),
        current_task=values.get("current-task") or current_task,
        suggested_response=values.get("suggested-response") or suggested_response,
        thread_title=values.get("thread-title") or thread_title,
    )


def parse_multi_thread_output(
    text: str, *, degenerate_strategy: DegenerateStrategy = "v1.10", hint_tags: Sequence[str] = ()
) -> MultiThreadOutput:
    """Parse one batched Observer response that covers several threads.

    Takes the first line-anchored ``<observations>`` block (or the whole output), then every
    ``<thread id="X">…</thread>`` block in it. In each, the first ``<current-task>``, ``<suggested-response>``
    and ``<thread-title>`` (no line anchoring) are extracted and, unless empty, removed; the trimmed, sanitised
    remainder is that thread's observations. Blocks with an empty body are skipped; a repeated id keeps the last
    block (at the first one's position). With ``hint_tags`` (1.27+) every hint section is cut from a block first and
    a hint read by :func:`extracted_hints` (the last match) wins.

    Args:
        text: The model's raw output.
        degenerate_strategy: Which repetition detector to run first.
        hint_tags: 1.27+'s hint sections (:data:`CONTINUATION_HINT_TAGS`).

    Returns:
        The per-thread results; ``MultiThreadOutput({}, degenerate=True)`` when the detector fired.
    """
    if detect_degenerate(text, degenerate_strategy):
        return MultiThreadOutput(threads={}, degenerate=True)
    block = _observations_body(text)
    scope = block if block is not None else text
    threads: dict[str, ObserverOutput] = {}
    for thread_id, body in _thread_blocks(scope):
        if body:
            threads[thread_id] = _parse_thread_block(body, hint_tags)
    return MultiThreadOutput(threads=threads)


# --------------------------------------------------------------------------- Reflector (§3.6)


def parse_reflector_output(
    text: str, *, degenerate_strategy: DegenerateStrategy = "v1.10", hint_tags: Sequence[str] = ()
) -> ReflectorOutput:
    """Parse one Reflector response.

    Observations come from the line-anchored ``<observations>`` blocks; without any, from the list lines; without
    those, the whole trimmed output (unlike the Observer, which would keep nothing). Anchor ids are stripped and
    lines sanitised (no trim after that, as in 1.10). Without ``hint_tags`` (1.10) ``<current-task>`` is ignored
    (per-thread metadata is preserved elsewhere) and the first ``<suggested-response>`` (unanchored) is returned.
    With them (1.27+) the hint sections are cut out first, and both hints are what 1.31 keeps for the thread: the
    values :func:`extracted_hints` reads.

    Args:
        text: The model's raw output.
        degenerate_strategy: Which repetition detector to run first.
        hint_tags: 1.27+'s hint sections (:data:`CONTINUATION_HINT_TAGS`).

    Returns:
        The parsed result; ``ReflectorOutput("", degenerate=True)`` when the detector fired.
    """
    if detect_degenerate(text, degenerate_strategy):
        return ReflectorOutput(observations="", degenerate=True)
    values = extracted_hints(text, hint_tags)
    body = strip_hint_sections(text, hint_tags)
    blocks = _observation_blocks(body)
    observations = blocks if blocks is not None else (extract_list_items(body) or js_trim(body))
    suggested = values.get("suggested-response") if hint_tags else _first_group(_SUGGESTED_RESPONSE, text)
    return ReflectorOutput(
        observations=sanitize_lines(strip_anchor_ids(observations)),
        suggested_response=suggested,
        current_task=values.get("current-task"),
    )


# --------------------------------------------------------------------------- one reading rule for a whole call


@dataclass(frozen=True, slots=True)
class ReplyReading:
    """How one call's replies are read: the repetition detector and 1.27+'s hint sections (none: 1.10's rules)."""

    degenerate_strategy: DegenerateStrategy = "v1.10"
    hint_tags: tuple[str, ...] = ()

    def observer(self, text: str) -> ObserverOutput:
        return parse_observer_output(text, degenerate_strategy=self.degenerate_strategy, hint_tags=self.hint_tags)

    def multi_thread(self, text: str) -> MultiThreadOutput:
        return parse_multi_thread_output(text, degenerate_strategy=self.degenerate_strategy, hint_tags=self.hint_tags)

    def reflector(self, text: str) -> ReflectorOutput:
        return parse_reflector_output(text, degenerate_strategy=self.degenerate_strategy, hint_tags=self.hint_tags)


#: 1.10's reading: its repetition detector and the first-match hints.
READING_1_10: Final = ReplyReading()
