"""Flat BM25 as the LongMemEval paper ran it: hand-computed scores, and bit-equality with rank_bm25 itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.bench.retrieval import (
    Granularity,
    GrowingBm25,
    bm25_okapi_scores,
    rank,
    retrieval_documents,
    tokenize,
)
from om_eval.data.loader import question_from_record
from om_eval.data.synth import generate

#: ln(5/3): the idf of a word in 1 of 3 documents, ln(3 - 1 + 0.5) - ln(1 + 0.5).
L = math.log(5 / 3)


def test_tokenize_splits_on_single_spaces() -> None:
    assert tokenize("a  b ") == ["a", "", "b", ""]
    assert tokenize("") == [""]


def test_scores_by_hand() -> None:
    # Three documents of lengths 2, 3, 1: avgdl 2. idf(cat) = idf(bird) = idf(fish) = L; dog is in 2 of 3, so its
    # idf ln(1.5 / 2.5) = -L is negative and floored at 0.25 * mean idf = 0.25 * (3L - L) / 4 = L / 8.
    # Saturation k1 * (0.25 + 0.75 * |d| / 2): 1.5 for |d| = 2, 2.0625 for |d| = 3.
    corpus = ["cat dog", "dog dog bird", "fish"]
    # cat in document 0 (tf 1): L * 2.5 / (1 + 1.5) = L.
    assert bm25_okapi_scores(corpus, "cat") == pytest.approx([L, 0.0, 0.0], rel=1e-12)
    # dog: document 0 (tf 1) L/8 * 2.5 / 2.5; document 1 (tf 2) L/8 * 5 / 4.0625 = L/8 * 16/13 = 2L/13.
    assert bm25_okapi_scores(corpus, "dog") == pytest.approx([L / 8, 2 * L / 13, 0.0], rel=1e-12)
    # A repeated query word counts twice; the empty token of the double space is in no document and adds nothing.
    assert bm25_okapi_scores(corpus, "cat  cat") == pytest.approx([2 * L, 0.0, 0.0], rel=1e-12)
    assert bm25_okapi_scores(corpus, "zebra") == [0.0, 0.0, 0.0]
    assert bm25_okapi_scores([], "cat") == []


def test_rank_puts_the_best_first() -> None:
    assert rank([0.5, 2.0, 1.0]) == [1, 2, 0]
    assert rank([]) == []
    assert rank(np.array([3.0, 1.0, 2.0])) == [0, 2, 1]


# Few distinct words, so that documents share words, idfs go negative, scores tie and empty tokens appear.
_text = st.text(alphabet="ab c", max_size=12) | st.lists(st.sampled_from(["a", "b", "the", "", "I", "a."]),
                                                         max_size=8).map(" ".join)
_corpus = st.lists(_text, min_size=1, max_size=30)


@settings(max_examples=400, deadline=None)
@given(corpus=_corpus, query=_text)
def test_scores_and_ranks_equal_rank_bm25(corpus: list[str], query: str) -> None:
    rank_bm25 = pytest.importorskip("rank_bm25", reason="rank_bm25 is in the test extra: pip install -e '.[test]'")
    expected = rank_bm25.BM25Okapi([text.split(" ") for text in corpus]).get_scores(query.split(" "))
    scores = bm25_okapi_scores(corpus, query)
    # Bit-equal, not just close: a one-ulp difference would break or make a tie and reorder the ranking.
    assert scores == expected.tolist()
    assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0) for a, b in zip(scores, expected))
    assert rank(scores) == np.argsort(expected)[::-1].tolist()


@pytest.mark.parametrize("granularity", ["turn", "session"])
def test_rankings_of_a_synthetic_haystack_equal_upstreams(granularity: Granularity) -> None:
    rank_bm25 = pytest.importorskip("rank_bm25", reason="rank_bm25 is in the test extra: pip install -e '.[test]'")
    for record in generate(size="small", seed=3):
        question = question_from_record(record)
        corpus = [document.text for document in retrieval_documents(question, granularity)]
        upstream = np.argsort(rank_bm25.BM25Okapi([doc.split(" ") for doc in corpus]).get_scores(
            question.question.split(" ")))[::-1]
        assert rank(bm25_okapi_scores(corpus, question.question)) == upstream.tolist()


@settings(max_examples=200, deadline=None)
@given(corpus=st.lists(st.text(alphabet="abcd ", max_size=12), min_size=1, max_size=8),
       query=st.text(alphabet="abcd ", max_size=10), data=st.data())
def test_a_growing_index_scores_its_first_documents_as_bm25okapi_over_them(corpus: list[str], query: str,
                                                                          data: st.DataObject) -> None:
    index = GrowingBm25(corpus)
    sizes = sorted(data.draw(st.lists(st.integers(0, len(corpus)), min_size=1, max_size=3)))
    for size in sizes:
        index.grow(size)
        expected = bm25_okapi_scores(corpus[:size], query)
        assert np.allclose(index.scores(query), expected, rtol=1e-12, atol=1e-12)


def test_a_growing_index_refuses_to_shrink_or_outgrow_its_documents() -> None:
    index = GrowingBm25(["a b", "b c"])
    index.grow(2)
    for size in (1, 3):
        with pytest.raises(ValueError, match="only grows"):
            index.grow(size)
