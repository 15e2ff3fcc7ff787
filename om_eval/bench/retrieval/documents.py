"""What the LongMemEval paper's retrievers index for a question, under its ids (``run_retrieval.py`` at 9e0b455).

Only user turns are indexed (the key); the reader is shown more (the value). Ids follow upstream's rule, which reads
the *session id*, not ``answer_session_ids``: a session whose id contains ``answer`` is an evidence session, and its
documents that hold no ``has_answer`` user turn get ``noans`` in place of ``answer``, so that "the id contains
``answer``" is exactly "the document is correct" (:func:`correct_ids`).

* ``turn``: one document per user turn, id ``<session id>_<position of the turn in the session, from 1>`` (both
  roles are counted, so user turns are usually 1, 3, 5, ...); the value is that turn and the one after it.
* ``session``: one document per session, its user turns joined by single spaces (an empty text when it has none),
  id the session id; the value is the whole session.

Upstream's reader finds a value by id, so of two sessions sharing an id (cleaned S repeats some) it shows the last;
here each document keeps its own session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from om_eval.data.records import HaystackSession, Question, Turn
from om_eval.memory.view import HistoryView, TurnView

__all__ = ["Granularity", "HistoryDocument", "RetrievalDocument", "correct_ids", "history_documents",
           "retrieval_documents"]

Granularity = Literal["turn", "session"]

_EVIDENCE = "answer"
_NOT_EVIDENCE = "noans"


@dataclass(frozen=True)
class RetrievalDocument:
    """One indexed document of a question's haystack.

    Attributes:
        id: upstream's corpus id; it contains ``answer`` exactly when the document is evidence.
        text: what the retriever indexes (user text only).
        session_id: the haystack session it comes from.
        session_index: that session's position in the haystack (session ids can repeat).
        value_turns: what a reader is shown when the document is retrieved.
    """

    id: str
    text: str
    session_id: str
    session_index: int
    value_turns: tuple[Turn, ...]


def _marked(session: HaystackSession, turn: Turn, question_id: str) -> bool:
    if turn.has_answer is None:
        # Upstream fails here too (an assert, or a KeyError): an evidence session must mark every user turn.
        raise ValueError(
            f"question {question_id}: session {session.session_id!r} (index {session.index}) is an evidence session "
            "(its id contains 'answer') but one of its user turns has no has_answer"
        )
    return turn.has_answer


def _turn_documents(question: Question, session: HaystackSession) -> list[RetrievalDocument]:
    documents = []
    evidence_session = _EVIDENCE in session.session_id
    for position, turn in enumerate(session.turns):
        if turn.role != "user":
            continue
        doc_id = f"{session.session_id}_{position + 1}"
        if evidence_session and not _marked(session, turn, question.question_id):
            doc_id = doc_id.replace(_EVIDENCE, _NOT_EVIDENCE)
        documents.append(RetrievalDocument(doc_id, turn.content, session.session_id, session.index,
                                           session.turns[position:position + 2]))
    return documents


def _session_document(question: Question, session: HaystackSession) -> RetrievalDocument:
    user_turns = [turn for turn in session.turns if turn.role == "user"]
    doc_id = session.session_id
    # A list, not a generator: like upstream, every user turn of an evidence session must be marked.
    if _EVIDENCE in doc_id and not any([_marked(session, turn, question.question_id) for turn in user_turns]):
        doc_id = doc_id.replace(_EVIDENCE, _NOT_EVIDENCE)
    return RetrievalDocument(doc_id, " ".join(turn.content for turn in user_turns), session.session_id,
                             session.index, session.turns)


def retrieval_documents(question: Question, granularity: Granularity) -> list[RetrievalDocument]:
    """The question's haystack as upstream indexes it, in haystack order.

    Raises:
        ValueError: an unknown granularity, or a user turn of an evidence session without ``has_answer``.
    """
    if granularity == "turn":
        return [document for session in question.sessions for document in _turn_documents(question, session)]
    if granularity == "session":
        return [_session_document(question, session) for session in question.sessions]
    raise ValueError(f"granularity must be 'turn' or 'session', got {granularity!r}")


def correct_ids(corpus_ids: Sequence[str]) -> list[str]:
    """The evidence ids among ``corpus_ids`` (those containing ``answer``), each once, sorted."""
    return sorted({doc_id for doc_id in corpus_ids if _EVIDENCE in doc_id})


@dataclass(frozen=True)
class HistoryDocument:
    """One indexed document of a history as a memory system sees it (no gold, so no ``noans`` renaming): the
    same documents as :func:`retrieval_documents`, in the same order, named by the view's ids.

    Attributes:
        id: the session's view id (``session``) or the user turn's (``turn``).
        text: what the retriever indexes (user text only).
        session_index: the session's position in the history.
        value_turns: what a reader is shown when the document is retrieved.
    """

    id: str
    text: str
    session_index: int
    value_turns: tuple[TurnView, ...]

    @property
    def held_turns(self) -> tuple[str, ...]:
        """The turns the harness grades it by: a session's turns, or a user turn and its reply (a second user turn
        shown after it is context, as upstream's id rule reads only the turn a document is keyed by)."""
        turns = self.value_turns
        if turns and turns[0].id == self.id:  # a turn document
            return (turns[0].id, *(t.id for t in turns[1:] if t.role != turns[0].role))
        return tuple(t.id for t in turns)


def history_documents(history: HistoryView, granularity: Granularity) -> list[HistoryDocument]:
    """The history as upstream indexes it, in history order, named by view ids (graded by the harness)."""
    if granularity == "turn":
        return [HistoryDocument(turn.id, turn.content, session.index, session.turns[position:position + 2])
                for session in history.sessions for position, turn in enumerate(session.turns)
                if turn.role == "user"]
    if granularity == "session":
        return [HistoryDocument(session.id, " ".join(t.content for t in session.turns if t.role == "user"),
                                session.index, session.turns) for session in history.sessions]
    raise ValueError(f"granularity must be 'turn' or 'session', got {granularity!r}")
