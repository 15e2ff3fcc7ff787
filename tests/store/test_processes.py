"""Many processes: parallel jobs lose no rows; a SIGKILLed writer loses at most the question in flight."""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from pathlib import Path

from om_eval.store import Catalog, RunStore, store_path
from tests.store import workers

SPAWN = multiprocessing.get_context("spawn")


def test_parallel_jobs_lose_no_rows(tmp_path: Path) -> None:
    jobs = [SPAWN.Process(target=workers.write_run, args=(str(tmp_path), f"run{k}", 50, 4, 6)) for k in range(4)]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(120)
        assert job.exitcode == 0
    with Catalog(tmp_path) as catalog:
        assert not catalog.skipped_files
        assert sorted(r["run_id"] for r in catalog.runs()) == ["run0", "run1", "run2", "run3"]
        per_run = catalog.query("""
            SELECT i.run_id, count(DISTINCT i.question_id) AS items,
                   (SELECT count(*) FROM om_events e WHERE e.memory_key = 'mem-' || i.run_id) AS events,
                   (SELECT count(*) FROM llm_calls c WHERE c.run_id = i.run_id) AS calls,
                   (SELECT count(*) FROM memory_snapshots s WHERE s.memory_key = 'mem-' || i.run_id) AS snapshots
            FROM items i GROUP BY i.run_id ORDER BY i.run_id""")
        assert per_run == [{"run_id": f"run{k}", "items": 50, "events": 200, "calls": 300, "snapshots": 50}
                           for k in range(4)]
        assert catalog.query("SELECT count(*) AS n FROM items") == [{"n": 200}]
        assert catalog.query("SELECT count(*) AS n FROM items WHERE status = 'done'") == [{"n": 200}]


def test_a_killed_writer_keeps_every_committed_question_and_its_lock_dies_with_it(tmp_path: Path) -> None:
    n_events, n_calls = 5, 8
    progress = SPAWN.Queue()
    child = SPAWN.Process(target=workers.write_run,
                          args=(str(tmp_path), "killed", 10_000, n_events, n_calls, progress, 20_000))
    child.start()
    signalled = {progress.get(timeout=60) for _ in range(25)}  # committed, by the child's own account
    os.kill(child.pid, signal.SIGKILL)
    child.join(30)
    assert child.exitcode == -signal.SIGKILL
    while True:
        try:
            signalled.add(progress.get_nowait())
        except queue.Empty:
            break
    expected = {f"q{i:04d}" for i in signalled}
    path = store_path(tmp_path, "killed")

    with Catalog(tmp_path) as catalog:  # read-only, replaying the WAL the killed writer left behind
        assert catalog.attached == [path]
        stored = catalog.query("""
            SELECT i.question_id,
                   (SELECT count(*) FROM om_events e WHERE e.question_id = i.question_id) AS events,
                   (SELECT count(*) FROM llm_calls c WHERE c.question_id = i.question_id) AS calls,
                   (SELECT count(*) FROM memory_snapshots s WHERE s.question_id = i.question_id) AS snapshots
            FROM items i ORDER BY i.question_id""")
        committed = {row["question_id"] for row in stored}
        assert expected <= committed
        assert committed == {f"q{i:04d}" for i in range(len(committed))}  # a prefix: nothing skipped
        assert all((r["events"], r["calls"], r["snapshots"]) == (n_events, n_calls, 1) for r in stored)
        # the question in flight left nothing behind
        assert catalog.query("SELECT count(*) AS n FROM om_events WHERE question_id NOT IN "
                             "(SELECT question_id FROM items)") == [{"n": 0}]
        assert catalog.query("SELECT count(*) AS n FROM llm_calls WHERE question_id NOT IN "
                             "(SELECT question_id FROM items)") == [{"n": 0}]

    with RunStore(path, open_timeout=0) as store:  # the flock died with the process
        assert store.done_question_ids("killed") == committed

    # resuming finishes the run; the result equals an uninterrupted run
    workers.write_run(str(tmp_path), "killed", len(committed) + 5, n_events, n_calls, None, 20_000)
    workers.write_run(str(tmp_path / "clean"), "killed", len(committed) + 5, n_events, n_calls, None, 20_000)
    columns = "question_id, status, hypothesis, label, observation_tokens, cost_usd"
    with Catalog(tmp_path) as resumed, Catalog(tmp_path / "clean") as clean:
        sql = f"SELECT {columns} FROM items ORDER BY question_id"
        assert resumed.query(sql) == clean.query(sql)
        sql = "SELECT question_id, seq, stage, prompt_tokens, cache_key FROM llm_calls ORDER BY question_id, seq"
        assert resumed.query(sql) == clean.query(sql)
