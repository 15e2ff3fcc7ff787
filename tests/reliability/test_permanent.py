"""Case 2: permanent failures of one call (400, 401, empty, prose, cut-off XML, a repetition loop, retries
exhausted) make the question an ``error``, listed by the summary and the exit code, never a wrong answer. A
second invocation with a healthy model finishes the run with the reference results, and no bad reply is ever
served from the cache.

The Observer retries an unusable reply once by itself, so its junk faults come in pairs. ``missing_tags`` only
means something for the Observer and Reflector, and an actor's prose is a plausible answer, not a detectable
failure, so neither is injected into the actor or the judge.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from om_eval.llm.providers import register_scripted
from om_eval.testing.scripted.model import ScriptedModel
from tests.reliability.harness import (
    Outcome,
    assert_calls_accounted,
    assert_consistent,
    assert_errors_listed,
    assert_matches,
    assert_no_bad_reply_cached,
    invoke,
    outcome,
    query,
)

#: (role, fault, how many calls in a row get it). Six rate limits outlast the client's five retries.
PERMANENT = [
    ("observer", "bad_request", 1), ("observer", "auth_error", 1), ("observer", "empty", 2),
    ("observer", "prose", 2), ("observer", "missing_tags", 2), ("observer", "degenerate", 2),
    ("observer", "rate_limit", 6),
    ("actor", "bad_request", 1), ("actor", "auth_error", 1), ("actor", "empty", 1), ("actor", "degenerate", 1),
    ("actor", "server_error", 6), ("actor", "cut_off", 1),
    ("judge", "bad_request", 1), ("judge", "auth_error", 1), ("judge", "empty", 1), ("judge", "prose", 1),
    ("judge", "degenerate", 1), ("judge", "timeout", 6),
]


@pytest.mark.parametrize(("role", "fault", "times"), PERMANENT, ids=[f"{r}-{f}" for r, f, _ in PERMANENT])
def test_a_failed_call_is_an_error_until_a_healthy_rerun_completes_the_run(
    tmp_path: Path, reference: Callable[..., Outcome], role: str, fault: str, times: int
) -> None:
    name = f"permanent-{role}-{fault}"
    broken = ScriptedModel(faults={role: [fault] * times}, history=None)
    register_scripted(name, broken)
    command = (f"models.{role}.model=scripted/{name}",)
    clean = reference()

    first = invoke(tmp_path, *command)
    found = outcome(tmp_path)
    failed = {qid: status for qid, (status, _, _) in found.items() if status != "done"}
    assert len(failed) == 1, f"one question should fail, found {failed}"
    assert_errors_listed(tmp_path, first, failed)
    assert_consistent(tmp_path)
    (error,) = query(tmp_path, "SELECT error FROM items WHERE status = 'error'")
    assert role in error["error"], f"the error should name the {role}: {error['error']}"
    assert_matches({q: v for q, v in found.items() if q not in failed},
                   {q: v for q, v in clean.items() if q not in failed})

    healthy = ScriptedModel(history=None)
    register_scripted(name, healthy)
    second = invoke(tmp_path, *command)
    assert second.code == 0 and "6 already done, 1 answered, 0 errors" in second.flat, second.output[-2000:]
    assert_consistent(tmp_path)
    assert_matches(outcome(tmp_path), clean)
    # Both attempts of the failed question are kept: the failure is recorded, then the healthy attempt.
    attempts = query(tmp_path, "SELECT count(error) AS failed, count(*) - count(error) AS fine FROM llm_calls "
                               "WHERE question_id = ? AND stage = ?", [next(iter(failed)), role])
    assert attempts[0]["failed"] >= 1 and attempts[0]["fine"] >= 1
    assert_calls_accounted(tmp_path, name, [broken, healthy])
    assert_no_bad_reply_cached(tmp_path, [broken])
