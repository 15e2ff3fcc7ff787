"""om-eval run end to end on the mini set with the scripted model: sweeps, resume, kill, reports, plots."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from om_eval.cli import main
from om_eval.configs import CONFIG_DIR
from om_eval.experiment.app import run_from_config
from om_eval.experiment.schema import register_configs
from om_eval.store import Catalog

VARIANTS = ("current", "legacy", "condensed")


def run_cli(results: Path, *overrides: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "om_eval.cli", "run", *overrides, f"run.results_dir={results}",
               f"run.cache_dir={results / 'cache'}", "run.progress=false"]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300)


def composed(results: Path, *overrides: str):
    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose("config", overrides=[*overrides, f"run.results_dir={results}",
                                            f"run.cache_dir={results / 'cache'}", "run.progress=false"])


def answers(results: Path) -> dict[tuple[str, str], tuple]:
    with Catalog(results) as catalog:
        rows = catalog.items()
    return {(r["run_id"], r["question_id"]): (r["status"], r["hypothesis"], r["label"]) for r in rows}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("sweep")
    done = run_cli(results, "-m", "experiment=smoke", f"prompt={','.join(VARIANTS)}")
    assert done.returncode == 0, done.stderr[-3000:]
    return results


def test_a_three_variant_sweep_lands_three_runs(sweep: Path) -> None:
    with Catalog(sweep) as catalog:
        runs = catalog.runs()
        items = catalog.items()
        events = catalog.query("SELECT count(*) AS n FROM om_events")[0]["n"]
        calls = catalog.query("SELECT stage, count(*) AS n FROM llm_calls GROUP BY stage ORDER BY stage")
    assert sorted(json.loads(r["config_json"])["prompt"]["variant"] for r in runs) == sorted(VARIANTS)
    assert len(items) == 3 * 7 and all(i["status"] == "done" for i in items)
    assert events > 0 and {c["stage"] for c in calls} == {"observer", "actor", "judge"}
    for run in runs:
        assert run["dataset_sha256"] and run["judge_mode"] == "house" and not run["official"]
        assert json.loads(run["packages"])["duckdb"] and run["token_estimator"] == "tiktoken/o200k_base"
    exported = sweep / "runs" / runs[0]["run_id"] / "hypotheses.jsonl"
    assert len(exported.read_text().splitlines()) == 7


def test_a_second_invocation_makes_no_model_call(sweep: Path) -> None:
    before = answers(sweep)
    for variant in VARIANTS:
        summary = run_from_config(composed(sweep, "experiment=smoke", f"prompt={variant}"))
        assert summary["run_id"]
    with Catalog(sweep) as catalog:
        assert catalog.query("SELECT count(*) AS n FROM llm_calls")[0]["n"] == catalog.query(
            "SELECT count(*) AS n FROM llm_calls WHERE NOT cached OR cached")[0]["n"]
    assert answers(sweep) == before


def test_report_and_plots_from_the_sweep(sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--results", str(sweep), "--markdown", str(sweep / "r.md"), "--csv",
                 str(sweep / "r.csv")]) == 0
    markdown = (sweep / "r.md").read_text()
    assert all(f"prompt={v}" in markdown for v in VARIANTS) and "house" in markdown
    assert main(["plot", "--results", str(sweep)]) == 0
    pngs = sorted((sweep / "plots").glob("*.png"))
    assert [p.name for p in pngs] == ["accuracy_by_category.png", "accuracy_vs_actor_context.png",
                                      "accuracy_vs_observation_tokens.png", "cost_vs_accuracy.png",
                                      "turn_cached_share.png", "turn_context_tokens.png", "turn_cumulative_cost.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    first = [p.read_bytes() for p in pngs]
    assert main(["plot", "--results", str(sweep)]) == 0
    assert [p.read_bytes() for p in pngs] == first  # deterministic
    ids = sorted({k[0] for k in answers(sweep)})
    assert main(["report", "--results", str(sweep), "--compare", ids[0][:8], ids[1][:8]]) == 0
    assert "McNemar" in capsys.readouterr().out


def test_second_run_invocation_records_no_new_calls(tmp_path: Path) -> None:
    job = run_from_config(composed(tmp_path, "experiment=smoke"))
    with Catalog(tmp_path) as catalog:
        calls = catalog.query("SELECT count(*) AS n FROM llm_calls")[0]["n"]
    from omegaconf import OmegaConf

    from om_eval.experiment.job import RunJob
    from om_eval.experiment.spec import spec_from_config

    spec = spec_from_config(OmegaConf.to_container(composed(tmp_path, "experiment=smoke"), resolve=True))
    import asyncio

    again = RunJob(spec)
    progress = asyncio.run(again.run())
    assert progress.skipped_done == 7 and progress.done == 0 and progress.totals.calls == 0
    with Catalog(tmp_path) as catalog:
        assert catalog.query("SELECT count(*) AS n FROM llm_calls")[0]["n"] == calls
    assert job["run_id"] == again.run_id


def test_parallel_variants_sharing_a_memory_pay_each_observer_call_once(tmp_path: Path) -> None:
    # Two answer-only variants (the judge's parse rule differs) build the same memory at the same time; a slow
    # scripted model makes the builds overlap. Without the build lock both would pay every observer call.
    done = run_cli(tmp_path, "-m", "experiment=smoke", "judge.parse=official,mastra", "hydra/launcher=joblib",
                   "hydra.launcher.n_jobs=2", env={"OM_EVAL_SCRIPTED_LATENCY": "0.05"})
    assert done.returncode == 0, done.stderr[-3000:]
    with Catalog(tmp_path) as catalog:
        runs = catalog.runs()
        paid = catalog.query("SELECT count(*) AS n FROM llm_calls WHERE stage = 'observer' AND NOT cached")[0]["n"]
        per_run = catalog.query("SELECT run_id, count(*) AS n FROM llm_calls WHERE stage = 'observer' "
                                "GROUP BY run_id")
    assert len(runs) == 2 and len({r["memory_key"] for r in runs}) == 1
    assert len(per_run) >= 1 and paid == max(r["n"] for r in per_run)  # one run's worth of observer calls, paid once
