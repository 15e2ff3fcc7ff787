"""A benchmark history as chat messages: one thread per session, each turn a message timed after its session's
date. Every replay feeds a history this way (OM's, :mod:`om_eval.systems.om.replay`, with its protocol's spacing and
filter), and so does the harness when it prices the turns of an agent that retrieves at every turn.
"""

from __future__ import annotations

from datetime import timedelta

from om_eval.data.records import HaystackSession, Question, Turn
from om_eval.memory.system import TURN_SPACING
from om_eval.memory.view import SessionView, TurnView
from om_eval.om.records import Message

ROLES = ("user", "assistant")


def thread_id_for(session: HaystackSession, *, shown_raw: bool = False) -> str:
    """The thread id of a benchmark session (its history is the one its ``question_id`` names)."""
    return history_thread_id(session.question_id, session.index, shown_raw=shown_raw)


def history_thread_id(history_id: str, index: int, *, shown_raw: bool = False) -> str:
    """A thread id that is unique per (history, session index) and says nothing about the session's role.

    With ``shown_raw`` (``om.obscure_thread_ids=false``, so models see the id itself) it names only the session's
    position: the history id could tell a model the answer key (an ``_abs`` suffix marks an unanswerable
    question). Obscured ids keep the history id (the question's, or its shared haystack's), so their hashes, and
    every cached call, stay as they were.
    """
    return f"session-{index:04d}" if shown_raw else f"{history_id}:{index:04d}"


def turn_messages(session: HaystackSession | SessionView, thread_id: str | None = None, *,
                  spacing_seconds: int = int(TURN_SPACING.total_seconds()), skip_empty: bool = True) -> list[Message]:
    """The session's turns as OM messages (``has_answer`` dropped; unknown roles become ``user``), turn ``i`` timed
    at the session's date + ``spacing_seconds`` x ``i`` (skipped turns keep their index)."""
    if thread_id is None:
        if not isinstance(session, HaystackSession):
            raise TypeError("a session view's messages need its thread_id (history_thread_id)")
        thread_id = thread_id_for(session)
    messages = []
    turns: tuple[Turn | TurnView, ...] = session.turns
    for index, turn in enumerate(turns):
        if skip_empty and not turn.content.strip():
            continue
        messages.append(Message(
            id=f"{thread_id}:{index:04d}",
            thread_id=thread_id,
            role=turn.role if turn.role in ROLES else "user",
            content=turn.content,
            created_at=session.date + timedelta(seconds=spacing_seconds * index),
        ))
    return messages


def lived_messages(question: Question) -> list[Message]:
    """The question's haystack as an agent lived through it: sessions oldest first, turns
    :data:`~om_eval.memory.system.TURN_SPACING` apart, empty turns left out (OM's default replay feeds the same
    messages)."""
    return [m for session in question.sessions_by_date() for m in turn_messages(session)]
