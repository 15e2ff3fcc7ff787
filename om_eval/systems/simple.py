"""``memory=simple_om``: the simple observational-memory layer (:mod:`om_eval.simple_om`) as a system under test.

Ingest replays the haystack as a conversation would reach the layer: sessions oldest first, one thread per
session, the question's haystack as the resource; a user turn arrives as an input item, an assistant turn as the
model's output. The question is asked on a fresh thread, so with ``scope=resource`` (the default) the actor sees
every observation, and with ``scope=thread`` it sees none (the layer shares nothing across threads then).

The observer is, by ``memory.observer``: ``llm`` (a short prompt in our words, one fact per line, through the run's
``models.observer``), ``fallback`` (the layer's own ``Processed N items``) or any ``package.module:function``.

While it ingests, each user turn is recorded as an agent on the layer would send it (``run.turn_costs``): the
harness's instructions and the recalled block (the stable head), then the session's messages so far.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from importlib import import_module
from typing import Any

from om_eval.bench.seam import seam_actor_prompts
from om_eval.memory import (
    TURN_SPACING,
    HistoryView,
    MemoryContext,
    MemoryServices,
    MemorySystemBase,
    PromptPart,
    QuestionView,
)
from om_eval.memory.options import reject_unknown
from om_eval.om.config import ConfigError
from om_eval.om.prompts import fill
from om_eval.simple_om import SimpleObservationalMemory
from om_eval.simple_om.llm_observer import llm_observer, observer_prompt_hash

OBSERVERS = ("llm", "fallback")
_OPTIONS = ("buffer_threshold", "max_observations", "scope", "observer", "budget")

Observer = Callable[[list[str]], "Sequence[str] | Awaitable[Sequence[str]]"]


def run_observer(services: MemoryServices) -> Observer:
    """The default observer of a run: the chat-model observer over the run's ``models.observer``."""

    async def complete(messages: Sequence[Mapping[str, str]]) -> str:
        return await services.complete(messages, stage="observer")

    return llm_observer(complete)


def named_observer(target: str) -> Observer:
    """A callable named ``package.module:function``."""
    module, _, name = target.partition(":")
    try:
        function = getattr(import_module(module), name)
    except (ImportError, AttributeError, ValueError) as error:
        raise ConfigError(f"memory.observer={target!r} cannot be loaded ({error}): name a callable as "
                          "package.module:function, or use llm or fallback", option="memory.observer") from None
    if not callable(function):
        raise ConfigError(f"memory.observer={target!r} is not callable", option="memory.observer")
    observer: Observer = function
    return observer


class SimpleOMSystem(MemorySystemBase):
    """The simple observational-memory layer, replayed over a question's haystack."""

    name = "simple_om"
    records_turns = True
    about = "om-eval's simple observational-memory layer (a capped list of facts distilled from the history)"

    @classmethod
    def label(cls, budget: Mapping[str, Any], options: Mapping[str, Any]) -> str:
        return "simple OM"

    def __init__(self, options: Mapping[str, Any]) -> None:
        reject_unknown(self.name, options, _OPTIONS)
        self.observer = str(options.get("observer", "llm"))
        if self.observer not in OBSERVERS and ":" not in self.observer:
            raise ConfigError(f"memory.observer={self.observer!r} is invalid: use llm, fallback or "
                              "package.module:function", option="memory.observer")
        budget = options.get("budget", (500, 2500))
        self.settings = {
            "buffer_threshold": options.get("buffer_threshold", 2000),
            "max_observations": options.get("max_observations", 50),
            "scope": options.get("scope", "resource"),
            "budget": (budget[0], budget[1]) if isinstance(budget, Sequence) and len(budget) == 2 else budget,
        }
        SimpleObservationalMemory(**self.settings)  # the layer checks its own settings, naming the bad one
        self.uses_observer_model = self.observer == "llm"

    def identity(self) -> Mapping[str, Any]:
        return {"observer_prompt": observer_prompt_hash()} if self.observer == "llm" else {}

    def budget(self) -> Mapping[str, Any]:
        low, high = self.settings["budget"]
        return {"context_tokens": high, "context_tokens_min": low,
                "max_observations": self.settings["max_observations"]}

    def _observer(self, services: MemoryServices) -> Observer | None:
        if self.observer == "llm":
            return run_observer(services)
        if self.observer == "fallback":
            return None
        return named_observer(self.observer)

    async def ingest(self, history: HistoryView, services: MemoryServices) -> SimpleObservationalMemory:
        memory = SimpleObservationalMemory(**self.settings, observer=self._observer(services),
                                           count_tokens=services.count_tokens)
        resource = history.id
        turns = _TurnParts(memory, resource) if services.recording_turns else None
        for session in history.sessions_by_date():
            thread = session.id
            said: list[PromptPart] = []
            for position, turn in enumerate(session.turns):
                item = {"type": "message", "role": turn.role, "content": turn.content}
                if turn.role == "assistant":
                    await memory.store([item], thread_id=thread, resource_id=resource)
                else:
                    await memory.on_item_append(item, thread_id=thread, resource_id=resource)
                part = PromptPart(("message", thread, position), turn.content)
                if turns is not None:
                    turns.step(services, thread, turn.role, part, said, session.date + TURN_SPACING * position)
                said.append(part)
            if turns is not None:
                turns.flush(services)
        return memory

    def snapshot(self, memory: SimpleObservationalMemory) -> dict[str, Any]:
        return memory.snapshot()

    async def restore(self, data: Any, services: MemoryServices) -> SimpleObservationalMemory:
        return SimpleObservationalMemory.from_snapshot(data, observer=self._observer(services),
                                                       count_tokens=services.count_tokens)

    async def context(self, memory: SimpleObservationalMemory, question: QuestionView,
                      services: MemoryServices) -> MemoryContext:
        block = memory.recall(thread_id=f"question:{question.question_id}", resource_id=question.history_id)
        state = memory.state(thread_id=f"question:{question.question_id}", resource_id=question.history_id)
        return MemoryContext(memory=block, detail={"observations": len(state.observations),
                                                   "version": state.version})


class _TurnParts:
    """The stable head of an agent's prompt on the layer at a turn: the harness's instructions, then the recalled
    block as rule 5 places it (rendered again only when the state's version moves)."""

    def __init__(self, memory: SimpleObservationalMemory, resource: str) -> None:
        self.memory = memory
        self.resource = resource
        prompts = seam_actor_prompts()
        self.instructions = PromptPart("instructions", prompts["instructions"], head=True)
        self._template = prompts["memory"]
        self._shown: dict[tuple[str, int], PromptPart | None] = {}
        self._waiting: tuple[list[PromptPart], datetime] | None = None

    def step(self, services: MemoryServices, thread: str, role: str, part: PromptPart, said: list[PromptPart],
             at: datetime) -> None:
        """After a message reached the layer: a user message's prompt is taken now and recorded once its reply is
        stored, so the turn is charged the distillations its message and its reply caused (as OM's replay does)."""
        if role == "assistant" and self._waiting is not None:
            prompt, when = self._waiting
            services.record_turn(prompt, at=when, reply=part)
            self._waiting = None
            return
        self.flush(services)
        if role != "assistant":
            self._waiting = ([*self.head(thread), *said, part], at)

    def flush(self, services: MemoryServices) -> None:
        """Record a waiting turn that got no reply."""
        if self._waiting is not None:
            services.record_turn(self._waiting[0], at=self._waiting[1])
            self._waiting = None

    def head(self, thread: str) -> list[PromptPart]:
        key = self.memory.key_for(thread_id=thread, resource_id=self.resource)
        version = self.memory.state(thread_id=thread, resource_id=self.resource).version
        if (key, version) not in self._shown:
            block = self.memory.recall(thread_id=thread, resource_id=self.resource)
            self._shown[(key, version)] = PromptPart(("observations", key, version),
                                                     fill(self._template, memory=block), head=True) if block else None
        shown = self._shown[(key, version)]
        return [self.instructions] if shown is None else [self.instructions, shown]
