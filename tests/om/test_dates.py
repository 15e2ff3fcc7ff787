"""Tests for om_eval.om.dates (reference §4.2 relative-time annotation, §1.7 boundaries)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.om.dates import (
    BOUNDARY_PATTERN,
    annotate_observations,
    date_marks,
    format_boundary,
    format_gap,
    format_relative_time,
    mark_notes,
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
    aware_date = datetime(2025, 3, 1, tzinfo=UTC)
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
        ("Date:   Sept 30, 2024", datetime(2024, 9, 30)),
        ("Date: May 1, 2023", datetime(2023, 5, 1)),
        # Read as V8 reads "Feb 30, 2025": any month word by its first three letters, days up to 31 roll over.
        ("Date: Feb 30, 2025", datetime(2025, 3, 2)),
        ("Date: Decembre 4, 2025", datetime(2025, 12, 4)),
        ("Date: Dec 4, 0049", datetime(2049, 12, 4)),
        ("Date: Dec 4, 0050", datetime(1950, 12, 4)),
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
        "Date: De 4, 2025",  # two letters are no month
        "Date: Feb 32, 2025",  # no day above 31
        "Date: Dec 0, 2025",
        "Date: Dec 4, 2025 ",  # nothing may follow the year, not even a space
        "Date: Dec 4, 2025\t",
        "Date: Dec  4, 2025",
        "Date: Monday, Dec 4, 2025",
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
        ("Dec 4 2025", datetime(2025, 12, 4)),
        ("Feb 30, 2025", datetime(2025, 3, 2)),
        # Strategy 2: Month D-D, YYYY -> first day
        ("Dec 7-8, 2025", datetime(2025, 12, 7)),
        ("the weekend of Jan 18-19, 2026", datetime(2026, 1, 18)),
        # Strategy 3: early|mid|late[-to-...] Month YYYY -> 7/15/23
        ("early December 2025", datetime(2025, 12, 7)),
        ("mid-December 2025", datetime(2025, 12, 15)),
        ("late Dec 2025", datetime(2025, 12, 23)),
        ("mid-to-late March 2026", datetime(2026, 3, 15)),
        ("early to mid June 2025", datetime(2025, 6, 7)),
        ("Late February 2024", datetime(2024, 2, 23)),
        # Strategy 4: Month to [early] Month YYYY -> 1st of the second month
        ("December to January 2026", datetime(2026, 1, 1)),
        ("december to january 2026", datetime(2026, 1, 1)),
        ("Nov to Dec 2025", datetime(2025, 12, 1)),
    ],
)
def test_parse_inline_date_strategies(text: str, expected: datetime) -> None:
    assert parse_inline_date(text) == expected


def test_parse_inline_part_of_month_runs_before_month_to_month() -> None:
    # As in 1.10, strategy 3 finds "early January 2026" first, so strategy 4's "[early]" form never decides.
    assert parse_inline_date("December to early January 2026") == datetime(2026, 1, 7)
    assert parse_inline_date("Dec to early-Jan 2026") == datetime(2026, 1, 7)
    # "mid-to-late" still uses the first word.
    assert parse_inline_date("mid-to-late January 2026") == datetime(2026, 1, 15)


def test_parse_inline_part_of_month_is_not_word_bounded() -> None:
    # 1.10 looks for "late" anywhere, also inside a word.
    assert parse_inline_date("chocolate March 2025") == datetime(2025, 3, 23)
    assert parse_inline_date("MIDMarch 2025") == datetime(2025, 3, 15)


def test_parse_inline_day_strategies_need_a_capitalised_month() -> None:
    # Strategies 1 and 2 are case-sensitive in 1.10; only 3 and 4 ignore case.
    assert parse_inline_date("dec 4, 2025") is None
    assert parse_inline_date("DEC 4, 2025") is None
    assert parse_inline_date("late DEC 2025") == datetime(2025, 12, 23)


def test_parse_inline_tries_only_the_first_candidate_of_a_strategy() -> None:
    # "Around 4, 2025" is strategy 1's first match and no date, so "Dec 5, 2025" is never looked at.
    assert parse_inline_date("Around 4, 2025 or Dec 5, 2025") is None
    assert parse_inline_date("Dec 5, 2025 or Around 4, 2025") == datetime(2025, 12, 5)


def test_parse_inline_strategy_order() -> None:
    # A specific day wins over a part-of-month phrase appearing earlier in the text.
    assert parse_inline_date("late Nov or Dec 2, 2025") == datetime(2025, 12, 2)


@pytest.mark.parametrize(
    "text",
    [
        "2025", "sometime in 2025", "December 2025", "Feb 32, 2025", "Smarch 4, 2025", "next week", "",
        "March 3rd, 2024",  # no ordinal suffixes
        "Dec 7\u20138, 2025",  # only an ASCII hyphen makes a range
        "Jan 18 - 19, 2026",
        "summer 2025",
    ],
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
    # 1.10 puts "\n[gap]\n\n" right before the header, after whatever blank lines are there already.
    text = "Date: Dec 1, 2025\n* a\n\nDate: Dec 4, 2025\n* b"
    assert annotate_observations(text, datetime(2025, 12, 8, 12)) == (
        "Date: Dec 1, 2025 (1 week ago)\n* a\n\n\n[3 days later]\n\nDate: Dec 4, 2025 (4 days ago)\n* b"
    )


def test_gap_marker_between_headers_without_blank_line() -> None:
    text = "Date: Dec 1, 2025\n* a\nDate: Dec 20, 2025\n* b"
    out = annotate_observations(text, datetime(2025, 12, 20))
    assert out == (
        "Date: Dec 1, 2025 (2 weeks ago)\n* a\n\n[2 weeks later]\n\nDate: Dec 20, 2025 (today)\n* b"
    )


def test_gap_marker_keeps_existing_blank_lines() -> None:
    text = "Date: Jan 1, 2025\n* a\n\n\n\nDate: Mar 15, 2025\n* b"
    out = annotate_observations(text, datetime(2025, 3, 20))
    assert "* a\n\n\n\n\n[2 months later]\n\nDate: Mar 15, 2025 (5 days ago)" in out


@pytest.mark.parametrize("tail", [" ", "\t", "  ", " \u00a0"])
def test_header_with_trailing_whitespace_is_not_a_header(tail: str) -> None:
    text = f"Date: Dec 1, 2025\n* a\nDate: Dec 4, 2025{tail}\n* b"
    expected = f"Date: Dec 1, 2025 (1 week ago)\n* a\nDate: Dec 4, 2025{tail}\n* b"
    assert annotate_observations(text, datetime(2025, 12, 8)) == expected


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\u2028"])
def test_header_lines_may_end_with_any_js_line_break(newline: str) -> None:
    text = newline.join(["Date: Dec 1, 2025", "* a", "Date: Dec 4, 2025", "* b"])
    assert annotate_observations(text, datetime(2025, 12, 8)) == newline.join(
        ["Date: Dec 1, 2025 (1 week ago)", "* a", "\n[3 days later]\n\nDate: Dec 4, 2025 (4 days ago)", "* b"]
    )


def test_header_with_weekday_is_not_a_header() -> None:
    text = "Date: Thursday, Dec 4, 2025\nDate: Dec 4, 2025 (Thursday)"
    assert annotate_observations(text, datetime(2025, 12, 8)) == text


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
    text = "Date: Jan 1, 2025\n* a" + format_boundary(datetime(2025, 1, 5, tzinfo=UTC))
    text += "Date: Jan 5, 2025\n* b"
    out = annotate_observations(text, datetime(2025, 1, 6))
    assert "--- message boundary (2025-01-05T00:00:00.000Z) ---\n\n\n[4 days later]\n\nDate: Jan 5" in out
    assert len(BOUNDARY_PATTERN.findall(out)) == 1


def test_invalid_header_left_unchanged_and_not_used_for_gaps() -> None:
    text = "Date: Jan 1, 2025\nDate: Feb 32, 2025\nDate: Jan 3, 2025"
    out = annotate_observations(text, datetime(2025, 1, 3))
    assert out == (
        "Date: Jan 1, 2025 (2 days ago)\nDate: Feb 32, 2025\n\n[2 days later]\n\nDate: Jan 3, 2025 (today)"
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
        "User will go. (meaning Feb 32, 2025)",
        "User will go. (meaning dec 4, 2025)",
        "User will go. (meaning Dec 4, 2025 )",  # the four digits must close the clause
        "User will go. (meaning next weekend)",
        "User will go. (estimated Dec 4, 2025 - 4 days ago)",
        "User will go. (perhaps Dec 4, 2025)",
        "User will go. (meaning Dec 4, 2025",
    ],
)
def test_unparseable_or_non_matching_inline_untouched(line: str) -> None:
    assert annotate_observations(line, NOW) == line


@pytest.mark.parametrize("prefix", ["MEANING", "Estimated", "eStImAtEd"])
def test_inline_prefix_in_any_case_is_kept_as_written(prefix: str) -> None:
    line = f"User had tea. ({prefix} Nov 1, 2025)"
    assert annotate_observations(line, NOW) == f"User had tea. ({prefix} Nov 1, 2025 - 1 month ago)"


def test_inline_clause_may_span_lines_and_hold_a_parenthesis() -> None:
    text = "User will go (meaning the\nweekend (of Nov 1, 2025)"
    assert annotate_observations(text, NOW) == (
        "User will go (meaning the\nweekend (of Nov 1, 2025 - 1 month ago, likely already happened)"
    )


def test_inline_intent_is_read_on_the_clause_line_only_up_to_lf() -> None:
    # The line before the clause starts after the last LF, so a CR does not end it.
    text = "User will travel.\r* Trip happened (meaning Nov 1, 2025)"
    assert annotate_observations(text, NOW).endswith("(meaning Nov 1, 2025 - 1 month ago, likely already happened)")


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
    # Always what JS toISOString() writes: UTC, milliseconds, "Z"; a naive time is read as UTC.
    utc = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert format_boundary(utc) == "\n\n--- message boundary (2025-01-02T03:04:05.678Z) ---\n\n"
    naive = datetime(2025, 1, 2, 3, 4, 5)
    assert format_boundary(naive) == "\n\n--- message boundary (2025-01-02T03:04:05.000Z) ---\n\n"
    plus2 = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    assert format_boundary(plus2) == "\n\n--- message boundary (2025-01-02T01:04:05.000Z) ---\n\n"


@pytest.mark.parametrize(
    "at",
    [
        datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        datetime(2025, 1, 2, 3, 4, 5, 678000),
        datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=-7))),
    ],
)
def test_boundary_round_trip(at: datetime) -> None:
    match = BOUNDARY_PATTERN.fullmatch(format_boundary(at))
    assert match is not None
    assert parse_boundary_timestamp(match["iso"]) == (at if at.tzinfo else at.replace(tzinfo=UTC))


@pytest.mark.parametrize(
    "iso", ["2025-01-02T03:04:05", "2025-01-02T03:04:05.000", "2025-01-02T03:04:05.000+02:00"]
)
def test_boundary_pattern_needs_a_utc_timestamp(iso: str) -> None:
    # 1.10 splits only on the toISOString() form; other delimiters are plain text.
    assert BOUNDARY_PATTERN.fullmatch(f"\n\n--- message boundary ({iso}) ---\n\n") is None
    assert parse_boundary_timestamp(iso) is None


def test_boundary_pattern_takes_any_run_of_line_feeds() -> None:
    assert BOUNDARY_PATTERN.fullmatch("\n\n\n--- message boundary (2025-01-02T03:04:05Z) ---\n\n\n\n")
    assert BOUNDARY_PATTERN.fullmatch("\n--- message boundary (2025-01-02T03:04:05Z) ---\n\n") is None


@pytest.mark.parametrize(
    ("iso", "expected"),
    [
        ("2025-02-30T10:00:00.000Z", datetime(2025, 3, 2, 10, tzinfo=UTC)),  # rolls over like JS
        ("2025-01-01T24:00:00.000Z", datetime(2025, 1, 2, tzinfo=UTC)),
        ("2025-01-01T00:00:00.1239Z", datetime(2025, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)),
        ("2025-13-01T00:00:00.000Z", None),
        ("2025-01-01T24:00:01.000Z", None),
        ("2025-01-01T23:60:00.000Z", None),
    ],
)
def test_parse_boundary_timestamp_reads_like_js(iso: str, expected: datetime | None) -> None:
    assert parse_boundary_timestamp(iso) == expected


def _log() -> str:
    return (
        "Date: Jan 1, 2025\n* a"
        + format_boundary(datetime(2025, 1, 5, 12, tzinfo=UTC))
        + "Date: Jan 5, 2025\n* b"
        + format_boundary(datetime(2025, 1, 9, 12, tzinfo=UTC))
        + "Date: Jan 9, 2025\n* c"
    )


def test_observations_as_of_cuts_later_chunks() -> None:
    log = _log()
    first = "Date: Jan 1, 2025\n* a"
    second = first + "\n\nDate: Jan 5, 2025\n* b"  # kept chunks are joined by a blank line, as in 1.10
    assert observations_as_of(log, datetime(2025, 1, 1)) == first
    assert observations_as_of(log, datetime(2025, 1, 5, 11, 59)) == first
    # Boundary date == as_of is kept (<=).
    assert observations_as_of(log, datetime(2025, 1, 5, 12)) == second
    assert observations_as_of(log, datetime(2025, 1, 9, 11, tzinfo=UTC)) == second
    assert observations_as_of(log, datetime(2025, 1, 10)) == second + "\n\nDate: Jan 9, 2025\n* c"


def test_observations_as_of_drops_chunks_with_invalid_dates_and_empty_chunks() -> None:
    log = "  A  \n\n--- message boundary (2025-13-01T00:00:00.000Z) ---\n\nB"
    log += format_boundary(datetime(2025, 1, 1)) + "   " + format_boundary(datetime(2025, 1, 2)) + "C\n"
    assert observations_as_of(log, datetime(2030, 1, 1)) == "A\n\nC"


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


def test_observations_as_of_trims_before_splitting() -> None:
    # As in 1.10: a delimiter at the very end loses its line feeds to the trim and stays as text.
    log = "A" + format_boundary(datetime(2025, 1, 2))
    assert observations_as_of(log, datetime(2030, 1, 1)) == "A\n\n--- message boundary (2025-01-02T00:00:00.000Z) ---"


def test_observations_as_of_skips_out_of_order_chunk_only() -> None:
    late = format_boundary(datetime(2025, 3, 1))
    early = format_boundary(datetime(2025, 1, 15))
    log = "A" + late + "B" + early + "C"
    assert observations_as_of(log, datetime(2025, 2, 1)) == "A\n\nC"


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
    st.lists(st.text(alphabet="ab \n", max_size=30), min_size=1, max_size=5),
    st.lists(
        st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
        min_size=4,
        max_size=4,
    ),
)
def test_prop_as_of_far_future_keeps_every_chunk(chunks: list[str], stamps: list[datetime]) -> None:
    chunks = ["a" + chunk for chunk in chunks]  # chunks with text, so the text neither opens nor ends on a delimiter
    text = chunks[0]
    for chunk, stamp in zip(chunks[1:], stamps, strict=False):
        text += format_boundary(stamp) + chunk
    expected = "\n\n".join(chunk.strip() for chunk in chunks if chunk.strip())
    assert observations_as_of(text, datetime(9999, 1, 1)) == expected
    assert observations_as_of(text, datetime(9999, 1, 1, tzinfo=UTC)) == expected


@given(
    st.lists(
        st.tuples(st.dates(min_value=date(2000, 1, 1), max_value=date(2030, 1, 1)), st.text(max_size=20),
                  st.sampled_from(["will do", "did"])),
        max_size=6,
    ),
    _datetimes,
    st.integers(0, 5),
)
def test_prop_date_marks_give_exactly_what_annotating_inserts(entries: list[tuple[date, str, str]], now: datetime,
                                                              split: int) -> None:
    text = "\n".join(
        f"Date: {d:%b} {d.day}, {d.year}\n* User {verb} {note!r} (meaning {d:%B} {d.day}, {d.year})"
        for d, note, verb in entries
    )
    annotated = annotate_observations(text, now)
    notes = mark_notes(date_marks(text), now)
    # Inline clauses here have single spaces, so annotating only inserts: the lengths add up, and each note is there.
    assert len(annotated) == len(text) + sum(map(len, notes))
    assert all(note in annotated for note in notes)
    # Read in two parts (as a growing text is), from the start of a line, the marks are the same.
    cut = text.rfind("\n", 0, len(text) * split // 5) + 1
    first = [mark for mark in date_marks(text) if mark.start < cut]
    previous = next((mark.when for mark in reversed(first) if mark.header), None)
    assert first + date_marks(text, cut, previous) == date_marks(text)
