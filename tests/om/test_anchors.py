"""Tests for om_eval.om.anchors (reference §3.4 ephemeral anchor ids)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.om import anchors
from om_eval.om.anchors import (
    ANCHOR_ID_PATTERN,
    anchor_depth,
    inject_anchor_ids,
    parse_anchor_id,
    should_anchor_line,
    strip_anchor_ids,
)
from om_eval.om.js.text import js_trim

ANCHOR_PREFIX = re.compile(r"^(\s*)\[(O\d+(?:-N\d+)?)\] ")
ANCHOR_LIKE_START = re.compile(r"^\s*\[O\d+(?:-N\d+)?\]")

# --------------------------------------------------------------------------- examples


def test_inject_numbers_top_level_and_nested_lines() -> None:
    text = "\n".join(
        [
            "Date: Dec 4, 2025",
            "* 🔴 (14:30) User keeps sourdough starter in the fridge",
            "  * -> detail one",
            "  * -> detail two",
            "* 🟡 (14:31) Second item",
            "    * -> deep detail",
            "",
            "Date: Dec 5, 2025",
            "* 🔴 (09:00) Third item",
        ]
    )
    assert inject_anchor_ids(text).split("\n") == [
        "Date: Dec 4, 2025",
        "[O1] * 🔴 (14:30) User keeps sourdough starter in the fridge",
        "  [O1-N1] * -> detail one",
        "  [O1-N2] * -> detail two",
        "[O2] * 🟡 (14:31) Second item",
        "    [O2-N1] * -> deep detail",
        "",
        "Date: Dec 5, 2025",
        "[O3] * 🔴 (09:00) Third item",
    ]


def test_nested_line_before_any_top_level_line_uses_k_1() -> None:
    assert inject_anchor_ids("  * nested first\n  * nested second\n* top") == (
        "  [O1-N1] * nested first\n  [O1-N2] * nested second\n[O2] * top"
    )


def test_tabs_count_as_two_spaces_and_odd_indentation_rounds_down() -> None:
    assert anchor_depth("\t* x") == 1
    assert anchor_depth("\t\t* x") == 2
    assert anchor_depth(" * x") == 0  # 1 // 2
    assert anchor_depth("   * x") == 1
    assert inject_anchor_ids(" * a\n\t* b") == " [O1] * a\n\t[O1-N1] * b"


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "Date: Dec 4, 2025",
        "  Date: Jan 1, 2026",
        "<observations>",
        "</observations>",
        '<thread id="abc">',
        "  </thread>",
        "## Group `g1`",
        "_range: `3:9`_",
        "[O4] * already anchored",
        "  [O4-N2] * already anchored nested",
    ],
)
def test_non_qualifying_lines_are_left_alone(line: str) -> None:
    assert not should_anchor_line(line)
    assert inject_anchor_ids(line) == line


@pytest.mark.parametrize("line", ["* normal", "Dated: no", "<b>bold</b> text", "# Heading", "plain prose"])
def test_qualifying_lines(line: str) -> None:
    assert should_anchor_line(line)


def test_non_qualifying_lines_do_not_advance_counters() -> None:
    text = "<observations>\n* a\n</observations>\n<observations>\n* b"
    assert inject_anchor_ids(text) == "<observations>\n[O1] * a\n</observations>\n<observations>\n[O2] * b"


def test_empty_text() -> None:
    assert inject_anchor_ids("") == ""
    assert strip_anchor_ids("") == ""


def test_parse_anchor_id() -> None:
    assert parse_anchor_id("[O12-N3] * x") == "O12-N3"
    assert parse_anchor_id("[O7]") == "O7"
    assert parse_anchor_id("* [O7] x") is None


def test_strip_keeps_indentation_and_only_touches_line_starts() -> None:
    text = "[O1] * a\n  [O1-N1]   * b\n\t[O2-N4]\t* c\n* mentions [O3] inline\n[X1] * other"
    assert strip_anchor_ids(text) == "* a\n  * b\n\t* c\n* mentions [O3] inline\n[X1] * other"


def test_strip_handles_reflector_style_output_without_space() -> None:
    assert strip_anchor_ids("[O1]* a\n[O2-N1]b") == "* a\nb"


def test_whitespace_is_javascript_whitespace() -> None:
    # As in 1.10: U+FEFF is blank and U+00A0 indents, but U+001C is text (JS trim() keeps it).
    assert inject_anchor_ids("\x1c\n\ufeff\n\u00a0\u00a0* a") == "[O1] \x1c\n\ufeff\n\u00a0\u00a0[O1-N1] * a"
    assert strip_anchor_ids("\u3000[O2]\u00a0* a\n\x1c[O3] b") == "\u3000* a\n\x1c[O3] b"


def test_crlf_text_round_trips() -> None:
    text = "* a\r\n  * b\r\n"
    anchored = inject_anchor_ids(text)
    assert anchored == "[O1] * a\r\n  [O1-N1] * b\r\n"
    assert strip_anchor_ids(anchored) == text


# --------------------------------------------------------------------------- properties

_line_chars = st.characters(
    codec="utf-8", categories=["L", "N", "P", "S", "Zs"], include_characters=[" ", "\t", "[", "]", "<", ">", "/"]
)
_line = st.one_of(
    st.text(alphabet=_line_chars, max_size=30),
    st.builds(lambda indent, body: indent + body, st.sampled_from(["", "  ", "    ", "\t", " "]), st.text(max_size=20)),
    st.sampled_from(["Date: Dec 4, 2025", "<observations>", '<thread id="t1">', "## Group `a`", "_range: `1:2`_", ""]),
).filter(lambda line: "\n" not in line and not ANCHOR_LIKE_START.match(line))
_text = st.lists(_line, max_size=25).map("\n".join)


@given(_text)
def test_strip_inverts_inject(text: str) -> None:
    assert strip_anchor_ids(inject_anchor_ids(text)) == text


@given(_text)
def test_inject_is_deterministic(text: str) -> None:
    assert inject_anchor_ids(text) == inject_anchor_ids(text)


@given(_text)
def test_every_qualifying_line_gets_exactly_one_anchor(text: str) -> None:
    original = text.split("\n")
    anchored = inject_anchor_ids(text).split("\n")
    assert len(anchored) == len(original)
    top_level = 0
    for before, after in zip(original, anchored, strict=True):
        if not should_anchor_line(before):
            assert after == before
            continue
        match = ANCHOR_PREFIX.match(after)
        assert match is not None
        assert match.group(1) + after[match.end() :] == before
        assert not ANCHOR_LIKE_START.match(after[match.end() :])  # exactly one anchor
        anchor = match.group(2)
        if anchor_depth(before) == 0:
            top_level += 1
            assert anchor == f"O{top_level}"
        else:
            top_level = max(top_level, 1)
            assert anchor.startswith(f"O{top_level}-N")


@given(_text)
def test_inject_is_idempotent(text: str) -> None:
    once = inject_anchor_ids(text)
    assert inject_anchor_ids(once) == once


@given(st.one_of(_line, st.sampled_from(["[O3] x", "  [O1-N2] y", "Date:", "Dated", "<b>x", "#x", "_x", "D", "[x"])))
def test_the_first_character_filter_agrees_with_every_pattern(line: str) -> None:
    trimmed = js_trim(line)
    skipped = (ANCHOR_ID_PATTERN, anchors._DATE_HEADER, anchors._XML_TAG_ONLY, anchors._GROUP_HEADING,
               anchors._GROUP_RANGE)
    assert should_anchor_line(line) == (bool(trimmed) and not any(p.match(trimmed) for p in skipped))


def _anchored_line_by_line(text: str) -> str:
    """inject_anchor_ids as its docstring states it, one line at a time, every line through every test."""
    lines = text.split("\n")
    top_level = nested = 0
    for index, line in enumerate(lines):
        if not should_anchor_line(line):
            continue
        if anchor_depth(line) == 0:
            top_level, nested = top_level + 1, 0
        else:
            top_level, nested = max(top_level, 1), nested + 1
        indentation = line[: line.index(js_trim(line))]  # JS whitespace up to the first other character
        anchor = f"O{top_level}" if nested == 0 else f"O{top_level}-N{nested}"
        lines[index] = f"{indentation}[{anchor}] {line[len(indentation):]}"
    return "\n".join(lines)


_edge_start = st.sampled_from(["", " ", "\t", "\ufeff", "\u3000", "\u2028", "\x1c", "\x85", "*", "[", "D", "<", "é"])


@given(st.lists(st.builds(str.__add__, _edge_start, _line), max_size=25).map("\n".join))
def test_the_unindented_line_shortcut_numbers_as_every_test_would(text: str) -> None:
    assert inject_anchor_ids(text) == _anchored_line_by_line(text)
