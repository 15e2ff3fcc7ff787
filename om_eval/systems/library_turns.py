"""Per-turn prompts of an agent on a searching library's memory (mem0, Graphiti): for the per-turn cost table.

Such an agent, at every user message, searches the memory with the message and sends the harness's instructions,
what the search found (as the actor is shown it at answer time), the day's date, the session's messages so far and
the message. A library adds a session when it ends (as the harness replays it), so the search at a message of
session *k* sees the memory of the sessions before *k*; the library's own model calls for session *k* are charged
to the turns that follow them, as the harness's recorder charges any memory call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from om_eval.bench.seam import seam_actor_prompts
from om_eval.memory.parts import PromptPart
from om_eval.memory.system import TURN_SPACING
from om_eval.memory.view import SessionView
from om_eval.om.prompts import fill

__all__ = ["SearchedTurns"]


class SearchedTurns:
    """Records one session's user turns, given what the memory's search found for each."""

    def __init__(self) -> None:
        prompts = seam_actor_prompts()
        self.instructions = PromptPart("instructions", prompts["instructions"], head=True)
        self._template = prompts["memory"]

    @staticmethod
    def user_messages(session: SessionView) -> list[str]:
        """The session's user messages, in order: the searches to run (one block each, for :meth:`record`)."""
        return [turn.content for turn in session.turns if turn.role == "user"]

    def record(self, services: Any, session: SessionView, found: Sequence[str]) -> None:
        """Record the session's user turns; ``found[i]`` is the memory text the search gave its ``i``-th user
        message (empty: nothing found, no memory block)."""
        blocks = iter(found)
        said: list[PromptPart] = []
        for position, turn in enumerate(session.turns):
            part = PromptPart(("message", session.id, position), turn.content)
            if turn.role == "user":
                block = next(blocks, "")
                at = session.date + TURN_SPACING * position
                shown = [PromptPart(("memory", hashlib.sha256(block.encode()).hexdigest()),
                                    fill(self._template, memory=block), head=True)] if block else []
                day = PromptPart(("date", at.date()), f"Current Date: {at:%Y/%m/%d (%a)}", head=True)
                following = session.turns[position + 1] if position + 1 < len(session.turns) else None
                reply = PromptPart(("message", session.id, position + 1), following.content) \
                    if following is not None and following.role == "assistant" else None
                services.record_turn([self.instructions, *shown, day, *said, part], at=at, reply=reply)
            said.append(part)
