"""Tests for om_eval.om.dates (reference §4.2 relative-time annotation, §1.7 boundaries)."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.om.dates import (
    BOUNDARY_PATTERN,
    annotate_observations,
    format_boundary,
    format_gap,
    format_relative_time,
    observations_as_of,
    parse_boundary_timestamp,
    parse_header_date,
    parse_inline_date,
)

NOW = datetime(2025, 12, 8, 10, 30)
BASE = datetime(2025, 1, 1)

# --------------------------------------------------------------------------- format_relative_time


@pytest.mark.parametrize(
    ("days", "expected"),
    [
        (0, "today"),
        (1, "yesterday"),
        (2, "2 days ago"),
        (6, "6 days ago"),
        (7, "1 week ago"),
        (13, "1 week ago"),
        (14, "2 weeks ago"),
        (29, "4 weeks ago"),
        (30, "1 month ago"),
        (59, "1 month ago"),
        (60, "2 months ago"),
        (364, "12 months ago"),
        (365, "1 year ago"),
        (729, "1 year ago"),
        (730, "2 years ago"),
        (3650, "10 years ago"),
    ],
)
def test_relative_past_buckets(days: int, expected: str) -> None:
    assert format_relative_time(BASE, BASE + timedelta(days=days)) == expected


@pytest.mark.parametrize(
    ("days", "expected"),
    [
        (1, "tomorrow"),
        (2, "in 2 days"),
        (6, "in 6 days"),
        (7, "in 1 week"),
        (13, "in 1 week"),
        (14, "in 2 weeks"),
        (29, "in 4 weeks"),
        (30, "in 1 month"),
        (59, "in 1 month"),
        (60, "in 2 months"),
        (364, "in 12 months"),
        (365, "in 1 year"),
        (730, "in 2 years"),
    ],
)
def test_relative_future_buckets(days: int, expected: str) -> None:
    assert format_relative_time(BASE + timedelta(days=days), BASE) == expected


def test_relative_uses_exact_time_difference_not_calendar_days() -> None:
    # 23 hours ago crosses midnight but is not a full day: still "today".
    assert format_relative_time(datetime(2025, 3, 1, 23), datetime(2025, 3, 2, 22)) == "today"
    assert format_relative_time(datetime(2025, 3, 1, 10), datetime(2025, 3, 2, 10)) == "yesterday"
    # 47 hours -> floor 1 day.
    assert format_relative_time(datetime(2025, 3, 1, 0), datetime(2025, 3, 2, 23)) == "yesterday"


def test_relative_future_floors_the_negative_difference_like_mastra() -> None:
    # Mastra 1.10 floors (now - date) / day, so even one hour ahead is "tomorrow".
    assert format_relative_time(datetime(2025, 3, 1, 18), datetime(2025, 3, 1, 9)) == "tomorrow"
    assert format_relative_time(datetime(2025, 3, 2), datetime(2025, 3, 1, 0, 1)) == "tomorrow"
    # 36 hours ahead -> floor(-1.5) = -2 -> "in 2 days".
    assert format_relative_time(datetime(2025, 3, 2, 12), datetime(2025, 3, 1)) == "in 2 days"
    # Exactly 24 hours ahead -> "tomorrow"; exactly 48 -> "in 2 days".
    assert format_relative_time(datetime(2025, 3, 2), datetime(2025, 3, 1)) == "tomorrow"
    assert format_relative_time(datetime(2025, 3, 3), datetime(2025, 3, 1)) == "in 2 days"


def test_relative_accepts_dates_and_drops_timezones() -> None:
    assert format_relative_time(date(2025, 3, 1), date(2025, 3, 4)) == "3 days ago"
    assert format_relative_time(date(2025, 3, 1), datetime(2025, 3, 1, 23, 59)) == "today"
    aware_now = datetime(2025, 3, 2, 1, tzinfo=timezone(timedelta(hours=-8)))
    # Wall clock comparison: 01:00 on Mar 2 vs midnight Mar 1 -> 1 day, no UTC conversion.
    assert format_relative_time(datetime(2025, 3, 1), aware_now) == "yesterday"
    aware_date = datetime(2025, 3, 1, tzinfo=timezone.utc)
    assert format_relative_time(aware_date, datetime(2025, 3, 8)) == "1 week ago"


# --------------------------------------------------------------------------- format_gap


@pytest.mark.parametrize(
    ("days", "expected"),
    [
        (-5, None),
        (0, None),
        (1, None),
        (2, "[2 days later]"),
        (6, "[6 days later]"),
        (7, "[1 week later]"),
        (13, "[1 week later]"),
        (14, "[2 weeks later]"),
        (29, "[4 weeks later]"),
        (30, "[1 month later]"),
        (59, "[1 month later]"),
        (60, "[2 months later]"),
        (364, "[12 months later]"),
        (400, "[13 months later]"),
    ],
)
def test_gap_buckets(days: int, expected: str | None) -> None:
    assert format_gap(BASE, BASE + timedelta(days=days)) == expected


def test_gap_floors_partial_days() -> None:
    assert format_gap(datetime(2025, 1, 1), datetime(2025, 1, 3, 23)) == "[2 days later]"
    assert format_gap(datetime(2025, 1, 1, 1), datetime(2025, 1, 3)) is None
    assert format_gap(date(2025, 1, 1), date(2025, 1, 10)) == "[1 week later]"


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Date: Dec 4, 2025", datetime(2025, 12, 4)),
        ("Date: December 4, 2025", datetime(2025, 12, 4)),
        ("Date:Dec 4, 2025", datetime(2025, 12, 4)),
        ("Date:   Sept 30, 2024  ", datetime(2024, 9, 30)),
        ("Date: May 1, 2023", datetime(2023, 5, 1)),
    ],
)
def test_parse_header_date_valid(line: str, expected: datetime) -> None:
    assert parse_header_date(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        "Date: dec 4, 2025",  # month must be capitalised
        "Date: DEC 4, 2025",
        "Date: Dec 4 2025",  # comma required
        "Date: Dec 4, 2025 (3 days ago)",  # already annotated
        " Date: Dec 4, 2025",  # must start the line
        "date: Dec 4, 2025",
        "Date: Foo 4, 2025",
        "Date: Feb 30, 2025",  # not a real day
        "* Date: Dec 4, 2025",
        "",
    ],
)
def test_parse_header_date_rejects(line: str) -> None:
    assert parse_header_date(line) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Strategy 1: Month D, YYYY
        ("Dec 4, 2025", datetime(2025, 12, 4)),
        ("December 4, 2025", datetime(2025, 12, 4)),
        ("around Jan 15, 2026", datetime(2026, 1, 15)),
        ("March 3rd, 2024", datetime(2024, 3, 3)),
        # Strategy 2: Month D-D, YYYY -> first day
        ("Dec 7-8, 2025", datetime(2025, 12, 7)),
        ("Dec 7\u20138, 2025", datetime(2025, 12, 7)),
        ("the weekend of Jan 18 - 19, 2026", datetime(2026, 1, 18)),
        # Strategy 3: early|mid|late[-to-...] Month YYYY -> 7/15/23
        ("early December 2025", datetime(2025, 12, 7)),
        ("mid-December 2025", datetime(2025, 12, 15)),
        ("late Dec 2025", datetime(2025, 12, 23)),
        ("mid-to-late March 2026", datetime(2026, 3, 15)),
        ("early to mid June 2025", datetime(2025, 6, 7)),
        ("Late February 2024", datetime(2024, 2, 23)),
        # Strategy 4: Month to [early] Month YYYY -> 1st of the second month
        ("December to January 2026", datetime(2026, 1, 1)),
        ("December to early January 2026", datetime(2026, 1, 1)),
        ("Dec to early-Jan 2026", datetime(2026, 1, 1)),
        ("Nov to Dec 2025", datetime(2025, 12, 1)),
    ],
)
def test_parse_inline_date_strategies(text: str, expected: datetime) -> None:
    assert parse_inline_date(text) == expected


def test_parse_inline_part_word_after_to_is_left_to_span_strategy() -> None:
    # Strategy 3 alone would read "early January 2026" as Jan 7.
    assert parse_inline_date("early January 2026") == datetime(2026, 1, 7)
    assert parse_inline_date("December to early January 2026") == datetime(2026, 1, 1)
    # "mid-to-late" still uses the first word.
    assert parse_inline_date("mid-to-late January 2026") == datetime(2026, 1, 15)


def test_parse_inline_strategy_order() -> None:
    # A specific day wins over a part-of-month phrase appearing earlier in the text.
    assert parse_inline_date("late Nov or Dec 2, 2025") == datetime(2025, 12, 2)


@pytest.mark.parametrize(
    "text",
    ["2025", "sometime in 2025", "December 2025", "Feb 30, 2025", "Smarch 4, 2025", "next week", ""],
)
def test_parse_inline_date_unparseable(text: str) -> None:
    assert parse_inline_date(text) is None


# --------------------------------------------------------------------------- annotate: headers


def test_header_annotated_with_relative_time() -> None:
    text = "Date: Dec 4, 2025\n* 🔴 (14:30) User likes tea"
    assert annotate_observations(text, datetime(2025, 12, 7, 9)) == (
        "Date: Dec 4, 2025 (3 days ago)\n* 🔴 (14:30) User likes tea"
    )


def test_header_keeps_original_month_spelling() -> None:
    out = annotate_observations("Date: December 4, 2025", date(2025, 12, 4))
    assert out == "Date: December 4, 2025 (today)"


def test_gap_marker_between_headers_with_existing_blank_line() -> None:
    text = "Date: Dec 1, 2025\n* a\n\nDate: Dec 4, 2025\n* b"
    assert annotate_observations(text, datetime(2025, 12, 8, 12)) == (
        "Date: Dec 1, 2025 (1 week ago)\n* a\n\n[3 days later]\n\nDate: Dec 4, 2025 (4 days ago)\n* b"
    )


def test_gap_marker_between_headers_without_blank_line() -> None:
    text = "Date: Dec 1, 2025\n* a\nDate: Dec 20, 2025\n* b"
    out = annotate_observations(text, datetime(2025, 12, 20))
    assert out == (
        "Date: Dec 1, 2025 (2 weeks ago)\n* a\n\n[2 weeks later]\n\nDate: Dec 20, 2025 (today)\n* b"
    )


def test_gap_marker_collapses_extra_blank_lines() -> None:
    text = "Date: Jan 1, 2025\n* a\n\n\n\nDate: Mar 15, 2025\n* b"
    out = annotate_observations(text, datetime(2025, 3, 20))
    assert "\n\n\n" not in out
    assert "* a\n\n[2 months later]\n\nDate: Mar 15, 2025 (5 days ago)" in out


def test_no_gap_marker_for_adjacent_days() -> None:
    text = "Date: Dec 1, 2025\n* a\n\nDate: Dec 2, 2025\n* b"
    out = annotate_observations(text, datetime(2025, 12, 3))
    assert out == "Date: Dec 1, 2025 (2 days ago)\n* a\n\nDate: Dec 2, 2025 (yesterday)\n* b"


def test_gaps_between_each_consecutive_pair() -> None:
    text = "Date: Jan 1, 2025\n* a\n\nDate: Jan 10, 2025\n* b\n\nDate: Jan 12, 2025\n* c"
    out = annotate_observations(text, datetime(2025, 2, 1))
    assert out.count("[1 week later]") == 1
    assert out.count("[2 days later]") == 1
    assert out.index("[1 week later]") < out.index("Date: Jan 10") < out.index("[2 days later]")


def test_gap_after_message_boundary() -> None:
    text = "Date: Jan 1, 2025\n* a" + format_boundary(datetime(2025, 1, 5, tzinfo=timezone.utc))
    text += "Date: Jan 5, 2025\n* b"
    out = annotate_observations(text, datetime(2025, 1, 6))
    assert "--- message boundary (2025-01-05T00:00:00.000Z) ---\n\n[4 days later]\n\nDate: Jan 5" in out
    assert len(BOUNDARY_PATTERN.findall(out)) == 1


def test_invalid_header_left_unchanged_and_not_used_for_gaps() -> None:
    text = "Date: Jan 1, 2025\nDate: Feb 30, 2025\nDate: Jan 3, 2025"
    out = annotate_observations(text, datetime(2025, 1, 3))
    assert out == (
        "Date: Jan 1, 2025 (2 days ago)\nDate: Feb 30, 2025\n\n[2 days later]\n\nDate: Jan 3, 2025 (today)"
    )


# --------------------------------------------------------------------------- annotate: inline


def test_spec_example_likely_already_happened() -> None:
    line = "* 🟡 (09:15) User will tour the tile museum with Ana. (meaning Dec 7-8, 2025)"
    expected = (
        "* 🟡 (09:15) User will tour the tile museum with Ana. "
        "(meaning Dec 7-8, 2025 - yesterday, likely already happened)"
    )
    # "yesterday" holds for any time on Dec 8 (Dec 7 00:00 is 1 to <2 days before).
    assert annotate_observations(line, datetime(2025, 12, 8, 0, 0)) == expected
    assert annotate_observations(line, datetime(2025, 12, 8, 23, 59)) == expected
    assert "2 days ago, likely already happened" in annotate_observations(line, date(2025, 12, 9))


@pytest.mark.parametrize(
    "intent",
    [
        "will attend",
        "will be moving",
        "plans to",
        "plan to",
        "is planning to",
        "is looking forward to",
        "is going to",
        "intends to",
        "intend to",
        "wants to",
        "want to",
        "needs to",
        "need to",
        "is about to",
        "WILL START",
    ],
)
def test_future_intent_patterns(intent: str) -> None:
    line = f"User {intent} the trip. (estimated Nov 1, 2025)"
    out = annotate_observations(line, NOW)
    assert out.endswith("(estimated Nov 1, 2025 - 1 month ago, likely already happened)")


def test_past_date_without_intent_has_no_suffix() -> None:
    line = "User had the boiler serviced. (meaning Nov 1, 2025)"
    assert annotate_observations(line, NOW) == "User had the boiler serviced. (meaning Nov 1, 2025 - 1 month ago)"


def test_intent_words_must_be_word_bounded() -> None:
    # "willow" and "plansto"/"wanted" are not intent phrases.
    line = "User planted a willow tree and wanted shade. (meaning Nov 1, 2025)"
    assert annotate_observations(line, NOW).endswith("(meaning Nov 1, 2025 - 1 month ago)")


def test_future_date_with_intent_has_no_suffix() -> None:
    line = "User will fly to Tokyo. (meaning late December 2025)"
    expected = "User will fly to Tokyo. (meaning late December 2025 - in 2 weeks)"
    assert annotate_observations(line, NOW) == expected


def test_intent_must_precede_the_parenthesis() -> None:
    line = "Trip booked (meaning Nov 1, 2025) and user will pay later"
    assert annotate_observations(line, NOW) == (
        "Trip booked (meaning Nov 1, 2025 - 1 month ago) and user will pay later"
    )


def test_intent_on_other_line_does_not_count() -> None:
    text = "User will travel.\n* Trip happened (meaning Nov 1, 2025)"
    assert annotate_observations(text, NOW).endswith("(meaning Nov 1, 2025 - 1 month ago)")


def test_plan_dated_today_counts_as_past() -> None:
    # Midnight of today is strictly before a "now" later the same day.
    line = "User is going to the gym. (meaning Dec 8, 2025)"
    assert annotate_observations(line, NOW).endswith("(meaning Dec 8, 2025 - today, likely already happened)")
    assert annotate_observations(line, date(2025, 12, 8)).endswith("(meaning Dec 8, 2025 - today)")


def test_each_inline_strategy_annotated() -> None:
    text = "\n".join(
        [
            "a (estimated Dec 1, 2025)",
            "b (meaning Nov 3-4, 2025)",
            "c (estimated mid-November 2025)",
            "d (meaning October to early November 2025)",
        ]
    )
    assert annotate_observations(text, NOW).split("\n") == [
        "a (estimated Dec 1, 2025 - 1 week ago)",
        "b (meaning Nov 3-4, 2025 - 1 month ago)",
        "c (estimated mid-November 2025 - 3 weeks ago)",
        "d (meaning October to early November 2025 - 1 month ago)",
    ]


def test_multiple_inline_dates_on_one_line() -> None:
    line = "User will go (meaning Nov 1, 2025) then (estimated Jan 10, 2026)"
    assert annotate_observations(line, NOW) == (
        "User will go (meaning Nov 1, 2025 - 1 month ago, likely already happened) "
        "then (estimated Jan 10, 2026 - in 1 month)"
    )


@pytest.mark.parametrize(
    "line",
    [
        "User will go. (meaning sometime 2025)",
        "User will go. (meaning December 2025)",
        "User will go. (meaning Feb 30, 2025)",
        "User will go. (meaning next weekend)",
        "User will go. (estimated Dec 4, 2025 - 4 days ago)",
        "User will go. (perhaps Dec 4, 2025)",
        "User will go. (meaning Dec 4, 2025",
    ],
)
def test_unparseable_or_non_matching_inline_untouched(line: str) -> None:
    assert annotate_observations(line, NOW) == line


def test_annotate_is_idempotent_on_annotated_text() -> None:
    text = (
        "Date: Nov 1, 2025\n* 🔴 (10:00) User will move (meaning Nov 20, 2025)\n\n"
        "Date: Dec 4, 2025\n* 🟡 (11:00) User likes tea (estimated late December 2025)"
    )
    once = annotate_observations(text, NOW)
    assert annotate_observations(once, NOW) == once


def test_annotate_accepts_aware_now() -> None:
    aware = datetime(2025, 12, 7, 9, tzinfo=timezone(timedelta(hours=5)))
    assert annotate_observations("Date: Dec 4, 2025", aware) == "Date: Dec 4, 2025 (3 days ago)"


# --------------------------------------------------------------------------- boundaries


def test_format_boundary_variants() -> None:
    utc = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    assert format_boundary(utc) == "\n\n--- message boundary (2025-01-02T03:04:05.678Z) ---\n\n"
    naive = datetime(2025, 1, 2, 3, 4, 5)
    assert format_boundary(naive) == "\n\n--- message boundary (2025-01-02T03:04:05.000) ---\n\n"
    plus2 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    assert format_boundary(plus2) == "\n\n--- message boundary (2025-01-02T03:04:05.000+02:00) ---\n\n"


@pytest.mark.parametrize(
    "at",
    [
        datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc),
        datetime(2025, 1, 2, 3, 4, 5, 678000),
        datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=-7))),
    ],
)
def test_boundary_round_trip(at: datetime) -> None:
    match = BOUNDARY_PATTERN.fullmatch(format_boundary(at))
    assert match is not None
    assert parse_boundary_timestamp(match["iso"]) == at


def test_boundary_pattern_accepts_plain_isoformat() -> None:
    text = "\n\n--- message boundary (2025-01-02T03:04:05) ---\n\n"
    match = BOUNDARY_PATTERN.fullmatch(text)
    assert match is not None
    assert parse_boundary_timestamp(match["iso"]) == datetime(2025, 1, 2, 3, 4, 5)
    assert parse_boundary_timestamp("2025-13-45T00:00:00") is None


def _log() -> str:
    return (
        "Date: Jan 1, 2025\n* a"
        + format_boundary(datetime(2025, 1, 5, 12, tzinfo=timezone.utc))
        + "Date: Jan 5, 2025\n* b"
        + format_boundary(datetime(2025, 1, 9, 12, tzinfo=timezone.utc))
        + "Date: Jan 9, 2025\n* c"
    )


def test_observations_as_of_cuts_later_chunks() -> None:
    log = _log()
    first = "Date: Jan 1, 2025\n* a"
    second = first + format_boundary(datetime(2025, 1, 5, 12, tzinfo=timezone.utc)) + "Date: Jan 5, 2025\n* b"
    assert observations_as_of(log, datetime(2025, 1, 1)) == first
    assert observations_as_of(log, datetime(2025, 1, 5, 11, 59)) == first
    # Boundary date == as_of is kept (<=).
    assert observations_as_of(log, datetime(2025, 1, 5, 12)) == second
    assert observations_as_of(log, datetime(2025, 1, 9, 11, tzinfo=timezone.utc)) == second
    assert observations_as_of(log, datetime(2025, 1, 10)) == log


def test_observations_as_of_compares_aware_instants() -> None:
    log = _log()
    # 13:00 at +02:00 is 11:00 UTC, before the 12:00Z boundary.
    before = datetime(2025, 1, 5, 13, tzinfo=timezone(timedelta(hours=2)))
    assert observations_as_of(log, before) == "Date: Jan 1, 2025\n* a"


def test_observations_as_of_keeps_first_chunk_and_text_without_boundaries() -> None:
    assert observations_as_of("just text", datetime(1900, 1, 1)) == "just text"
    assert observations_as_of("", datetime(1900, 1, 1)) == ""
    log = _log()
    assert observations_as_of(log, datetime(1900, 1, 1)) == "Date: Jan 1, 2025\n* a"


def test_observations_as_of_skips_out_of_order_chunk_only() -> None:
    late = format_boundary(datetime(2025, 3, 1))
    early = format_boundary(datetime(2025, 1, 15))
    log = "A" + late + "B" + early + "C"
    assert observations_as_of(log, datetime(2025, 2, 1)) == "A" + early + "C"


# --------------------------------------------------------------------------- properties

_RANK_RE = re.compile(r"^(?:in )?(\d+) (day|week|month|year)s?(?: ago)?$")
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}


def _rank(phrase: str) -> int:
    """Map a relative phrase to a signed age in days (future negative) for ordering."""
    fixed = {"today": 0, "yesterday": 1, "tomorrow": -1}
    if phrase in fixed:
        return fixed[phrase]
    match = _RANK_RE.match(phrase)
    assert match is not None, phrase
    value = int(match[1]) * _UNIT_DAYS[match[2]]
    return -value if phrase.startswith("in ") else value


_datetimes = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1))


@given(_datetimes, _datetimes)
def test_prop_relative_never_raises_and_is_well_formed(when: datetime, now: datetime) -> None:
    phrase = format_relative_time(when, now)
    _rank(phrase)
    if when <= now:
        assert not phrase.startswith("in ") and phrase != "tomorrow"
    else:
        assert not phrase.endswith(" ago") and phrase != "yesterday"


@given(_datetimes, _datetimes, _datetimes)
def test_prop_relative_monotone_in_now(when: datetime, a: datetime, b: datetime) -> None:
    earlier, later = sorted((a, b))
    assert _rank(format_relative_time(when, earlier)) <= _rank(format_relative_time(when, later))


@given(_datetimes, st.integers(min_value=1, max_value=4000))
def test_prop_relative_symmetric_for_whole_days(a: datetime, days: int) -> None:
    # Whole-day distances read the same both ways; partial days floor toward the past, as in Mastra.
    b = a + timedelta(days=days)
    assert _rank(format_relative_time(a, b)) == -_rank(format_relative_time(b, a))


@given(_datetimes, _datetimes)
def test_prop_gap_none_iff_at_most_one_day(previous: datetime, current: datetime) -> None:
    days = (current - previous) // timedelta(days=1)
    gap = format_gap(previous, current)
    assert (gap is None) == (days <= 1)
    if gap is not None:
        assert re.fullmatch(r"\[\d+ (?:days?|weeks?|months?) later\]", gap)


_no_digits = st.lists(
    st.text(alphabet=st.characters(blacklist_categories=("Nd", "Cs")), max_size=20)
    | st.sampled_from(["\n", "\n\n\n", "Date: ", "Date: Dec ", ", ", "(meaning ", "(estimated ", ")"]),
    max_size=20,
).map("".join)


@given(_no_digits, _datetimes)
def test_prop_annotate_leaves_dateless_text_unchanged(text: str, now: datetime) -> None:
    assert annotate_observations(text, now) == text


@given(
    st.lists(
        st.tuples(st.dates(min_value=date(2000, 1, 1), max_value=date(2030, 1, 1)), st.text(max_size=20)),
        max_size=6,
    ),
    _datetimes,
)
def test_prop_annotate_idempotent(entries: list[tuple[date, str]], now: datetime) -> None:
    text = "\n".join(
        f"Date: {d:%b} {d.day}, {d.year}\n* User will do {note!r} (meaning {d:%B} {d.day}, {d.year})"
        for d, note in entries
    )
    once = annotate_observations(text, now)
    assert annotate_observations(once, now) == once
    assert "\n\n\n" not in once


@given(
    st.lists(st.text(max_size=30), min_size=1, max_size=5),
    st.lists(
        st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
        min_size=4,
        max_size=4,
    ),
)
def test_prop_as_of_far_future_is_identity(chunks: list[str], stamps: list[datetime]) -> None:
    text = chunks[0]
    for chunk, stamp in zip(chunks[1:], stamps, strict=False):
        text += format_boundary(stamp) + chunk
    assert observations_as_of(text, datetime(9999, 1, 1)) == text
    assert observations_as_of(text, datetime(9999, 1, 1, tzinfo=timezone.utc)) == text
