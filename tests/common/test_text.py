"""Terminal-safe text: control characters become visible escapes, everything else is untouched."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from om_eval.common.text import printable, printable_data


def test_escape_sequences_are_shown_not_obeyed() -> None:
    assert printable("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert printable("title\x1b]0;pwned\x07") == "title\\x1b]0;pwned\\x07"
    assert printable("line one\nline\ttwo · café 🍞") == "line one\nline\ttwo · café 🍞"
    assert printable("abc\u202eevil") == "abc\\u202eevil"
    assert printable_data({"q\x1b": ["x\x9b", 3]}) == {"q\\x1b": ["x\\x9b", 3]}


@given(st.text())
def test_printable_output_has_no_control_characters(text: str) -> None:
    shown = printable(text)
    assert all(c in "\n\t" or not (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F) for c in shown)
    if not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c in "\u200e\u200f" for c in text):
        assert shown == text or any("\u202a" <= c <= "\u202e" or "\u2066" <= c <= "\u2069" for c in text)
