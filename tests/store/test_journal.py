"""Paid calls of a question in flight survive a kill: the call journal and its recovery."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from om_eval.llm.ledger import CallRecord
from om_eval.store import RunStore, store_path
from om_eval.store.writer import INTERRUPTED_ATTEMPT
from tests.store.workers import question, run_info


def call(stage: str, started_at: float, cost: float = 0.01) -> CallRecord:
    return CallRecord(stage, "gpt-4o", 100, 10, False, 0.5, 0, cost, cache_key=f"k{started_at}", started_at=started_at)


def test_a_saved_question_leaves_no_journal(tmp_path: Path) -> None:
    path = store_path(tmp_path, "r1")
    with RunStore(path) as store:
        store.register_run(run_info("r1"))
        item, events, calls, _ = question("r1", 1)
        store.journal_call("r1", item["question_id"], call("observer", 1.0))
        assert path.with_name(path.name + ".calls.jsonl").exists()
        store.record_question("r1", item, events, calls)
        assert not path.with_name(path.name + ".calls.jsonl").exists()
        assert store.spent_usd("r1") == sum(c["cost_usd"] for c in calls)


def test_calls_of_a_killed_attempt_are_counted_when_the_run_resumes(tmp_path: Path) -> None:
    path = store_path(tmp_path, "r1")
    with RunStore(path) as store:
        store.register_run(run_info("r1"))
    # A writer that journals two paid calls and is killed before its question is saved.
    script = textwrap.dedent(f"""
        import os
        from om_eval.store import RunStore
        from om_eval.llm.ledger import CallRecord
        store = RunStore({str(path)!r})
        for t in (1.0, 2.0):
            store.journal_call("r1", "q0001", CallRecord("observer", "gpt-4o", 100, 10, False, 0.5, 0, 0.25,
                                                           cache_key=f"k{{t}}", started_at=t))
        os.kill(os.getpid(), 9)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert done.returncode == -9
    with RunStore(path) as store:
        assert store.recovered_calls == 2
        assert store.spent_usd("r1") == 0.5  # before the journal, this spend vanished with the process
        errors = store._read("SELECT DISTINCT error FROM llm_calls", [])
        # The retried question's own calls are numbered after the recovered ones.
        item, events, calls, _ = question("r1", 1)
        store.record_question("r1", item, events, calls)
        seqs = [r[0] for r in store._read("SELECT seq FROM llm_calls WHERE question_id = 'q0001' ORDER BY seq", [])]
    assert errors == [(INTERRUPTED_ATTEMPT,)] and seqs == list(range(2 + len(calls)))


def test_journal_lines_of_an_already_saved_question_are_not_counted_twice(tmp_path: Path) -> None:
    path = store_path(tmp_path, "r1")
    with RunStore(path) as store:
        store.register_run(run_info("r1"))
        item, events, calls, _ = question("r1", 1)
        store.record_question("r1", item, events, calls)
        spent = store.spent_usd("r1")
        saved_call = {**calls[0], "run_id": "r1", "question_id": item["question_id"]}
    # A kill between the question's commit and the journal rewrite leaves its lines behind, plus a torn line.
    journal = path.with_name(path.name + ".calls.jsonl")
    import json

    journal.write_text(json.dumps(saved_call) + "\n" + '{"run_id": "r1", "quest', encoding="utf-8")
    with RunStore(path) as store:
        assert store.recovered_calls == 0 and store.spent_usd("r1") == spent
    assert not journal.exists() and not os.path.exists(str(journal) + ".tmp")


def test_saved_lines_left_in_the_journal_are_skipped_after_a_kill(tmp_path: Path) -> None:
    # The writer rewrites the journal only once saved questions' lines pile up, so a kill usually finds some there.
    path = store_path(tmp_path, "r1")
    first = [call("observer", 1.0), call("actor", 2.0)]
    second = [call("observer", 3.0, cost=0.5)]
    with RunStore(path) as store:
        store.register_run(run_info("r1"))
        for record in first:
            store.journal_call("r1", "q0001", record)
        for record in second:
            store.journal_call("r1", "q0002", record)
        item, events, _, _ = question("r1", 1)
        store.record_question("r1", item, events, first)  # as the job does: the ledger's own records
        journal = path.with_name(path.name + ".calls.jsonl")
        assert len(journal.read_text(encoding="utf-8").splitlines()) == 3  # q0001's lines stay for now
        store._con.close()  # killed: nothing more is written
        store._con = None
    with RunStore(path) as store:
        assert store.recovered_calls == 1
        rows = store._read("SELECT question_id, count(*), sum(cost_usd) FROM llm_calls GROUP BY 1 ORDER BY 1", [])
    assert rows == [("q0001", 2, 0.02), ("q0002", 1, 0.5)]
    assert not journal.exists()


def test_the_journal_is_compacted_once_saved_lines_pile_up(tmp_path: Path) -> None:
    path = store_path(tmp_path, "r1")
    journal = path.with_name(path.name + ".calls.jsonl")
    with RunStore(path) as store:
        store.register_run(run_info("r1"))
        store.journal_call("r1", "q9999", call("observer", 0.5))  # in flight throughout
        for index in range(1, RunStore.JOURNAL_SLACK + 10):
            store.journal_call("r1", f"q{index:04d}", call("observer", float(index)))
            item, events, _, _ = question("r1", index, n_events=0)
            store.record_question("r1", item, events, [call("observer", float(index))])
            assert len(journal.read_text(encoding="utf-8").splitlines()) <= RunStore.JOURNAL_SLACK + 2
        assert journal.exists()
