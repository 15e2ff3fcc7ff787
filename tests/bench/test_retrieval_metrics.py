"""The LongMemEval paper's retrieval metrics on small hand-computed cases (the upstream comparison is in
``test_retrieval_upstream.py``)."""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np
import pytest

from om_eval.bench.retrieval import (
    evaluate_retrieval,
    evaluate_retrieval_turn2session,
    retrieval_skip_reason,
    session_of_turn_id,
)
from om_eval.data.records import HaystackSession, Question, Turn

# Three documents, two of them correct, ranked b, a, c. Upstream's DCG weighs positions 1 and 2 by 1 and
# position p >= 3 by 1 / log2(p). Relevances in ranked order: 1, 0, 1; ideal order: 1, 1, 0.
IDS = ["a_1", "answer_b_1", "answer_c_1"]
CORRECT = ["answer_b_1", "answer_c_1"]
RANKING = [1, 0, 2]


def test_recall_and_ndcg_by_hand() -> None:
    # k = 1: only b retrieved. DCG 1, ideal 1.
    assert evaluate_retrieval(RANKING, CORRECT, IDS, k=1) == (1.0, 0.0, 1.0)
    # k = 2: b, a. DCG 1 + 0/1 = 1; ideal 1 + 1/1 = 2 (a textbook DCG would say 1 + 1/log2(3)).
    assert evaluate_retrieval(RANKING, CORRECT, IDS, k=2) == (1.0, 0.0, 0.5)
    # k = 3: all retrieved. DCG 1 + 0 + 1/log2(3); ideal 2.
    recall_any, recall_all, ndcg = evaluate_retrieval(RANKING, CORRECT, IDS, k=3)
    assert (recall_any, recall_all) == (1.0, 1.0)
    assert math.isclose(ndcg, (1 + 1 / math.log2(3)) / 2, rel_tol=1e-12)
    # Past the corpus changes nothing; a numpy array ranking (what upstream's argsort gives) reads the same.
    assert evaluate_retrieval(np.array(RANKING), CORRECT, IDS, k=10) == evaluate_retrieval(RANKING, CORRECT, IDS, k=3)


def test_no_correct_document() -> None:
    # any() of nothing is false, all() of nothing true; an ideal DCG of 0 gives NDCG 0.
    assert evaluate_retrieval(RANKING, [], IDS, k=2) == (0.0, 1.0, 0.0)
    assert evaluate_retrieval(RANKING, ["answer_z_1"], IDS, k=3) == (0.0, 0.0, 0.0)


def test_turn_ranking_scored_by_session() -> None:
    # Turns of sessions x, x, answer_y, z. The top 2 turns are one session, so k = 2 sessions needs depth 3:
    # x, answer_y. Relevances by turn: 0, 0, 1, 0; DCG 1/log2(3), ideal 1.
    ids = ["x_1", "x_3", "answer_y_1", "z_1"]
    assert evaluate_retrieval([0, 1, 2, 3], ["answer_y_1"], ids, k=2) == (0.0, 0.0, 0.0)
    recall_any, recall_all, ndcg = evaluate_retrieval_turn2session([0, 1, 2, 3], ["answer_y_1"], ids, k=2)
    assert (recall_any, recall_all) == (1.0, 1.0)
    assert math.isclose(ndcg, 1 / math.log2(3), rel_tol=1e-12)


def test_a_noans_turn_is_its_own_wrong_session() -> None:
    # The unmarked turn of evidence session answer_y is noans_y_3: at session level noans_y, not answer_y.
    ids = ["noans_y_3", "answer_y_1"]
    assert evaluate_retrieval_turn2session([0, 1], ["answer_y_1"], ids, k=1) == (0.0, 0.0, 0.0)


def test_session_of_turn_id() -> None:
    assert session_of_turn_id("answer_4be1b6b4_2_3") == "answer_4be1b6b4_2"
    assert session_of_turn_id("ultrachat_1") == "ultrachat"
    assert session_of_turn_id("plain") == ""  # '_'.join of nothing, as upstream


@pytest.mark.parametrize("k", [0, -1])
def test_k_must_be_positive(k: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        evaluate_retrieval(RANKING, CORRECT, IDS, k=k)
    with pytest.raises(ValueError, match="at least 1"):
        evaluate_retrieval_turn2session(RANKING, CORRECT, IDS, k=k)


def _question(question_id: str, marks: list[tuple[str, bool | None]]) -> Question:
    date = datetime(2023, 5, 1)
    turns = tuple(Turn(role, "text", has_answer) for role, has_answer in marks)
    session = HaystackSession(question_id, 0, "answer_s_1", date, "2023/05/01 (Mon) 00:00", turns, True)
    return Question(question_id, "multi-session", "q?", "a", date, "2023/05/01 (Mon) 00:00", (session,),
                    ("answer_s_1",))


def test_which_questions_upstream_leaves_out() -> None:
    assert retrieval_skip_reason(_question("q1", [("user", True), ("assistant", False)])) is None
    assert retrieval_skip_reason(_question("q1_abs", [("user", True)])) == "abstention"
    # Evidence only on the assistant side: no indexed document is correct.
    assert retrieval_skip_reason(_question("q2", [("user", False), ("assistant", True)])) is not None
