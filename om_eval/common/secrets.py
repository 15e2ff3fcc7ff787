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
import logging
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "SECRET_WORDS", "ScrubSecrets", "holds_secrets", "is_secret_key", "redact_secrets",
           "remember_secrets", "scrub_secrets"]

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


# -- secret values in free text ------------------------------------------------------------------------------------
#
# Keys hide a secret in a mapping; an error text has no keys. A provider's 401 may echo the key it refused, and a
# gateway may quote the Authorization header, so every error text is scrubbed of the secret *values* om-eval knows:
# those it has sent (remembered as requests are built) and those in the environment under secret names
# (OPENAI_API_KEY, HF_TOKEN). Values shorter than MIN_SECRET_LENGTH are left alone: "none" or "local" are
# placeholders, and replacing them would garble ordinary words.

MIN_SECRET_LENGTH = 8
_remembered: set[str] = set()
_lock = threading.Lock()


def _secret_strings(value: Any, under_secret: bool = False) -> set[str]:
    if isinstance(value, Mapping):
        return set().union(*(_secret_strings(item, under_secret or is_secret_key(key))
                             for key, item in value.items()))
    if isinstance(value, (list, tuple, set, frozenset)):
        return set().union(*(_secret_strings(item, under_secret) for item in value))
    if under_secret and isinstance(value, str):
        # "Bearer sk-..." is echoed as "sk-..." too: each long word of a header value is a secret of its own.
        return {part for part in (value, *value.split()) if len(part) >= MIN_SECRET_LENGTH}
    return set()


def remember_secrets(value: Any) -> None:
    """Note the secret values in ``value`` (strings stored under secret keys, at any depth), so that
    :func:`scrub_secrets` removes them from any text later, for the rest of the process."""
    found = _secret_strings(value)
    if found - _remembered:
        with _lock:
            _remembered.update(found)


def scrub_secrets(text: str) -> str:
    """``text`` with every remembered secret value and every secret-named environment variable's value replaced by
    ``"***"`` (longest first, so a key is not half-replaced by a shorter one it contains)."""
    if not text:
        return text
    known = _remembered | {value for name, value in os.environ.items()
                           if len(value) >= MIN_SECRET_LENGTH and is_secret_key(name)}
    for value in sorted(known, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REDACTED)
    return text


class ScrubSecrets(logging.Filter):
    """A handler filter that scrubs each record's message and traceback with :func:`scrub_secrets` (a library's log
    line may quote a provider's error, key included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            self._scrub(record)
        except Exception:  # a malformed record is the handler's to report, as it always was
            pass
        return True

    @staticmethod
    def _scrub(record: logging.LogRecord) -> None:
        message = record.getMessage()
        scrubbed = scrub_secrets(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and record.exc_info[1] is not None:
            import traceback

            record.exc_text = scrub_secrets("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
            record.exc_info = None
