"""What the harness lends a memory system (:class:`~om_eval.memory.system.MemoryServices`), over the run's client."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from om_eval.llm.models import embedding_limits
from om_eval.memory.bridge import run_sync
from om_eval.memory.completion import Completion, EmbeddingInfo, response_format_param
from om_eval.memory.parts import PromptPart
from om_eval.memory.system import CHAT_STAGES, EMBEDDING_STAGES
from om_eval.om.config import ConfigError, ModelSettings
from om_eval.om.model import ChatModel, Stage
from om_eval.om.tokens import TokenCounter

T = TypeVar("T")


class TurnSink(Protocol):
    """Where recorded turns go (the harness's :class:`~om_eval.bench.turn_costs.PartRecorder`)."""

    def record(self, parts: Sequence[PromptPart], at: datetime, reply: PromptPart | None = None) -> None: ...

    def adopt(self, table: Any) -> None: ...

    def charge(self, stage: str, prompt_tokens: int | None, completion_tokens: int | None) -> None: ...


class TurnRecording:
    """:meth:`~om_eval.memory.system.MemoryServices.record_turn` over an optional :class:`TurnSink` in
    ``self.turns``: the harness's services and any stand-in for them record turns the same way."""

    turns: TurnSink | None
    state_digest_opaque = True
    """Lent to a system, not part of its memory: a memory holding its services is digested without them."""

    @property
    def recording_turns(self) -> bool:
        return self.turns is not None

    def record_turn(self, parts: Sequence[PromptPart], *, at: datetime, reply: PromptPart | None = None) -> None:
        if self.turns is not None:
            self.turns.record(parts, at, reply)

    def record_table(self, table: Any) -> None:
        if self.turns is not None:
            self.turns.adopt(table)


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
    turns: TurnSink | None = None
    """Where :meth:`record_turn` goes (``None``: turns are not recorded)."""
    system: str = "this memory system"
    """The system's name, for messages."""
    declares_observer: bool = True
    """The system sets ``uses_observer_model`` (a missing model is then the run's to name, not the system's)."""
    declares_embedding: bool = True
    answering: bool = False
    """Lent to ``context`` (answer cost): calls default to stage ``query`` and may not claim an ingest stage."""
    small: ModelSettings | None = None
    """``models.small``: the model ``complete(role="small")`` calls (``None``: ``observer`` answers those too)."""
    scratch: Path | None = None
    """The memory's scratch folder (:meth:`scratch_folder`; ``None``: the services were lent outside a run)."""

    def count_tokens(self, text: str) -> int:
        return self.counter.count_text(text)

    def scratch_folder(self) -> Path:
        if self.scratch is None:
            raise RuntimeError(f"memory={self.system} asked for a scratch folder, but these services belong to no "
                               "run's results folder")
        self.scratch.mkdir(parents=True, exist_ok=True)
        return self.scratch

    @property
    def chat(self) -> ChatModel:
        model: ChatModel = self.client
        return model

    async def complete(self, messages: Sequence[Mapping[str, Any]], *, stage: Stage | None = None,
                       response_format: Any = None, max_tokens: int | None = None, temperature: float | None = None,
                       seed: int | None = None, tools: Sequence[Mapping[str, Any]] | None = None,
                       tool_choice: Any = None, logprobs: bool | None = None, top_logprobs: int | None = None,
                       role: str = "observer") -> Completion:
        if role not in ("observer", "small"):
            raise ValueError(f"memory={self.system} called services.complete(role={role!r}): the roles are "
                             "'observer' (models.observer) and 'small' (models.small, else models.observer)")
        if self.observer is None:
            if not self.declares_observer:
                raise ConfigError(f"memory={self.system} calls services.complete, but does not say it uses a chat "
                                  "model: set uses_observer_model = True on its class (the run then calls "
                                  "models.observer)", option="memory")
            raise ConfigError(f"memory={self.system} asked for a model, but the run gives it none "
                              "(models.observer)", option="models.observer")
        model: ChatModel = self.client
        settings = self.small if role == "small" and self.small is not None else self.observer
        checked = self._stage("complete", stage, "observer", CHAT_STAGES)
        params = {"response_format": response_format_param(response_format), "max_tokens": max_tokens,
                  "temperature": temperature, "seed": seed, "tool_choice": tool_choice, "logprobs": logprobs,
                  "top_logprobs": top_logprobs}
        sent = {name: value for name, value in params.items() if value is not None}
        messages = [dict(m) for m in messages]
        if sent or tools:  # the run's client: the call's own parameters go into the request and its cache key
            reply = await self.client.complete(messages, stage=checked, settings=settings,
                                               tools=list(tools) if tools else None, params=sent)
        else:
            reply = await model.complete(messages, stage=checked, settings=settings)
        if self.turns is not None:
            self.turns.charge(checked, reply.prompt_tokens, reply.completion_tokens)
        return Completion(reply)

    async def run_sync(self, fn: Callable[..., T], /, *args: Any, timeout: float | None = None, **kwargs: Any) -> T:
        return await run_sync(self, fn, *args, timeout=timeout, system=self.system, **kwargs)

    async def embedding_info(self, model: str | None = None) -> EmbeddingInfo:
        name = model or (self.embedder.model if self.embedder is not None else None)
        if name is None:
            raise ConfigError(f"memory={self.system} asked about its embedding model, but the run gives it none "
                              "(models.embedding)", option="models.embedding")
        # One embedding says the size as the run's settings make it (a config may ask for fewer dimensions than the
        # model's default); cached, so paid once per model. litellm's list gives the input limit.
        probe = await self.embed(["dimension probe"], model=name)
        if not probe or not probe[0]:
            raise ConfigError(f"memory={self.system}: the embedding model {name} returned no vector for a probe "
                              "text", option="models.embedding")
        return EmbeddingInfo(len(probe[0]), embedding_limits(name)[1])

    async def embed(self, texts: Sequence[str], *, model: str | None = None, stage: Stage | None = None
                    ) -> list[list[float]]:
        if not self.declares_embedding:
            raise ConfigError(f"memory={self.system} calls services.embed, but does not say it embeds: set "
                              "uses_embedding_model = True on its class (the run then needs "
                              "model@models.embedding=<config>)", option="memory")
        name = model or (self.embedder.model if self.embedder is not None else None)
        if name is None:
            raise ConfigError(f"memory={self.system} asked for embeddings, but the run gives it no model "
                              "(models.embedding)", option="models.embedding")
        checked = self._stage("embed", stage, "retrieval", EMBEDDING_STAGES)
        if not texts:
            return []
        options = self.embedder.provider_options if self.embedder is not None and name == self.embedder.model else {}
        vectors: list[list[float]] = await self.client.embed(list(texts), model=name, stage=checked, options=options)
        return vectors

    def _stage(self, call: str, stage: Stage | None, building: Stage, allowed: Sequence[str]) -> Stage:
        """The stage a call is recorded under: given, or by the phase (``building`` while ingesting, ``query`` while
        answering); an ingest stage claimed while answering is refused, so the cost split cannot be blurred."""
        chosen = stage if stage is not None else ("query" if self.answering else building)
        if self.answering and chosen != "query":
            raise ValueError(f"memory={self.system} called services.{call}(stage={chosen!r}) while answering: a call "
                             "made in context() is answer cost, stage 'query' (the default there)")
        if chosen not in allowed:
            raise ValueError(f"memory={self.system} called services.{call}(stage={chosen!r}): a system's calls are "
                             f"staged as {', '.join(allowed)}")
        return chosen

