"""The LongMemEval paper's retrieval baseline, restated: its documents and ids, flat BM25, and its metrics.

``documents`` builds what is indexed for a question, ``bm25`` scores and ranks it as ``flat-bm25`` does, and
``metrics`` computes recall_any, recall_all and ndcg_any at k, turn- and session-level, with upstream's results.
"""

from om_eval.bench.retrieval.bm25 import GrowingBm25, bm25_okapi_scores, rank, tokenize
from om_eval.bench.retrieval.documents import (
    Granularity,
    HistoryDocument,
    RetrievalDocument,
    correct_ids,
    history_documents,
    retrieval_documents,
)
from om_eval.bench.retrieval.metrics import (
    Ranking,
    RetrievalScores,
    evaluate_retrieval,
    evaluate_retrieval_turn2session,
    retrieval_skip_reason,
    session_of_turn_id,
)

__all__ = [
    "Granularity",
    "GrowingBm25",
    "HistoryDocument",
    "Ranking",
    "RetrievalDocument",
    "RetrievalScores",
    "bm25_okapi_scores",
    "correct_ids",
    "evaluate_retrieval",
    "evaluate_retrieval_turn2session",
    "history_documents",
    "rank",
    "retrieval_documents",
    "retrieval_skip_reason",
    "session_of_turn_id",
    "tokenize",
]
