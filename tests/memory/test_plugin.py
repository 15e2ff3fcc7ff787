"""A memory system from outside the package: installed with pip from a fixture folder, selected as ``memory=<name>``,
run through the smoke preset with no change to om-eval."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.fixtures.memory_plugin.wheel import build_wheel


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plugin")
    target = folder / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                           "--disable-pip-version-check", "--target", str(target), str(build_wheel(folder))],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return target


def om_eval(plugin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "om_eval.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def test_an_installed_plugin_runs_through_the_smoke_preset(plugin_path: Path, tmp_path: Path) -> None:
    done = om_eval(plugin_path, "run", "experiment=smoke", "memory=recent_turns", "memory.turns=6",
                   f"run.results_dir={tmp_path}", f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [store] = (tmp_path / "store").glob("*.duckdb")
    with duckdb.connect(str(store), read_only=True) as con:
        run = con.execute("SELECT memory_system, memory_budget, label, observer_model, config_json "
                          "FROM runs").fetchone()
        items = con.execute("SELECT status, context_tokens, actor_prompt IS NOT NULL FROM items").fetchall()
        stages = dict(con.execute("SELECT stage, count(*) FROM llm_calls GROUP BY stage").fetchall())
    assert run[:4] == ("recent_turns", json.dumps({"turns": 6}), "memory=recent_turns memory.turns=6", None)
    assert json.loads(run[4])["memory"] == {"system": "recent_turns", "turns": 6}
    assert len(items) == 7 and all(status == "done" and tokens > 0 and prompt for status, tokens, prompt in items)
    assert stages == {"actor": 7, "judge": 7}  # the plugin called no model; the harness answered and graded
    shown = om_eval(plugin_path, "show", "--results", str(tmp_path), "smoke", "b47cffd2")
    assert shown.returncode == 0, shown.stdout[-2000:] + shown.stderr[-2000:]
    flat = " ".join(shown.stdout.split())  # rich wraps at the terminal's width
    assert "(built) · history 164 tokens · recent_turns" in flat and "memory shown to the actor" in flat
    assert not any(om in flat for om in ("observation and", "observer:", "Observations by generation"))


def test_a_plugin_option_it_rejects_is_named_before_the_run(plugin_path: Path, tmp_path: Path) -> None:
    done = om_eval(plugin_path, "run", "experiment=smoke", "memory=recent_turns", "+memory.colour=blue",
                   f"run.results_dir={tmp_path}", "run.progress=false")
    assert done.returncode != 0
    assert "memory=recent_turns: memory.colour is not an option of recent_turns" in done.stdout + done.stderr
    assert not (tmp_path / "store").exists()


def test_an_unknown_system_lists_the_choices(plugin_path: Path, tmp_path: Path) -> None:
    done = om_eval(plugin_path, "run", "experiment=smoke", "memory.system=nonesuch",
                   f"run.results_dir={tmp_path}", "run.progress=false")
    assert done.returncode != 0
    text = done.stdout + done.stderr
    assert "memory='nonesuch' is not a memory system" in text and "recent_turns" in text and "rag_lme" in text
