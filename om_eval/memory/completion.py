"""What :meth:`~om_eval.memory.system.MemoryServices.complete` returns and takes beyond messages.

A library adapter needs more than text: the finish reason (was the JSON cut off?), tool calls, usage, and for a
reranker the log probabilities. :class:`Completion` is the reply's text *and* those fields, a ``str`` subclass so
every caller written when ``complete`` returned text keeps working unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from om_eval.om.model import ModelReply, ToolCall

__all__ = ["Completion", "EmbeddingInfo", "response_format_param"]


class Completion(str):
    """A model's reply: its text (the string itself, also :attr:`text`) with the reply's other fields."""

    tool_calls: tuple[ToolCall, ...]
    """The tools the model asked to call (when it was offered ``tools``)."""
    finish_reason: str | None
    """Why generation stopped (``stop``, ``length``, ``tool_calls``); ``None`` when the provider did not say."""
    prompt_tokens: int | None
    completion_tokens: int | None
    logprobs: tuple[Mapping[str, Any], ...] | None
    """Per output token (``token``, ``logprob``, ``top_logprobs``) when the call asked for ``logprobs``."""
    cached: bool
    """Served from the response cache (no provider call, no cost)."""
    model: str

    def __new__(cls, reply: ModelReply) -> Completion:
        made = super().__new__(cls, reply.text)
        made.tool_calls, made.finish_reason, made.logprobs = reply.tool_calls, reply.finish_reason, reply.logprobs
        made.prompt_tokens, made.completion_tokens = reply.prompt_tokens, reply.completion_tokens
        made.cached, made.model = reply.cached, reply.model
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        # copy, deepcopy and pickle rebuild it from the reply (a str subclass would otherwise be rebuilt from its
        # text alone, which __new__ does not take): libraries copy and pickle their models' replies.
        return (Completion, (ModelReply(self.text, self.model, self.prompt_tokens, self.completion_tokens,
                                        self.cached, self.finish_reason, self.tool_calls, self.logprobs),))

    @property
    def text(self) -> str:
        """The reply's text as a plain ``str``."""
        return str.__str__(self)

    @property
    def cut_off(self) -> bool:
        """The reply stopped at its output cap (a JSON reply is then likely incomplete)."""
        return self.finish_reason == "length"


def response_format_param(value: Any) -> dict[str, Any] | None:
    """The ``response_format`` request parameter for ``value``: ``None``; ``"json_object"`` or ``"json"`` (JSON mode);
    an OpenAI-style mapping as it is; a JSON Schema mapping (wrapped as ``json_schema``); or a pydantic model class
    (its ``model_json_schema()``, named after the class, strict).

    >>> response_format_param("json_object")
    {'type': 'json_object'}
    >>> response_format_param({"type": "object", "properties": {}})["json_schema"]["name"]
    'response'

    Raises:
        TypeError: anything else (named, with the forms accepted).
    """
    if value is None:
        return None
    if value in ("json_object", "json"):
        return {"type": "json_object"}
    if isinstance(value, Mapping):
        if value.get("type") in ("json_object", "json_schema", "text"):
            return dict(value)
        return {"type": "json_schema", "json_schema": {"name": "response", "schema": dict(value), "strict": True}}
    schema = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and callable(schema):
        return {"type": "json_schema", "json_schema": {"name": value.__name__, "schema": schema(), "strict": True}}
    raise TypeError(f"response_format={value!r}: give 'json_object', an OpenAI response_format mapping, a JSON "
                    "Schema mapping or a pydantic model class")


@dataclass(frozen=True)
class EmbeddingInfo:
    """What a library must know of its embedding model before the first call (a vector store's dimension)."""

    dimensions: int
    """Length of each vector, as the run's settings make it."""
    max_input_tokens: int | None
    """The longest text the model takes, in its own tokens (``None``: not known; the local models cut silently)."""
