"""Case 4: ``om-eval run`` killed with SIGKILL at seeded moments, then resumed, ends as a clean run would.

The child runs the smoke experiment against the default scripted model slowed by ``OM_EVAL_SCRIPTED_LATENCY``,
so its 28 calls take a few seconds; the kill lands a seeded delay after its first answer is cached (the
interpreter's start-up time, which varies with the machine's load, is not part of the delay). The resume runs
in this process. Besides the usual invariants, the calls of the killed attempt must be in ``llm_calls``: every
journaled call the killed process had not saved comes back as an interrupted-attempt row, and every answer in
the cache is accounted for by some row.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from om_eval.llm.cache import ResponseCache
from om_eval.llm.client import LLMClient
from om_eval.llm.ledger import Ledger
from om_eval.llm.providers import register_scripted
from om_eval.llm.request import LLMRequest
from om_eval.store.writer import INTERRUPTED_ATTEMPT
from om_eval.testing.scripted.model import ScriptedModel
from tests.reliability.harness import (
    CHILD_TIMEOUT_S,
    Outcome,
    assert_consistent,
    assert_matches,
    cache_entries,
    invoke,
    kill,
    outcome,
    read,
    spawn,
    wait_for,
)

LATENCY = 0.1
CALLS = 28  # calls of a clean smoke run
#: (seed, run.concurrency) of each kill; fixed so a failure can be replayed.
KILLS = [(11, 1), (23, 2), (37, 4)]


def journal(results: Path) -> list[dict]:
    """The calls the killed process journaled (a line cut short by the kill is not a call)."""
    lines = []
    for path in (results / "store").glob("*.calls.jsonl"):
        for line in path.read_text().splitlines():
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return lines


def unsaved(results: Path, lines: list[dict]) -> int:
    """Journaled calls not in ``llm_calls`` yet (a kill after a question's commit leaves saved lines behind)."""
    with read(results) as db:
        saved = {(r["question_id"], r["stage"], r["started_at"], r["cache_key"])
                 for r in db.query("SELECT question_id, stage, started_at, cache_key FROM llm_calls")}
    return sum((line["question_id"], line["stage"], line["started_at"], line["cache_key"]) not in saved
               for line in lines)


def done_count(results: Path) -> int:
    with read(results) as db:
        return db.query("SELECT count(*) AS n FROM items WHERE status = 'done'")[0]["n"]


def kill_after(results: Path, delay: float, concurrency: int, name: str) -> int:
    """Start the run, SIGKILL it ``delay`` seconds after it caches its first new answer; returns the journaled
    calls it left unsaved."""
    known = len(cache_entries(results))
    child = spawn(results, "experiment=smoke", f"run.concurrency={concurrency}", latency=LATENCY,
                  log=results.parent / f"{name}.log")
    try:
        assert wait_for(lambda: len(cache_entries(results)) > known or child.poll() is not None,
                        timeout=CHILD_TIMEOUT_S)
        time.sleep(delay)
    finally:
        kill(child)
    assert child.returncode == -signal.SIGKILL, f"the run ended by itself before the kill ({child.returncode})"
    return unsaved(results, journal(results))


def assert_resumes_cleanly(results: Path, reference: Outcome, interrupted: int) -> None:
    done = invoke(results)
    assert done.code == 0 and "0 errors" in done.flat, done.output[-2000:]
    assert_consistent(results)
    assert_matches(outcome(results), reference)
    assert not journal(results), "the journal should be emptied into llm_calls"
    with read(results) as db:
        recovered = db.query("SELECT count(*) AS n FROM llm_calls WHERE error = ?", [INTERRUPTED_ATTEMPT])[0]["n"]
        accounted = {r["cache_key"] for r in db.query("SELECT DISTINCT cache_key FROM llm_calls")}
    assert recovered == interrupted, f"{interrupted} journaled calls were unsaved, {recovered} recovered"
    unaccounted = set(cache_entries(results)) - accounted
    assert not unaccounted, f"answers in the cache that no llm_calls row paid for: {sorted(unaccounted)[:3]}"


@pytest.mark.parametrize(("seed", "concurrency"), KILLS, ids=[f"seed{s}-concurrency{c}" for s, c in KILLS])
def test_a_run_killed_at_a_seeded_moment_resumes_to_the_reference(
    tmp_path: Path, reference: Callable[..., Outcome], seed: int, concurrency: int
) -> None:
    span = CALLS * LATENCY / concurrency  # about how long the run calls models
    delay = random.Random(seed).uniform(0.05, 0.9) * span
    interrupted = kill_after(tmp_path, delay, concurrency, "killed")
    assert done_count(tmp_path) < 7
    assert_resumes_cleanly(tmp_path, reference(), interrupted)


def test_a_run_killed_twice_resumes_to_the_reference(tmp_path: Path, reference: Callable[..., Outcome]) -> None:
    rng = random.Random(5)
    first = kill_after(tmp_path, rng.uniform(0.2, 1.0), 1, "first-kill")
    before = done_count(tmp_path)
    second = kill_after(tmp_path, rng.uniform(0.2, 1.0), 1, "second-kill")  # the resumed run, killed too
    assert before <= done_count(tmp_path) < 7
    assert_resumes_cleanly(tmp_path, reference(), first + second)


def test_a_kill_mid_question_keeps_the_calls_it_paid_for(
    tmp_path: Path, reference: Callable[..., Outcome]
) -> None:
    child = spawn(tmp_path, "experiment=smoke", "run.concurrency=1", latency=LATENCY,
                  log=tmp_path.parent / "mid-question.log")

    def observing() -> bool:  # a question has paid for its Observer calls and has its actor and judge to go
        lines = journal(tmp_path)
        return child.poll() is not None or (bool(lines) and all(line["stage"] == "observer" for line in lines))

    try:
        assert wait_for(lambda: cache_entries(tmp_path) or child.poll() is not None, timeout=CHILD_TIMEOUT_S)
        time.sleep(0.5)  # past the first question
        assert wait_for(observing, timeout=CHILD_TIMEOUT_S, interval=0.005)
    finally:
        kill(child)
    assert child.returncode == -signal.SIGKILL
    interrupted = unsaved(tmp_path, journal(tmp_path))
    assert interrupted >= 1, "the kill should leave the question's Observer calls in the journal"
    assert_resumes_cleanly(tmp_path, reference(), interrupted)


class Killed(BaseException):
    """Stands in for SIGKILL inside one call: nothing after it runs."""


class DiesWhileCaching(ResponseCache):
    def put(self, *args: object, **kwargs: object) -> None:
        raise Killed


def test_a_paid_call_is_recorded_before_its_answer_is_cached(tmp_path: Path) -> None:
    # Regression: the client cached a paid answer first and recorded it after, so a kill between the two left an
    # answer the resumed run got for free while its cost was recorded nowhere.
    register_scripted("paid-then-killed", ScriptedModel())
    ledger = Ledger()
    client = LLMClient(cache=DiesWhileCaching(tmp_path / "cache"), ledger=ledger)
    request = LLMRequest.build("scripted/paid-then-killed", [{"role": "user", "content": "Hello there."}],
                               temperature=0)
    with pytest.raises(Killed):
        asyncio.run(client.call(request, stage="actor"))
    assert len(ledger.records) == 1 and not ledger.records[0].cached


def test_the_scripted_latency_slows_calls_made_through_litellm() -> None:
    # Regression: litellm hands the provider "om-eval", not "scripted/om-eval", and the latency was looked up
    # only for names with a slash, so OM_EVAL_SCRIPTED_LATENCY did nothing and "slow" runs finished at once.
    register_scripted("slow", ScriptedModel(latency=0.2))
    client = LLMClient()

    async def two_calls() -> float:
        started = time.monotonic()
        for text in ("One.", "Two."):
            await client.call(LLMRequest.build("scripted/slow", [{"role": "user", "content": text}], temperature=0),
                              stage="actor")
        return time.monotonic() - started

    assert asyncio.run(two_calls()) >= 0.4


def test_a_sampled_observer_call_is_paid_once_across_a_kill(tmp_path: Path) -> None:
    # Regression: the Observer samples at 0.3 (Mastra's setting), sampled calls were never cached, so every kill
    # in the middle of a memory build made the resumed run pay for that build's Observer calls again.
    warm = "models.observer.temperature=0.3"
    child = spawn(tmp_path, "experiment=smoke", "run.concurrency=1", warm, latency=LATENCY,
                  log=tmp_path.parent / "warm-observer.log")

    def observing() -> bool:
        lines = journal(tmp_path)
        if child.poll() is not None:
            return True
        # A paid call is journaled before its reply is cached (so its cost is never lost); a kill between the two
        # pays for it again on resume, by design. Kill once the journaled calls' replies are cached.
        cached = cache_entries(tmp_path)
        return bool(lines) and all(line["stage"] == "observer" and line.get("cache_key") in cached
                                   for line in lines)

    try:
        assert wait_for(lambda: cache_entries(tmp_path) or child.poll() is not None, timeout=CHILD_TIMEOUT_S)
        time.sleep(0.5)
        assert wait_for(observing, timeout=CHILD_TIMEOUT_S, interval=0.005)
    finally:
        kill(child)
    assert child.returncode == -signal.SIGKILL
    resumed = invoke(tmp_path, warm)
    assert resumed.code == 0, resumed.output[-2000:]
    assert_consistent(tmp_path)
    with read(tmp_path) as db:
        (paid,) = db.query("SELECT count(*) AS calls, count(DISTINCT cache_key) AS requests FROM llm_calls "
                           "WHERE stage = 'observer' AND NOT cached")
    assert paid["calls"] == paid["requests"] > 0, f"observer requests paid more than once: {paid}"
