"""What a memory system is shown of a benchmark question: its history and its question, never its gold.

The harness keeps the :class:`~om_eval.data.records.Question` (answer, evidence sessions, ``has_answer`` turns, the
raw record) and hands a system these views instead. They are frozen and have slots, so the gold is not merely left
unused: reading ``view.answer`` or ``turn.has_answer`` raises :class:`AttributeError`.

Every session and turn has an ``id`` unique within its history. A retrieval system ranks these ids (or ids of its
own documents, mapped to them): the harness grades the ranking against the gold
(:func:`~om_eval.bench.seam.grade_ranking`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from om_eval.common.recent import by_identity
from om_eval.data.records import HaystackSession, Question

#: What of a question's history a system is shown (:attr:`~om_eval.memory.system.MemorySystemBase.history_scope`).
HISTORY_SCOPES = ("all", "evidence")


@dataclass(frozen=True, slots=True)
class TurnView:
    """One message of a session."""

    id: str
    """``<session id>#<session index>:<position in the session>``: unique within the history."""
    role: str
    """``user`` or ``assistant``."""
    content: str


@dataclass(frozen=True, slots=True)
class SessionView:
    """One dated session of the history."""

    id: str
    """``<session id>#<session index>``: unique within the history (a cleaned LongMemEval haystack repeats some
    session ids)."""
    session_id: str
    """The benchmark's own id for the session."""
    index: int
    """Position in the history as the benchmark lists it."""
    date: datetime
    """When the session took place (naive local time, as the benchmark gives it)."""
    date_text: str
    """The date as the benchmark writes it."""
    turns: tuple[TurnView, ...]


@dataclass(frozen=True, slots=True)
class HistoryView:
    """The history a memory is built from: a LongMemEval haystack, a LoCoMo conversation."""

    id: str
    """The memory's owner: the question's id, or the id of the conversation several questions share."""
    sessions: tuple[SessionView, ...]
    """As the benchmark lists them (:meth:`sessions_by_date` for the order they happened in)."""

    def sessions_by_date(self) -> list[SessionView]:
        """Sessions oldest first (stable for equal dates: the benchmark's order)."""
        return sorted(self.sessions, key=lambda s: (s.date, s.index))


@dataclass(frozen=True, slots=True)
class QuestionView:
    """A question to answer from a memory."""

    question_id: str
    question: str
    question_date: datetime
    """When the question is asked (the actor's "today")."""
    question_date_text: str
    history_id: str
    """The :attr:`HistoryView.id` of the history its memory was built from."""


def session_id_of(session: HaystackSession) -> str:
    """The :attr:`SessionView.id` of ``session``."""
    return f"{session.session_id}#{session.index}"


def turn_id_of(session: HaystackSession, position: int) -> str:
    """The :attr:`TurnView.id` of ``session``'s turn at ``position``."""
    return f"{session_id_of(session)}:{position}"


@by_identity(maxsize=256)  # the sessions questions share (a LoCoMo conversation's) are viewed once
def session_view(session: HaystackSession) -> SessionView:
    """``session`` without its evidence flags."""
    prefix = session_id_of(session)
    return SessionView(prefix, session.session_id, session.index, session.date, session.date_text,
                       tuple(TurnView(f"{prefix}:{position}", turn.role, turn.content)
                             for position, turn in enumerate(session.turns)))


def history_view(question: Question, scope: str = "all") -> HistoryView:
    """The question's history as a memory system is shown it: every session, or (``scope="evidence"``, the oracle
    reader's) only the sessions the benchmark marks as holding the answer. The harness narrows it; the system is
    never told which sessions those are, only shown fewer."""
    if scope not in HISTORY_SCOPES:
        raise ValueError(f"history scope {scope!r} is invalid: allowed values are {', '.join(HISTORY_SCOPES)}")
    if scope == "all":
        return HistoryView(question.memory_owner, tuple(session_view(s) for s in question.sessions))
    # Narrowed to one question's evidence, the history (and its memory) is that question's alone.
    return HistoryView(question.question_id, tuple(session_view(s) for s in question.sessions if s.is_evidence))


def question_view(question: Question, history_id: str | None = None) -> QuestionView:
    """The question as a memory system is shown it, asked of the history ``history_id`` (default: its memory
    owner's)."""
    return QuestionView(question.question_id, question.question, question.question_date,
                        question.question_date_text, history_id or question.memory_owner)
