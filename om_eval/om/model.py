"""The small async protocol through which OM reaches its models.

OM needs only "chat messages and sampling settings in, text and token usage out". Keeping the protocol this
small lets the litellm client, the scripted offline model and any test double plug in unchanged.

Why :class:`CheckedChatModel` and :func:`complete_checked`: a model behind a persistent cache must never store a
reply its caller cannot use (an empty, looping or unparsable answer), or every retry and every re-run would be
served that same reply again without a model call. A caller therefore says what "usable" means with a
:data:`ReplyCheck`, and numbers its retries with ``attempt``. A caching model (the litellm client) stores only
replies the check accepts, bypasses stored replies it refuses, and puts ``attempt`` into the cache scope so that
a retry is a distinct entry. Models without a cache need neither and implement only :class:`ChatModel`;
:func:`complete_checked` then calls them plainly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast, runtime_checkable

from om_eval.om.config import ModelSettings

Stage = Literal["observer", "reflector", "retrieval", "actor", "recall", "query", "judge"]
"""Why a model was called, as the ledger records it. Building a memory (ingest cost): ``observer`` and
``reflector`` (OM's agents, and any memory system's own chat calls), ``retrieval`` (embedding a history to index
it). Answering and grading (answer cost): ``query`` (embedding what a question searches with), ``actor``, ``recall``
(the actor's memory tool) and ``judge``. A memory system's own call in ``context`` (a query rewritten, results
reranked) is ``query`` too."""
INGEST_STAGES: tuple[Stage, ...] = ("observer", "reflector", "retrieval")
"""The stages whose calls build a memory; every other stage answers or grades."""
ChatMessage = Mapping[str, Any]
"""A chat message: ``role`` and ``content`` text; an assistant message that called tools also has ``tool_calls``
(OpenAI's shape) and a tool's reply has ``tool_call_id``."""
ToolSpec = Mapping[str, Any]
"""A tool offered to a model, in OpenAI's function shape (litellm translates it for other providers)."""


@dataclass(frozen=True)
class ToolCall:
    """One call a model asked for: its id (echoed in the tool's reply), the tool's name and the arguments as the
    JSON text the model wrote (parsed by the caller, which reports text that does not parse)."""

    id: str
    name: str
    arguments: str

    def to_dict(self) -> dict[str, Any]:
        """OpenAI's shape, as an assistant message carries it."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        function = data.get("function") or {}
        return cls(str(data.get("id") or ""), str(function.get("name") or ""), str(function.get("arguments") or ""))


@dataclass(frozen=True)
class ModelReply:
    """What a model returned. Token counts are ``None`` when the provider did not report them."""

    text: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached: bool = False
    finish_reason: str | None = None
    """Why generation stopped, as the provider said (``stop``, ``length``...); ``None`` when unknown or cached."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The tools the model asked to call (only when it was offered tools)."""
    logprobs: tuple[Mapping[str, Any], ...] | None = None
    """Per output token, as the provider gave them (``token``, ``logprob``, ``top_logprobs``), when they were asked
    for (``logprobs=True``); ``None`` otherwise."""


@runtime_checkable
class ChatModel(Protocol):
    """An async chat model. ``stage`` says which agent calls (for accounting and caching scopes)."""

    async def complete(
        self, messages: Sequence[ChatMessage], *, stage: Stage, settings: ModelSettings
    ) -> ModelReply: ...


ReplyCheck = Callable[[str], str | None]
"""Inspects a reply's text: ``None`` when the caller can use it, else a short reason it cannot."""


@runtime_checkable
class CheckedChatModel(Protocol):
    """A chat model that can be told which replies are usable (see the module docstring)."""

    async def complete_checked(
        self,
        messages: Sequence[ChatMessage],
        *,
        stage: Stage,
        settings: ModelSettings,
        check: ReplyCheck | None = None,
        attempt: int = 0,
        complete_only: bool = False,
    ) -> ModelReply: ...


async def complete_checked(
    model: ChatModel,
    messages: Sequence[ChatMessage],
    *,
    stage: Stage,
    settings: ModelSettings,
    check: ReplyCheck | None = None,
    attempt: int = 0,
    complete_only: bool = False,
    tools: Sequence[ToolSpec] | None = None,
) -> ModelReply:
    """Call ``model``; a :class:`CheckedChatModel` also gets ``check``, ``attempt`` and ``complete_only``.

    ``tools`` offers the model tools (the model must accept a ``tools`` keyword: the litellm client and the scripted
    model do); the reply's ``tool_calls`` say which it called.

    The reply is returned whatever ``check`` says: the caller decides whether to retry or fail. ``attempt``
    (0 for the first try) must be the only thing that differs between a call and its retries. ``complete_only``
    says a reply cut off at the output token limit is unusable (never cached); the caller still checks
    :func:`cut_off` itself.
    """
    if attempt < 0:
        raise ValueError(f"attempt must be >= 0, got {attempt}")
    # complete_only and tools only when asked: models written before they existed keep working.
    offered: dict[str, Any] = {"tools": list(tools)} if tools else {}
    # isinstance(model, CheckedChatModel) without typing's walk of the protocol on every call (an instance that
    # sets the method to None now falls back to complete()).
    if getattr(model, "complete_checked", None) is not None:
        extra = {"complete_only": True} if complete_only else {}
        checked = cast(CheckedChatModel, model)
        return await checked.complete_checked(messages, stage=stage, settings=settings, check=check, attempt=attempt,
                                              **extra, **offered)
    return await model.complete(messages, stage=stage, settings=settings, **offered)


CUT_OFF = "a reply cut off at its output token limit (finish_reason=length)"
"""Why a truncated reply is unusable where the whole reply matters (an answer)."""


def cut_off(reply: ModelReply) -> bool:
    """Whether the provider stopped ``reply`` at the output token limit."""
    return reply.finish_reason == "length"


class ModelCallError(RuntimeError):
    """A model call failed; the message names the stage and the model."""

    def __init__(self, stage: str, model: str, cause: str) -> None:
        super().__init__(f"{stage} call to {model} failed: {cause}")
        self.stage = stage
        self.model = model
