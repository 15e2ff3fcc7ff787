"""Test doubles: a model that replays a fixed list of answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from om_eval.om.config import ModelSettings
from om_eval.om.model import ChatMessage, ModelReply


@dataclass
class QueueModel:
    """Returns ``answers`` in order (an exception instance is raised instead of returned)."""

    answers: list[str | Exception]
    requests: list[list[dict[str, str]]] = field(default_factory=list)

    async def complete(self, messages: Sequence[ChatMessage], *, stage: str, settings: ModelSettings) -> ModelReply:
        self.requests.append([dict(m) for m in messages])
        if not self.answers:
            raise AssertionError(f"unexpected extra {stage} call")
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return ModelReply(answer, settings.model, prompt_tokens=10, completion_tokens=5)
