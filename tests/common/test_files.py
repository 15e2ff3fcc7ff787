"""File names from free-form ids: always valid, never shared by two ids, stable for safe short ids."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from om_eval.common.files import READABLE_CHARS, safe_file_name


def test_short_safe_ids_keep_their_name() -> None:
    assert safe_file_name("gpt4_9b807f87_abs") == "gpt4_9b807f87_abs"
    assert safe_file_name("5ed4ff79") == "5ed4ff79"


def test_ids_that_differ_only_in_unsafe_characters_get_different_names() -> None:
    assert safe_file_name("a.b") != safe_file_name("a_b")
    assert safe_file_name("a/b") != safe_file_name("a_b")


@given(st.text(min_size=1, max_size=600))
def test_every_id_gives_a_short_plain_name(identifier: str) -> None:
    name = safe_file_name(identifier)
    assert len(name.encode("utf-8")) <= READABLE_CHARS + 17
    assert "/" not in name and "\0" not in name and name not in (".", "..")
    assert safe_file_name(identifier) == name


@given(st.text(min_size=1, max_size=300), st.text(min_size=1, max_size=300))
def test_distinct_ids_get_distinct_names(first: str, second: str) -> None:
    if first != second:
        assert safe_file_name(first) != safe_file_name(second)
