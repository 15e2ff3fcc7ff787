"""Child-process bodies and row builders for the store tests (importable, so ``spawn`` children can run them)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import duckdb

from om_eval.store import RunInfo, RunStore, StoreBusyError, store_path


def run_info(run_id: str, **overrides: Any) -> RunInfo:
    values: dict[str, Any] = {
        "run_id": run_id,
        "config_json": {"om": {"observation": {"message_tokens": 30000}}, "prompt": run_id,
                        "run": {"concurrency": 4}},
        "label": f"variant {run_id}",
        "experiment": "test",
        "memory_key": f"mem-{run_id}",
        "dataset_sha256": "d" * 64,
        "git_sha": "a" * 40,
        "git_dirty": False,
        "packages": {"duckdb": duckdb.__version__},
    }
    values.update(overrides)
    return RunInfo(**values)


def question(run_id: str, index: int, *, n_events: int = 3, n_calls: int = 4, status: str = "done",
             payload: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], tuple | None]:
    """One question's item, events, calls and snapshot, deterministic in (run_id, index)."""
    qid = f"q{index:04d}"
    memory_key = f"mem-{run_id}"
    item = {"question_id": qid, "question_type": "multi-session", "is_abstention": False, "status": status,
            "hypothesis": f"answer {index}", "label": index % 2 == 0, "judge_status": "ok",
            "memory_key": memory_key, "reused_memory": False, "observer_calls": n_events,
            "observations": n_events, "observation_tokens": 100 + index, "cost_usd": 0.001 * index}
    events = [{"kind": "observation", "at": "2026-01-01T00:00:00+00:00", "record_id": "r", "generation": e,
               "thread_ids": ("t1", "t2"), "message_tokens": 10 * e, "levels": (0,), "detail": "x" * payload}
              for e in range(n_events)]
    calls = [{"stage": "observer" if c else "actor", "model": "scripted/om-eval", "prompt_tokens": 50 + c,
              "completion_tokens": 5, "cached": False, "latency_s": 0.01, "retries": 0, "cost_usd": 0.0001,
              "cache_key": f"{run_id}-{qid}-{c}", "started_at": 1.0}
             for c in range(n_calls)]
    snapshot = (memory_key, qid, {"observations": f"obs {index}", "pad": "y" * payload}, {"history_tokens": index})
    return item, events, calls, snapshot


def write_run(results_dir: str, run_id: str, n_questions: int, n_events: int, n_calls: int,
              progress: Any = None, payload: int = 0) -> None:
    """Write a whole run; after each committed question put its index on ``progress``."""
    with RunStore(store_path(results_dir, run_id)) as store:
        store.register_run(run_info(run_id))
        done = store.done_question_ids(run_id)
        for index in range(n_questions):
            item, events, calls, snapshot = question(run_id, index, n_events=n_events, n_calls=n_calls,
                                                     payload=payload)
            if item["question_id"] in done:
                continue
            store.record_question(run_id, item, events, calls, snapshot)
            if progress is not None:
                progress.put(index)


def hold_writer(results_dir: str, run_id: str, ready: Any, release: Any) -> None:
    """Open a run as its writer, commit three questions, signal ``ready`` and keep the file until ``release``."""
    with RunStore(store_path(results_dir, run_id)) as store:
        store.register_run(run_info(run_id))
        for index in range(3):
            store.record_question(run_id, *question(run_id, index))
        store.put("shared-memory", "q0000", {"snapshot": {"from": run_id}, "stats": {"observer_calls": 7}})
        ready.set()
        release.wait(30)


def hold_reader(path: str, ready: Any, seconds: float) -> None:
    """Keep a read-only connection to ``path`` for ``seconds`` after signalling ``ready``."""
    con = duckdb.connect(path, read_only=True)
    ready.set()
    time.sleep(seconds)
    con.close()


def try_open(path: str, results: Any) -> None:
    """Try to become the writer of ``path``; report what happened on ``results``."""
    try:
        with RunStore(Path(path), open_timeout=0.2):
            results.put(("opened", ""))
    except StoreBusyError as error:
        results.put(("busy", str(error)))
