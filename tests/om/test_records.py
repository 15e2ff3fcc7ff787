"""Tests for om_eval.om.records helpers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from om_eval.om.records import lines_after


@given(st.text(alphabet="ab\n ", max_size=40), st.integers(min_value=0, max_value=12))
def test_lines_after_is_the_split_lines_joined_back(text: str, count: int) -> None:
    assert lines_after(text, count) == "\n".join(text.split("\n")[count:])
