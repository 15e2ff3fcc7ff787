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

__all__ = ["BM25_B", "BM25_EPSILON", "BM25_K1", "GrowingBm25", "bm25_okapi_scores", "rank", "tokenize"]

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
    if not corpus:
        return []
    term_counts = [Counter(tokenize(text)) for text in corpus]
    lengths = [sum(counts.values()) for counts in term_counts]
    document_frequencies: dict[str, int] = {}
    for counts in term_counts:
        for word in counts:
            document_frequencies[word] = document_frequencies.get(word, 0) + 1
    idf = _idf(document_frequencies, len(corpus))
    mean_length = sum(lengths) / len(corpus)
    # k1 * (1 - b + b * |d| / avgdl), grouped as BM25Okapi groups it.
    saturation = [BM25_K1 * ((1 - BM25_B) + BM25_B * length / mean_length) for length in lengths]
    scores = [0.0] * len(corpus)
    for word in tokenize(query):
        if word not in idf:
            continue  # upstream adds 0 * (...) == +0.0, which changes no score
        weight = idf[word]
        for i, counts in enumerate(term_counts):
            tf = counts.get(word, 0)
            scores[i] += weight * (tf * (BM25_K1 + 1) / (tf + saturation[i]))
    return scores


def rank(scores: Sequence[float] | NDArray[np.floating[Any]]) -> list[int]:
    """Document indices, best score first, with ties in the order upstream's ``np.argsort(scores)[::-1]`` gives."""
    return [int(i) for i in np.argsort(np.asarray(scores, dtype=np.float64))[::-1]]


class GrowingBm25:
    """BM25Okapi's scores over the first ``n`` of a fixed list of documents, as ``n`` grows: what an agent's index
    holds at each moment of a conversation (the turn-cost replay retrieves at every user turn).

    Every document is counted once, up front, into postings sorted by word; :meth:`grow` takes in the next
    documents and re-weights (document frequencies, the idf floor, lengths) in numpy; :meth:`scores` gathers the
    postings of the query's words in one pass. The formulas are :func:`bm25_okapi_scores`'s, summed in another
    order: equal to it to rounding, not bit for bit (ranking ties may break otherwise), which is why upstream's
    scoring stays the function above.
    """

    def __init__(self, corpus: Sequence[str]) -> None:
        self._ids: dict[str, int] = {}
        words: list[int] = []
        documents: list[int] = []
        frequencies: list[int] = []
        self._document_words: list[NDArray[np.intp]] = []
        lengths = []
        for position, text in enumerate(corpus):
            counts = Counter(tokenize(text))
            lengths.append(sum(counts.values()))
            ids = [self._ids.setdefault(word, len(self._ids)) for word in counts]
            self._document_words.append(np.asarray(ids, dtype=np.intp))
            words += ids
            documents += [position] * len(ids)
            frequencies += counts.values()
        order = np.argsort(np.asarray(words, dtype=np.intp), kind="stable")  # by word, then by document
        self._posting_documents = np.asarray(documents, dtype=np.intp)[order]
        self._posting_frequencies = np.asarray(frequencies, dtype=np.float64)[order]
        self._offsets = np.zeros(len(self._ids) + 1, dtype=np.intp)
        np.cumsum(np.bincount(np.asarray(words, dtype=np.intp), minlength=len(self._ids)), out=self._offsets[1:])
        self._lengths = np.asarray(lengths, dtype=np.float64)
        self._frequencies = np.zeros(len(self._ids), dtype=np.float64)
        self._idf = np.zeros(len(self._ids), dtype=np.float64)
        self._saturation = np.zeros(0, dtype=np.float64)
        self.size = 0

    def grow(self, size: int) -> None:
        """Index the first ``size`` documents (an index only grows)."""
        if not self.size <= size <= len(self._document_words):
            raise ValueError(f"grow({size}): the index holds {self.size} of {len(self._document_words)} documents "
                             "and only grows")
        for position in range(self.size, size):
            self._frequencies[self._document_words[position]] += 1
        self.size = size
        if not size:
            return
        seen = self._frequencies > 0
        idf = np.log(size - self._frequencies + 0.5) - np.log(self._frequencies + 0.5)
        floor = BM25_EPSILON * float(idf[seen].mean())
        self._idf = np.where(idf < 0, floor, idf)
        lengths = self._lengths[:size]
        self._saturation = BM25_K1 * ((1 - BM25_B) + BM25_B * lengths / lengths.mean())

    def scores(self, query: str) -> NDArray[np.float64]:
        """One score per indexed document (an empty index: an empty array)."""
        counts = Counter(tokenize(query))
        known = [(self._ids[word], repeats) for word, repeats in counts.items() if word in self._ids]
        if not known or not self.size:
            return np.zeros(self.size, dtype=np.float64)
        ids = np.asarray([word for word, _ in known], dtype=np.intp)
        repeats = np.asarray([times for _, times in known], dtype=np.float64)
        starts, sizes = self._offsets[ids], self._offsets[ids + 1] - self._offsets[ids]
        # Every posting of every query word, in one gather: each word's run of positions, laid end to end.
        runs = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))
        documents = self._posting_documents[runs]
        indexed = documents < self.size
        documents, frequencies = documents[indexed], self._posting_frequencies[runs][indexed]
        weights = (np.repeat(repeats * self._idf[ids], sizes)[indexed]
                   * (frequencies * (BM25_K1 + 1) / (frequencies + self._saturation[documents])))
        return np.bincount(documents, weights=weights, minlength=self.size).astype(np.float64)
