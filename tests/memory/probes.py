"""Memory systems that test the seam's edges: one looks for the gold, one ranks ids it cannot have searched, one
changes its memory while answering, one embeds without saying so. Registered by tests as ``module:attribute``."""

from __future__ import annotations

from typing import Any, ClassVar

from om_eval.memory import HistoryView, MemoryContext, MemorySystemBase, QuestionView

#: What the benchmark's record holds and a system must never be shown.
GOLD = ("answer", "answer_session_ids", "raw", "is_evidence", "has_answer", "judge_answer", "corrected_answer",
        "question_type", "is_abstention", "abstention", "answer_text")


def gold_found(obj: object) -> list[str]:
    return [name for name in GOLD if hasattr(obj, name)]


class GoldProbe:
    """A plain class (no base): keeps the last user turns, and fails if any gold is reachable from what it is given."""

    name = "gold_probe"
    uses_observer_model = False

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def identity(self) -> dict[str, Any]:
        return {"version": 1}

    def budget(self) -> dict[str, Any]:
        return {"turns": 4}

    async def ingest(self, history: Any, services: Any) -> tuple[str, ...]:
        found = gold_found(history) + [n for s in history.sessions for n in gold_found(s)]
        found += [n for s in history.sessions for t in s.turns for n in gold_found(t)]
        if found:
            raise AssertionError(f"the history view exposes {sorted(set(found))}")
        return tuple(t.content for s in history.sessions_by_date() for t in s.turns if t.role == "user")[-4:]

    async def context(self, memory: tuple[str, ...], question: Any, services: Any) -> str:
        if found := gold_found(question):
            raise AssertionError(f"the question view exposes {found}")
        return "\n".join(f"- {line}" for line in memory)


class Ranker(MemorySystemBase):
    """Ranks the history's sessions, or (``memory.mode``) an id outside the history, or one id twice."""

    name = "ranker"
    uses_observer_model = False
    default_options: ClassVar[dict[str, Any]] = {"mode": "sessions"}

    def __init__(self, options: dict[str, Any]) -> None:
        self.mode = str(options.get("mode", "sessions"))

    def budget(self) -> dict[str, Any]:
        return {"top_k": 2}

    async def ingest(self, history: HistoryView, services: Any) -> tuple[str, ...]:
        return tuple(s.id for s in history.sessions_by_date())

    async def context(self, memory: tuple[str, ...], question: QuestionView, services: Any) -> MemoryContext:
        ranked = tuple(reversed(memory))
        if self.mode == "bogus":
            ranked = ("not-a-session", *ranked)
        elif self.mode == "repeated":
            ranked = (ranked[0], *ranked)
        return MemoryContext(memory="(sessions ranked)", ranked_ids=ranked,
                             corpus_ids=memory if self.mode != "bogus" else None)


class Appending(MemorySystemBase):
    """Remembers every question asked of it: its answers would depend on question order."""

    name = "appending"
    uses_observer_model = False

    async def ingest(self, history: HistoryView, services: Any) -> list[str]:
        return []

    async def context(self, memory: list[str], question: QuestionView, services: Any) -> str:
        memory.append(question.question)
        return "\n".join(memory)


class SilentEmbedder:
    """Calls services.embed without declaring uses_embedding_model."""

    name = "silent_embedder"
    uses_observer_model = False

    def __init__(self, options: dict[str, Any]) -> None:
        pass

    def identity(self) -> dict[str, Any]:
        return {}

    def budget(self) -> dict[str, Any]:
        return {}

    async def ingest(self, history: Any, services: Any) -> list[list[float]]:
        return await services.embed([t.content for s in history.sessions for t in s.turns])

    async def context(self, memory: Any, question: Any, services: Any) -> str:
        return ""
