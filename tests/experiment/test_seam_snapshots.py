"""A seam system that gives snapshots (simple_om) is ingested once per memory key: a run that differs only in the
judge or the actor restores the stored memory instead of calling the observer again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from om_eval.experiment.job import RunJob
from om_eval.memory.registry import BUILT_IN, make_system
from om_eval.om.config import ConfigError
from om_eval.store import Catalog
from om_eval.systems.simple import SimpleOMSystem
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


class _SetSnapshot(SimpleOMSystem):
    """Gives a snapshot that is not JSON."""

    def snapshot(self, memory):
        return {"observations": {1, 2}}


class _OnlySnapshot:
    """A plain plugin that keeps snapshots it cannot restore."""

    name = "only_snapshot"

    def __init__(self, options):
        self.options = options

    def identity(self):
        return {}

    def budget(self):
        return {}

    async def ingest(self, history, services):
        return None

    async def context(self, memory, question, services):
        return None

    def snapshot(self, memory):
        return {}


def _observer_calls(results: Path, run: str) -> int:
    with Catalog(results) as catalog:
        return catalog.query("SELECT count(*) AS n FROM llm_calls WHERE run_id = ? AND stage = 'observer'",
                             [run])[0]["n"]


def test_a_snapshot_that_is_not_json_fails_its_question_not_the_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(BUILT_IN, "simple_om", "tests.experiment.test_seam_snapshots:_SetSnapshot")
    job = RunJob(spec_for(tmp_path, *SIMPLE))
    progress = asyncio.run(job.run())
    assert progress.errors == 7 and progress.done == 0
    assert all("not JSON serializable" in message for message in progress.errors_seen)


def test_snapshot_without_restore_is_refused_by_name(monkeypatch) -> None:
    monkeypatch.setitem(BUILT_IN, "only_snapshot", "tests.experiment.test_seam_snapshots:_OnlySnapshot")
    with pytest.raises(ConfigError, match=r"memory=only_snapshot defines snapshot\(memory\) but no restore"):
        make_system("only_snapshot", {})


def test_a_memory_kept_without_turns_is_built_again_for_a_run_that_records_them(tmp_path: Path) -> None:
    _run(tmp_path, "run.turn_costs=false")
    second = _run(tmp_path, "judge.mode=lenient")
    assert _observer_calls(tmp_path, second) > 0
    with Catalog(tmp_path) as catalog:
        items = catalog.query("SELECT turns, reused_memory FROM items WHERE run_id = ?", [second])
    assert all(i["turns"] and not i["reused_memory"] for i in items)


def test_a_memory_that_cannot_be_restored_is_built_again_with_a_warning(tmp_path: Path, monkeypatch) -> None:
    _run(tmp_path)

    async def broken(self, data, services):
        raise ValueError("an older snapshot format")

    monkeypatch.setattr(SimpleOMSystem, "restore", broken)
    with pytest.warns(RuntimeWarning, match="could not be restored .*an older snapshot format"):
        second = _run(tmp_path, "judge.mode=lenient")
    assert _observer_calls(tmp_path, second) > 0
