"""The call ledger and prices: totals by stage and model, unknown prices stay unknown."""

from __future__ import annotations

import pytest

from om_eval.llm.ledger import REJECTED_PREFIX, CallRecord, Ledger, LedgerTotals
from om_eval.llm.pricing import Price, call_cost


def record(stage: str, model: str, **values: object) -> CallRecord:
    base = {"prompt_tokens": 100, "completion_tokens": 10, "cached": False, "latency_s": 0.5, "retries": 0,
            "cost_usd": 0.01}
    return CallRecord(stage, model, **{**base, **values})  # type: ignore[arg-type]  # values are CallRecord fields of the right types


def test_totals_by_hand() -> None:
    ledger = Ledger()
    ledger.add(record("observer", "gemini/gemini-2.5-flash", retries=2))
    ledger.add(record("observer", "gemini/gemini-2.5-flash", cached=True, cost_usd=0.0, saved_usd=0.01))
    ledger.add(record("actor", "openai/gpt-4o", cost_usd=None))  # price unknown
    ledger.add(record("judge", "openai/gpt-4o", prompt_tokens=None, completion_tokens=None, cost_usd=None,
                      error="RateLimitError: slow down"))
    totals = ledger.totals()
    assert totals == LedgerTotals(
        calls=4, cached=1, errors=1, retries=2, prompt_tokens=300, completion_tokens=30, cost_usd=pytest.approx(0.01),
        unknown_cost_calls=1, saved_usd=pytest.approx(0.01), latency_s=pytest.approx(2.0),
    )
    by_stage = ledger.by_stage()
    assert list(by_stage) == ["actor", "judge", "observer"]
    assert by_stage["observer"].calls == 2 and by_stage["observer"].cached == 1
    assert ledger.by_model()["openai/gpt-4o"].unknown_cost_calls == 1


def test_a_refused_reply_is_an_error_that_was_still_paid_for() -> None:
    ledger = Ledger()
    refused = record("observer", "openai/gpt-4o", cost_usd=None, error=f"{REJECTED_PREFIX}empty reply")
    failed = record("observer", "openai/gpt-4o", cost_usd=None, error="RateLimitError: slow down")
    ledger.add(refused)
    ledger.add(failed)
    assert refused.rejected and not failed.rejected
    totals = ledger.totals()
    assert totals.errors == 2 and totals.unknown_cost_calls == 1  # the refused call was made, its price unknown


def test_empty_ledger() -> None:
    assert Ledger().totals() == LedgerTotals()


def test_prices_from_litellms_local_map() -> None:
    cost = call_cost("openai/gpt-4o-mini", 1_000_000, 0)
    assert cost is not None and 0.05 < cost < 1.0  # about $0.15 per million input tokens
    assert call_cost("openai/gpt-4o-mini", 0, 1_000_000) > cost  # output costs more than input
    assert call_cost("openai/no-such-model-xyz", 10, 10) is None
    # A price-map entry with zero prices is a missing price, not a free model; a price set as free is free.
    assert call_cost("gemini/gemini-3-pro-preview", 10, 10) is None
    assert call_cost("openai/served-free-model", 10, 10) is None
    assert call_cost("openai/served-free-model", 10, 10, price=Price.from_option("free")) == 0.0
    assert call_cost("openai/gpt-4o-mini", None, 10) is None
    assert call_cost("scripted/om-eval", 10, 10) == 0.0 and call_cost("local/qwen2.5-coder-1.5b", 10, 10) == 0.0
