"""What every reliability case shares: launching ``om-eval run``, reading a run back, and the invariants.

The invariants are the suite's promise, checked after every fault: nothing lost (every question has exactly one
item, every call and OM event is numbered without gaps), no silent wrong score (a question is ``done`` only with
a real verdict, and then it equals the clean reference run's; otherwise it is listed as ``error``), and every
call the model actually answered is counted in ``llm_calls``.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om_eval.store import Catalog
from om_eval.testing.scripted.model import ERROR_FAULTS, ScriptedModel

REPO = Path(__file__).resolve().parents[2]
#: Small thresholds that make the mini set reflect (the smoke experiment never reaches its reflection threshold).
REFLECTING = ("om.observation.message_tokens=200", "om.reflection.observation_tokens=300")
#: Ceiling for any one child process, so a hung run fails the case instead of the CI job.
CHILD_TIMEOUT_S = 90.0

Outcome = dict[str, tuple[str, str | None, bool | None]]
"""question id -> (status, hypothesis, label) of one run."""


@dataclass(frozen=True)
class Invocation:
    """One ``om-eval run``: its exit code and everything it printed."""

    code: int
    output: str

    @property
    def flat(self) -> str:
        """The output with rich's line wrapping undone (for substring checks)."""
        return " ".join(self.output.split())


def _paths(results: Path) -> list[str]:
    return [f"run.results_dir={results}", f"run.cache_dir={results / 'cache'}", "run.progress=false"]


def invoke(results: Path, *overrides: str, concurrency: int = 1, multirun: bool = False) -> Invocation:
    """``om-eval run [-m] experiment=smoke <overrides>`` in this process, through the real entry point.

    One question at a time by default, so a fault list meets the same calls on every run. Hydra configures
    logging for each job; the root logger is put back afterwards so later tests see their usual logging.
    """
    from om_eval.cli import main

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            code = main(["run", *(["-m"] if multirun else []), "experiment=smoke", *overrides, *_paths(results),
                         f"run.concurrency={concurrency}"])
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        for handler in handlers:
            if handler not in root.handlers:
                root.addHandler(handler)
        root.setLevel(level)
    return Invocation(code, buffer.getvalue())


# -- child processes ---------------------------------------------------------------------------------------------


def child_env(latency: float = 0.0) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "PYTHONPATH": str(REPO)}
    env.pop("OM_EVAL_SCRIPTED_LATENCY", None)
    if latency:
        env["OM_EVAL_SCRIPTED_LATENCY"] = str(latency)
    return env


def spawn(results: Path, *overrides: str, latency: float = 0.0, log: Path | None = None) -> subprocess.Popen:
    """``om-eval run <overrides>`` as a child process (output to ``log``, never to a pipe that could fill up)."""
    command = [sys.executable, "-m", "om_eval.cli", "run", *overrides, *_paths(results)]
    sink = open(log, "w") if log is not None else subprocess.DEVNULL  # noqa: SIM115  # closed by the child's end
    try:
        return subprocess.Popen(command, cwd=REPO, env=child_env(latency), stdout=sink, stderr=subprocess.STDOUT)
    finally:
        if log is not None:
            sink.close()


def finish(child: subprocess.Popen, timeout: float = CHILD_TIMEOUT_S) -> int:
    """Wait for ``child``; kill it and fail if it outlives ``timeout``."""
    try:
        return child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise AssertionError(f"om-eval run did not finish within {timeout:.0f}s") from None


def kill(child: subprocess.Popen) -> None:
    """SIGKILL: no handler, no cleanup, no flush."""
    if child.poll() is None:
        os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)


def wait_for(condition: Any, *, timeout: float = 60.0, interval: float = 0.02) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())


# -- reading a run back ------------------------------------------------------------------------------------------


def read(results: Path) -> Catalog:
    """A catalog over every run file of ``results``; all of them must open. Close it before the next run."""
    catalog = Catalog(results, warn=False)
    if catalog.skipped_files:
        catalog.close()
        raise AssertionError(f"unreadable run files: {catalog.skip_reasons}")
    return catalog


def query(results: Path, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    with read(results) as db:
        return db.query(sql, params)


def outcomes(db: Catalog) -> dict[str, Outcome]:
    """Each run's outcome, keyed by its prompt variant (the only thing the swept runs differ in)."""
    runs = {r["run_id"]: json.loads(r["config_json"])["prompt"]["variant"] for r in db.query("SELECT * FROM runs")}
    found: dict[str, Outcome] = {variant: {} for variant in runs.values()}
    for row in db.query("SELECT run_id, question_id, status, hypothesis, label FROM items"):
        found[runs[row["run_id"]]][row["question_id"]] = (row["status"], row["hypothesis"], row["label"])
    return found


def outcome(results: Path) -> Outcome:
    """The outcome of the one run in ``results``."""
    with read(results) as db:
        found = outcomes(db)
    assert len(found) == 1, f"expected one run in {results}, found {sorted(found)}"
    return next(iter(found.values()))


# -- invariants --------------------------------------------------------------------------------------------------


def assert_consistent(results: Path, questions: int = 7) -> None:
    """Nothing lost, nothing twice, no half-written question, no verdictless ``done``.

    Every run holds ``questions`` items, each exactly once; a ``done`` item has a verdict (judge ok, a label, a
    hypothesis), its memory snapshot and OM events, and its judgment row agrees with it; an ``error`` item says
    why. Calls and events are numbered 0..n-1 per question, with no gap or repeat.
    """
    with read(results) as db:
        _check_consistent(db, questions)


def _check_consistent(db: Catalog, questions: int) -> None:
    items = db.query("SELECT * FROM items")
    per_run = Counter(i["run_id"] for i in items)
    assert set(per_run.values()) == {questions}, f"items per run: {dict(per_run)}"
    assert len({(i["run_id"], i["question_id"]) for i in items}) == len(items), "an item is stored twice"
    for item in items:
        where = f"{item['run_id']}/{item['question_id']}"
        assert item["status"] in ("done", "error"), f"{where}: status {item['status']!r}"
        if item["status"] == "error":
            assert item["error"], f"{where}: an error item must say why"
            continue
        assert item["judge_status"] == "ok" and item["label"] is not None, f"{where}: done without a verdict"
        assert item["hypothesis"], f"{where}: done without an answer"
    for table, key in (("llm_calls", "run_id, question_id"), ("om_events", "memory_key, question_id")):
        for row in db.query(f"SELECT {key}, list(seq ORDER BY seq) AS seqs FROM {table} GROUP BY ALL"):
            assert row["seqs"] == list(range(len(row["seqs"]))), f"{table} numbering of {row}"
    done_without_memory = db.query("""
        SELECT i.run_id, i.question_id FROM items i
        WHERE i.status = 'done' AND (
            NOT EXISTS (SELECT 1 FROM om_events e WHERE e.memory_key = i.memory_key AND e.question_id = i.question_id)
            OR NOT EXISTS (SELECT 1 FROM memory_snapshots s WHERE s.memory_key = i.memory_key
                           AND s.question_id = i.question_id))""")
    assert not done_without_memory, f"done items missing their OM events or snapshot: {done_without_memory}"
    disagree = db.query("""
        SELECT i.run_id, i.question_id FROM items i
        WHERE i.status = 'done' AND NOT EXISTS (
            SELECT 1 FROM judgments j WHERE j.run_id = i.run_id AND j.question_id = i.question_id
            AND j.status = 'ok' AND j.label = i.label
            AND j.hypothesis_hash = left(sha256(i.hypothesis), 16))""")
    assert not disagree, f"done items whose stored verdict does not match: {disagree}"


def assert_matches(found: Outcome, reference: Outcome) -> None:
    """Every question done, with the reference run's answer and label."""
    wrong = {qid: (found.get(qid), want) for qid, want in reference.items() if found.get(qid) != want}
    assert not wrong, f"differs from the clean reference (found, reference): {wrong}"
    assert set(found) == set(reference)


def assert_calls_accounted(results: Path, name: str, models: Iterable[ScriptedModel]) -> None:
    """Every time the model behind ``scripted/<name>`` was asked, a row of ``llm_calls`` counts it.

    A row stands for one call plus its retries; a cache hit asked nothing.
    """
    rows = query(results, "SELECT coalesce(sum(1 + retries), 0) AS asked FROM llm_calls WHERE model = ? "
                          "AND NOT cached", [f"scripted/{name}"])
    asked = sum(model.total_calls for model in models)
    counted = rows[0]["asked"]
    assert counted == asked, f"llm_calls counts {counted} calls to scripted/{name}; it was asked {asked}"


def cache_entries(results: Path) -> dict[str, Path]:
    """Cache entry files by key."""
    return {path.stem: path for path in (results / "cache" / "entries").glob("*/*.json")}


def cached_text(path: Path) -> str | None:
    """The reply text an entry holds, or None when it is not a readable entry."""
    try:
        body = path.read_bytes().partition(b"\n")[2]
        return json.loads(body)["response"]["text"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def assert_no_bad_reply_cached(results: Path, models: Sequence[ScriptedModel]) -> None:
    """No reply a fault produced (empty, prose, loop, untagged) is stored for a later run to be served."""
    bad = {call.reply for model in models for call in model.calls if call.fault and call.fault not in ERROR_FAULTS}
    served = {key: cached_text(path) for key, path in cache_entries(results).items()}
    poisoned = {key: text[:80] for key, text in served.items() if text in bad}
    assert not poisoned, f"bad replies stored in the cache: {poisoned}"


def assert_errors_listed(results: Path, invocation: Invocation, failed: Iterable[str]) -> None:
    """Failed questions are ``error`` items, left out of the exported answers, and counted by the summary."""
    failed = set(failed)
    assert invocation.code == 1, f"exit code {invocation.code} after failed questions:\n{invocation.output[-2000:]}"
    assert f"{len(failed)} errors" in invocation.flat and "failed questions" in invocation.flat
    with read(results) as db:
        (run,) = db.query("SELECT run_id FROM runs")
        done = {r["question_id"] for r in db.query("SELECT question_id FROM items WHERE status = 'done'")}
        errors = {r["question_id"] for r in db.query("SELECT question_id FROM items WHERE status = 'error'")}
    assert errors == failed
    path = results / "runs" / run["run_id"] / "hypotheses.jsonl"
    exported = {json.loads(line)["question_id"] for line in path.read_text().splitlines() if line.strip()}
    assert exported == done, "the exported answers must be exactly the done questions"
