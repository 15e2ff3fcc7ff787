"""1.15+'s Observer history lines (``mastra_release=v1_31``); the differential suite compares them with 1.31."""

from __future__ import annotations

from datetime import datetime, timedelta

from om_eval.om.history_lines import cap_part, format_history_lines, format_thread_lines
from om_eval.om.records import Message

WHEN = datetime(2024, 3, 5, 14, 21, 10)


def message(ident: str, role: str, content: object, at: datetime = WHEN) -> Message:
    return Message(ident, "t", role, content, at)  # type: ignore[arg-type]  # content of any shape on purpose


def test_a_date_line_then_the_time_only_when_it_changes() -> None:
    text = format_history_lines([
        message("m1", "user", "I adopted a beagle."),
        message("m2", "assistant", "Congratulations!", WHEN + timedelta(seconds=30)),
        message("m3", "user", "Her name is Toby.", WHEN + timedelta(minutes=1)),
        message("m4", "user", "Walked her at dawn.", datetime(2024, 3, 6, 6, 5)),
    ])
    assert text.split("\n") == [
        "Mar 5 2024:",
        "User (2:21 PM): I adopted a beagle.",
        "Assistant: Congratulations!",
        "User (2:22 PM): Her name is Toby.",
        "Mar 6 2024:",
        "User (6:05 AM): Walked her at dawn.",
    ]


def test_each_part_is_a_line_and_empty_parts_none() -> None:
    parts = ({"type": "text", "text": "first"}, {"type": "text", "text": ""}, {"type": "text", "text": "second"},
             {"type": "image", "name": " cat.png ", "mime_type": "image/png"},
             {"type": "file", "name": "scan.JPG", "mime_type": "application/octet-stream"},
             {"type": "file", "mime_type": "application/pdf"}, {"type": "data-om-marker"})
    lines = format_history_lines([message("m1", "user", parts)]).split("\n")
    assert lines == ["Mar 5 2024:", "User (2:21 PM): first", "User: second", "Image: [Image #1: cat.png]",
                     "File: [Image #2: scan.JPG]", "File: [File #1: application/pdf]"]


def test_a_cut_part_counts_the_units_it_left_out() -> None:
    assert cap_part("abcdef", 4) == "abcd\n... [truncated 2 characters]"
    # Cutting inside an emoji keeps it whole and counts both of its UTF-16 units as left out.
    assert cap_part("ab😀cd", 3) == "ab\n... [truncated 4 characters]"
    assert cap_part("abc", None) == cap_part("abc", 0) == "abc"


def test_threads_start_their_dates_over_and_follow_on_the_next_line() -> None:
    text = format_thread_lines({"a1": [message("m1", "user", "Hi")], "b2": [message("m2", "user", "Yo")],
                                "c3": [message("m3", "user", "")]})
    assert text == ('<thread id="a1">\nMar 5 2024:\nUser (2:21 PM): Hi\n</thread>\n'
                    '<thread id="b2">\nMar 5 2024:\nUser (2:21 PM): Yo\n</thread>')
