"""One record per model call, hit or miss, and an in-memory collector with totals.

Costs come from litellm's local price list. A price litellm does not know is recorded as unknown (``None``),
never as zero, so totals can say how much of the spend they cover.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, fields

#: How a record's ``error`` begins when the call succeeded but the caller refused the reply (empty, looping,
#: unparsable, no verdict). Such a call was made and paid for; its reply was not cached.
REJECTED_PREFIX = "unusable reply: "


@dataclass(frozen=True)
class CallRecord:
    """What one model call did."""

    stage: str
    """observer, reflector, actor or judge."""
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cached: bool
    latency_s: float
    retries: int
    cost_usd: float | None
    """Dollars this call spent: 0 for a cache hit, ``None`` when the price is unknown."""
    saved_usd: float | None = None
    """For a cache hit: what the original call cost (``None`` when unknown)."""
    error: str | None = None
    cache_key: str | None = None
    started_at: float = 0.0
    """Unix time the call started."""
    cached_prompt_tokens: int | None = None
    """Of ``prompt_tokens``, those the provider read from its own prompt cache, as it reported them (``None``: it
    did not say). Not the response cache: that is ``cached``."""
    cache_write_tokens: int | None = None
    """Of ``prompt_tokens``, those the provider wrote to its prompt cache (Anthropic bills them at a premium;
    ``None``: it did not say)."""

    @property
    def rejected(self) -> bool:
        """The model answered, but the caller could not use the reply (see :data:`REJECTED_PREFIX`)."""
        return self.error is not None and self.error.startswith(REJECTED_PREFIX)


@dataclass(frozen=True)
class LedgerTotals:
    """Sums over a set of call records."""

    calls: int = 0
    cached: int = 0
    errors: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    """Sum of the known costs."""
    unknown_cost_calls: int = 0
    """Paid calls whose price litellm does not know (their cost is not in ``cost_usd``)."""
    saved_usd: float = 0.0
    latency_s: float = 0.0

    @classmethod
    def of(cls, records: Iterable[CallRecord]) -> LedgerTotals:
        calls = cached = errors = retries = prompt = completion = unknown = 0
        cost = saved = latency = 0.0
        for record in records:
            calls += 1
            cached += record.cached
            errors += record.error is not None
            retries += record.retries
            prompt += record.prompt_tokens or 0
            completion += record.completion_tokens or 0
            latency += record.latency_s
            if record.cost_usd is None:
                unknown += (record.error is None or record.rejected) and not record.cached
            else:
                cost += record.cost_usd
            saved += record.saved_usd or 0.0
        return cls(calls, cached, errors, retries, prompt, completion, cost, unknown, saved, latency)

    def __add__(self, other: LedgerTotals) -> LedgerTotals:
        """The totals of both sets of records (a run keeps a running sum instead of re-adding every record)."""
        return LedgerTotals(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


@dataclass
class Ledger:
    """Collects call records (thread-safe) and sums them by stage and by model."""

    records: list[CallRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, record: CallRecord) -> None:
        with self._lock:
            self.records.append(record)

    def totals(self) -> LedgerTotals:
        return LedgerTotals.of(list(self.records))

    def by_stage(self) -> dict[str, LedgerTotals]:
        return self._grouped(lambda r: r.stage)

    def by_model(self) -> dict[str, LedgerTotals]:
        return self._grouped(lambda r: r.model)

    def _grouped(self, key) -> dict[str, LedgerTotals]:
        groups: dict[str, list[CallRecord]] = {}
        for record in list(self.records):
            groups.setdefault(key(record), []).append(record)
        return {name: LedgerTotals.of(group) for name, group in sorted(groups.items())}
