"""The litellm client against the scripted provider: retries, caching policy, ledger, the engine through it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from om_eval.llm.cache import ResponseCache
from om_eval.llm.client import (
    ClientSettings,
    LLMCallError,
    LLMClient,
    build_request,
    is_retryable,
    litellm_model_id,
    prompt_cache_usage,
    provider_params,
)
from om_eval.llm.providers import register_scripted
from om_eval.llm.request import LLMRequest
from om_eval.om.config import ModelSettings
from om_eval.testing.scripted.model import ScriptedModel

QUESTION = [{"role": "user", "content": "Question: Which city did I move to?"}]


class FakeSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def client(tmp_path: Path | None = None, **settings: object) -> tuple[LLMClient, FakeSleep]:
    sleep = FakeSleep()
    cache = ResponseCache(tmp_path / "cache") if tmp_path is not None else None
    return LLMClient(cache=cache, settings=ClientSettings(**settings), sleep=sleep, seed=1), sleep


def scripted(name: str, faults: list[str] | None = None) -> ModelSettings:
    register_scripted(name, ScriptedModel(faults={"actor": faults or []}))
    return ModelSettings(model=f"scripted/{name}", temperature=0, max_output_tokens=None)


def run(coro):
    return asyncio.run(coro)


def test_scripted_provider_answers_through_litellm() -> None:
    llm, _ = client()
    reply = run(llm.complete(QUESTION, stage="actor", settings=scripted("plain")))
    assert reply.text.startswith("I don't know") and reply.model == "scripted/plain"
    assert reply.prompt_tokens and reply.completion_tokens
    record = llm.ledger.records[-1]
    assert record.stage == "actor" and record.cost_usd == 0.0 and not record.cached and record.retries == 0


def test_litellm_prices_scripted_replies_at_zero() -> None:
    # Our ledger prices offline providers itself; litellm prices every reply too, and must find the model in its
    # list rather than searching near names on each call.
    from om_eval.llm.providers import litellm_with_providers

    litellm = litellm_with_providers()
    scripted("priced")
    response = litellm.completion(model="scripted/priced", messages=QUESTION)
    assert response._hidden_params["response_cost"] == 0.0
    assert litellm.model_cost["scripted/priced"]["input_cost_per_token"] == 0.0


def test_litellm_takes_a_scripted_replys_cost_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    # The provider says the reply is free, so litellm never runs its own pricing (a third of its time per call).
    from om_eval.llm.providers import litellm_with_providers

    litellm = litellm_with_providers()
    priced: list[object] = []
    real = litellm.response_cost_calculator
    monkeypatch.setattr(litellm, "response_cost_calculator", lambda **kw: priced.append(kw) or real(**kw))
    scripted("given")
    response = run(litellm.acompletion(model="scripted/given", messages=QUESTION))
    assert response._hidden_params["response_cost"] == 0.0
    assert priced == []


@pytest.mark.parametrize("fault", ["rate_limit", "server_error", "timeout", "error"])
def test_transient_errors_are_retried_with_growing_jittered_backoff(fault: str) -> None:
    llm, sleep = client(max_retries=5, backoff_base_s=1.0, backoff_max_s=60.0)
    reply = run(llm.complete(QUESTION, stage="actor", settings=scripted(f"flaky-{fault}", [fault] * 3)))
    assert reply.text and llm.ledger.records[-1].retries == 3
    assert len(sleep.delays) == 3
    assert all(0 <= d <= 2**i for i, d in enumerate(sleep.delays))  # full jitter under 1, 2, 4 s


@pytest.mark.parametrize(("fault", "status"), [("bad_request", 400), ("auth_error", 401)])
def test_client_errors_fail_at_once_with_the_providers_message(fault: str, status: int) -> None:
    llm, sleep = client()
    with pytest.raises(LLMCallError) as error:
        run(llm.complete(QUESTION, stage="judge", settings=scripted(f"broken-{fault}", [fault])))
    assert sleep.delays == [] and error.value.status_code == status
    message = str(error.value)
    assert message.startswith(f"judge call to scripted/broken-{fault} failed (HTTP {status})")
    assert f"simulated {fault}" in message
    assert llm.ledger.records[-1].error and llm.ledger.totals().errors == 1


def test_retries_are_bounded() -> None:
    llm, sleep = client(max_retries=2)
    with pytest.raises(LLMCallError, match="after 2 retries"):
        run(llm.complete(QUESTION, stage="actor", settings=scripted("down", ["server_error"] * 10)))
    assert len(sleep.delays) == 2


def test_retry_classification() -> None:
    class Status(Exception):
        def __init__(self, code: int) -> None:
            self.status_code = code

    assert all(is_retryable(Status(c)) for c in (408, 429, 500, 502, 503, 504))
    assert not any(is_retryable(Status(c)) for c in (400, 401, 403, 404, 422))
    assert is_retryable(TimeoutError()) and not is_retryable(ValueError("bad"))


@pytest.mark.parametrize(("usage", "expected"), [
    ({"prompt_tokens_details": {"cached_tokens": 8}}, 8),  # OpenAI's shape (vLLM and LiteLLM proxies report it too)
    ({"cache_read_input_tokens": 8}, 8),  # Anthropic's
    ({"prompt_tokens_details": {"cached_tokens": 0}}, 0),  # said, and none: zero, not unknown
    ({}, None),  # llama-cpp-python's server says nothing: unknown
])
def test_the_providers_prompt_cache_count_reaches_the_ledger_and_the_response_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, usage: dict, expected: int | None
) -> None:
    import litellm

    async def answer(**_kwargs: object) -> litellm.ModelResponse:
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Lisbon"}}
        tokens = litellm.Usage(prompt_tokens=20, completion_tokens=3, total_tokens=23, **usage)
        return litellm.ModelResponse(model="m", choices=[choice], usage=tokens)

    monkeypatch.setattr(litellm, "acompletion", answer)
    llm, _ = client(tmp_path)
    settings = ModelSettings(model="openai/m", temperature=0, provider_options={"api_key": "none"})
    paid = run(llm.complete(QUESTION, stage="actor", settings=settings))
    hit = run(llm.complete(QUESTION, stage="actor", settings=settings))
    assert not paid.cached and hit.cached
    # A hit carries the original call's usage, its provider-cached share included, as it carries prompt_tokens.
    assert [(r.prompt_tokens, r.cached_prompt_tokens) for r in llm.ledger.records] == [(20, expected)] * 2


def test_the_prompt_cache_count_is_read_from_objects_and_mappings() -> None:
    import litellm

    assert prompt_cache_usage(litellm.Usage(prompt_tokens=9, prompt_tokens_details={"cached_tokens": 4})).read == 4
    assert prompt_cache_usage({"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 4}}).read == 4
    assert prompt_cache_usage({"prompt_tokens": 9, "cache_read_input_tokens": 5}).read == 5
    assert prompt_cache_usage({"prompt_tokens_details": None}).read is None
    assert prompt_cache_usage({"prompt_tokens_details": {"cached_tokens": True}}).read is None  # not a count
    assert prompt_cache_usage(None).read is None


def test_deterministic_calls_are_cached_and_hits_cost_nothing(tmp_path: Path) -> None:
    llm, _ = client(tmp_path)
    settings = scripted("cached")
    first = run(llm.complete(QUESTION, stage="actor", settings=settings))
    second = run(llm.complete(QUESTION, stage="actor", settings=settings))
    assert not first.cached and second.cached and second.text == first.text
    totals = llm.ledger.totals()
    assert totals.calls == 2 and totals.cached == 1
    # A fresh client on the same folder (another process, a later run) hits too.
    again, _ = client(tmp_path)
    assert run(again.complete(QUESTION, stage="actor", settings=settings)).cached


def test_sampled_calls_are_not_cached_unless_opted_in(tmp_path: Path) -> None:
    warm = ModelSettings(model="scripted/om-eval", temperature=0.7, max_output_tokens=None)
    llm, _ = client(tmp_path)
    run(llm.complete(QUESTION, stage="actor", settings=warm))
    assert not run(llm.complete(QUESTION, stage="actor", settings=warm)).cached
    opted, _ = client(tmp_path, cache_nondeterministic=True)
    run(opted.complete(QUESTION, stage="actor", settings=warm))
    assert run(opted.complete(QUESTION, stage="actor", settings=warm)).cached


def test_memory_build_calls_are_cached_at_any_temperature(tmp_path: Path) -> None:
    """A resumed build must not pay again for the Observer's sampled (0.3) calls it already made."""
    warm = ModelSettings(model="scripted/om-eval", temperature=0.3, max_output_tokens=None)
    llm, _ = client(tmp_path)
    for stage in ("observer", "reflector"):
        run(llm.complete(QUESTION, stage=stage, settings=warm))
        assert run(llm.complete(QUESTION, stage=stage, settings=warm)).cached, stage
    never, _ = client(tmp_path / "off", always_cache_stages=())
    run(never.complete(QUESTION, stage="observer", settings=warm))
    assert not run(never.complete(QUESTION, stage="observer", settings=warm)).cached


def test_client_scope_separates_cache_entries(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    settings = scripted("scoped")
    one = LLMClient(cache=cache, scope={"judge": "house@1"})
    other = LLMClient(cache=cache, scope={"judge": "official@9e0b455"})
    run(one.complete(QUESTION, stage="judge", settings=settings))
    assert not run(other.complete(QUESTION, stage="judge", settings=settings)).cached
    assert run(one.complete(QUESTION, stage="judge", settings=settings)).cached


def test_failed_calls_are_not_cached(tmp_path: Path) -> None:
    llm, _ = client(tmp_path)
    settings = scripted("fails-once", ["bad_request"])
    with pytest.raises(LLMCallError):
        run(llm.complete(QUESTION, stage="actor", settings=settings))
    assert not run(llm.complete(QUESTION, stage="actor", settings=settings)).cached


def test_concurrency_limit_per_model() -> None:
    model = ScriptedModel(latency=0.02)
    register_scripted("slow", model)
    settings = ModelSettings(model="scripted/slow", temperature=0, max_output_tokens=None)
    llm = LLMClient(settings=ClientSettings(concurrency={"scripted/slow": 3}))
    active = peak = 0
    original = llm._send

    async def counting(request: LLMRequest):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        try:
            return await original(request)
        finally:
            active -= 1

    llm._send = counting  # type: ignore[method-assign]  # a counting stand-in for the network call

    async def many() -> None:
        await asyncio.gather(*(llm.complete([{"role": "user", "content": f"q{i}"}], stage="actor", settings=settings)
                               for i in range(12)))

    run(many())
    assert peak == 3 and llm.ledger.totals().calls == 12
    # The same client in a second event loop (rejudging answers, then probes): the limit holds there too, and a
    # semaphore of the first loop, left locked by waiters, is not reused (it raised "bound to a different loop").
    peak = 0
    run(many())
    assert peak == 3 and llm.ledger.totals().calls == 24


def test_request_building_and_provider_options() -> None:
    gemini = ModelSettings(model="google/gemini-2.5-flash", temperature=0.3,
                           provider_options={"google": {"thinkingConfig": {"thinkingBudget": 215}}})
    request = build_request(QUESTION, gemini)
    assert request.model == "gemini/gemini-2.5-flash"
    assert request.params == {"temperature": 0.3, "max_tokens": 100000,
                              "thinking": {"type": "enabled", "budget_tokens": 215}}
    assert litellm_model_id("openai/gpt-4o") == "openai/gpt-4o"
    assert provider_params("openai/gpt-4o", {"google": {"thinkingConfig": {"thinkingBudget": 1}}}) == {}
    assert provider_params("openai/o3-mini", {"openai": {"reasoningEffort": "low"}}) == {"reasoning_effort": "low"}
    assert provider_params("ollama/qwen", {"litellm": {"num_ctx": 8192}}) == {"num_ctx": 8192}


def test_engine_runs_through_the_client(tmp_path: Path) -> None:
    from om_eval.data.conversation import make_conversation
    from om_eval.om import ObservationalMemory, ObservationConfig, OMConfig, ReflectionConfig

    model = ModelSettings(model="scripted/om-eval", temperature=0, max_output_tokens=None)
    config = OMConfig(
        scope="resource",
        observation=ObservationConfig(message_tokens=3000, model=model),
        reflection=ReflectionConfig(observation_tokens=1500, model=model),
    )
    llm, _ = client(tmp_path)
    memory = ObservationalMemory(config, observer=llm)
    for session in make_conversation(6, 6, seed=3):
        memory.add_messages(session.messages)
        run(memory.observe())
    stages = llm.ledger.by_stage()
    assert stages["observer"].calls >= 2 and "reflector" in stages
    assert memory.record().active_observations


def test_a_model_with_no_temperature_sends_none() -> None:
    from om_eval.llm.client import build_request
    from om_eval.om.config import ModelSettings

    settings = ModelSettings(model="openai/gpt-5-mini", temperature=None)
    settings.validate("models.observer")
    request = build_request([{"role": "user", "content": "hi"}], settings)
    assert "temperature" not in request.litellm_kwargs()
    assert build_request([{"role": "user", "content": "hi"}], ModelSettings(model="openai/gpt-4o")).params[
        "temperature"] == 0.3


def test_a_paid_reply_is_fsynced_before_it_is_kept_and_a_scripted_one_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import litellm

    import om_eval.common.files as files

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(files.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])

    async def answer(**_kwargs: object) -> litellm.ModelResponse:
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Lisbon"}}
        return litellm.ModelResponse(model="m", choices=[choice], usage=litellm.Usage(prompt_tokens=5,
                                                                                      completion_tokens=1))

    llm, _ = client(tmp_path)
    run(llm.complete(QUESTION, stage="actor", settings=scripted("free")))
    assert synced == []  # costs nothing to make again: written atomically, not waited for
    monkeypatch.setattr(litellm, "acompletion", answer)
    paid = ModelSettings(model="openai/m", temperature=0, provider_options={"api_key": "none"})
    run(llm.complete(QUESTION, stage="actor", settings=paid))
    assert len(synced) == 1
    again, _ = client(tmp_path)  # both were kept
    assert run(again.complete(QUESTION, stage="actor", settings=scripted("free"))).cached
    assert run(again.complete(QUESTION, stage="actor", settings=paid)).cached
