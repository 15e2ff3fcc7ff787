"""Judge-free matching: normalisation, the three checks, and the floor over item rows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.bench.judging.matching import (
    contains_match,
    exact_match,
    match_answer,
    match_floor,
    normalise,
    number_match,
    numbers_in,
)
from om_eval.bench.longmemeval import BENCHMARK

words = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=8), min_size=1,
                 max_size=6).map(" ".join)


@pytest.mark.parametrize(("answer", "gold", "exact", "contains"), [
    ("The Eiffel Tower.", "eiffel tower", True, True),
    ("You went to the Eiffel Tower in May.", "Eiffel Tower", False, True),
    ("It was 100 days", "10", False, False),          # word boundaries: 10 is not in 100
    ("Blue-green", "blue green", True, True),
    ("", "anything", False, False),
    ("whatever", "", False, False),                   # an empty gold matches nothing
    ("I don't know", "dont know", False, True),
])
def test_exact_and_contains(answer: str, gold: str, exact: bool, contains: bool) -> None:
    assert exact_match(answer, gold) is exact
    assert contains_match(answer, gold) is contains


@pytest.mark.parametrize(("answer", "gold", "expected"), [
    ("It took three weeks.", "3", True),
    ("about 1,200 dollars", "$1200", True),
    ("2 or 4", "4 and 2", True),
    ("2 days", "4 days", False),
    ("Paris", "Paris", None),                         # no number in the gold
    ("twenty", "20", True),
])
def test_number_match(answer: str, gold: str, expected: bool | None) -> None:
    assert number_match(answer, gold) is expected


def test_non_string_gold_is_read_as_text() -> None:
    assert exact_match("3", 3) and numbers_in(3) == {3.0}


@given(words)
def test_normalise_is_idempotent_and_a_text_contains_itself(text: str) -> None:
    assert normalise(normalise(text)) == normalise(text)
    if normalise(text):
        assert exact_match(text, text) and contains_match(text, text)


@given(words, words, words)
def test_contains_holds_for_any_surrounding_words(before: str, gold: str, after: str) -> None:
    if normalise(gold):
        assert contains_match(f"{before}, {gold}; {after}", gold)


@given(words, words)
def test_exact_implies_contains(answer: str, gold: str) -> None:
    if exact_match(answer, gold):
        assert contains_match(answer, gold)


def test_the_floor_skips_rubrics_and_unanswerable_questions_and_counts_failed_answers_as_misses() -> None:
    rows = [
        {"question_type": "single-session-user", "gold_answer": "Porto", "hypothesis": "You live in Porto."},
        {"question_type": "single-session-user", "gold_answer": "Porto", "hypothesis": "Lisbon"},
        {"question_type": "temporal-reasoning", "gold_answer": "3 days", "hypothesis": "three days"},
        {"question_type": "multi-session", "gold_answer": "4", "hypothesis": None},  # a failed question
        {"question_type": "single-session-preference", "gold_answer": "The user would prefer ...",
         "hypothesis": "x"},
        {"question_type": "multi-session", "gold_answer": "nothing", "hypothesis": "x", "is_abstention": True},
    ]
    floor = match_floor(rows, skip=BENCHMARK.unmatched_keys)
    assert (floor.n, floor.skipped) == (4, 2)
    assert floor.contains == pytest.approx(1 / 4) and floor.exact == 0.0
    assert (floor.numbered, floor.number) == (2, 0.5)  # "three days" has 3; the failed answer has none
    assert match_answer(None, "4").number is False and match_answer(None, "Porto").number is None


def test_an_empty_floor_is_undefined_not_zero() -> None:
    floor = match_floor([])
    assert floor.n == 0 and floor.contains is None and floor.number is None
