"""A provider's prompt cache, emulated for the scripted model by the rules providers document, so cached-token
accounting runs offline through the same client, ledger and pricing as a hosted model's.

Two rule sets (``provider_options.litellm.prompt_cache`` of a scripted model: ``openai``, ``anthropic``, or a
mapping with ``rule`` and the numbers below):

- **openai** (automatic, also what Gemini's implicit caching and vLLM's prefix caching do in effect): a prompt of
  at least ``min_tokens`` (1,024) tokens reads from the cache the longest prefix it shares with a prompt seen
  before, counted in ``step``-token (128) increments from 1,024 on; nothing is reported as written.
- **anthropic** (explicit breakpoints): a prefix is cached only up to a breakpoint, a message carrying
  ``cache_control`` (with none marked, one after the last system message and one after the last message, the way
  agents mark them). The longest prefix written before that ends at a breakpoint, or up to 20 messages before one,
  is read; the longer breakpoint prefixes of at least ``min_tokens`` are written (billed at a premium), as
  Anthropic reports ``cache_read_input_tokens`` and ``cache_creation_input_tokens``.

Either way an entry not used for ``idle_s`` seconds (300) expires, and a hit refreshes it. Tokens are the scripted
model's own count (a quarter of a message's characters, at least one per message), so a reported cached count
never exceeds the prompt's.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from om_eval.common.text import common_prefix_length
from om_eval.llm.stand_in import content_text

#: Entries kept per emulated cache; the oldest go first (a provider's cache is bounded too).
MAX_ENTRIES = 64
#: How many messages before a breakpoint Anthropic's cache looks back for a prefix written earlier (it documents
#: about 20 content blocks; a message is one block here).
LOOKBACK = 20


def message_tokens(content: str) -> int:
    """The scripted model's token count of one message (as :class:`~om_eval.testing.scripted.model.ScriptedModel`
    counts its prompts)."""
    return max(1, len(content) // 4)


@dataclass(frozen=True)
class PromptCacheRules:
    """Which provider's caching is emulated, and its numbers."""

    rule: str = "openai"
    min_tokens: int = 1024
    step: int = 128
    idle_s: float = 300.0

    @classmethod
    def parse(cls, option: Any) -> PromptCacheRules:
        """The rules ``option`` names (a rule name or a mapping); a clear error for anything else."""
        fields = {"rule": option} if isinstance(option, str) else option
        if not isinstance(fields, Mapping) or fields.get("rule") not in ("openai", "anthropic"):
            raise ValueError(f"prompt_cache={option!r}: give 'openai', 'anthropic', or a mapping with rule "
                             f"('openai' or 'anthropic') and optionally min_tokens, step and idle_s")
        unknown = set(fields) - {"rule", "min_tokens", "step", "idle_s"}
        if unknown:
            raise ValueError(f"prompt_cache has unknown keys {sorted(unknown)}: rule, min_tokens, step, idle_s")
        rules = cls(**fields)
        if rules.min_tokens < 1 or rules.step < 1 or rules.idle_s <= 0:
            raise ValueError(f"prompt_cache={option!r}: min_tokens and step must be >= 1 and idle_s > 0")
        return rules


@dataclass(frozen=True)
class CacheUse:
    """Of one prompt's tokens, those read from the cache and those written to it."""

    prompt_tokens: int
    read: int
    written: int


@dataclass
class _Prompt:
    """A prompt as the cache sees it: each message's text (role included) and token count."""

    texts: list[str]
    tokens: list[int]

    @classmethod
    def of(cls, messages: Sequence[Mapping[str, Any]]) -> _Prompt:
        texts = [f"{m.get('role', '')}\x00{content_text(m.get('content'))}" for m in messages]
        return cls(texts, [message_tokens(content_text(m.get("content"))) for m in messages])

    @property
    def total(self) -> int:
        return sum(self.tokens)

    def shared_tokens(self, other: _Prompt) -> int:
        """Tokens of the longest prefix the two prompts share: whole messages, then the shared characters of the
        first message that differs."""
        shared = 0
        for index, (mine, theirs) in enumerate(zip(self.texts, other.texts, strict=False)):
            if mine == theirs:
                shared += self.tokens[index]
                continue
            return shared + min(self.tokens[index], common_prefix_length(mine, theirs) // 4)
        return shared


def _marked(message: Mapping[str, Any]) -> bool:
    if message.get("cache_control"):
        return True
    content = message.get("content")
    return (isinstance(content, Sequence) and not isinstance(content, str)
            and any(isinstance(block, Mapping) and block.get("cache_control") for block in content))


@dataclass
class PromptCacheEmulator:
    """One provider-side prompt cache. Thread-safe: the scripted provider is called from worker threads."""

    rules: PromptCacheRules
    clock: Callable[[], float] = time.monotonic
    _prompts: list[tuple[_Prompt, float]] = field(default_factory=list)
    _prefixes: dict[str, tuple[int, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self, messages: Sequence[Mapping[str, Any]]) -> CacheUse:
        """What serving ``messages`` reads from and writes to the cache (and the cache updated for it)."""
        prompt = _Prompt.of(messages)
        with self._lock:
            now = self.clock()
            if self.rules.rule == "openai":
                return self._serve_automatic(prompt, now)
            return self._serve_breakpoints(prompt, messages, now)

    def _serve_automatic(self, prompt: _Prompt, now: float) -> CacheUse:
        live = [(seen, used) for seen, used in self._prompts if now - used <= self.rules.idle_s]
        read, best = 0, -1
        if prompt.total >= self.rules.min_tokens:
            for index, (seen, _) in enumerate(live):
                shared = prompt.shared_tokens(seen)
                if shared > read:
                    read, best = shared, index
            read = read // self.rules.step * self.rules.step if read >= self.rules.min_tokens else 0
        if read and best >= 0:
            live[best] = (live[best][0], now)  # a hit keeps its entry alive
        self._prompts = [*live, (prompt, now)][-MAX_ENTRIES:]
        return CacheUse(prompt.total, read, 0)

    def _serve_breakpoints(self, prompt: _Prompt, messages: Sequence[Mapping[str, Any]], now: float) -> CacheUse:
        self._prefixes = {key: entry for key, entry in self._prefixes.items() if now - entry[1] <= self.rules.idle_s}
        ends = [i + 1 for i, m in enumerate(messages) if _marked(m)]
        if not ends:
            system = [i + 1 for i, m in enumerate(messages) if m.get("role") == "system"]
            ends = sorted({*system[-1:], len(messages)})
        digest = hashlib.sha256()
        keys, totals = [""], [0]  # the key and tokens of the prefix ending at each message boundary
        for text, tokens in zip(prompt.texts, prompt.tokens, strict=True):
            digest.update(hashlib.sha256(text.encode()).digest())
            keys.append(digest.hexdigest())
            totals.append(totals[-1] + tokens)
        # A breakpoint also finds a prefix written before that ends up to LOOKBACK messages earlier.
        read, hit = 0, None
        for end in ends:
            for boundary in range(end, max(0, end - LOOKBACK) - 1, -1):
                if boundary and keys[boundary] in self._prefixes and totals[boundary] > read:
                    read, hit = totals[boundary], keys[boundary]
                    break
        if hit is not None:
            self._prefixes[hit] = (read, now)
        written = 0
        for end in ends:
            if totals[end] > read and totals[end] >= self.rules.min_tokens and keys[end] not in self._prefixes:
                self._prefixes[keys[end]] = (totals[end], now)
                written = max(written, totals[end] - read)
        if len(self._prefixes) > MAX_ENTRIES:
            oldest = sorted(self._prefixes, key=lambda k: self._prefixes[k][1])[: len(self._prefixes) - MAX_ENTRIES]
            for key in oldest:
                del self._prefixes[key]
        return CacheUse(prompt.total, read, written)

    def usage_fields(self, use: CacheUse) -> dict[str, Any]:
        """The usage fields the emulated provider reports, in its own shape (``prompt_tokens`` is the whole prompt,
        reads and writes included, as litellm reports every provider's)."""
        if self.rules.rule == "openai":
            return {"prompt_tokens_details": {"cached_tokens": use.read}}
        return {"cache_read_input_tokens": use.read, "cache_creation_input_tokens": use.written,
                "prompt_tokens_details": {"cached_tokens": use.read}}
