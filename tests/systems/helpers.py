"""Small haystacks and stand-in services for the memory systems' tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from om_eval.bench.turn_costs import PartRecorder
from om_eval.data.records import HaystackSession, Question, Turn
from om_eval.data.records import format_lme_date as date_text
from om_eval.memory import PromptPart
from om_eval.memory.services import TurnRecording

START = datetime(2023, 5, 1, 9, 0)


def session(index: int, session_id: str, *turns: tuple[str, str] | tuple[str, str, bool], day: int = 0
            ) -> HaystackSession:
    moment = START + timedelta(days=day)
    made = tuple(Turn(t[0], t[1], t[2] if len(t) > 2 else False) for t in turns)  # type: ignore[misc]
    return HaystackSession("q1", index, session_id, moment, date_text(moment), made, "answer" in session_id)


def question(*sessions: HaystackSession, text: str = "Which city did I move to?", qid: str = "q1") -> Question:
    asked = START + timedelta(days=30)
    return Question(qid, "single-session-user", text, "Lisbon", asked, date_text(asked), sessions,
                    tuple(s.session_id for s in sessions if s.is_evidence))


class WordCounter:
    name = "words"

    def count_text(self, text: str) -> int:
        return len(text.split())


class FakeServices(TurnRecording):
    """Services with a bag-of-words embedder and a scripted completion; records what was asked."""

    def __init__(self, options: Mapping[str, Any] | None = None, replies: Sequence[str] = (),
                 turns: PartRecorder | None = None) -> None:
        self.options = dict(options or {})
        self.turns = turns
        self.recorded: list[list[PromptPart]] = []
        """The parts of each turn recorded (with ``turns``)."""
        self.replies = list(replies)
        self.completions: list[list[Mapping[str, str]]] = []
        self.embedded: list[list[str]] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    async def complete(self, messages: Sequence[Mapping[str, str]], *, stage: str = "observer") -> str:
        self.completions.append(list(messages))
        reply = self.replies.pop(0) if self.replies else ""
        if self.turns is not None:
            self.turns.charge(stage, sum(len(m["content"].split()) for m in messages), len(reply.split()))
        return reply

    async def embed(self, texts: Sequence[str], *, model: str | None = None, stage: str = "retrieval"
                    ) -> list[list[float]]:
        self.embedded.append(list(texts))
        vocabulary = ["lisbon", "city", "move", "moved", "dog", "bake", "sourdough", "weather"]
        return [[float(text.lower().count(word)) for word in vocabulary] + [0.01] for text in texts]

    def record_turn(self, parts: Sequence[PromptPart], *, at: datetime, reply: PromptPart | None = None) -> None:
        if self.turns is not None:
            self.recorded.append(list(parts))
        super().record_turn(parts, at=at, reply=reply)
