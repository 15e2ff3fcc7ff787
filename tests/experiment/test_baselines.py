"""Baseline readers as experiments: ``om-eval run -m experiment=smoke baseline=none,full_context,oracle``.

Baseline runs build no memory (no observer or reflector call, no snapshot, no OM event), are graded by the same
judge, and appear in the report table and the plots beside the OM run; ``baseline=none`` keeps today's run ids.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from om_eval.experiment.app import run_from_config
from om_eval.experiment.spec import RunSpec, spec_from_config
from om_eval.report import summary_table, to_csv, to_markdown
from om_eval.report.plots import categories_figure
from om_eval.store import Catalog
from tests.runs import compose_run

READERS = ("none", "full_context", "oracle")


def spec(results: Path, *overrides: str) -> RunSpec:
    return spec_from_config(OmegaConf.to_container(compose_run(results, *overrides), resolve=True))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("baselines")
    command = [sys.executable, "-m", "om_eval.cli", "run", "-m", "experiment=smoke",
               f"baseline={','.join(READERS)}", f"run.results_dir={results}", f"run.cache_dir={results / 'cache'}",
               "run.progress=false"]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ), timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return results


def runs_by_reader(results: Path) -> dict[str, dict]:
    with Catalog(results) as catalog:
        runs = catalog.runs()
    return {(r["memory_key"].split(":", 1)[1] if r["memory_key"].startswith("baseline:") else "none"): r
            for r in runs}


def test_the_sweep_makes_three_runs_labelled_by_their_reader(sweep: Path) -> None:
    runs = runs_by_reader(sweep)
    assert set(runs) == set(READERS)
    assert {reader: run["label"] for reader, run in runs.items()} == {r: f"baseline={r}" for r in READERS}
    assert runs["oracle"]["observer_model"] is None and runs["oracle"]["reflector_model"] is None
    assert runs["none"]["observer_model"] == "scripted/om-eval"
    assert json.loads(runs["oracle"]["prompt_hashes"])["reader"] == "oracle"


def test_baselines_make_no_observer_or_reflector_call_and_are_judged(sweep: Path) -> None:
    runs = runs_by_reader(sweep)
    with Catalog(sweep) as catalog:
        for reader in ("full_context", "oracle"):
            rid = runs[reader]["run_id"]
            stages = catalog.query("SELECT stage, count(*) AS n FROM llm_calls WHERE run_id = ? GROUP BY stage "
                                   "ORDER BY stage", [rid])
            assert {s["stage"]: s["n"] for s in stages} == {"actor": 7, "judge": 7}
            items = catalog.items([rid])
            assert len(items) == 7 and all(i["status"] == "done" and i["judge_status"] == "ok" for i in items)
            assert all(i["observer_calls"] is None and i["reflector_calls"] is None and i["observations"] is None
                       and i["observation_tokens"] is None
                       and i["memory_key"] == f"baseline:{reader}" for i in items)
            assert catalog.query("SELECT count(*) AS n FROM om_events WHERE memory_key = ?",
                                 [f"baseline:{reader}"])[0]["n"] == 0
            assert catalog.query("SELECT count(*) AS n FROM memory_snapshots WHERE memory_key LIKE 'baseline%'"
                                 )[0]["n"] == 0
        om_stages = catalog.query("SELECT DISTINCT stage FROM llm_calls WHERE run_id = ?", [runs["none"]["run_id"]])
        assert "observer" in {s["stage"] for s in om_stages}


def test_the_reader_saw_the_sessions_and_the_oracle_only_the_evidence(sweep: Path) -> None:
    from om_eval.bench.pipeline import unpack_messages

    runs = runs_by_reader(sweep)
    with Catalog(sweep) as catalog:
        shown = {reader: {i["question_id"]: unpack_messages(i["actor_prompt"])[0]["content"]
                          for i in catalog.items([runs[reader]["run_id"]])} for reader in ("full_context", "oracle")}
        evidence = json.loads(catalog.items([runs["oracle"]["run_id"]])[0]["evidence"])
    # 5ed4ff79 has four sessions, two of them evidence (mini fixture).
    assert shown["full_context"]["5ed4ff79"].count("### Conversation") == 4
    assert shown["oracle"]["5ed4ff79"].count("### Conversation") == 2
    assert all(t["status"] == "in_reader_prompt" for t in evidence)


def test_the_report_and_plots_show_baselines_beside_the_om_run(sweep: Path) -> None:
    with Catalog(sweep) as catalog:
        runs = catalog.runs()
        items = catalog.items()
    table = summary_table(runs, items, n_boot=50)
    assert {row.reader for row in table.rows} == {None, "full_context", "oracle"}
    markdown = to_markdown(table)
    memory_row = next(line for line in markdown.splitlines() if line.startswith("| memory"))
    assert "OM" in memory_row and "baseline: full context" in memory_row and "baseline: oracle" in memory_row
    assert "LongMemEval's own reader" in markdown
    records = list(csv.DictReader(io.StringIO(to_csv(table))))
    assert sorted(r["memory"] for r in records) == ["baseline:full_context", "baseline:oracle", "om"]
    figure = categories_figure(table, n_boot=50)
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert any("[oracle reader]" in t for t in legend) and any("[full-context reader]" in t for t in legend)
    assert any(t.startswith("baseline=none") and "reader]" not in t for t in legend)
    hatches = {bars.get_label(): bars.patches[0].get_hatch() or "" for bars in figure.axes[0].containers
               if not bars.get_label().startswith("_")}  # zero stubs are drawn apart, unlabelled
    assert sorted("||" in hatch for hatch in hatches.values()) == [False, True, True]


def test_the_html_view_marks_baselines(sweep: Path, tmp_path: Path) -> None:
    from om_eval.report.view import write_view

    page = write_view(sweep, tmp_path / "view.html", n_boot=50).read_text(encoding="utf-8")
    assert "baseline: oracle</span>" in page and "baseline: full context</span>" in page
    assert "shown to the reader" in page


def test_a_table_without_baselines_is_unchanged(sweep: Path) -> None:
    with Catalog(sweep) as catalog:
        runs = [r for r in catalog.runs() if not r["memory_key"].startswith("baseline:")]
        items = catalog.items([r["run_id"] for r in runs])
    table = summary_table(runs, items, n_boot=50)
    assert "| memory" not in to_markdown(table) and "memory" not in to_csv(table).splitlines()[0].split(",")


def test_baseline_none_keeps_todays_run_id(tmp_path: Path) -> None:
    plain = spec(tmp_path)
    none = spec(tmp_path, "baseline=none")
    assert plain.config_hash == none.config_hash
    assert "baseline" not in none.resolved  # stored configs (and so resumed old run files) are as before
    # A config stored before the group existed (no "baseline" key) gives the same id.
    data = OmegaConf.to_container(compose_run(tmp_path), resolve=True)
    del data["baseline"]
    assert spec_from_config(data).config_hash == plain.config_hash
    assert spec(tmp_path, "baseline=oracle").config_hash != plain.config_hash


def test_a_baseline_ignores_what_only_shapes_a_memory(tmp_path: Path) -> None:
    oracle = spec(tmp_path, "baseline=oracle")
    assert spec(tmp_path, "baseline=oracle", "prompt=legacy", "om.observation.message_tokens=123").config_hash == (
        oracle.config_hash)
    for changed in ("baseline=full_context", "baseline.keep=end", "baseline.context_tokens=32000",
                    "baseline.format=nl", "judge.parse=mastra", "dataset=synthetic_s"):
        assert spec(tmp_path, "baseline=oracle", changed).config_hash != oracle.config_hash, changed
    assert "om" not in oracle.resolved and set(oracle.resolved["models"]) == {"actor", "judge"}
    assert oracle.hosted_models == []


def test_a_baseline_run_resumes_from_another_om_variant_without_a_call(sweep: Path) -> None:
    oracle = runs_by_reader(sweep)["oracle"]
    summary = run_from_config(compose_run(sweep, "baseline=oracle", "prompt=legacy"))
    assert summary["run_id"] == oracle["run_id"]
    with Catalog(sweep) as catalog:
        assert catalog.query("SELECT count(*) AS n FROM llm_calls WHERE run_id = ?",
                             [oracle["run_id"]])[0]["n"] == 14
        assert next(r for r in catalog.runs() if r["run_id"] == oracle["run_id"])["label"] == "baseline=oracle"
