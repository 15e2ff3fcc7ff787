"""A user's own config folder (``om-eval run --config-dir``): new presets and models without touching the package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from om_eval.configs import CONFIG_DIR, USER_CONFIG_ENV, shadowed
from om_eval.llm.models import known_models, model_settings
from om_eval.om.config import ConfigError
from om_eval.store import Catalog

PRESET = """\
# @package _global_
defaults:
  - smoke
  - override /model@models.actor: my-actor
  - _self_
experiment: my_smoke
"""
MODEL = "model: scripted/om-eval\ntemperature: 0.0\nmax_output_tokens: 321\nprovider_options: {}\n"


def user_folder(root: Path) -> Path:
    folder = root / "my-configs"
    (folder / "experiment").mkdir(parents=True)
    (folder / "model").mkdir()
    (folder / "experiment" / "my_smoke.yaml").write_text(PRESET, encoding="utf-8")
    (folder / "model" / "my-actor.yaml").write_text(MODEL, encoding="utf-8")
    return folder


def om_eval_run(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != USER_CONFIG_ENV}
    return subprocess.run([sys.executable, "-m", "om_eval.cli", "run", *args], capture_output=True, text=True,
                          cwd=where, env=env, timeout=300, check=False)


def test_a_preset_and_a_model_of_the_users_own_folder_run_from_any_folder(tmp_path: Path) -> None:
    folder = user_folder(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = om_eval_run(elsewhere, "--config-dir", "../my-configs", "experiment=my_smoke", "run.progress=false",
                       f"run.cache_dir={tmp_path / 'cache'}")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "7 answered, 0 errors" in " ".join(done.stdout.split())  # rich wraps at the terminal width
    with Catalog(elsewhere / "results") as catalog:
        [run] = catalog.runs()
    config = json.loads(run["config_json"])
    assert config["experiment"] == "my_smoke" and config["models"]["actor"]["max_output_tokens"] == 321
    assert not (CONFIG_DIR / "experiment" / "my_smoke.yaml").exists() and folder.is_dir()  # the package is untouched
    # The user's models grade too: om-eval rejudge --config-dir (without it, the name is unknown).
    env = {key: value for key, value in os.environ.items() if key != USER_CONFIG_ENV}

    def rejudge(*given: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "om_eval.cli", "rejudge", "--results", "results", *given,
                               "--cache-dir", str(tmp_path / "cache"), run["run_id"], "model@models.judge=my-actor"],
                              capture_output=True, text=True, cwd=elsewhere, env=env, timeout=300, check=False)

    unknown = rejudge()
    assert unknown.returncode != 0 and "my-actor" in unknown.stderr, unknown.stdout[-2000:] + unknown.stderr[-2000:]
    graded = rejudge("--config-dir", str(folder))
    assert graded.returncode == 0 and "7 answers graded" in graded.stdout, graded.stdout[-2000:] + graded.stderr


def test_a_file_shadowing_a_shipped_config_is_refused_by_name(tmp_path: Path) -> None:
    folder = user_folder(tmp_path)
    (folder / "model" / "gpt-4o.yaml").write_text(MODEL, encoding="utf-8")
    assert shadowed(folder) == ["model/gpt-4o.yaml"]
    done = om_eval_run(tmp_path, f"--config-dir={folder}", "experiment=my_smoke")
    assert done.returncode == 2 and "model/gpt-4o.yaml would shadow the shipped config" in done.stderr, done.stderr
    assert not (tmp_path / "results").exists()


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    done = om_eval_run(tmp_path, "-cd", "nowhere", "experiment=smoke")
    assert done.returncode == 2 and "-cd nowhere: no such folder" in done.stderr, done.stderr


def test_model_names_are_looked_up_in_the_users_folder_after_the_shipped_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(USER_CONFIG_ENV, raising=False)
    with pytest.raises(ConfigError, match="my-actor"):
        model_settings("my-actor")
    monkeypatch.setenv(USER_CONFIG_ENV, str(user_folder(tmp_path)))
    assert model_settings("my-actor").max_output_tokens == 321
    assert {"my-actor", "gpt-4o", "scripted"} <= set(known_models())
    with pytest.raises(ConfigError, match="my-configs/model"):
        model_settings("nobody")
