"""Retrieval metrics as the LongMemEval paper reports them (``src/retrieval/eval_utils.py`` at 9e0b455).

``rankings`` are indices into ``corpus_ids`` (best first); ``correct_docs`` are the ids that count as evidence. Ids
may repeat (cleaned S repeats some filler session ids), so relevance is decided per corpus position.

Upstream's DCG is not the textbook one: the first two positions both weigh 1, position i (1-based, i >= 2) weighs
``1 / log2(i)``. The ideal DCG is taken over *every* corpus position's relevance, so at session level (see
:func:`evaluate_retrieval_turn2session`) each turn of an evidence session adds to it. A question with no relevant
document scores NDCG 0; with no correct id at all, recall_any is 0 and recall_all 1 (``any``/``all`` of nothing).

Questions upstream leaves out of the averages are named by :func:`retrieval_skip_reason`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

from om_eval.data.records import Question

__all__ = [
    "Ranking",
    "RetrievalScores",
    "evaluate_retrieval",
    "evaluate_retrieval_turn2session",
    "retrieval_skip_reason",
    "session_of_turn_id",
]

RetrievalScores = tuple[float, float, float]
"""``(recall_any, recall_all, ndcg_any)`` at one k."""
Ranking: TypeAlias = Sequence[int] | NDArray[np.integer[Any]]
"""Indices into the corpus, best first: a list, or the array upstream's argsort returns."""


def _dcg(relevances: Sequence[int], k: int) -> float:
    top = relevances[:k]
    if not top:
        return 0.0
    return float(top[0] + sum(relevance / math.log2(position) for position, relevance in enumerate(top[1:], start=2)))


def _ndcg(rankings: Ranking, relevant: Collection[str], corpus_ids: Sequence[str], k: int) -> float:
    relevances = [1 if doc_id in relevant else 0 for doc_id in corpus_ids]
    ideal = _dcg(sorted(relevances, reverse=True), k)
    if ideal == 0:
        return 0.0
    return _dcg([relevances[i] for i in rankings[:k]], k) / ideal


def evaluate_retrieval(
    rankings: Ranking, correct_docs: Collection[str], corpus_ids: Sequence[str], k: int = 10
) -> RetrievalScores:
    """Recall and NDCG of the top ``k`` documents.

    Args:
        rankings: indices into ``corpus_ids``, best first.
        correct_docs: the evidence ids.
        corpus_ids: one id per indexed document.
        k: how many top documents count; at least 1.

    Returns:
        ``(recall_any, recall_all, ndcg_any)``: whether any / every correct id is among the top k ids (1.0 or
        0.0), and the NDCG at k with relevance 1 for a document whose id is correct.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    relevant = set(correct_docs)
    retrieved = {corpus_ids[i] for i in rankings[:k]}
    recall_any = float(any(doc_id in retrieved for doc_id in relevant))
    recall_all = float(all(doc_id in retrieved for doc_id in relevant))
    return recall_any, recall_all, _ndcg(rankings, relevant, corpus_ids, k)


def session_of_turn_id(turn_id: str) -> str:
    """``<session id>_<turn index>`` -> ``<session id>``; an id without ``_`` maps to ``""``, as upstream's does."""
    return turn_id.rpartition("_")[0]


def evaluate_retrieval_turn2session(
    rankings: Ranking, correct_docs: Collection[str], corpus_ids: Sequence[str], k: int = 10
) -> RetrievalScores:
    """Session-level metrics of a turn-level ranking: k counts distinct sessions, not turns.

    Every id loses its turn suffix (:func:`session_of_turn_id`); a ``noans`` turn of an evidence session thus maps
    to a ``noans`` session id, which is not correct. The ranking is then read down until its top holds ``k``
    distinct sessions (or past the whole corpus), and :func:`evaluate_retrieval` runs at that depth on the session
    ids. Arguments and result as :func:`evaluate_retrieval`.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    session_ids = [session_of_turn_id(doc_id) for doc_id in corpus_ids]
    depth = k
    sessions_seen = {session_ids[i] for i in rankings[:depth]}
    while depth <= len(session_ids) and len(sessions_seen) < k:
        if depth < len(rankings):
            sessions_seen.add(session_ids[rankings[depth]])
        depth += 1
    correct_sessions = {session_of_turn_id(doc_id) for doc_id in correct_docs}
    return evaluate_retrieval(rankings, correct_sessions, session_ids, k=depth)


def retrieval_skip_reason(question: Question) -> str | None:
    """Why upstream leaves ``question`` out of the averaged retrieval metrics, or ``None`` when it counts.

    Upstream skips abstention questions, then questions in which no user turn is marked ``has_answer``
    (their evidence is only on the assistant side, which is never indexed).
    """
    if question.is_abstention:
        return "abstention"
    if not any(turn.role == "user" and turn.has_answer for session in question.sessions for turn in session.turns):
        return "no user turn holds the answer"
    return None
