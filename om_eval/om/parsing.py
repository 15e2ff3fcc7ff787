"""Parsing Observer and Reflector output (om-reference §2.5–§2.7, §3.6).

Why a module of its own: the memory is only as good as what survives parsing. Mastra parses the models' XML-ish
output with a handful of regexes whose quirks shape the stored memory (tags must start a line, a missing
``<observations>`` wrapper keeps only list lines for the Observer but the whole text for the Reflector, over-long
lines are cut, looping output is rejected). Reproducing the scores means reproducing those quirks, so they live
here, in one place, with the version they come from.

The 1.10 rules are JavaScript's, and so are the details here (see `om_eval.om.jstext`): line breaks are not
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

One deliberate departure: where 1.10 would cut a long line between the two halves of a surrogate pair (leaving a
lone surrogate no UTF-8 encoder accepts), the cut comes one unit earlier.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final, Literal

from om_eval.om.anchors import strip_anchor_ids
from om_eval.om.jstext import LINE_START, WS, js_trim, utf16_len, utf16_prefix

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
    "is_degenerate",
    "is_degenerate_strict",
    "parse_multi_thread_output",
    "parse_observer_output",
    "parse_reflector_output",
    "sanitize_lines",
    "strip_hint_sections",
]

DegenerateStrategy = Literal["v1.10", "v1.31", "head"]

# --------------------------------------------------------------------------- constants (§2.6, §2.7)

#: Longer lines are cut to this many characters plus ``TRUNCATION_SUFFIX`` (§2.7).
MAX_OBSERVATION_LINE_CHARS: Final = 10_000
TRUNCATION_SUFFIX: Final = " … [truncated]"

#: The degenerate detectors only look at text at least this long.
DEGENERATE_MIN_CHARS: Final = 2_000
WINDOW_CHARS: Final = 200
#: About this many windows are sampled: ``step = max(1, len // WINDOW_SAMPLES)``.
WINDOW_SAMPLES: Final = 50
#: A verdict needs more than this many sampled windows.
MIN_WINDOWS: Final = 5
#: Degenerate when the share of repeated windows is above this.
MAX_DUPLICATE_WINDOW_RATIO: Final = 0.4
#: v1.10: a single line longer than this is degenerate.
MAX_SANE_LINE_CHARS: Final = 50_000

#: HEAD: lines of at least this many (trimmed) characters are "long" and feed the window and duplicate checks.
LONG_LINE_MIN_CHARS: Final = 24
#: HEAD duplicate-line strategy: needs at least this many long lines ...
MIN_DUPLICATE_LINES: Final = 20
#: ... and more than this share of them repeating an earlier line.
MAX_DUPLICATE_LINE_RATIO: Final = 0.5
#: HEAD: budget (characters, one maximum-size line) for bounded runs and for repeated short lines.
SHORT_LINE_BUDGET_CHARS: Final = MAX_OBSERVATION_LINE_CHARS

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
_THREAD_BLOCK = re.compile(rf'<thread[{WS}]+id="([^"]+)">(.*?)</thread>', _FLAGS)

# 1.27+ hint sections.
#: The continuation hints that 1.27+ reads as extractor sections (``observation.thread_title`` adds "thread-title").
CONTINUATION_HINT_TAGS: Final = ("current-task", "suggested-response")
_EXTRACTED_VALUES = re.compile(r"<extracted-values>(.*?)</extracted-values>", _FLAGS)
_EXTRACTED_VALUES_SECTION = re.compile(rf"[ \t]*<extracted-values>.*?</extracted-values>[{WS}]*", _FLAGS)
#: 1.31 skips an ``<extracted-values>`` block that still holds the placeholder of its own prompt.
_EXTRACTED_VALUES_PLACEHOLDER = "Write only the extracted values JSON object here."
#: A hint that looks like JSON is decoded first (a quoted string loses its quotes), as 1.31's value parser does.
_JSON_LIKE = re.compile(r"(?:[\[{\"-]|\d|true\b|false\b|null\b)", re.ASCII)

# HEAD short-line loop: these short lines are structure, not content.
_XML_TAG_LINE = re.compile(r"^\s*</?[a-z][^>]*>\s*$", re.IGNORECASE)
_DATE_LINE = re.compile(r"^\s*Date:", re.IGNORECASE)


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


# --------------------------------------------------------------------------- sanitising (§2.7)


def sanitize_lines(text: str) -> str:
    """Cut every line longer than ``MAX_OBSERVATION_LINE_CHARS`` and mark the cut.

    Lengths are UTF-16 code units, as in JS; lines are split on ``\\n`` only.

    Args:
        text: Observation text.

    Returns:
        The text with each over-long line replaced by its first 10 000 units plus `` … [truncated]`` (one unit
        fewer when the cut would split a surrogate pair).
    """
    if not text:
        return text
    lines = text.split("\n")
    if all(not _over_limit(line, MAX_OBSERVATION_LINE_CHARS) for line in lines):
        return text
    return "\n".join(_cut_line(line) for line in lines)


def _over_limit(line: str, limit: int) -> bool:
    """``line.length > limit`` in UTF-16 code units (cheap for short lines)."""
    return len(line) > limit // 2 and utf16_len(line) > limit


def _cut_line(line: str) -> str:
    if not _over_limit(line, MAX_OBSERVATION_LINE_CHARS):
        return line
    return utf16_prefix(line, MAX_OBSERVATION_LINE_CHARS) + TRUNCATION_SUFFIX


# --------------------------------------------------------------------------- degenerate detection (§2.6)


def _duplicate_window_ratio_exceeded(text: str) -> bool:
    """The 200-char window sampler shared by both detector versions (positions in UTF-16 code units, as in JS)."""
    units = text.encode("utf-16-le", "surrogatepass")
    length = len(units) // 2
    step = max(1, length // WINDOW_SAMPLES)
    seen: set[bytes] = set()
    total = duplicates = 0
    for start in range(0, length - WINDOW_CHARS + 1, step):
        window = units[2 * start : 2 * (start + WINDOW_CHARS)]
        total += 1
        if window in seen:
            duplicates += 1
        else:
            seen.add(window)
    return total > MIN_WINDOWS and duplicates / total > MAX_DUPLICATE_WINDOW_RATIO


def is_degenerate(text: str) -> bool:
    """Repetition-loop detector of Mastra 1.5–1.10 (runs on the raw output).

    Text shorter than 2000 characters is never degenerate. Otherwise about 50 windows of 200 characters are
    sampled (``step = max(1, len // 50)``); the text is degenerate when more than 5 windows were sampled and
    more than 40 % of them repeat an earlier window exactly, or when any single line exceeds 50 000 characters.
    Characters are UTF-16 code units, as in JS.

    Args:
        text: The model's raw output.

    Returns:
        True when the output looks like a repetition loop.
    """
    if utf16_len(text) < DEGENERATE_MIN_CHARS:
        return False
    if _duplicate_window_ratio_exceeded(text):
        return True
    return any(_over_limit(line, MAX_SANE_LINE_CHARS) for line in text.split("\n"))


def _collapse_bounded_runs(lines: list[str]) -> list[str]:
    """HEAD pre-collapse: a run of identical lines becomes one line when it is that line's only run and
    ``count * (len + 1) <= 10 000`` (a faithful summary of repetitive tool output, not a loop)."""
    runs: list[tuple[str, int]] = []
    for line in lines:
        if runs and runs[-1][0] == line:
            runs[-1] = (line, runs[-1][1] + 1)
        else:
            runs.append((line, 1))
    runs_per_line: dict[str, int] = {}
    for line, _ in runs:
        runs_per_line[line] = runs_per_line.get(line, 0) + 1
    collapsed: list[str] = []
    for line, count in runs:
        bounded = runs_per_line[line] == 1 and count * (len(line) + 1) <= SHORT_LINE_BUDGET_CHARS
        collapsed.extend([line] if bounded else [line] * count)
    return collapsed


def _is_long_line(line: str) -> bool:
    return len(line.strip()) >= LONG_LINE_MIN_CHARS


def _window_strategy(lines: list[str]) -> bool:
    """HEAD window strategy: the window sampler over the long lines (each at most 10 000 chars) only."""
    window_text = "\n".join(line for line in lines if _is_long_line(line) and len(line) <= MAX_OBSERVATION_LINE_CHARS)
    return len(window_text) >= DEGENERATE_MIN_CHARS and _duplicate_window_ratio_exceeded(window_text)


def _duplicate_line_strategy(lines: list[str]) -> bool:
    """HEAD duplicate-line strategy: >= 20 long lines and more than half repeat an earlier one exactly."""
    long_lines = [line for line in lines if _is_long_line(line)]
    if len(long_lines) < MIN_DUPLICATE_LINES:
        return False
    duplicates = len(long_lines) - len(set(long_lines))
    return duplicates / len(long_lines) > MAX_DUPLICATE_LINE_RATIO


def _repeated_short_chars(run: dict[str, tuple[int, int]]) -> int:
    """Joined length of the repeated short lines of one run: sum of ``len + 1`` over their occurrences, - 1."""
    total = sum(chars for count, chars in run.values() if count > 1)
    return total - 1


def _short_line_loop_strategy(lines: list[str]) -> bool:
    """HEAD short-line loop: within each run of short lines, the repeated ones may not exceed one maximum-size
    line. Lines are keyed by their trimmed text but measured with their indentation. XML-tag and ``Date:``
    lines are skipped; every long line ends the run."""
    run: dict[str, tuple[int, int]] = {}
    for line in lines:
        if _is_long_line(line):
            if _repeated_short_chars(run) > SHORT_LINE_BUDGET_CHARS:
                return True
            run = {}
            continue
        if _XML_TAG_LINE.match(line) or _DATE_LINE.match(line):
            continue
        key = line.strip()
        count, chars = run.get(key, (0, 0))
        run[key] = (count + 1, chars + len(line) + 1)
    return _repeated_short_chars(run) > SHORT_LINE_BUDGET_CHARS


def is_degenerate_strict(text: str) -> bool:
    """Repetition-loop detector of Mastra HEAD (three strategies on line-sanitised text).

    After sanitising (§2.7) and collapsing bounded runs of identical lines, the output is degenerate when any
    of these fires: the window sampler over long lines (>= 24 trimmed chars, <= 10 000 chars); the
    duplicate-line ratio (>= 20 long lines, > 50 % exact repeats); the short-line loop (repeated short lines
    of one run joined exceed 10 000 chars). Unlike v1.10, a single giant line is not degenerate: it is cut.

    Args:
        text: The model's raw output.

    Returns:
        True when the output looks like a repetition loop.
    """
    sanitized = sanitize_lines(text)
    if len(sanitized) < DEGENERATE_MIN_CHARS:
        return False
    lines = _collapse_bounded_runs(sanitized.split("\n"))
    return _window_strategy(lines) or _duplicate_line_strategy(lines) or _short_line_loop_strategy(lines)


def is_degenerate_v1_31(text: str) -> bool:
    """Repetition-loop detector of Mastra 1.28-1.31: 1.10's two checks on the raw output, then the share of
    repeated lines.

    The third check closes the window sampler's blind spot (a long block repeated whole samples no two equal
    windows): among the lines of at least 24 characters once trimmed, the output is degenerate when there are at
    least 20 and more than half repeat an earlier one exactly. Lengths in UTF-16 code units, trimming as JS does.
    """
    if is_degenerate(text):
        return True
    if utf16_len(text) < DEGENERATE_MIN_CHARS:
        return False
    counted = [trimmed for line in text.split("\n") if utf16_len(trimmed := js_trim(line)) >= LONG_LINE_MIN_CHARS]
    if len(counted) < MIN_DUPLICATE_LINES:
        return False
    return (len(counted) - len(set(counted))) / len(counted) > MAX_DUPLICATE_LINE_RATIO


def detect_degenerate(text: str, strategy: DegenerateStrategy = "v1.10") -> bool:
    """Run the chosen degenerate-repetition detector.

    Args:
        text: The model's raw output.
        strategy: ``"v1.10"`` (benchmark-era, default), ``"v1.31"`` (1.28+, :func:`is_degenerate_v1_31`) or
            ``"head"`` (the three-strategy detector on sanitised text that om-reference §2.6 calls HEAD).

    Returns:
        True when the output looks like a repetition loop.

    Raises:
        ValueError: For an unknown strategy.
    """
    if strategy == "v1.10":
        return is_degenerate(text)
    if strategy == "v1.31":
        return is_degenerate_v1_31(text)
    if strategy == "head":
        return is_degenerate_strict(text)
    raise ValueError(f"unknown degenerate-detection strategy {strategy!r}")


# --------------------------------------------------------------------------- shared helpers


def _non_empty(value: str) -> str | None:
    stripped = js_trim(value)
    return stripped or None


def _first_group(pattern: re.Pattern[str], text: str) -> str | None:
    match = pattern.search(text)
    return _non_empty(match.group(1)) if match else None


def _observation_blocks(text: str) -> str | None:
    """All line-anchored ``<observations>`` blocks, each trimmed, empty ones dropped, joined with ``\\n``.
    None when there is no such block at all (the caller then falls back)."""
    matches = _OBSERVATIONS_BLOCK.findall(text)
    if not matches:
        return None
    return "\n".join(body for body in map(js_trim, matches) if body)


def has_observations_block(text: str) -> bool:
    """Whether ``text`` holds a complete, line-anchored ``<observations>`` ... ``</observations>`` block.

    A reply cut off by an output limit opens the block and never closes it; parsers then fall back to its list
    lines, which keeps the bullets but drops ``Date:`` headers and ``<thread>`` blocks.
    """
    return _OBSERVATIONS_BLOCK.search(text) is not None


def count_observation_lines(text: str) -> int:
    """How many lines are observations in the format the Observer and Reflector write.

    Such a line opens with a priority marker (🔴 🟡 🟢 ✅), optionally after a list bullet and indentation:
    ``* 🔴 (09:12) User stated ...``. ``Date:`` headers, ``* ->`` sub-steps, tags and prose do not count.

    Args:
        text: Observation text (or a model's answer).

    Returns:
        The number of observation lines.
    """
    return sum(1 for _ in _OBSERVATION_LINE.finditer(text))


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
    block = _OBSERVATIONS_BLOCK.search(text)
    scope = block.group(1) if block else text
    threads: dict[str, ObserverOutput] = {}
    for thread_id, body in _THREAD_BLOCK.findall(scope):
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
