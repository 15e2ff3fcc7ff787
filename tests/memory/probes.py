"""Memory systems that test the seam's edges: one looks for the gold, one ranks ids it cannot have searched, one
changes its memory while answering, one embeds without saying so. Registered by tests as ``module:attribute``."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from om_eval.memory import HistoryView, MemoryContext, MemorySystemBase, QuestionView
from om_eval.memory.bridge import current_services

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


class JsonLibrary(MemorySystemBase):
    """A library-shaped system: a synchronous store that extracts facts with JSON mode through the blocking twins,
    ships its own offline responder, names its library's distribution, and warns when a build stored nothing."""

    name = "json_library"
    packages = ("pydantic",)
    default_options: ClassVar[dict[str, Any]] = {"extract": True}

    def identity(self) -> dict[str, Any]:
        return {"version": 1}

    def budget(self) -> dict[str, Any]:
        return {"facts": 5}

    def offline_responder(self) -> Any:
        def extract(messages: Any, request: Any) -> str | None:
            if request.get("response_format") != {"type": "json_object"} or "FACTS:" not in messages[0]["content"]:
                return None
            said = messages[-1]["content"].strip()
            return json.dumps({"facts": [said[:60]] if said else []})
        return extract

    async def ingest(self, history: HistoryView, services: Any) -> list[str]:
        return await services.run_sync(self._build, history, timeout=60)

    def _build(self, history: HistoryView) -> list[str]:
        twins = current_services()
        facts: list[str] = []
        for session in history.sessions_by_date():
            for turn in session.turns:
                if turn.role != "user" or not self.options.get("extract", True):
                    continue
                reply = twins.complete([{"role": "system", "content": "FACTS: list what the user states"},
                                        {"role": "user", "content": turn.content}], response_format="json_object")
                facts += json.loads(reply)["facts"]
        return facts

    def build_warnings(self, memory: list[str]) -> list[str]:
        return [] if memory else ["0 facts stored"]

    async def context(self, memory: list[str], question: QuestionView, services: Any) -> MemoryContext:
        return MemoryContext(memory="\n".join(memory[-5:]), detail={"facts": len(memory)})


class AsyncJsonLibrary(JsonLibrary):
    """The same library written asynchronously: it awaits the services itself, one session at a time concurrently."""

    name = "async_json_library"

    async def ingest(self, history: HistoryView, services: Any) -> list[str]:
        import asyncio

        async def extract(text: str) -> list[str]:
            reply = await services.complete([{"role": "system", "content": "FACTS: list what the user states"},
                                             {"role": "user", "content": text}], response_format="json_object")
            facts: list[str] = json.loads(reply)["facts"]
            return facts

        said = [t.content for s in history.sessions_by_date() for t in s.turns if t.role == "user"]
        found = await asyncio.gather(*(extract(text) for text in said))
        return [fact for facts in found for fact in facts]


#: Every memory :class:`FolderLibrary` was asked to close, with whether its file was still there.
CLOSED: list[tuple[str, bool]] = []


class FolderLibrary(GoldProbe):
    """A plain class (no base of the seam's) whose memory is a file in its scratch folder, read at answer time;
    ``close`` says when it is done with it."""

    name = "folder_library"

    async def ingest(self, history: HistoryView, services: Any) -> Any:
        path = services.scratch_folder() / "memory.txt"
        path.write_text("\n".join(t.content for s in history.sessions_by_date() for t in s.turns if t.role == "user"),
                        encoding="utf-8")
        return path

    async def context(self, memory: Any, question: QuestionView, services: Any) -> MemoryContext:
        return MemoryContext(memory=memory.read_text(encoding="utf-8"))  # fails if closed or removed too early

    def close(self, memory: Any) -> None:
        CLOSED.append((str(memory), memory.exists()))


class FailingClose(FolderLibrary):
    """Its memories cannot be closed."""

    name = "failing_close"

    def close(self, memory: Any) -> None:
        CLOSED.append((str(memory), memory.exists()))
        raise RuntimeError("the database is already gone")


class ElsewhereOptions(GoldProbe):
    """A plugin that claims its options live outside its memory group, as only om-eval's own systems may."""

    name = "elsewhere"
    options_group = "om"
