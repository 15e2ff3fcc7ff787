"""The final request sent to a model, and its cache key.

Why this module: a cache key that misses one parameter silently serves the wrong answer (litellm#9844:
``reasoning_effort`` left out of the key; litellm#7316: the key computed from a list mutated after the call).
Here the request is frozen *before* the call, it is exactly what litellm receives, and the key is the sha256 of
its canonical JSON plus a caller-supplied scope (prompt-variant hash, judge identity, ...). Nothing that reaches
the provider can be left out of the key, because the key is computed from the same object that is sent.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from om_eval.common.secrets import holds_secrets, redact_secrets
from om_eval.llm.pricing import Price

#: Mastra-style provider names litellm knows by another name.
PROVIDER_ALIASES = {"google": "gemini"}


def litellm_model_id(model: str) -> str:
    """Translate Mastra-style ids (``google/gemini-2.5-flash``) into litellm's (``gemini/gemini-2.5-flash``)."""
    provider, sep, name = model.partition("/")
    return f"{PROVIDER_ALIASES.get(provider, provider)}{sep}{name}" if sep else model

#: Bump when the key's layout changes, so old entries are never served for new requests.
KEY_VERSION = 1


def _freeze(value: Any) -> Any:
    """Deep-copy into JSON-ready plain types, so later mutation of the caller's objects cannot reach us."""
    # The plain types first, by exact type: a request is mostly strings in dicts in lists, and an isinstance check
    # against the Mapping ABC costs more than the copy (half a million per 60 benchmark questions).
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return {str(k): _freeze(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_freeze(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _freeze(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_freeze(v) for v in value]
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"request value {value!r} is not finite and cannot be sent or cached")
        if value.is_integer():
            return int(value)  # temperature 0 and 0.0 are the same request

    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"request value of type {type(value).__name__} is not JSON-serialisable: {value!r}")


def canonical_json(value: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, unicode kept, whole floats written as ints."""
    return json.dumps(_freeze(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True)
class LLMRequest:
    """One chat-completion request, exactly as litellm will receive it.

    The request is serialised once, when it is made; what is sent and what is hashed both come from that
    serialisation, so mutating the caller's lists or dicts afterwards cannot make them differ.

    Attributes:
        model: the litellm model id (``provider/name``), e.g. ``openai/gpt-4o-mini`` or ``scripted/om-eval``.
        messages: the final chat messages.
        params: every other argument passed to ``litellm.acompletion``: sampling (``temperature``,
            ``max_tokens``, ``seed``, ``top_p``), reasoning (``reasoning_effort``, ``thinking``), tools,
            ``response_format`` and provider-specific parameters.
    """

    model: str
    messages: tuple[Mapping[str, Any], ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    payload: str = field(init=False, repr=False, compare=False)
    """The canonical JSON of everything sent."""
    key_payload: str = field(init=False, repr=False, compare=False)
    """The same with credentials redacted: what the cache key hashes. A new API key is the same request (its
    answers stay cached), and no key derived from a secret is ever written down."""
    price: Price | None = field(default=None, compare=False)
    """What the caller's settings say the model costs (``provider_options.price``); never sent, not in the key
    (a price does not change an answer). ``None``: litellm's price list prices the call."""

    timeout_s: float | None = field(default=None, compare=False)
    """How long to wait for one attempt (``provider_options.request.timeout_s``); ``None``: the client's default.
    Never sent, not in the key."""
    max_retries: int | None = field(default=None, compare=False)
    """Retries after a retryable failure (``provider_options.request.max_retries``); ``None``: the client's."""

    def __post_init__(self) -> None:
        body = {"model": self.model, "messages": list(self.messages), **self.params}
        payload = canonical_json(body)
        object.__setattr__(self, "payload", payload)
        # Serialised again only when there is something to redact: an Observer's request is tens of kilobytes.
        key_payload = canonical_json(redact_secrets(body)) if holds_secrets(body) else payload
        object.__setattr__(self, "key_payload", key_payload)

    def __repr__(self) -> str:
        params = redact_secrets(self.params)  # an api_key passed through provider options must not be shown
        return f"LLMRequest(model={self.model!r}, messages=<{len(self.messages)} messages>, params={params!r})"

    @classmethod
    def build(cls, model: str, messages: Sequence[Mapping[str, Any]], **params: Any) -> LLMRequest:
        """Freeze a request; ``None`` parameters are dropped (they are not sent)."""
        frozen_messages = tuple(_freeze(m) for m in messages)
        frozen_params = {k: _freeze(v) for k, v in params.items() if v is not None}
        return cls(model=model, messages=frozen_messages, params=frozen_params)

    def priced(self, price: Price | None) -> LLMRequest:
        """This request with ``price`` attached (the serialisations are shared: a price is not part of them)."""
        if price == self.price:
            return self
        priced = copy.copy(self)
        object.__setattr__(priced, "price", price)
        return priced

    def limited(self, timeout_s: float | None, max_retries: int | None) -> LLMRequest:
        """This request with its own wait and retry limits (shared serialisations: limits are not sent)."""
        if (timeout_s, max_retries) == (self.timeout_s, self.max_retries):
            return self
        limited = copy.copy(self)
        object.__setattr__(limited, "timeout_s", timeout_s)
        object.__setattr__(limited, "max_retries", max_retries)
        return limited

    def litellm_kwargs(self) -> dict[str, Any]:
        """The keyword arguments for ``litellm.acompletion`` (fresh copies every time)."""
        return json.loads(self.payload)

    @property
    def deterministic(self) -> bool:
        """Temperature 0, or an explicit seed: the only requests cached without an opt-in."""
        temperature = self.params.get("temperature")
        zero = isinstance(temperature, (int, float)) and not isinstance(temperature, bool) and temperature == 0
        return zero or self.params.get("seed") is not None


def cache_key(request: LLMRequest, scope: Any = None) -> str:
    """sha256 of the canonical request plus ``scope`` (anything JSON-ready that distinguishes callers)."""
    text = f'{{"v":{KEY_VERSION},"request":{request.key_payload},"scope":{canonical_json(redact_secrets(scope))}}}'
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
