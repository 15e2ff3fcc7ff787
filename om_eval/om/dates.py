"""Relative-time annotation of observation text (reference §4.2) and boundary helpers.

Why: the Observer writes absolute dates ("Date: Dec 4, 2025", "(meaning Dec 7-8, 2025)"),
but the Actor reasons better about "3 days ago" and needs a hint that a planned event
whose date has passed probably happened. Mastra adds these annotations at injection time,
relative to the question date, so stored observations stay absolute and reusable.

This module also owns the message-boundary delimiter (reference §1.7 point 5) so that
`observations_as_of` can cut the observation log back to an earlier point in time.

Every rule here is Mastra 1.10's, checked against the published package by
``tests/om/test_mastra_differential.py``, quirks included: a header must end its line
exactly (no trailing space), a day-and-month date needs a capitalised month word, only
the first candidate of each parsing strategy is tried, and a date is read the way V8's
``new Date("<Word> <D>, <YYYY>")`` reads it (any word starting with a month's first three
letters is that month, a day up to 31 rolls over into the next month, years 0-99 are
1950-2049).

Time-zone rule: dates parsed from text are naive wall-clock values. Any timezone-aware
input is converted to naive by dropping its tzinfo (no conversion), and a plain `date`
means midnight of that day. This equals Mastra running with ``TZ=UTC``; on a server in a
zone with daylight saving Mastra's whole-day counts can be an hour short across a
switch (one day less), which om-eval does not reproduce.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from om_eval.om.js.text import LINE_END, LINE_START, WS, js_trim

__all__ = [
    "BOUNDARY_PATTERN",
    "DateMark",
    "annotate_observations",
    "date_marks",
    "format_boundary",
    "format_gap",
    "format_relative_time",
    "mark_notes",
    "observations_as_of",
    "parse_boundary_timestamp",
    "parse_header_date",
    "parse_inline_date",
]

_DAY = timedelta(days=1)
_MONTH_PREFIXES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")

_ASCII = re.ASCII
_ASCII_NOCASE = re.ASCII | re.IGNORECASE

_HEADER_TEXT = r"[A-Z][a-z]+ [0-9]{1,2}, [0-9]{4}"
_HEADER_RE = re.compile(rf"{LINE_START}(?P<lead>Date:[{WS}]*)(?P<text>{_HEADER_TEXT}){LINE_END}", _ASCII)
_HEADER_LINE_RE = re.compile(rf"Date:[{WS}]*(?P<text>{_HEADER_TEXT})", _ASCII)
_HEADER_PARTS_RE = re.compile(r"(?P<word>[A-Za-z]+) (?P<day>[0-9]+), (?P<year>[0-9]+)", _ASCII)

# Inline strategies, tried in this order (reference §4.2); each looks at its first match only.
_INLINE_DAY_RE = re.compile(rf"([A-Z][a-z]+)[{WS}]+([0-9]{{1,2}}),?[{WS}]+([0-9]{{4}})", _ASCII)
_INLINE_RANGE_RE = re.compile(rf"([A-Z][a-z]+)[{WS}]+([0-9]{{1,2}})-[0-9]{{1,2}},?[{WS}]+([0-9]{{4}})", _ASCII)
_INLINE_PART_RE = re.compile(
    rf"(late|early|mid)[- ]?(?:to[- ]?(?:late|early|mid)[- ]?)?([A-Z][a-z]+)[{WS}]+([0-9]{{4}})", _ASCII_NOCASE
)
_INLINE_SPAN_RE = re.compile(
    rf"([A-Z][a-z]+)[{WS}]+to[{WS}]+(?:early[{WS}]+)?([A-Z][a-z]+)[{WS}]+([0-9]{{4}})", _ASCII_NOCASE
)
_PART_DAYS = {"early": 7, "mid": 15, "late": 23}

# The clause may span lines and hold "(": everything up to the first ")" that follows four digits.
_INLINE_ANNOTATION_RE = re.compile(rf"\((estimated|meaning)[{WS}]+([^)]+[0-9]{{4}})\)", _ASCII_NOCASE)
_FUTURE_INTENT_RE = re.compile(
    rf"\b(?:will[{WS}]+(?:be[{WS}]+)?\w+|plans?[{WS}]+to|planning[{WS}]+to|looking[{WS}]+forward[{WS}]+to"
    rf"|going[{WS}]+to|intends?[{WS}]+to|wants?[{WS}]+to|needs?[{WS}]+to|about[{WS}]+to)\b",
    _ASCII_NOCASE,
)

_ISO_UTC = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z"
BOUNDARY_PATTERN = re.compile(rf"\n{{2,}}--- message boundary \((?P<iso>{_ISO_UTC})\) ---\n{{2,}}", _ASCII)
"""Matches one message-boundary delimiter (as 1.10 splits on it); group ``iso`` holds its UTC timestamp."""
_ISO_PARTS = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})T(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})"
    r"(?:\.(?P<frac>[0-9]+))?Z",
    _ASCII,
)


def _naive(value: datetime | date) -> datetime:
    """Return `value` as a naive wall-clock datetime (dates become midnight)."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    return datetime.combine(value, time())


def _plural(count: int, unit: str) -> str:
    return f"{count} {unit}" if count == 1 else f"{count} {unit}s"


def _span_phrase(days: int) -> str:
    """Describe a non-negative whole-day span of at least 2 days ("3 days", "2 weeks"...)."""
    if days < 7:
        return _plural(days, "day")
    if days < 14:
        return "1 week"
    if days < 30:
        return _plural(days // 7, "week")
    if days < 60:
        return "1 month"
    if days < 365:
        return _plural(days // 30, "month")
    return _plural(days // 365, "year")


def format_relative_time(date: datetime | date, now: datetime | date) -> str:
    """Describe `date` relative to `now` ("today", "3 days ago", "in 2 weeks", ...).

    ``d = floor((now - date) / 1 day)`` on the exact time difference, as in Mastra 1.10. For future dates
    the floor of the negative difference is used, so anything up to one day ahead (even one hour later the
    same day) reads "tomorrow" and 36 hours ahead "in 2 days": this matches the reference exactly, which
    matters because the annotations are part of what the actor sees.

    Args:
        date: The date being described. Aware values lose their tzinfo; a `date` is midnight.
        now: The reference "current" date, treated the same way.

    Returns:
        A short English phrase such as "yesterday", "2 weeks ago", "in 1 month", "1 year ago".
    """
    days = (_naive(now) - _naive(date)) // _DAY
    if days >= 0:
        if days == 0:
            return "today"
        if days == 1:
            return "yesterday"
        return f"{_span_phrase(days)} ago"
    days_ahead = -days
    if days_ahead == 1:
        return "tomorrow"
    return f"in {_span_phrase(days_ahead)}"


def format_gap(previous: datetime | date, current: datetime | date) -> str | None:
    """Return the gap marker placed between two consecutive date headers.

    Args:
        previous: Date of the earlier header.
        current: Date of the later header.

    Returns:
        "[N days later]", "[1 week later]", "[N weeks later]", "[1 month later]" or
        "[N months later]" (months = floor(d / 30), also beyond a year), or None when the
        floored day difference ``d`` is at most 1 (including negative gaps).
    """
    days = (_naive(current) - _naive(previous)) // _DAY
    if days <= 1:
        return None
    if days < 7:
        return f"[{days} days later]"
    if days < 14:
        return "[1 week later]"
    if days < 30:
        return f"[{days // 7} weeks later]"
    if days < 60:
        return "[1 month later]"
    return f"[{days // 30} months later]"


def _read_date(word: str, first: int, second: int) -> datetime | None:
    """What V8's ``new Date("<word> <first>, <second>")`` gives (naive midnight), or None if invalid.

    The word names the month when it has at least three letters and they begin a month's name (any case,
    any ending: "Sept", "Decembre", "Mayday"). Of the two numbers the first is the day when it is 1-31,
    otherwise it is the year and the second is the day. Years 0-49 mean 2000-2049 and 50-99 mean 1950-1999.
    Days 1-31 are accepted for every month and roll over ("Feb 30, 2025" is March 2).
    """
    prefix = word[:3].lower()
    if len(word) < 3 or prefix not in _MONTH_PREFIXES:
        return None
    day, year = (first, second) if 1 <= first <= 31 else (second, first)
    if not 1 <= day <= 31:
        return None
    if year <= 49:
        year += 2000
    elif year <= 99:
        year += 1900
    return datetime(year, _MONTH_PREFIXES.index(prefix) + 1, 1) + (day - 1) * _DAY


def _header_date(text: str) -> datetime | None:
    parts = _HEADER_PARTS_RE.fullmatch(text)
    if parts is None:
        return None
    return _read_date(parts["word"], int(parts["day"]), int(parts["year"]))


def parse_header_date(line: str) -> datetime | None:
    """Parse a ``Date: <Month D, YYYY>`` header line.

    The month is a capitalised word (``[A-Z][a-z]+``) that V8 reads as a month, followed by
    exactly one space, the day, a comma, one space and a four-digit year; nothing may
    follow, not even a space. Anything else (such as an existing "(3 days ago)"
    annotation) makes the line a non-header.

    Args:
        line: One line of observation text, without its newline.

    Returns:
        Midnight of the header date, or None if the line is not a valid header.
    """
    match = _HEADER_LINE_RE.fullmatch(line)
    return _header_date(match["text"]) if match else None


def parse_inline_date(text: str) -> datetime | None:
    """Parse the text of an ``(estimated …)`` / ``(meaning …)`` annotation.

    Strategies, in order; each tries only its first match in `text`, and the next strategy
    runs when there is none or it is not a date:

    1. ``Month D, YYYY`` (capitalised month word, comma optional);
    2. ``Month D-D, YYYY`` (ASCII hyphen, no spaces; the first day);
    3. ``early|mid|late[-to-early|mid|late] Month YYYY``, any case, day 7/15/23 from the
       first word. It is not word-bounded ("chocolate March 2025" is late March) and it runs
       before strategy 4, so "December to early January 2026" is January 7;
    4. ``Month to [early] Month YYYY``, any case: the 1st of the second month.

    Args:
        text: The annotation text, e.g. "Dec 7-8, 2025" or "late December 2025".

    Returns:
        Naive midnight of the parsed date, or None when no strategy yields a date.
    """
    for pattern in (_INLINE_DAY_RE, _INLINE_RANGE_RE):
        match = pattern.search(text)
        if match and (parsed := _read_date(match[1], int(match[2]), int(match[3]))):
            return parsed
    match = _INLINE_PART_RE.search(text)
    if match and (parsed := _read_date(match[2], _PART_DAYS[match[1].lower()], int(match[3]))):
        return parsed
    match = _INLINE_SPAN_RE.search(text)
    if match:
        return _read_date(match[2], 1, int(match[3]))
    return None


def _annotate_inline(text: str, now: datetime) -> str:
    """Rewrite every parseable ``(estimated|meaning …YYYY)`` clause of the whole text."""

    def rewrite(match: re.Match[str]) -> str:
        prefix, content = match[1], match[2]
        parsed = parse_inline_date(content)
        if parsed is None:
            return match.group(0)
        note = format_relative_time(parsed, now)
        line_before = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
        if parsed < now and _FUTURE_INTENT_RE.search(line_before):
            note += ", likely already happened"
        return f"({prefix} {content} - {note})"

    return _INLINE_ANNOTATION_RE.sub(rewrite, text)


def annotate_observations(text: str, now: datetime | date) -> str:
    """Add relative-time annotations to observation text (reference §4.2).

    First every ``(estimated …YYYY)`` / ``(meaning …YYYY)`` clause whose text parses (see
    `parse_inline_date`) becomes ``(meaning … - <relative>)``, with ``, likely already
    happened`` added when the date is before `now` and the text of its line before the
    parenthesis states a future intent ("will visit", "plans to", ...). "Before now" is a
    strict wall-clock comparison, so a plan dated today (midnight) is already past once
    `now` is later that day. Unparseable clauses are left untouched.

    Then every header line ``Date: Dec 4, 2025`` (see `parse_header_date`; line breaks are
    LF, CR, U+2028 or U+2029) becomes ``Date: Dec 4, 2025 (3 days ago)``, and before each
    header after the first valid one ``\\n<gap marker>\\n\\n`` is inserted when
    `format_gap` gives one, whatever blank lines already precede it.

    Args:
        text: Observation text.
        now: The current date (in the benchmark, the question date).

    Returns:
        The annotated text.
    """
    current = _naive(now)
    expanded = _annotate_inline(text, current)
    pieces: list[str] = []
    position = 0
    previous: datetime | None = None
    for match in _HEADER_RE.finditer(expanded):
        header_date = _header_date(match["text"])
        if header_date is None:
            continue
        pieces.append(expanded[position : match.start()])
        gap = format_gap(previous, header_date) if previous is not None else None
        if gap is not None:
            pieces.append(f"\n{gap}\n\n")
        pieces.append(f"{match['lead']}{match['text']} ({format_relative_time(header_date, current)})")
        position = match.end()
        previous = header_date
    pieces.append(expanded[position:])
    return "".join(pieces)


@dataclass(frozen=True)
class DateMark:
    """A place where :func:`annotate_observations` adds a note: a date header (its relative date after it, a gap
    marker before it) or an inline ``(estimated|meaning …)`` clause (its relative date inside it)."""

    start: int
    """Where it starts in the text."""
    note_at: int
    """Where its relative date goes: after a header, before an inline clause's closing parenthesis."""
    when: datetime
    header: bool
    gap: str | None = None
    """A header's gap marker (from the previous valid header), or None."""
    future: bool = False
    """An inline clause whose line states a future intent before it."""


def date_marks(text: str, start: int = 0, previous: datetime | None = None) -> list[DateMark]:
    """The marks of ``text`` from ``start`` on (``previous``: the last valid header's date before ``start``), so a
    caller whose text grows reads only what was added. :func:`mark_notes` gives what annotating adds for them."""
    marks = []
    for match in _INLINE_ANNOTATION_RE.finditer(text, start):
        parsed = parse_inline_date(match[2])
        if parsed is not None:
            line_before = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
            marks.append(DateMark(match.start(), match.end() - 1, parsed, False,
                                  future=bool(_FUTURE_INTENT_RE.search(line_before))))
    for match in _HEADER_RE.finditer(text, start):
        header_date = _header_date(match["text"])
        if header_date is None:
            continue
        gap = format_gap(previous, header_date) if previous is not None else None
        marks.append(DateMark(match.start(), match.end(), header_date, True, gap))
        previous = header_date
    return sorted(marks, key=lambda mark: mark.start)


def mark_notes(marks: Iterable[DateMark], now: datetime | date) -> list[str]:
    """The pieces :func:`annotate_observations` inserts at ``marks`` on ``now``: relative dates and gap markers."""
    current = _naive(now)
    notes = []
    for mark in marks:
        relative = format_relative_time(mark.when, current)
        if mark.header:
            notes += [f"\n{mark.gap}\n\n", f" ({relative})"] if mark.gap is not None else [f" ({relative})"]
        else:
            late = ", likely already happened" if mark.future and mark.when < current else ""
            notes.append(f" - {relative}{late}")
    return notes


def _utc(moment: datetime) -> datetime:
    """`moment` as an aware UTC datetime; a naive value is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def format_boundary(at: datetime) -> str:
    """Format the message-boundary delimiter inserted between activated chunks.

    Args:
        at: The chunk's ``lastObservedAt``. A naive value is read as UTC (om-eval's wall-clock
            convention); an aware one is converted to UTC.

    Returns:
        ``"\\n\\n--- message boundary (<ISO>) ---\\n\\n"`` where ISO is what JS ``toISOString()``
        writes: UTC, millisecond precision, ``Z`` suffix.
    """
    iso = _utc(at).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"
    return f"\n\n--- message boundary ({iso}) ---\n\n"


def parse_boundary_timestamp(iso: str) -> datetime | None:
    """Parse a boundary timestamp the way JS ``new Date(iso)`` does.

    Args:
        iso: ``YYYY-MM-DDTHH:MM:SS[.fraction]Z`` as captured by `BOUNDARY_PATTERN`.

    Returns:
        An aware UTC datetime, or None when JS would give an invalid date. Like JS, a day up to
        31 rolls over into the next month, ``24:00:00`` is the next midnight and the fraction is cut
        to milliseconds; year 0 (before anything Python can hold) becomes the earliest datetime.
    """
    parts = _ISO_PARTS.fullmatch(iso)
    if parts is None:
        return None
    year, month, day = int(parts["y"]), int(parts["mo"]), int(parts["d"])
    hour, minute, second = int(parts["h"]), int(parts["mi"]), int(parts["s"])
    millis = int((parts["frac"] or "0")[:3].ljust(3, "0"))
    if not (1 <= month <= 12 and 1 <= day <= 31 and minute <= 59 and second <= 59):
        return None
    if hour > 24 or (hour == 24 and (minute or second or millis)):
        return None
    if year == 0:
        return datetime.min.replace(tzinfo=UTC)
    offset = timedelta(days=day - 1, hours=hour, minutes=minute, seconds=second, milliseconds=millis)
    try:
        return datetime(year, month, 1, tzinfo=UTC) + offset
    except OverflowError:
        return datetime.max.replace(tzinfo=UTC)


def _not_after(moment: datetime, as_of: datetime) -> bool:
    """Whether the UTC boundary `moment` <= `as_of` (a naive `as_of` is wall clock, i.e. UTC)."""
    if as_of.tzinfo is None:
        return moment.replace(tzinfo=None) <= as_of
    return moment <= as_of


def observations_as_of(text: str, as_of: datetime) -> str:
    """Cut active observations back to what had been observed by `as_of` (1.10 ``getObservationsAsOf``).

    The trimmed text is split on message-boundary delimiters. The first chunk is always kept;
    each later chunk is kept when its delimiter's timestamp is <= `as_of`, and dropped when the
    timestamp is not a valid date. Kept chunks are trimmed, empty ones dropped, and the rest
    joined with a blank line (the delimiters are not kept).

    Args:
        text: Active observations, possibly containing boundary delimiters.
        as_of: The cut-off moment (naive: wall clock, compared with the boundaries' UTC time).

    Returns:
        The observations visible at `as_of`.
    """
    trimmed = js_trim(text)
    if not trimmed:
        return ""
    parts = BOUNDARY_PATTERN.split(trimmed)
    kept = [js_trim(parts[0])] if js_trim(parts[0]) else []
    for index in range(1, len(parts), 2):
        chunk = js_trim(parts[index + 1])
        stamp = parse_boundary_timestamp(parts[index])
        if chunk and stamp is not None and _not_after(stamp, as_of):
            kept.append(chunk)
    return "\n\n".join(kept)
