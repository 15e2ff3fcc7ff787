"""Price profiles for what a conversation's turns would cost on a provider with a prompt cache.

A profile names a model in litellm's local price list (its input, output, cache-read and cache-write prices) and
the caching rules of its provider:

- ``openai`` (OpenAI; Gemini's implicit caching behaves alike): automatic. A prompt of at least ``min_tokens``
  (1,024) reads the prefix it shares with the previous prompt, counted in ``step``-token (128) increments; no
  write premium.
- ``anthropic``: explicit breakpoints, placed where agents place them: after the stable head of the prompt (its
  system messages) and after the last message. A turn reads the longest breakpoint prefix the previous turn wrote
  that is still a prefix of its own prompt, and writes the rest (at the cache-write price) when it is long enough.

Either way the cache forgets a prefix left unused for ``idle_s`` seconds (300 here; the providers document 5 to 10
minutes), so the first turn of a session held days after the last one pays in full.

Rates are read from litellm once per profile as per-token prices at the base tier: a prompt above a tier threshold
(Claude's 200k) is priced at the base rate (:func:`tier_warning` says when that happened).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

CacheRule = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class CacheProfile:
    """One provider's prices and caching rules."""

    name: str
    model: str
    """The litellm price-list id the prices are read from."""
    rule: CacheRule
    idle_s: float = 300.0
    min_tokens: int = 1024
    step: int = 128


#: The profiles reports use by default: a 50 % cache discount (gpt-4o) and three at 90 % (one with a write premium).
PROFILES: dict[str, CacheProfile] = {
    profile.name: profile for profile in (
        CacheProfile("gpt-4o", "gpt-4o", "openai"),
        CacheProfile("gpt-5-mini", "gpt-5-mini", "openai"),
        CacheProfile("gemini-2.5-flash", "gemini/gemini-2.5-flash", "openai"),
        # Anthropic's own id is missing from litellm 1.106's local list; its Bedrock entry has the same prices.
        CacheProfile("claude-sonnet-4", "anthropic.claude-sonnet-4-20250514-v1:0", "anthropic"),
    )
}


@dataclass(frozen=True)
class Rates:
    """Dollars per token."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, prompt_tokens: int, completion_tokens: int, read: int = 0, written: int = 0) -> float:
        """One call's dollars: ``read`` and ``written`` are parts of ``prompt_tokens``."""
        fresh = prompt_tokens - read - written
        return (fresh * self.input + read * self.cache_read + written * self.cache_write
                + completion_tokens * self.output)


#: Prompt sizes above which some providers charge a higher tier; the base rates are used regardless.
TIER_THRESHOLD_TOKENS = 200_000


@lru_cache(maxsize=32)
def profile_rates(profile: CacheProfile) -> Rates:
    """The profile's per-token prices, computed by litellm's ``cost_per_token`` on unit usages (so a price-list
    entry's cache fields are read as litellm reads them for a real reply)."""
    from om_eval.llm.pricing import call_cost

    unit = 1000

    def priced(prompt: int, completion: int, read: int = 0, written: int = 0) -> float:
        cost = call_cost(profile.model, prompt, completion, cached_prompt_tokens=read, cache_write_tokens=written)
        if cost is None:
            raise ValueError(f"cache profile {profile.name!r}: litellm's price list has no price for "
                             f"{profile.model!r}")
        return cost / unit

    return Rates(input=priced(unit, 0), output=priced(0, unit), cache_read=priced(unit, 0, read=unit),
                 cache_write=priced(unit, 0, written=unit))


@dataclass(frozen=True)
class TurnPrompt:
    """What one turn sends, as the cache sees it."""

    tokens: int
    shared: int
    """Tokens of the longest prefix this prompt shares with the previous turn's prompt."""
    head: int
    """Tokens of the prompt's stable head (its system messages): where a first breakpoint goes."""
    gap_s: float | None
    """Seconds since the previous turn (``None``: the first turn)."""


def cache_use(profile: CacheProfile, turn: TurnPrompt, previous: TurnPrompt | None) -> tuple[int, int]:
    """(tokens read from the cache, tokens written to it) for ``turn`` after ``previous``, under ``profile``."""
    alive = previous is not None and turn.gap_s is not None and turn.gap_s <= profile.idle_s
    if profile.rule == "openai":
        if not alive or turn.tokens < profile.min_tokens or turn.shared < profile.min_tokens:
            return 0, 0
        return min(turn.shared, turn.tokens) // profile.step * profile.step, 0
    read = 0
    if alive and previous is not None:
        # What the previous turn wrote: its whole prompt and its head (each when long enough to be cached).
        written_before = [n for n in (previous.tokens, previous.head) if n >= profile.min_tokens]
        read = max((n for n in written_before if n <= turn.shared), default=0)
    breakpoints = [n for n in (turn.head, turn.tokens) if n > read and n >= profile.min_tokens]
    return read, (max(breakpoints) - read if breakpoints else 0)


def tier_warning(prompt_tokens: int) -> str | None:
    """Said when a prompt is above the size some providers price higher."""
    if prompt_tokens > TIER_THRESHOLD_TOKENS:
        return (f"a {prompt_tokens:,}-token prompt is priced at the base rate; some providers charge more above "
                f"{TIER_THRESHOLD_TOKENS:,}")
    return None
