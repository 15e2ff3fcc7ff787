"""Run labels: derived from the command line that first stored the run, kept after that, replaced only when given.

The first job of ``om-eval run -m experiment=smoke prompt=current,legacy,condensed`` has the same config hash
as a plain ``om-eval run experiment=smoke``; a run keeps the label it was first stored with, so ``om-eval show
smoke ...`` keeps working after the sweep (and, where the sweep came first, ``smoke`` names the run through its
experiment only when it names one run).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from omegaconf import open_dict

from om_eval.configs import CONFIG_DIR
from om_eval.experiment.app import run_from_config
from om_eval.experiment.schema import register_configs
from om_eval.store import Catalog, RunStore, store_path
from tests.store.workers import run_info


def stored_run(results: Path) -> dict:
    with Catalog(results) as catalog:
        (run,) = catalog.runs()
    return run


def register(path: Path, label: str, *, derived: bool) -> str:
    """Registers run r1 again with ``label`` (derived from a command line or given); returns the label kept."""
    with RunStore(path) as store:
        store.register_run(run_info("r1", label=label), keep_label=derived)
    return stored_run(path.parents[1])["label"]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return store_path(tmp_path, "r1")


def test_a_derived_label_never_replaces_the_stored_one(path: Path) -> None:
    assert register(path, "test", derived=True) == "test"  # the experiment's name
    assert register(path, "prompt=current", derived=True) == "test"  # a sweep job with the same config
    assert register(path, "prompt=current om.observation.message_tokens=30000", derived=True) == "test"
    history = json.loads(stored_run(path.parents[1])["registrations"])
    assert [(h["label"], h["label_given"]) for h in history] == [("test", False)] * 3


def test_a_given_label_always_wins_and_is_never_replaced_by_a_derived_one(path: Path) -> None:
    assert register(path, "prompt=current", derived=True) == "prompt=current"
    assert register(path, "baseline", derived=False) == "baseline"
    assert register(path, "test", derived=True) == "baseline"
    assert register(path, "prompt=current om.replay.scope=resource", derived=True) == "baseline"  # still, later
    assert register(path, "prompt=current", derived=False) == "prompt=current"  # given, even if it looks derived
    assert register(path, "a=1 b=2", derived=True) == "prompt=current"
    history = json.loads(stored_run(path.parents[1])["registrations"])
    assert [(h["label"], h["label_given"]) for h in history] == [
        ("prompt=current", False), ("baseline", True), ("baseline", True), ("baseline", True),
        ("prompt=current", True), ("prompt=current", True)]


@pytest.mark.parametrize(("old", "given"), [
    ("test", False),           # the experiment's name: derived
    ("prompt=legacy", False),  # overrides: derived
    ("my baseline", True),     # anything else was given
])
def test_files_registered_before_labels_were_recorded(path: Path, old: str, given: bool) -> None:
    with RunStore(path) as store:
        store.register_run(run_info("r1", label=old))
    con = duckdb.connect(str(path))  # what an older om-eval wrote: provenance only
    con.execute("UPDATE runs SET registrations = ?", [json.dumps([{"at": "2025-01-01T00:00:00", "git_sha": None,
                                                                  "git_dirty": None, "packages": None}])])
    con.close()
    assert register(path, "prompt=legacy om.x=1", derived=True) == old
    history = json.loads(stored_run(path.parents[1])["registrations"])
    assert history[-1]["label_given"] is given


# -- through the Hydra app -------------------------------------------------------------------------------------


@pytest.fixture
def hydra_run(tmp_path: Path) -> Iterator:
    """Runs a command line as ``om-eval run`` does: Hydra's overrides visible to the job (HydraConfig set)."""
    register_configs()

    def run(*overrides: str) -> dict:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            cfg = compose("config", overrides=[*overrides, f"run.results_dir={tmp_path}",
                                               f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false"],
                          return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        with open_dict(cfg):
            del cfg["hydra"]
        return run_from_config(cfg)

    yield run
    HydraConfig.instance().cfg = None


def labels(results: Path) -> dict[str, str]:
    with Catalog(results) as catalog:
        return {r["run_id"]: r["label"] for r in catalog.runs()}


def test_a_run_keeps_the_label_it_was_first_stored_with(hydra_run, tmp_path: Path) -> None:
    plain = hydra_run("experiment=smoke")
    assert labels(tmp_path) == {plain["run_id"]: "smoke"}
    swept = hydra_run("experiment=smoke", "prompt=current")  # one job of -m prompt=current,legacy,condensed
    assert swept["run_id"] == plain["run_id"]
    assert labels(tmp_path) == {plain["run_id"]: "smoke"}
    both = hydra_run("experiment=smoke", "prompt=current", "om.observation.message_tokens=100", "run.concurrency=2")
    assert both["run_id"] != plain["run_id"]  # another config; run.* never shows in a label
    assert labels(tmp_path)[both["run_id"]] == "prompt=current om.observation.message_tokens=100"
    hydra_run("experiment=smoke", "om.observation.message_tokens=100")  # the same run, a plainer command line
    assert labels(tmp_path)[both["run_id"]] == "prompt=current om.observation.message_tokens=100"


def test_a_given_label_survives_later_derived_ones(hydra_run, tmp_path: Path) -> None:
    run_id = hydra_run("experiment=smoke", "run.label=baseline")["run_id"]
    hydra_run("experiment=smoke", "prompt=current")
    hydra_run("experiment=smoke")
    assert labels(tmp_path) == {run_id: "baseline"}
    hydra_run("experiment=smoke", "run.label=renamed")
    assert labels(tmp_path) == {run_id: "renamed"}
