"""The documents and ids the LongMemEval paper's retrievers index (upstream's own function is run against them in
``test_retrieval_upstream.py``)."""

from __future__ import annotations

from datetime import datetime

import pytest

from om_eval.bench.retrieval import correct_ids, retrieval_documents
from om_eval.data.records import HaystackSession, Question, Turn

DATE = datetime(2023, 5, 1)
DATE_TEXT = "2023/05/01 (Mon) 00:00"


def _session(index: int, session_id: str, *turns: Turn) -> HaystackSession:
    return HaystackSession("q", index, session_id, DATE, DATE_TEXT, turns, "answer" in session_id)


def _question(*sessions: HaystackSession) -> Question:
    return Question("q", "multi-session", "what?", "a", DATE, DATE_TEXT, sessions,
                    tuple(s.session_id for s in sessions if "answer" in s.session_id))


U1, A1 = Turn("user", "I got a dog", True), Turn("assistant", "nice", False)
U2, A2 = Turn("user", "hello  there", False), Turn("assistant", "hi", False)
FILLER = _session(0, "sharegpt_x_0", Turn("user", "plan a trip"), Turn("assistant", "sure"), Turn("user", "thanks"))
EVIDENCE = _session(1, "answer_ab12_1", U2, A2, U1, A1)
UNMARKED = _session(2, "answer_ab12_2", U2, A2)


def test_turn_documents() -> None:
    documents = retrieval_documents(_question(FILLER, EVIDENCE, UNMARKED), "turn")
    # Turn positions count both roles, from 1; unmarked user turns of evidence sessions become noans.
    assert [d.id for d in documents] == ["sharegpt_x_0_1", "sharegpt_x_0_3", "noans_ab12_1_1", "answer_ab12_1_3",
                                         "noans_ab12_2_1"]
    assert [d.text for d in documents] == ["plan a trip", "thanks", "hello  there", "I got a dog", "hello  there"]
    # The value is a round: the turn and the one after it (none after the last).
    assert documents[3].value_turns == (U1, A1)
    assert documents[1].value_turns == (Turn("user", "thanks"),)
    assert (documents[3].session_id, documents[3].session_index) == ("answer_ab12_1", 1)
    assert correct_ids([d.id for d in documents]) == ["answer_ab12_1_3"]


def test_session_documents() -> None:
    documents = retrieval_documents(_question(FILLER, EVIDENCE, UNMARKED), "session")
    assert [d.id for d in documents] == ["sharegpt_x_0", "answer_ab12_1", "noans_ab12_2"]
    assert [d.text for d in documents] == ["plan a trip thanks", "hello  there I got a dog", "hello  there"]
    assert documents[1].value_turns == EVIDENCE.turns
    assert correct_ids([d.id for d in documents]) == ["answer_ab12_1"]


def test_a_session_without_user_turns_is_still_a_session_document() -> None:
    lone = _session(0, "answer_zz_1", Turn("assistant", "only me", True))
    assert [(d.id, d.text) for d in retrieval_documents(_question(lone), "session")] == [("noans_zz_1", "")]
    assert retrieval_documents(_question(lone), "turn") == []


@pytest.mark.parametrize("granularity", ["turn", "session"])
def test_an_unmarked_user_turn_in_an_evidence_session_is_refused(granularity: str) -> None:
    broken = _session(0, "answer_zz_1", Turn("user", "x", True), Turn("user", "y"))
    with pytest.raises(ValueError, match="answer_zz_1.*has no has_answer"):
        retrieval_documents(_question(broken), granularity)  # type: ignore[arg-type]


def test_an_unknown_granularity_is_refused() -> None:
    with pytest.raises(ValueError, match="granularity"):
        retrieval_documents(_question(FILLER), "round")  # type: ignore[arg-type]
