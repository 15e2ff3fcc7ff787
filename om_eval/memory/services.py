"""What the harness lends a memory system (:class:`~om_eval.memory.system.MemoryServices`), over the run's client."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from om_eval.bench.turn_costs import PartRecorder, PromptPart
from om_eval.om.config import ConfigError, ModelSettings
from om_eval.om.model import ChatModel, Stage
from om_eval.om.tokens import TokenCounter


class TurnRecording:
    """:meth:`~om_eval.memory.system.MemoryServices.record_turn` over an optional :class:`PartRecorder` in
    ``self.turns``: the harness's services and any stand-in for them record turns the same way."""

    turns: PartRecorder | None

    @property
    def recording_turns(self) -> bool:
        return self.turns is not None

    def record_turn(self, parts: Sequence[PromptPart], *, at: datetime, reply: PromptPart | None = None) -> None:
        if self.turns is not None:
            self.turns.record(parts, at, reply)


@dataclass
class HarnessServices(TurnRecording):
    """The run's models and tokenizer, handed to a memory system; every call lands in the question's ledger."""

    client: Any
    """An :class:`~om_eval.llm.client.LLMClient` (scoped to the question's ledger)."""
    observer: ModelSettings | None
    """``models.observer``: the model :meth:`complete` calls (``None``: the system may call none)."""
    counter: TokenCounter
    embedder: ModelSettings | None = None
    """``models.embedding``: the model :meth:`embed` calls (``None``: the system may embed nothing)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    turns: PartRecorder | None = None
    """Where :meth:`record_turn` goes (``None``: turns are not recorded)."""

    def count_tokens(self, text: str) -> int:
        return self.counter.count_text(text)

    async def complete(self, messages: Sequence[Mapping[str, str]], *, stage: str = "observer") -> str:
        if self.observer is None:
            raise ConfigError("this memory system asked for a model, but the run gives it none (models.observer)",
                              option="models.observer")
        model: ChatModel = self.client
        reply = await model.complete([dict(m) for m in messages], stage=cast(Stage, stage), settings=self.observer)
        if self.turns is not None:
            self.turns.charge(stage, reply.prompt_tokens, reply.completion_tokens)
        return reply.text

    async def embed(self, texts: Sequence[str], *, model: str | None = None, stage: str = "retrieval"
                    ) -> list[list[float]]:
        name = model or (self.embedder.model if self.embedder is not None else None)
        if name is None:
            raise ConfigError("this memory system asked for embeddings, but the run gives it no model "
                              "(models.embedding)", option="models.embedding")
        if not texts:
            return []
        options = self.embedder.provider_options if self.embedder is not None and name == self.embedder.model else {}
        vectors: list[list[float]] = await self.client.embed(list(texts), model=name, stage=stage, options=options)
        return vectors
