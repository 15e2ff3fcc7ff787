"""Case 1: after an engine change, no run reuses a memory the earlier engine built.

The drill changed the Observer's reply parsing, then ran a variant in the same results folder: it reused 7/7
memories of the old engine, while a fresh folder built new ones under the same run id. An engine change that alters
what a memory holds bumps the engine revision (``tests/om/test_engine_revision.py`` fails until it does), and the
revision is in every memory key and in every OM run id past revision 1. So here the engine change is made as the
project requires it: the parsing is changed and the revision bumped, in this process.

What must hold: the run invoked again in the same folder is a new run (its id moved) that builds its memories
again, with the new parsing; the earlier run is left as it was; a variant built after it reuses the new memories,
never the old; and a fresh folder gives the same run id, memories and answers as the reused one.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from om_eval.om import parsing, revision
from om_eval.om.parsing import ObserverOutput
from tests.reliability.harness import assert_consistent, invoke, query

#: What the changed parsing adds to every observation block it reads.
MARK = "* (read by the changed parser)"
VARIANT = "models.actor.temperature=0.5"


def change_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Observer's replies read differently (one thread's and several threads'), and the revision bumped
    wherever a module holds it."""
    for name in ("parse_observer_output", "_parse_thread_block"):
        monkeypatch.setattr(parsing, name, marking(getattr(parsing, name)))
    current = revision.ENGINE_REVISION
    holders = [module for name, module in list(sys.modules.items())
               if name.startswith("om_eval") and getattr(module, "ENGINE_REVISION", None) == current]
    assert len(holders) > 1, "the revision should be read by the memory key and the run id"
    for module in holders:
        monkeypatch.setattr(module, "ENGINE_REVISION", current + 1)


def marking(parse: Callable[..., ObserverOutput]) -> Callable[..., ObserverOutput]:
    def changed(*args: Any, **kwargs: Any) -> ObserverOutput:
        found = parse(*args, **kwargs)
        if not found.observations:
            return found  # nothing observed stays nothing, as a failed reply must
        return dataclasses.replace(found, observations=f"{found.observations}\n{MARK}")

    return changed


def runs(results: Path) -> dict[str, dict]:
    """Each run of ``results`` by id: its memory key and, per question, item and snapshot."""
    found: dict[str, dict] = {}
    for run in query(results, "SELECT run_id, memory_key, label FROM runs"):
        items = query(results, "SELECT question_id, status, hypothesis, label, memory_key, reused_memory FROM items "
                               "WHERE run_id = ?", [run["run_id"]])
        keys = {(i["memory_key"], i["question_id"]) for i in items}
        snapshots = {r["question_id"]: r["snapshot"] for r in query(
            results, "SELECT memory_key, question_id, snapshot FROM memory_snapshots")
            if (r["memory_key"], r["question_id"]) in keys}
        found[run["run_id"]] = {"memory_key": run["memory_key"], "label": run["label"],
                                "items": {i["question_id"]: i for i in items}, "snapshots": snapshots}
    return found


def observations(snapshot: str) -> str:
    data = json.loads(snapshot)
    return "\n".join(record["active_observations"] for generations in data["generations"].values()
                     for record in generations)


def test_an_engine_change_never_reuses_the_old_engines_memories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reused, fresh = tmp_path / "reused", tmp_path / "fresh"
    assert invoke(reused).code == 0
    ((old_id, before),) = runs(reused).items()
    old_keys = {item["memory_key"] for item in before["items"].values()}
    assert not any(MARK in observations(s) for s in before["snapshots"].values())

    change_the_engine(monkeypatch)
    again = invoke(reused)
    assert again.code == 0, again.output[-2000:]
    assert "start the run over" not in again.flat
    after = runs(reused)
    assert len(after) == 2 and old_id in after, "the changed engine's run should be a new run beside the old one"
    (new_id,) = set(after) - {old_id}
    new = after[new_id]
    assert {item["memory_key"] for item in new["items"].values()}.isdisjoint(old_keys)
    assert not any(item["reused_memory"] for item in new["items"].values()), "an old engine's memory was reused"
    assert len(new["snapshots"]) == 7, "the changed engine should build every memory again"
    assert any(MARK in observations(s) for s in new["snapshots"].values()), "the memories are not the new engine's"
    # The earlier run is left as the earlier engine made it.
    assert after[old_id] == before

    # The drill's variant: it shares a memory key with the changed engine's run, so it reuses those memories.
    assert invoke(reused, VARIANT).code == 0
    now = runs(reused)
    (variant_id,) = set(now) - set(after)
    variant = now[variant_id]
    assert {i["memory_key"] for i in variant["items"].values()} == {i["memory_key"] for i in new["items"].values()}
    assert all(item["reused_memory"] for item in variant["items"].values())

    # A fresh folder agrees with the reused one: the same run id, memories and answers.
    assert invoke(fresh).code == 0
    ((fresh_id, fresh_run),) = runs(fresh).items()
    assert fresh_id == new_id
    assert {q: memory(s) for q, s in fresh_run["snapshots"].items()} == {q: memory(s) for q, s in
                                                                          new["snapshots"].items()}
    assert {q: answer(i) for q, i in fresh_run["items"].items()} == {q: answer(i) for q, i in new["items"].items()}
    assert_consistent(fresh)


def memory(snapshot: str) -> dict:
    """A snapshot without the wall-clock time its records were made at."""
    data = json.loads(snapshot)
    for generations in data["generations"].values():
        for record in generations:
            record.pop("created_at")
    return data


def answer(item: dict) -> tuple:
    return item["status"], item["hypothesis"], item["label"]
