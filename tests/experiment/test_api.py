"""``om_eval.evaluate``: the documented notebook example runs, and a run from Python is the command line's run."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import om_eval
from om_eval.configs import USER_CONFIG_ENV
from om_eval.om.config import ConfigError
from tests.experiment.test_user_configs import user_folder

PAGE = Path(__file__).parents[2] / "docs" / "python.md"
SMOKE_ID = "0da38ec8a1095857"  # tests/experiment/test_identity_pins.py


def test_the_documented_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    [example] = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    exec(compile(example, str(PAGE), "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{SMOKE_ID} 7 of 7 answered"  # the command line's run id for the same settings
    assert re.fullmatch(r"overall 0\.\d{3} · task-averaged 0\.\d{3}", lines[1])
    assert len([line for line in lines if "(n=" in line]) == 6  # the six LongMemEval question types
    assert re.fullmatch(r"28 model calls · [\d,]+ tokens · \$0\.0000 known spend", lines[8])
    assert lines[9] == "prompt=legacy True"


def test_a_finished_run_is_read_back_not_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    first = om_eval.evaluate("experiment=smoke run.concurrency=2", results_dir=tmp_path / "results", quiet=True)
    again = om_eval.evaluate(["experiment=smoke"], results_dir=tmp_path / "results", quiet=True)
    assert again == first  # the same run, store and figures: nothing was answered or paid twice
    assert first.store == tmp_path / "results" / "store" / f"{SMOKE_ID}.duckdb" and first.store.is_file()
    assert first.questions == first.answered == 7 and first.errors == 0 and first.unpriced_calls == 0
    assert sum(first.counts.values()) == 7 and first.overall == pytest.approx(
        sum(first.scores[c] * n for c, n in first.counts.items()) / 7)


def test_a_users_config_folder_and_a_composed_config_are_taken(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    folder = user_folder(tmp_path / "a folder, with a comma")  # Hydra's override grammar splits on both, unquoted
    mine = om_eval.evaluate("experiment=my_smoke", config_dir=folder, results_dir=tmp_path / "r", quiet=True)
    assert mine.answered == 7 and mine.run_id != SMOKE_ID  # its actor's output cap differs from smoke's
    from hydra import compose, initialize_config_module

    from om_eval.experiment.schema import register_configs

    register_configs()
    with initialize_config_module("om_eval.configs", version_base="1.3"):
        composed = compose("config", overrides=["experiment=smoke"])
    assert om_eval.evaluate(config=composed, results_dir=tmp_path / "r", quiet=True).run_id == SMOKE_ID
    assert USER_CONFIG_ENV not in os.environ  # the folder was for that call only


def test_what_evaluate_cannot_do_is_said(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="om-eval run -m"):
        om_eval.evaluate(["-m", "experiment=smoke", "prompt=current,legacy"])
    with pytest.raises(ValueError, match="not both"):
        om_eval.evaluate("experiment=smoke", config={"experiment": "smoke"})
    with pytest.raises(ValueError, match="config_dir .*no such folder"):
        om_eval.evaluate("experiment=smoke", config_dir=tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="run.concurrency"):
        om_eval.evaluate(["experiment=smoke", "run.concurrency=0"], results_dir=tmp_path, quiet=True)


def test_evaluate_runs_inside_a_running_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A notebook cell runs in an event loop, where the run's own asyncio.run cannot start another."""
    import asyncio

    monkeypatch.setenv("OM_EVAL_CACHE_DIR", str(tmp_path / "cache"))

    async def cell() -> om_eval.Evaluation:
        return om_eval.evaluate("experiment=smoke", results_dir=tmp_path / "a results folder, with a comma",
                                quiet=True)

    result = asyncio.run(cell())
    assert result.run_id == SMOKE_ID and result.answered == 7
    assert result.store.parent.parent.name == "a results folder, with a comma"
