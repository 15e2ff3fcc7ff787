"""Memory systems that misbehave as the drill's plugins did, selected with ``memory.mode=<fault>``.

``hostile`` (:class:`Hostile`) keeps the last user turns like a well-behaved plugin, then, by mode: ``exit``
raises ``SystemExit`` in ``ingest`` and ``exit_digest`` in the ``memory_digest`` hook; ``cancel`` raises a
``CancelledError`` no one asked for; ``stall`` awaits for ``memory.seconds`` in ``context``; ``empty`` gives the
actor no messages; ``no_question`` gives it messages without the question; ``flood`` shows a memory of
``memory.words`` words; ``clock`` puts a counter in its identity. ``hostile_caller`` (:class:`HostileCaller`) calls
the observer model, and books that ingest call as the actor's.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, ClassVar

import pytest

from om_eval.memory import registry
from om_eval.memory.system import MemoryContext, MemorySystemBase
from om_eval.memory.view import HistoryView, QuestionView

_calls = itertools.count()


class Hostile(MemorySystemBase):
    name = "hostile"
    uses_observer_model = False
    default_options: ClassVar[dict[str, Any]] = {"mode": "none", "seconds": 5.0, "words": 10}

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = {**self.default_options, **options}

    def identity(self) -> dict[str, Any]:
        return {"revision": 1, **({"call": next(_calls)} if self.options["mode"] == "clock" else {})}

    def budget(self) -> dict[str, Any]:
        return {"turns": 4}

    async def ingest(self, history: HistoryView, services: Any) -> tuple[str, ...]:
        mode = self.options["mode"]
        if mode == "exit":
            raise SystemExit(3)
        if mode == "cancel":
            raise asyncio.CancelledError
        turns = [t.content for s in history.sessions for t in s.turns if t.role == "user"]
        return tuple(turns[-4:])

    def memory_digest(self, memory: Any) -> str:
        if self.options["mode"] == "exit_digest":
            raise SystemExit(4)
        return super().memory_digest(memory)

    async def context(self, memory: tuple[str, ...], question: QuestionView, services: Any) -> MemoryContext | str:
        mode = self.options["mode"]
        if mode == "stall":
            await asyncio.sleep(float(self.options["seconds"]))
        if mode == "empty":
            return MemoryContext(messages=())
        if mode == "no_question":
            return MemoryContext(messages=({"role": "user", "content": "\n".join(memory)},))
        if mode == "flood":
            return " ".join(["word"] * int(self.options["words"]))
        return "\n".join(memory)


class HostileCaller(Hostile):
    name = "hostile_caller"
    uses_observer_model = True

    async def ingest(self, history: HistoryView, services: Any) -> tuple[str, ...]:
        await services.complete([{"role": "user", "content": "summarise"}], stage="actor")
        return await super().ingest(history, services)


@pytest.fixture
def hostile_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "plugin_targets", lambda: {
        name: f"tests.reliability.hostile_plugins:{cls}"
        for name, cls in (("hostile", "Hostile"), ("hostile_caller", "HostileCaller"))})
