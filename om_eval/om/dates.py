"""Relative-time annotation of observation text (reference §4.2) and boundary helpers.

Why: the Observer writes absolute dates ("Date: Dec 4, 2025", "(meaning Dec 7-8, 2025)"),
but the Actor reasons better about "3 days ago" and needs a hint that a planned event
whose date has passed probably happened. Mastra adds these annotations at injection time,
relative to the question date, so stored observations stay absolute and reusable.

This module also owns the message-boundary delimiter (reference §1.7 point 5) so that
`observations_as_of` can cut the observation log back to an earlier point in time.

Time-zone rule: dates parsed from text are naive wall-clock values. Any timezone-aware
input is converted to naive by dropping its tzinfo (no conversion), and a plain `date`
means midnight of that day.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta

__all__ = [
    "BOUNDARY_PATTERN",
    "annotate_observations",
    "format_boundary",
    "format_gap",
    "format_relative_time",
    "observations_as_of",
    "parse_boundary_timestamp",
    "parse_header_date",
    "parse_inline_date",
]

_DAY = timedelta(days=1)

_MONTH_NUMBERS: dict[str, int] = {}
for _number, _name in enumerate(
    [
        "january", "february", "march", "april", "may", "june",
        "july", "august", "september", "october", "november", "december",
    ],
    start=1,
):
    _MONTH_NUMBERS[_name] = _number
    _MONTH_NUMBERS[_name[:3]] = _number
_MONTH_NUMBERS["sept"] = 9

# Longest names first so "September" wins over "Sept" and "Sep".
_MONTH_NAMES = sorted(_MONTH_NUMBERS, key=len, reverse=True)
_MONTH_ANY_CASE = r"(?:" + "|".join(_MONTH_NAMES) + r")\b\.?"
_MONTH_CAPITALISED = r"(?:" + "|".join(n.capitalize() for n in _MONTH_NAMES) + r")\b\.?"

_HEADER_RE = re.compile(
    rf"^(?P<lead>Date:\s*)(?P<text>(?P<month>{_MONTH_CAPITALISED})\s+(?P<day>\d{{1,2}}),\s*(?P<year>\d{{4}}))"
    rf"(?P<trail>\s*)$"
)

# Inline strategies, tried in this order (reference §4.2).
_INLINE_DAY_RE = re.compile(
    rf"\b(?P<month>{_MONTH_ANY_CASE})\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{4}})\b",
    re.IGNORECASE,
)
_INLINE_RANGE_RE = re.compile(
    rf"\b(?P<month>{_MONTH_ANY_CASE})\s+(?P<day>\d{{1,2}})\s*[-\u2013]\s*\d{{1,2}},?\s+(?P<year>\d{{4}})\b",
    re.IGNORECASE,
)
# The look-behinds leave "<Month> to early <Month> YYYY" to the fourth strategy, which would
# otherwise be unreachable for its documented "[early]" form.
_INLINE_PART_RE = re.compile(
    rf"(?<!\bto\s)(?<!\bto-)\b(?P<part>early|mid|late)(?:[\s-]+to[\s-]+(?:early|mid|late))?[\s-]+"
    rf"(?P<month>{_MONTH_ANY_CASE}),?\s+(?P<year>\d{{4}})\b",
    re.IGNORECASE,
)
_INLINE_SPAN_RE = re.compile(
    rf"\b{_MONTH_ANY_CASE}\s+to\s+(?:early[\s-]+)?(?P<month>{_MONTH_ANY_CASE}),?\s+(?P<year>\d{{4}})\b",
    re.IGNORECASE,
)
_PART_DAYS = {"early": 7, "mid": 15, "late": 23}

_INLINE_ANNOTATION_RE = re.compile(
    r"\((?P<prefix>estimated|meaning)\s+(?P<text>[^()\n]*?\b\d{4})\)", re.IGNORECASE
)
_FUTURE_INTENT_RE = re.compile(
    r"\b(?:will\s+(?:be\s+)?\w+|plans?\s+to|planning\s+to|looking\s+forward\s+to|going\s+to"
    r"|intends?\s+to|wants?\s+to|needs?\s+to|about\s+to)\b",
    re.IGNORECASE,
)

BOUNDARY_PATTERN = re.compile(
    r"\n\n--- message boundary \((?P<iso>\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)\) ---\n\n"
)
"""Matches one message-boundary delimiter; group ``iso`` holds its timestamp."""


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


def _build_date(year: str, month: str, day: int) -> datetime | None:
    """Build a naive midnight datetime, or None when the parts do not form a real date."""
    try:
        return datetime(int(year), _MONTH_NUMBERS[month.lower().rstrip(".")], day)
    except (KeyError, ValueError):
        return None


def parse_header_date(line: str) -> datetime | None:
    """Parse a ``Date: <Month D, YYYY>`` header line.

    The month must be a capitalised full or three-letter name ("December", "Dec"; "Sept"
    too) and the comma is required. Trailing whitespace is tolerated; anything else on the
    line (such as an existing "(3 days ago)" annotation) makes it a non-header.

    Args:
        line: One line of observation text, without its newline.

    Returns:
        Midnight of the header date, or None if the line is not a valid header.
    """
    match = _HEADER_RE.match(line)
    if match is None:
        return None
    return _build_date(match["year"], match["month"], int(match["day"]))


def parse_inline_date(text: str) -> datetime | None:
    """Parse the text of an ``(estimated …)`` / ``(meaning …)`` annotation.

    Strategies, first success wins: ``Month D, YYYY``; ``Month D-D, YYYY`` (hyphen or en
    dash, first day); ``early|mid|late[-to-…] Month YYYY`` (day 7/15/23 from the first
    word); ``Month to [early] Month YYYY`` (1st of the second month). Matching is
    case-insensitive and may occur anywhere in `text` (e.g. "around Dec 4, 2025"). The
    third strategy ignores a part word directly after "to", so "December to early January
    2026" reaches the fourth strategy (Jan 1) instead of being read as "early January".

    Args:
        text: The annotation text, e.g. "Dec 7-8, 2025" or "late December 2025".

    Returns:
        Naive midnight of the parsed date, or None when no strategy yields a real date.
    """
    candidates: list[tuple[re.Pattern[str], str | None]] = [
        (_INLINE_DAY_RE, None),
        (_INLINE_RANGE_RE, None),
        (_INLINE_PART_RE, "part"),
        (_INLINE_SPAN_RE, "first"),
    ]
    for pattern, day_source in candidates:
        for match in pattern.finditer(text):
            if day_source is None:
                day = int(match["day"])
            elif day_source == "part":
                day = _PART_DAYS[match["part"].lower()]
            else:
                day = 1
            parsed = _build_date(match["year"], match["month"], day)
            if parsed is not None:
                return parsed
    return None


def _annotate_inline(line: str, now: datetime) -> str:
    """Rewrite every parseable inline estimated/meaning date on one line."""

    def rewrite(match: re.Match[str]) -> str:
        parsed = parse_inline_date(match["text"])
        if parsed is None:
            return match.group(0)
        note = format_relative_time(parsed, now)
        if parsed < now and _FUTURE_INTENT_RE.search(line[: match.start()]):
            note += ", likely already happened"
        return f"({match['prefix']} {match['text']} - {note})"

    return _INLINE_ANNOTATION_RE.sub(rewrite, line)


def annotate_observations(text: str, now: datetime | date) -> str:
    """Add relative-time annotations to observation text (reference §4.2).

    * ``Date: Dec 4, 2025`` headers become ``Date: Dec 4, 2025 (3 days ago)``.
    * Between consecutive headers a gap marker (see `format_gap`) is inserted with exactly
      one blank line on each side; blank lines already before the header are absorbed so
      no run of three or more newlines is produced.
    * ``(estimated …YYYY)`` / ``(meaning …YYYY)`` become ``(meaning … - <relative>)``,
      with ``, likely already happened`` added when the date is before `now` and the line
      text before the parenthesis states a future intent ("will visit", "plans to", ...).
      "Before now" is a strict wall-clock comparison, so a plan dated today (midnight) is
      already past once `now` is later that day.

    Unparseable dates are left untouched, and annotated output contains no further
    matches, so annotating twice with the same `now` changes nothing.

    Args:
        text: Observation text (lines separated by ``\\n``).
        now: The current date (in the benchmark, the question date).

    Returns:
        The annotated text.
    """
    current = _naive(now)
    out: list[str] = []
    previous_header: datetime | None = None
    for line in text.split("\n"):
        header = _HEADER_RE.match(line)
        header_date = _build_date(header["year"], header["month"], int(header["day"])) if header else None
        if header is None or header_date is None:
            out.append(_annotate_inline(line, current))
            continue
        gap = format_gap(previous_header, header_date) if previous_header else None
        if gap is not None:
            while out and not out[-1].strip():
                out.pop()
            out.extend(["", gap, ""])
        relative = format_relative_time(header_date, current)
        out.append(f"{header['lead']}{header['text']} ({relative}){header['trail']}")
        previous_header = header_date
    return "\n".join(out)


def format_boundary(at: datetime) -> str:
    """Format the message-boundary delimiter inserted between activated chunks.

    Args:
        at: The chunk's ``lastObservedAt``.

    Returns:
        ``"\\n\\n--- message boundary (<ISO>) ---\\n\\n"`` where ISO has millisecond precision
        and ends in ``Z`` for UTC-aware values (offset kept for other aware values, no
        suffix for naive ones).
    """
    if at.tzinfo is not None and at.utcoffset() == timedelta(0):
        iso = at.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"
    else:
        iso = at.isoformat(timespec="milliseconds")
    return f"\n\n--- message boundary ({iso}) ---\n\n"


def parse_boundary_timestamp(iso: str) -> datetime | None:
    """Parse a boundary timestamp (``Z`` suffix, numeric offset, or naive).

    Args:
        iso: The ISO 8601 text captured by `BOUNDARY_PATTERN`.

    Returns:
        The datetime (aware if the text carries a zone), or None if it is not valid ISO.
    """
    try:
        return datetime.fromisoformat(iso)
    except ValueError:
        return None


def _not_after(moment: datetime, as_of: datetime) -> bool:
    """Whether `moment` <= `as_of`; instants if both aware, wall clock otherwise."""
    if (moment.tzinfo is None) != (as_of.tzinfo is None):
        moment, as_of = moment.replace(tzinfo=None), as_of.replace(tzinfo=None)
    return moment <= as_of


def observations_as_of(text: str, as_of: datetime) -> str:
    """Cut active observations back to what had been observed by `as_of`.

    The text is split on message-boundary delimiters. The first chunk is always kept;
    each later chunk is kept when its delimiter's timestamp is <= `as_of` and is re-joined
    with its original delimiter. When both timestamps are aware they are compared as
    instants, otherwise as wall-clock times (tzinfo dropped). A chunk whose timestamp
    cannot be parsed is kept rather than silently lost.

    Args:
        text: Active observations, possibly containing boundary delimiters.
        as_of: The cut-off moment.

    Returns:
        The observations visible at `as_of`.
    """
    pieces: list[str] = []
    position = 0
    pending_delimiter = ""
    keep_pending = True
    for match in BOUNDARY_PATTERN.finditer(text):
        if keep_pending:
            pieces.append(pending_delimiter + text[position : match.start()])
        stamp = parse_boundary_timestamp(match["iso"])
        keep_pending = stamp is None or _not_after(stamp, as_of)
        pending_delimiter = match.group(0)
        position = match.end()
    if keep_pending:
        pieces.append(pending_delimiter + text[position:])
    return "".join(pieces)
