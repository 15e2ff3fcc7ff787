"""Issue 34, item 10: what a Ctrl-C and repeated kills leave behind is told and counted exactly.

1. A Ctrl-C inside a batch commit: the workers stop counting, the writer still commits what it was handed, so the
   message said fewer questions were saved than were (117 of 121 in the drill). It now reads the store back.
2. A Ctrl-C while litellm's thread prepares a call: the task awaiting it is cancelled, and the reply coroutine the
   thread then returns was dropped unstarted (``RuntimeWarning: coroutine ... was never awaited``).
3. Repeated kills: cache hits of the interrupted attempts were journaled and moved into ``llm_calls`` on resume,
   so each kill added the in-flight questions' replayed calls to the ledger once more (964 rows in the drill).

The Ctrl-C cases run a child process whose writer (or litellm's blocking half) sends itself SIGINT at a chosen
write (or call), then lets that write finish, as a Ctrl-C landing mid-commit does.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from om_eval.llm.ledger import CallRecord
from om_eval.store import RunStore, store_path
from om_eval.store.writer import INTERRUPTED_ATTEMPT
from tests.reliability.harness import (
    CHILD_TIMEOUT_S,
    REPO,
    assert_consistent,
    assert_matches,
    cache_entries,
    child_env,
    finish,
    invoke,
    kill,
    outcome,
    query,
    spawn,
    wait_for,
)
from tests.store.workers import run_info

#: A child ``om-eval run`` whose ``at``-th store write sends SIGINT to its own process, then finishes.
INTERRUPTED_COMMIT = """
import os, signal, sys, time
from om_eval.store.writer import RunStore

original, writes = RunStore.record_questions, []

def record_questions(self, run_id, records):
    writes.append(len(records))
    if len(writes) == {at}:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)  # the event loop takes the signal and cancels the workers while this commit is under way
    return original(self, run_id, records)

RunStore.record_questions = record_questions
from om_eval.cli import main
sys.exit(main(sys.argv[1:]))
"""

#: A child ``om-eval run`` whose ``at``-th model call sends SIGINT while litellm's thread is preparing it.
INTERRUPTED_CALL = """
import os, signal, sys, time
import litellm.main

original, calls = litellm.main.completion, []

def completion(*args, **kwargs):
    calls.append(1)
    if len(calls) == {at}:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)  # the task awaiting this thread is cancelled before it hands back the reply coroutine
    return original(*args, **kwargs)

litellm.main.completion = completion
from om_eval.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_child(results: Path, script: str, *overrides: str) -> tuple[int, str]:
    """``om-eval run experiment=smoke`` (one question at a time) in a child running ``script``; its code and output."""
    log = results.parent / f"{results.name}.log"
    command = [sys.executable, "-c", script, "run", "experiment=smoke", "run.concurrency=1", *overrides,
               f"run.results_dir={results}", f"run.cache_dir={results / 'cache'}", "run.progress=false"]
    with open(log, "w") as sink:
        # As a job started with `&` from a script is: SIGINT ignored. om-eval run must still stop on it (issue 46
        # item 7), and the case no longer depends on how the test runner itself was started.
        child = subprocess.Popen(command, cwd=REPO, env=child_env(), stdout=sink, stderr=subprocess.STDOUT,
                                 preexec_fn=_ignore_sigint)
    code = finish(child)
    return code, log.read_text()


def done_count(results: Path) -> int:
    return query(results, "SELECT count(*) AS n FROM items WHERE status = 'done'")[0]["n"]


def test_the_saved_count_after_a_ctrl_c_inside_a_commit_is_the_stored_one(tmp_path: Path) -> None:
    results = tmp_path / "results"
    code, output = run_child(results, INTERRUPTED_COMMIT.format(at=3))
    assert code == 130, output[-3000:]
    told = re.search(r"interrupted: (\d+) of 7 questions are saved", " ".join(output.split()))
    assert told is not None, output[-3000:]
    # The third write was under way when the signal came: it is committed, and counted.
    assert int(told.group(1)) == done_count(results) == 3, output[-3000:]
    assert_consistent_after_resume(results)


def test_a_ctrl_c_during_a_model_call_leaves_no_never_awaited_coroutine(tmp_path: Path) -> None:
    results = tmp_path / "results"
    code, output = run_child(results, INTERRUPTED_CALL.format(at=6))
    assert code == 130, output[-3000:]
    assert "interrupted:" in output, output[-3000:]
    assert "never awaited" not in output and "Traceback" not in output, output[-3000:]


def test_sigterm_stops_a_run_like_ctrl_c_and_the_same_command_continues(tmp_path: Path) -> None:
    results = tmp_path / "results"
    log = tmp_path / "term.log"
    child = spawn(results, "experiment=smoke", "run.concurrency=1", latency=0.2, log=log)
    try:
        assert wait_for(lambda: (bool(list((results / "store").glob("*.duckdb"))) and done_count(results) >= 1)
                        or child.poll() is not None, timeout=CHILD_TIMEOUT_S)
    finally:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    code = finish(child)
    output = log.read_text()
    assert code == 143, output[-3000:]
    told = re.search(r"terminated \(SIGTERM\): (\d+) of 7 questions are saved", " ".join(output.split()))
    assert told is not None and "Traceback" not in output, output[-3000:]
    assert int(told.group(1)) == done_count(results), output[-3000:]
    # The store was closed (checkpointed): no write-ahead log is left. Its `.lock` sidecar stays by design.
    assert not [p.name for p in (results / "store").iterdir() if p.suffix == ".wal"]
    assert_consistent_after_resume(results)


def assert_consistent_after_resume(results: Path) -> None:
    resumed = invoke(results)
    assert resumed.code == 0, resumed.output[-2000:]
    assert_consistent(results)


def kill_after_a_new_answer(results: Path, seed: int, *overrides: str) -> None:
    """Start the run slowed down, SIGKILL it a seeded moment after it caches a new answer."""
    known = len(cache_entries(results))
    child = spawn(results, "experiment=smoke", "run.concurrency=1", *overrides, latency=0.1,
                  log=results.parent / f"kill-{seed}.log")
    try:
        assert wait_for(lambda: len(cache_entries(results)) > known or child.poll() is not None,
                        timeout=CHILD_TIMEOUT_S)
        time.sleep(random.Random(seed).uniform(0.02, 0.3))
    finally:
        kill(child)
    assert child.returncode == -signal.SIGKILL, "the run ended by itself before the kill"


#: (seed of the delay after a new answer is cached) of each kill in the replay case.
KILLS = (3, 8, 13)


def test_repeated_kills_add_no_replayed_cache_hits_to_the_ledger(tmp_path: Path) -> None:
    # Every question's memory is served from a warm cache (its Observer calls are hits) and its actor is paid for,
    # so each kill lands while hits of the question in flight are in its ledger.
    warm, killed, clean = tmp_path / "warm", tmp_path / "killed", tmp_path / "clean"
    assert invoke(warm).code == 0
    actor = "models.actor.max_output_tokens=333"  # another actor request; the same Observer requests
    for folder in (killed, clean):
        shutil.copytree(warm / "cache", folder / "cache")
    assert invoke(clean, actor).code == 0
    for seed in KILLS:
        kill_after_a_new_answer(killed, seed, actor)
    resumed = invoke(killed, actor)
    assert resumed.code == 0, resumed.output[-2000:]
    assert_consistent(killed)
    assert_matches(outcome(killed), outcome(clean))

    replayed = query(killed, "SELECT count(*) AS n FROM llm_calls WHERE cached AND error = ?", [INTERRUPTED_ATTEMPT])
    assert replayed[0]["n"] == 0, "cache hits of killed attempts were added to the ledger"
    # Each question's last attempt made the calls a clean run makes, no more: the rest are paid calls of killed ones.
    per_question = "SELECT question_id, count(*) AS n FROM llm_calls WHERE error IS DISTINCT FROM ? GROUP BY 1"
    final = {r["question_id"]: r["n"] for r in query(killed, per_question, [INTERRUPTED_ATTEMPT])}
    assert final == {r["question_id"]: r["n"] for r in query(clean, per_question, [INTERRUPTED_ATTEMPT])}


def test_a_cache_hit_is_not_journaled_and_an_old_journals_hits_are_not_recovered(tmp_path: Path) -> None:
    hit = CallRecord("observer", "gpt-4o", 100, 10, True, 0.0, 0, 0.0, saved_usd=0.25, cache_key="k1", started_at=1.0)
    paid = CallRecord("actor", "gpt-4o", 100, 10, False, 0.5, 0, 0.25, cache_key="k2", started_at=2.0)
    path = store_path(tmp_path, "r1")
    journal = path.with_name(path.name + ".calls.jsonl")
    with RunStore(path) as store:
        store.register_run(run_info("r1"))
        store.journal_call("r1", "q0001", hit)
        assert not journal.exists(), "a cache hit was journaled"
        store.journal_call("r1", "q0001", paid)
    # A journal written before hits were left out: both calls, as a killed process leaves them.
    journal.write_text("".join(json.dumps({**asdict(record), "run_id": "r1", "question_id": "q0001"}) + "\n"
                               for record in (hit, paid)))
    with RunStore(path) as store:
        assert store.recovered_calls == 1
        rows = store._read("SELECT stage, cached, error FROM llm_calls", [])
    assert rows == [("actor", False, INTERRUPTED_ATTEMPT)]
