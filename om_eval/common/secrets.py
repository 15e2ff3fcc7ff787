"""Keep credentials out of everything om-eval shows or stores: reprs, logs, cache summaries, run records.

Why by key name: provider options and configs are free-form mappings (``provider_options.litellm.api_key``,
``extra_headers.Authorization``), so the only thing that marks a secret is the name it is stored under. A key is
split into words (``apiKey``, ``API_KEY`` and ``x-api-key`` all give ``api key``); it names a secret when a word
is one of :data:`SECRET_WORDS`, when it contains ``api key`` or ``private key``, or when its last word is
``token`` (``access_token``, ``hf_token``). Counts stay visible: ``max_tokens``, ``prompt_tokens`` and
``max_token`` are sizes, not credentials.

The module is pure and imports nothing from om-eval, so any layer may use it.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "SECRET_WORDS", "holds_secrets", "is_secret_key", "redact_secrets"]

REDACTED = "***"
"""What a secret value is replaced with."""
SECRET_WORDS = frozenset({
    "apikey", "auth", "authorization", "bearer", "credential", "credentials", "passphrase", "passwd", "password",
    "secret", "secrets",
})
"""Words that make a key secret wherever they appear in it."""
_SECRET_PAIRS = (("api", "key"), ("private", "key"))
#: Words before a final ``token`` that make the key a size (``max_token``), not a credential.
_COUNT_WORDS = frozenset({"max", "min", "num", "total", "prompt", "completion", "input", "output", "budget", "count"})
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _words(key: str) -> list[str]:
    return [word.lower() for word in _WORDS.findall(key)]


@functools.lru_cache(maxsize=4096)
def is_secret_key(key: Any) -> bool:
    """Whether a mapping key names a credential (see the module docstring). Non-string keys never do."""
    if not isinstance(key, str):
        return False
    words = _words(key)
    if not words:
        return False
    if any(word in SECRET_WORDS for word in words):
        return True
    if any(pair == tuple(words[i : i + 2]) for pair in _SECRET_PAIRS for i in range(len(words) - 1)):
        return True
    return words[-1] == "token" and (len(words) == 1 or words[-2] not in _COUNT_WORDS)


def redact_secrets(value: Any) -> Any:
    """A deep copy of ``value`` in which every value stored under a secret key reads ``"***"``.

    Mappings (returned as ``dict``), lists, tuples, sets and dataclass instances are walked; any other value is
    deep-copied. A secret key whose value is ``None`` keeps ``None`` (nothing is hidden there). The input is never
    modified, and redacting twice gives the same result as redacting once.
    """
    if isinstance(value, Mapping):
        return {
            key: (REDACTED if item is not None else None) if is_secret_key(key) else redact_secrets(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact_secrets(item) for item in value]
    if isinstance(value, tuple):
        items = [redact_secrets(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, (set, frozenset)):
        return type(value)(redact_secrets(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: redact_secrets(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return dataclasses.replace(value, **changes)
    return copy.deepcopy(value)


def holds_secrets(value: Any) -> bool:
    """Whether :func:`redact_secrets` would hide anything in ``value``: a secret key with a value that is not
    ``None``, at any depth. Reads keys only, copies nothing (a large request without credentials is then used as
    it is)."""
    if isinstance(value, Mapping):
        return any((item is not None and is_secret_key(key)) or holds_secrets(item) for key, item in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(holds_secrets(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(holds_secrets(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init)
    return False
