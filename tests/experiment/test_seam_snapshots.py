"""A seam system that gives snapshots (simple_om) is ingested once per memory key: a run that differs only in the
judge or the actor restores the stored memory instead of calling the observer again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from om_eval.experiment.job import RunJob
from om_eval.memory.registry import make_system
from om_eval.store import Catalog
from tests.experiment.test_budget import spec_for

SIMPLE = ("experiment=smoke", "memory=simple_om", "memory.buffer_threshold=40")


def _run(results: Path, *overrides: str) -> str:
    job = RunJob(spec_for(results, *SIMPLE, *overrides))
    assert asyncio.run(job.run()).done == 7
    return job.run_id


def test_a_judge_variant_restores_the_memory_and_calls_no_observer(tmp_path: Path) -> None:
    first = _run(tmp_path)
    second = _run(tmp_path, "judge.mode=lenient")
    assert first != second
    with Catalog(tmp_path) as catalog:
        items = {run: {i["question_id"]: i for i in catalog.query(
            "SELECT * FROM items WHERE run_id = ? ORDER BY question_id", [run])} for run in (first, second)}
        observer_calls = {run: catalog.query("SELECT count(*) AS n FROM llm_calls WHERE run_id = ? AND stage = "
                                             "'observer'", [run])[0]["n"] for run in (first, second)}
        snapshots = catalog.query("SELECT memory_key FROM memory_snapshots")
    assert observer_calls[first] > 0 and observer_calls[second] == 0
    assert not any(i["reused_memory"] for i in items[first].values())
    assert all(i["reused_memory"] for i in items[second].values())
    for question_id, item in items[first].items():  # the same memory: the same context, the same answer
        again = items[second][question_id]
        assert (again["memory_key"], again["hypothesis"], again["context_tokens"], again["turns"]) == (
            item["memory_key"], item["hypothesis"], item["context_tokens"], item["turns"])
    assert len(snapshots) == 7
    assert {s["memory_key"] for s in snapshots} == {i["memory_key"] for i in items[first].values()}


def test_systems_without_snapshots_store_none(tmp_path: Path) -> None:
    assert make_system("simple_om", {}).keeps_snapshots
    assert not make_system("rag_mastra", {}).keeps_snapshots and not make_system("oracle", {}).keeps_snapshots
    assert asyncio.run(RunJob(spec_for(tmp_path, "experiment=smoke", "memory=full_context")).run()).done == 7
    with Catalog(tmp_path) as catalog:
        assert catalog.query("SELECT count(*) AS n FROM memory_snapshots")[0]["n"] == 0
