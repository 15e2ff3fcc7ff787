"""``om-eval run`` reports a failure the user can fix as its message, not as a traceback, and exits non-zero."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from om_eval.store import Catalog


def run_cli(results: Path, *overrides: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "om_eval.cli", "run", *overrides, f"run.results_dir={results}",
               f"run.cache_dir={results / 'cache'}", "run.progress=false"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OM_EVAL_CACHE_DIR": str(results / "cache")}
    env.pop("LONGMEMEVAL_DIR", None)
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_a_missing_dataset_is_a_message(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "experiment=smoke", "dataset=s")
    assert done.returncode == 1
    assert "om-eval run: LongMemEval file 'longmemeval_s_cleaned.json'" in done.stderr
    assert "LONGMEMEVAL_DIR" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_missing_judge_template_and_a_bad_option_are_messages(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "experiment=smoke", "judge=official", f"judge.source={tmp_path / 'missing'}")
    assert done.returncode == 1 and done.stderr.startswith("om-eval run: ") and "Traceback" not in done.stderr
    done = run_cli(tmp_path, "-m", "experiment=smoke", "om.observation.message_tokens=-5")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "om-eval run: om.observation.message_tokens=-5 is invalid" in done.stderr


def test_a_joblib_sweep_fails_on_a_failed_job_and_loses_no_rows(tmp_path: Path) -> None:
    # Under joblib (and Ray) a job runs in another process: its failure must still reach the exit code, and two
    # jobs writing at once must land every row (the run-level "parallel jobs lose no rows" test).
    failing = run_cli(tmp_path, "-m", "experiment=smoke", "om.observation.message_tokens=-5,100",
                      "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    assert failing.returncode == 1, failing.stderr[-2000:]
    assert "om-eval run: om.observation.message_tokens=-5 is invalid" in failing.stderr
    passing = run_cli(tmp_path, "-m", "experiment=smoke", "om.observation.message_tokens=100,200",
                      "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    assert passing.returncode == 0, passing.stderr[-2000:]
    assert not list((tmp_path / "hydra").glob("failed-jobs-*"))  # the sweep's failure folder is cleaned up
    with Catalog(tmp_path) as catalog:
        assert len(catalog.runs()) == 2 and len(catalog.items()) == 2 * 7
        assert catalog.query("SELECT count(DISTINCT run_id) AS n FROM llm_calls")[0]["n"] == 2
