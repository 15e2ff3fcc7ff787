"""The small async protocol through which OM reaches its models.

OM needs only "chat messages and sampling settings in, text and token usage out". Keeping the protocol this
small lets the litellm client, the scripted offline model and any test double plug in unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from om_eval.om.config import ModelSettings

Stage = Literal["observer", "reflector", "actor", "judge"]
ChatMessage = Mapping[str, str]


@dataclass(frozen=True)
class ModelReply:
    """What a model returned. Token counts are ``None`` when the provider did not report them."""

    text: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached: bool = False


@runtime_checkable
class ChatModel(Protocol):
    """An async chat model. ``stage`` says which agent calls (for accounting and caching scopes)."""

    async def complete(
        self, messages: Sequence[ChatMessage], *, stage: Stage, settings: ModelSettings
    ) -> ModelReply: ...


class ModelCallError(RuntimeError):
    """A model call failed; the message names the stage and the model."""

    def __init__(self, stage: str, model: str, cause: str) -> None:
        super().__init__(f"{stage} call to {model} failed: {cause}")
        self.stage = stage
        self.model = model
