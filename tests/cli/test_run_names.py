"""Naming a run after a sweep, end to end through ``om-eval``: a sweep never renames a run stored before it, and
``show``, ``report``, ``rejudge`` and ``export`` take a run's id prefix, its label, or its experiment when that
names one run (the candidates, when it names several)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from om_eval.cli import main
from tests.reliability.harness import invoke, query

KU_QUESTION = "5ed4ff79"  # a question of the mini set


def cli(*argv: str) -> tuple[int, str]:
    """``om-eval <argv>`` in this process: its exit status and everything it printed (``report`` exits itself)."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return code, buffer.getvalue()


def labels(results: Path) -> dict[str, str]:
    return {r["label"]: r["run_id"] for r in query(results, "SELECT run_id, label FROM runs")}


def test_a_sweep_keeps_the_plain_runs_label_and_every_command_finds_it(tmp_path: Path) -> None:
    results = str(tmp_path)
    assert invoke(tmp_path).code == 0  # om-eval run experiment=smoke
    (plain,) = labels(tmp_path).values()
    sweep = invoke(tmp_path, "prompt=current,legacy", multirun=True)  # its first job is the plain run
    assert sweep.code == 0, sweep.output
    runs = labels(tmp_path)
    assert runs.keys() == {"smoke", "prompt=legacy"} and runs["smoke"] == plain
    # The sweep's console names the run as it is stored, from its first line to the hint at its end.
    assert f"run {plain} · smoke ·" in sweep.output
    assert f"run {plain} (smoke):" in sweep.output and "(prompt=current)" not in sweep.output

    code, out = cli("show", "smoke", KU_QUESTION, "--results", results, "--json")  # as `show --help` has it
    assert code == 0, out
    assert json.loads(out)["run"]["run_id"] == plain
    code, out = cli("show", "prompt=legacy", KU_QUESTION, "--results", results, "--json")
    assert code == 0 and json.loads(out)["run"]["run_id"] == runs["prompt=legacy"]
    code, out = cli("report", "--compare", "smoke", "prompt=legacy", "--results", results, "--n-boot", "50")
    assert code == 0, out
    code, out = cli("report", "--runs", "smoke", "--results", results, "--n-boot", "50")
    assert code == 0 and "prompt=legacy" not in out, out
    code, out = cli("export", "smoke", "--results", results, "--out", str(tmp_path / "smoke.zip"))
    assert code == 0 and (tmp_path / "smoke.zip").is_file(), out
    code, out = cli("rejudge", "smoke", "judge.parse=mastra", "--results", results)
    assert code == 0 and f"run {plain[:12]}: 7 answers graded" in out, out


def test_an_experiment_that_names_several_runs_is_refused_with_the_candidates(tmp_path: Path) -> None:
    results = str(tmp_path)
    sweep = invoke(tmp_path, "prompt=current,legacy", multirun=True)  # no plain run: no run is labelled smoke
    assert sweep.code == 0, sweep.output
    runs = labels(tmp_path)
    assert runs.keys() == {"prompt=current", "prompt=legacy"}
    for argv in (["show", "smoke", KU_QUESTION], ["report", "--runs", "smoke"], ["export", "smoke"],
                 ["rejudge", "smoke", "judge.parse=mastra"]):
        code, out = cli(*argv, "--results", results)
        flat = " ".join(out.split())
        assert code == 2, (argv, out)
        assert "2 runs match 'smoke' as experiment" in flat, (argv, out)
        for label, run_id in runs.items():
            assert f"{run_id[:12]} ({label})" in flat, (argv, out)
    assert not (tmp_path / "exports").exists()
    code, out = cli("show", "prompt=current", KU_QUESTION, "--results", results, "--json")
    assert code == 0 and json.loads(out)["run"]["run_id"] == runs["prompt=current"]
