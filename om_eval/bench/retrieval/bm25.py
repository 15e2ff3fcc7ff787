"""The LongMemEval paper's ``flat-bm25`` retriever: ``rank_bm25.BM25Okapi`` scores and a numpy argsort, rebuilt.

Why the scores are computed in this exact order: ranking sorts them, and two documents whose upstream scores tie
must tie here too (and two that differ by one ulp must differ), or the top k, and with it every recall, changes.
Each float operation below is the one ``BM25Okapi`` performs, in the same order (numpy's element-wise arithmetic
is correctly rounded, as Python's is), so the scores are bit-identical, not merely close; ``tests/bench`` checks
that against rank_bm25 itself.

Why :func:`rank` calls numpy: upstream orders documents with ``np.argsort(scores)[::-1]``. The default sort is not
stable, and on x86 numpy dispatches it to SIMD sorting networks (x86-simd-sort), so the order of equal scores
depends on the numpy version and the CPU, not on a rule pure Python could restate. Calling the same numpy is the
only way to get upstream's order of ties on the same machine.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["BM25_B", "BM25_EPSILON", "BM25_K1", "Bm25Okapi", "bm25_okapi_scores", "rank", "tokenize"]

#: ``BM25Okapi``'s defaults, which upstream keeps.
BM25_K1 = 1.5
BM25_B = 0.75
#: Negative idfs (words in more than half of the documents) are raised to this fraction of the mean idf.
BM25_EPSILON = 0.25


def tokenize(text: str) -> list[str]:
    """Upstream's tokeniser: every single space splits, so a double space yields an empty token, and it counts."""
    return text.split(" ")


def _idf(document_frequencies: dict[str, int], corpus_size: int) -> dict[str, float]:
    # The mean idf is summed in the order words were first seen, as BM25Okapi sums it: the floor depends on it.
    idf = {word: math.log(corpus_size - df + 0.5) - math.log(df + 0.5) for word, df in document_frequencies.items()}
    idf_sum = 0.0
    for value in idf.values():
        idf_sum += value
    floor = BM25_EPSILON * (idf_sum / len(idf))
    return {word: floor if value < 0 else value for word, value in idf.items()}


def bm25_okapi_scores(corpus: Sequence[str], query: str) -> list[float]:
    """Score each document of ``corpus`` for ``query`` as upstream's ``flat-bm25`` does.

    Args:
        corpus: the documents' texts, tokenised with :func:`tokenize`.
        query: tokenised the same way; a repeated word counts each time, an unseen word adds nothing.

    Returns:
        One score per document, in corpus order, equal bit for bit to ``BM25Okapi(...).get_scores(...)``. An empty
        corpus gives an empty list (``BM25Okapi`` divides by zero there).
    """
    return Bm25Okapi([Counter(tokenize(text)) for text in corpus]).scores(query)


class Bm25Okapi:
    """``BM25Okapi`` over documents already counted (:func:`tokenize`, then a :class:`~collections.Counter`), so an
    index over a growing corpus recounts no document."""

    def __init__(self, term_counts: Sequence[Counter[str]]) -> None:
        self.term_counts = term_counts
        if not term_counts:
            self.idf: dict[str, float] = {}
            self.saturation: list[float] = []
            return
        lengths = [sum(counts.values()) for counts in term_counts]
        document_frequencies: dict[str, int] = {}
        for counts in term_counts:
            for word in counts:
                document_frequencies[word] = document_frequencies.get(word, 0) + 1
        self.idf = _idf(document_frequencies, len(term_counts))
        mean_length = sum(lengths) / len(term_counts)
        # k1 * (1 - b + b * |d| / avgdl), grouped as BM25Okapi groups it.
        self.saturation = [BM25_K1 * ((1 - BM25_B) + BM25_B * length / mean_length) for length in lengths]

    def scores(self, query: str) -> list[float]:
        """One score per document, in order (an empty corpus: an empty list)."""
        scores = [0.0] * len(self.term_counts)
        for word in tokenize(query):
            if word not in self.idf:
                continue  # upstream adds 0 * (...) == +0.0, which changes no score
            weight = self.idf[word]
            for i, counts in enumerate(self.term_counts):
                tf = counts.get(word, 0)
                scores[i] += weight * (tf * (BM25_K1 + 1) / (tf + self.saturation[i]))
        return scores


def rank(scores: Sequence[float] | NDArray[np.floating[Any]]) -> list[int]:
    """Document indices, best score first, with ties in the order upstream's ``np.argsort(scores)[::-1]`` gives."""
    return [int(i) for i in np.argsort(np.asarray(scores, dtype=np.float64))[::-1]]
