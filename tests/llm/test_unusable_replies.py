"""One unusable reply never poisons the cache: retries and re-runs make real calls (observer, reflector, client).

Regression for a run where one degenerate Observer reply was cached, its retry (the identical request) was served
that same reply, and every re-run failed again with zero model calls.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from datetime import datetime
from pathlib import Path

import pytest

from om_eval.llm.cache import CachedResponse, ResponseCache
from om_eval.llm.client import LLMClient, build_request
from om_eval.llm.providers import register_scripted
from om_eval.llm.request import cache_key
from om_eval.om.config import ModelSettings
from om_eval.om.observer import (
    ObserverOutputError,
    ObserverRequest,
    call_observer,
    format_messages,
    render_observer_request,
    render_observer_system_prompt,
)
from om_eval.om.records import Message
from om_eval.om.reflector import ReflectionError, reflect_observations
from om_eval.om.tokens import CharRatioCounter
from om_eval.testing.scripted.model import ScriptedModel

WHEN = datetime(2025, 5, 2, 8, 30)
LOOP = "* 🔴 (09:00) User stated the same thing again and again.\n" * 100
OBSERVATIONS = "Date: May 2, 2025\n" + "\n".join(
    f"* 🔴 (08:{i:02d}) User stated they keep bee hive number {i} on their roof in Ghent, close to the canal and "
    "the old harbour where the boats come in."
    for i in range(30)
)


def run(coro):
    return asyncio.run(coro)


def settings_for(name: str, model: ScriptedModel) -> ModelSettings:
    return ModelSettings(model=register_scripted(name, model), temperature=0, max_output_tokens=None)


def client(tmp_path: Path) -> LLMClient:
    return LLMClient(cache=ResponseCache(tmp_path / "cache"))


def observer_messages() -> tuple[str, list[dict[str, str]]]:
    history = format_messages([
        Message("m1", "t", "user", "I moved to Ghent last month and I keep bees on my roof.", WHEN),
        Message("m2", "t", "assistant", "Welcome to Ghent! Bees on a roof need shade and water.", WHEN),
    ])
    system = render_observer_system_prompt("current", multi_thread=False)
    return system, render_observer_request(ObserverRequest(history))


def observe(llm: LLMClient, settings: ModelSettings):
    system, user = observer_messages()
    return run(call_observer(llm, settings, system, user, multi_thread=False))


def entries(tmp_path: Path) -> int:
    return ResponseCache(tmp_path / "cache").stats().entries


def test_observer_retry_is_a_real_call_and_nothing_bad_is_cached(tmp_path: Path) -> None:
    settings = settings_for("observer-loop", ScriptedModel(faults={"observer": ["degenerate", "degenerate"]}))
    llm = client(tmp_path)
    with pytest.raises(ObserverOutputError, match="degenerate"):
        observe(llm, settings)
    records = llm.ledger.records
    assert [r.cached for r in records] == [False, False]  # the retry was not served the first bad reply
    assert all((r.error or "").startswith("unusable reply: degenerate") for r in records)
    assert records[0].cache_key != records[1].cache_key  # the attempt number is part of the cache scope
    assert entries(tmp_path) == 0


def test_a_rerun_after_an_observer_failure_calls_the_model_again(tmp_path: Path) -> None:
    settings = settings_for("observer-flaky", ScriptedModel(faults={"observer": ["empty", "prose"]}))
    with pytest.raises(ObserverOutputError):
        observe(client(tmp_path), settings)
    rerun = client(tmp_path)  # a later run on the same cache; the model behaves now
    call = observe(rerun, settings)
    assert "Ghent" in call.output.observations
    assert [r.cached for r in rerun.ledger.records] == [False]
    third = client(tmp_path)
    observe(third, settings)
    assert [r.cached for r in third.ledger.records] == [True]  # good replies are still cached


def test_a_retry_that_succeeds_is_its_own_cache_entry(tmp_path: Path) -> None:
    model = ScriptedModel(faults={"observer": ["degenerate"]})
    settings = settings_for("observer-once", model)
    first = client(tmp_path)
    observe(first, settings)
    assert [r.cached for r in first.ledger.records] == [False, False] and entries(tmp_path) == 1
    again = client(tmp_path)
    observe(again, settings)  # attempt 1's bad reply was never stored: attempt 1 is asked for again, for real
    assert [r.cached for r in again.ledger.records] == [False] and model.call_counts["observer"] == 3


def test_a_bad_reply_cached_by_an_older_version_is_dropped_and_asked_again(tmp_path: Path) -> None:
    settings = settings_for("observer-poisoned", ScriptedModel())
    system, user = observer_messages()
    request = build_request([{"role": "system", "content": system}, *user], settings)
    key = cache_key(request, {"client": None, "call": None})  # the key attempt 1 has always had
    cache = ResponseCache(tmp_path / "cache")
    cache.put(key, CachedResponse(LOOP, settings.model, 1, 1, 0.0, "2025-01-01T00:00:00", settings.model))
    llm = client(tmp_path)
    call = observe(llm, settings)
    assert "Ghent" in call.output.observations and [r.cached for r in llm.ledger.records] == [False]
    assert cache.get(key).text != LOOP  # type: ignore[union-attr]  # the key was cached above


def test_reflector_junk_is_never_applied_nor_cached(tmp_path: Path) -> None:
    settings = settings_for("reflector-prose", ScriptedModel(faults={"reflector": ["prose"] * 4}))
    llm = client(tmp_path)
    with pytest.raises(ReflectionError, match="not observations"):
        run(reflect_observations(llm, settings, OBSERVATIONS, target=1000, start_level=0,
                                 counter=CharRatioCounter(4.0)))
    assert entries(tmp_path) == 0 and all(not r.cached for r in llm.ledger.records)
    rerun = client(tmp_path)
    result = run(reflect_observations(rerun, settings, OBSERVATIONS, target=1000, start_level=0,
                                      counter=CharRatioCounter(4.0)))
    assert result.productive and "Ghent" in result.observations
    assert [r.cached for r in rerun.ledger.records] == [False]


def test_a_failed_cache_write_is_a_warning_and_the_reply_is_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_for("disk-full", ScriptedModel())
    llm = client(tmp_path)

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(llm.cache, "put", full)
    with caplog.at_level(logging.WARNING, logger="om_eval.llm.client"):
        reply = run(llm.complete([{"role": "user", "content": "Question: where do I live?"}], stage="actor",
                                 settings=settings))
    assert reply.text and not reply.cached
    assert llm.ledger.records[-1].error is None  # the call itself succeeded
    assert any("could not store" in r.getMessage() and "No space left" in r.getMessage() for r in caplog.records)


def test_attempt_zero_keeps_the_old_key_and_attempts_must_be_counts(tmp_path: Path) -> None:
    settings = settings_for("keys", ScriptedModel())
    llm = client(tmp_path)
    messages = [{"role": "user", "content": "Question: where do I live?"}]
    run(llm.complete_checked(messages, stage="actor", settings=settings, attempt=0))
    run(llm.complete_checked(messages, stage="actor", settings=settings, attempt=2))
    first, second = llm.ledger.records
    assert first.cache_key == cache_key(build_request(messages, settings), {"client": None, "call": None})
    assert second.cache_key != first.cache_key and not second.cached
    with pytest.raises(ValueError, match="attempt"):
        run(llm.complete_checked(messages, stage="actor", settings=settings, attempt=-1))


def test_a_cut_off_reply_is_cached_only_where_a_cut_reply_is_usable(tmp_path: Path) -> None:
    """An answer cut at max_tokens is refused and never stored; a judge's cut 10-token reply is kept as usual."""
    messages = [{"role": "user", "content": "Which city did I move to?"}]
    answers = client(tmp_path / "answers")
    settings = settings_for("cut-answer", ScriptedModel(faults={"actor": ["cut_off"]}))
    cut = run(answers.complete_checked(messages, stage="actor", settings=settings, complete_only=True))
    assert cut.finish_reason == "length"
    assert "finish_reason=length" in (answers.ledger.records[-1].error or "")
    again = run(answers.complete_checked(messages, stage="actor", settings=settings, complete_only=True))
    assert not again.cached and again.finish_reason == "stop", "the cut reply must not be served from the cache"

    verdicts = client(tmp_path / "verdicts")
    settings = settings_for("cut-verdict", ScriptedModel(faults={"actor": ["cut_off"]}))
    run(verdicts.complete_checked(messages, stage="actor", settings=settings))
    assert run(verdicts.complete_checked(messages, stage="actor", settings=settings)).cached
