"""The line rules every Observer and Reflector reply goes through (om-reference §2.6, §2.7): over-long lines are cut,
and a reply that loops is detected.

Three repetition detectors, one per release read: 1.10's (a 200-character window sampler and a 50,000-character
line), 1.31's (1.10's plus 1.28's repeated-line share) and the reference's HEAD (more strategies, on sanitised
text). Lengths are UTF-16 code units and whitespace is JavaScript's, as in Mastra (:mod:`om_eval.om.js.text`).
Why a module of its own: these are checks on any reply, whatever its tags; :mod:`om_eval.om.parsing` reads the tags.

One deliberate departure: where 1.10 would cut a long line between the two halves of a surrogate pair (leaving a
lone surrogate no UTF-8 encoder accepts), the cut comes one unit earlier.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from om_eval.om.js.text import js_trim, utf16_len, utf16_prefix

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

# HEAD short-line loop: these short lines are structure, not content.
_XML_TAG_LINE = re.compile(r"^\s*</?[a-z][^>]*>\s*$", re.IGNORECASE)
_DATE_LINE = re.compile(r"^\s*Date:", re.IGNORECASE)


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
    if not _any_over_limit(lines, MAX_OBSERVATION_LINE_CHARS):
        return text
    return "\n".join(_cut_line(line) for line in lines)


def _over_limit(line: str, limit: int) -> bool:
    """``line.length > limit`` in UTF-16 code units (cheap for short lines)."""
    return len(line) > limit // 2 and utf16_len(line) > limit


def _any_over_limit(lines: list[str], limit: int) -> bool:
    """Whether any line is over ``limit`` UTF-16 units: no line is when even the longest has at most ``limit // 2``
    characters (a character is at most two units), which one pass of ``len`` settles for almost every reply."""
    return max(map(len, lines), default=0) > limit // 2 and any(_over_limit(line, limit) for line in lines)


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
    return _any_over_limit(text.split("\n"), MAX_SANE_LINE_CHARS)


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
