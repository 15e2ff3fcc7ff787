"""LoCoMo's QA score: our examples worked by hand from the benchmark's rules, properties, and the real file."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from om_eval.bench.locomo import locomo_f1, locomo_scores, multi_answer_f1, normalize_answer, token_f1

#: $LOCOMO_PATH, else the shared data folder beside the project (never committed into it).
LOCOMO_FILE = Path(os.environ.get("LOCOMO_PATH") or Path(__file__).resolve().parents[3] / "shared" / "data" /
                   "locomo10.json")


def test_normalisation_drops_commas_case_punctuation_and_small_words() -> None:
    assert normalize_answer("The Bakery, and an Oven!") == "bakery oven"
    assert normalize_answer("  A   loaf  of   rye. ") == "loaf of rye"
    assert normalize_answer("band-stand") == "bandstand"  # the hyphen is punctuation: the word is joined
    assert normalize_answer("sandwich") == "sandwich"  # "and" only as a whole word


@pytest.mark.parametrize(
    ("prediction", "answer", "category", "expected"),
    [
        ("She baked sourdough bread", "sourdough bread", 4, 2 * (2 / 4) * 1 / (2 / 4 + 1)),  # P 2/4, R 2/2
        ("baking", "baked", 4, 1.0),  # both stem to "bake"
        ("In May 2023", "May 2023", 2, 0.8),  # P 2/3, R 1: F1 0.8
        ("a tall ladder", "ladder; she also owns a stool", 3, 2 * 0.5 * 1 / 1.5),  # only "ladder" counts
        ("rye, spelt", "spelt, rye, barley", 1, 2 / 3),  # two of three parts found exactly
        ("rye and spelt", "spelt, rye", 1, 2 * (1 / 2) * 1 / (1 / 2 + 1)),  # one prediction part vs each
        ("That was not mentioned in our chats.", "a red bicycle", 5, 1.0),
        ("No information available about it", "a red bicycle", 5, 1.0),
        ("It was a red bicycle", "a red bicycle", 5, 0.0),  # answering an unanswerable question fails
        ("nothing in common", "sourdough", 4, 0.0),
        ("2022", 2022, 2, 1.0),  # a number in the file is compared as its text
    ],
)
def test_locomo_f1_examples(prediction: str, answer, category: int, expected: float) -> None:
    assert locomo_f1(prediction, answer, category) == pytest.approx(expected)


def test_unknown_category_is_refused() -> None:
    with pytest.raises(ValueError, match="category 6"):
        locomo_f1("x", "y", 6)


words = st.lists(st.sampled_from(["rye", "bread", "oven", "baked", "baking", "May", "2023", "the", "and", "flour"]),
                 max_size=8).map(" ".join)


@given(words, words, st.integers(1, 5))
def test_scores_stay_between_zero_and_one(prediction: str, answer: str, category: int) -> None:
    assert 0.0 <= locomo_f1(prediction, answer, category) <= 1.0


@given(words, words)
def test_token_f1_is_symmetric_and_ignores_word_order(prediction: str, answer: str) -> None:
    assert token_f1(prediction, answer) == pytest.approx(token_f1(answer, prediction))
    assert token_f1(" ".join(reversed(prediction.split())), answer) == pytest.approx(token_f1(prediction, answer))


@given(words)
def test_an_answer_scores_one_against_itself_when_anything_is_left_after_normalising(answer: str) -> None:
    expected = 1.0 if normalize_answer(answer) else 0.0
    assert token_f1(answer, answer) == expected
    assert multi_answer_f1(answer, answer) == pytest.approx(expected)


@given(words, words)
def test_a_single_part_multi_hop_answer_is_plain_f1(prediction: str, answer: str) -> None:
    assert multi_answer_f1(prediction, answer) == pytest.approx(token_f1(prediction, answer))


def test_aggregation_is_per_category_and_micro_overall() -> None:
    rows = [{"category": 1, "score": 1.0}, {"category": 1, "score": 0.0}, {"category": 4, "score": 0.5}]
    result = locomo_scores(rows)
    assert result["per_category"] == {1: 0.5, 4: 0.5}
    assert result["overall"] == pytest.approx(0.5)
    assert result["counts"] == {1: 2, 4: 1}
    assert math.isnan(locomo_scores([])["overall"])


@pytest.mark.skipif(not LOCOMO_FILE.exists(), reason=f"LoCoMo data not found at {LOCOMO_FILE} (set LOCOMO_PATH)")
def test_every_gold_answer_of_the_real_file_scores_one_against_the_part_it_grades() -> None:
    conversations = json.loads(LOCOMO_FILE.read_text())
    scored = 0
    for conversation in conversations:
        for qa in conversation["qa"]:
            if qa["category"] == 5:
                continue
            answer = str(qa["answer"])
            said = answer.split(";")[0] if qa["category"] == 3 else answer  # category 3 grades the first part
            assert locomo_f1(said, answer, qa["category"]) == pytest.approx(1.0), qa
            scored += 1
    assert scored == 1986 - sum(qa["category"] == 5 for c in conversations for qa in c["qa"])
