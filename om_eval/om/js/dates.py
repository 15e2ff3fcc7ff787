"""``new Date(text)`` as V8 reads the date strings a model writes (the recall tool's ``before``/``after``).

V8 first tries ISO 8601 (``2026-03-06``, ``2026-03-06T10:00:00Z``), then a permissive legacy reader that takes
month names (``Mar 5, 2026``, ``13 December 2025``, ``March 2025``), numeric dates with slashes, dots or dashes
(``03/05/2026`` is month first, ``2025/01/03`` year first), a time with optional seconds and ``AM``/``PM``, and a
``Z``/``UTC``/``GMT`` or ``+hh:mm`` zone. Days past the month's end roll over (``2025-02-30`` is March 2) and
``24:00`` is the next midnight, as V8 does. Times without a zone are local time in JS: here they are read as UTC,
the zone om-eval's runs and its Node oracle use. ``None`` is JS's Invalid Date.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from om_eval.om.js.text import js_trim

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_ISO = re.compile(
    r"(?P<year>[+-]\d{6}|\d{4})(?:-(?P<month>\d{2})(?:-(?P<day>\d{2}))?)?"
    r"(?:T(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.(?P<fraction>\d{1,9}))?)?"
    r"(?P<zone>Z|[+-]\d{2}:\d{2})?)?"
)
_TIME = re.compile(r"(?<![\d.])(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.(?P<fraction>\d+))?)?"
                   r"(?:\s*(?P<half>am|pm))?")
_ZONE = re.compile(r"(?:\b(?:z|utc|gmt)\b|(?<=\d)z\b)(?P<offset>[+-]\d{2}:?\d{2})?|(?<=\s)(?P<bare>[+-]\d{2}:?\d{2})\b")
_WORD = re.compile(r"[a-z]+")
_NUMBER = re.compile(r"\d+")


def parse_js_date(text: str) -> datetime | None:
    """The instant ``new Date(text)`` gives, in UTC (see the module docstring), or ``None`` when it is invalid."""
    text = js_trim(text)
    match = _ISO.fullmatch(text)
    if match:
        return _iso(match)
    return _legacy(text.lower())


def _iso(match: re.Match[str]) -> datetime | None:
    parts = {k: v for k, v in match.groupdict().items() if v is not None}
    moment = _build(int(parts["year"]), int(parts.get("month", 1)), int(parts.get("day", 1)),
                    int(parts.get("hour", 0)), int(parts.get("minute", 0)), int(parts.get("second", 0)),
                    int(parts.get("fraction", "0")[:3].ljust(3, "0")), strict=True)
    zone = parts.get("zone")
    if moment is not None and zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        moment -= sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    return moment


def _build(year: int, month: int, day: int, hour: int, minute: int, second: int, millis: int, *,
           strict: bool = False) -> datetime | None:
    """The instant, with V8's tolerance: days up to 31 roll into the next month and 24:00:00 is the next day."""
    if not (1 <= month <= 12 and 1 <= day <= 31 and minute < 60 and second < 60):
        return None
    if hour > 24 or (hour == 24 and (minute or second or millis)):
        return None
    try:
        start = datetime(year, month, 1, tzinfo=UTC)
    except ValueError:
        return None
    moment = start + timedelta(days=day - 1, hours=hour, minutes=minute, seconds=second, milliseconds=millis)
    if strict and moment.month != month and hour != 24:
        return moment  # ISO dates past the month's end roll over in V8 as well
    return moment


def _legacy(text: str) -> datetime | None:
    offset = timedelta()
    zone = _ZONE.search(text)
    if zone:
        sign_text = zone["offset"] or zone["bare"]
        if sign_text:
            digits = sign_text[1:].replace(":", "")
            offset = (1 if sign_text[0] == "+" else -1) * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        text = text[:zone.start()] + " " + text[zone.end():]
    hour = minute = second = millis = 0
    time = _TIME.search(text)
    if time:
        hour, minute = int(time["hour"]), int(time["minute"])
        second = int(time["second"] or 0)
        millis = int((time["fraction"] or "0")[:3].ljust(3, "0"))
        if time["half"]:
            if hour > 12 or hour == 0:
                return None
            hour = hour % 12 + (12 if time["half"] == "pm" else 0)
        text = text[:time.start()] + " " + text[time.end():]
    month = None
    for word in _WORD.findall(text):
        if word[:3] in _MONTHS and month is None:
            month = _MONTHS.index(word[:3]) + 1
        elif word[:3] not in _WEEKDAYS and word not in ("t", "at", "of", "the"):
            return None
    numbers = _NUMBER.findall(text)
    if month is not None:
        if len(numbers) == 1:
            year, day = int(numbers[0]), 1
        elif len(numbers) == 2:
            first, second_number = numbers
            day, year = (int(first), int(second_number)) if len(second_number) >= 3 or int(first) <= 31 else \
                (int(second_number), int(first))
        else:
            return None
    elif len(numbers) == 3:
        if len(numbers[0]) >= 3:
            year, month, day = (int(n) for n in numbers)
        else:
            month, day, year = (int(n) for n in numbers)
    else:
        return None
    if year < 50 and len(str(year)) <= 2:
        year += 2000
    elif year < 100 and len(str(year)) <= 2:
        year += 1900
    moment = _build(year, month, day, hour, minute, second, millis)
    return None if moment is None else moment - offset
