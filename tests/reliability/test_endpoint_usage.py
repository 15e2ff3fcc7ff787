"""Issue 46 item 1: what an endpoint says a call used is checked before it becomes tokens, dollars or budget.

The drill's server reported ``prompt_tokens=-1000000``: the run summary read ``-10,431,504 tokens · $-7500``, and
``run.budget_usd=0.05`` never tripped because the negative spend offset it. A priced call with no ``usage`` was
counted as free. Here the same server (loopback, :mod:`tests.reliability.hostile_server`) answers the actor.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from om_eval.llm.cache import ResponseCache
from om_eval.llm.client import LLMCallError, LLMClient
from om_eval.om.config import ModelSettings
from tests.reliability.harness import invoke, query
from tests.reliability.hostile_server import SERVED, HostileServer, hostile  # noqa: F401  # the fixture

QUESTION = [{"role": "user", "content": "Which city did I move to?"}]
PRICE = {"input_per_million": 1.0, "output_per_million": 2.0}


def _settings(server: HostileServer, **options: object) -> ModelSettings:
    return ModelSettings(model=f"openai/{SERVED}", temperature=0.0, max_output_tokens=32,
                         provider_options={"api_base": server.base, "api_key": "none", **options})


def _ask(server: HostileServer, cache: ResponseCache | None, **options: object) -> tuple[LLMClient, object]:
    client = LLMClient(cache=cache)
    try:
        reply: object = asyncio.run(client.complete(QUESTION, stage="actor", settings=_settings(server, **options)))
    except LLMCallError as error:
        reply = error
    return client, reply


@pytest.mark.parametrize("mode", ["negative_usage", "huge_usage"])
def test_impossible_usage_fails_the_call_is_counted_unknown_and_is_not_cached(
        hostile: HostileServer, mode: str, tmp_path: Path) -> None:  # noqa: F811  # the fixture
    hostile.mode = mode
    cache = ResponseCache(tmp_path / "cache")
    client, reply = _ask(hostile, cache, price=PRICE)
    assert isinstance(reply, LLMCallError) and "prompt_tokens" in str(reply), reply
    (record,) = client.ledger.records
    assert record.prompt_tokens is None and record.cost_usd is None and record.rejected
    totals = client.ledger.totals()
    assert totals.prompt_tokens == 0 and totals.cost_usd == 0 and totals.unknown_cost_calls == 1
    hostile.mode = "ok"  # the endpoint heals: the call is made again, not served from the cache
    client, reply = _ask(hostile, cache, price=PRICE)
    assert not isinstance(reply, LLMCallError) and not client.ledger.records[0].cached
    assert len(hostile.seen) == 2


def test_a_priced_reply_without_usage_has_unknown_cost_not_zero(hostile: HostileServer) -> None:  # noqa: F811
    hostile.mode = "no_usage"
    client, reply = _ask(hostile, None, price=PRICE)
    assert not isinstance(reply, LLMCallError)
    (record,) = client.ledger.records
    assert (record.prompt_tokens, record.completion_tokens, record.cost_usd) == (None, None, None)
    assert client.ledger.totals().unknown_cost_calls == 1


def _served_actor(server: HostileServer, *, priced: bool = True) -> list[str]:
    overrides = ["model@models.actor=openai_compatible", f"models.actor.model=openai/{SERVED}",
                 f"models.actor.provider_options.api_base={server.base}"]
    if priced:
        overrides += [f"+models.actor.provider_options.price.{name}={value}" for name, value in PRICE.items()]
    return overrides


def test_a_run_against_a_negative_usage_server_stores_no_negative_spend_and_keeps_its_budget(
        hostile: HostileServer, tmp_path: Path) -> None:  # noqa: F811  # the fixture
    hostile.mode = "negative_usage"
    done = invoke(tmp_path, *_served_actor(hostile), "run.budget_usd=0.05")
    calls = query(tmp_path, "SELECT min(prompt_tokens) AS tokens, min(cost_usd) AS cost, "
                            "count(*) FILTER (WHERE stage = 'actor') AS actor_calls FROM llm_calls")
    assert (calls[0]["tokens"] or 0) >= 0 and (calls[0]["cost"] or 0) >= 0, calls
    items = query(tmp_path, "SELECT status, error FROM items")
    assert items and all(i["status"] == "error" and "negative token count" in i["error"] for i in items), items
    # The first refused call is of unknown cost: the budget cannot be kept, so no further question starts.
    assert calls[0]["actor_calls"] == 1, calls
    assert "cannot be checked" in done.flat and "-" not in done.flat.split("tokens")[0][-12:], done.output[-2000:]


def test_a_budget_stops_at_the_first_call_of_unknown_cost(hostile: HostileServer, tmp_path: Path) -> None:  # noqa: F811
    hostile.mode = "no_usage"
    done = invoke(tmp_path, *_served_actor(hostile), "run.budget_usd=5")
    statuses = [row["status"] for row in query(tmp_path, "SELECT status FROM items")]
    assert statuses == ["done"], statuses  # one question answered, then the spend could not be bounded
    assert "cannot be checked" in done.flat and "6 questions not run" in done.flat, done.output[-2000:]


def test_a_budget_over_a_model_without_a_price_is_refused_before_the_run(
        hostile: HostileServer, tmp_path: Path) -> None:  # noqa: F811  # the fixture
    done = invoke(tmp_path, *_served_actor(hostile, priced=False), "run.budget_usd=5")
    assert done.code == 1, done.output[-2000:]  # a job that refused to start (docs/cli.md)
    assert "run.budget_usd=5" in done.flat and f"models.actor (openai/{SERVED})" in done.flat, done.output
    assert not hostile.seen or all(request["path"].endswith("/models") for request in hostile.seen)
    assert not (tmp_path / "store").exists() or not list((tmp_path / "store").glob("*.duckdb"))


def test_a_reply_from_another_model_is_named_once(hostile: HostileServer, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    hostile.mode = "other_model"
    with caplog.at_level("WARNING", logger="om_eval.llm.client"):
        client, _ = _ask(hostile, None, price=PRICE)
        asyncio.run(client.complete(QUESTION, stage="actor", settings=_settings(hostile, price=PRICE)))
    said = [r.getMessage() for r in caplog.records if "cheaper-fallback-model" in r.getMessage()]
    assert len(said) == 1 and f"asked openai/{SERVED}" in said[0], said


@pytest.mark.parametrize(("asked", "answered", "other"), [
    ("openai/gpt-4o", "gpt-4o-2024-08-06", False), ("gemini/gemini-2.5-flash", "models/gemini-2.5-flash", False),
    ("openai/gpt-4o-2024-08-06", "gpt-4o", False), ("scripted/om-eval", "scripted/om-eval", False),
    ("openrouter/openai/gpt-4o", "openai/gpt-4o-2024-08-06", False),
    ("hosted_vllm/Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", False),
    ("anthropic/claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", False),
    ("openai/gpt-4o", "gpt-4o-mini-2024-07-18", True), ("openai/served-model", "llama-3-8b", True)])
def test_which_reply_names_count_as_another_model(asked: str, answered: str, other: bool) -> None:
    from om_eval.llm.client import answered_by_another

    assert answered_by_another(asked, answered) is other
