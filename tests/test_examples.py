"""The library examples the docs show run as written and print what they promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(script: str, *args: str, timeout: float = 120) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / script), *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_library_example_prints_observations_and_the_actors_view() -> None:
    out = _run("library_example.py")
    observations, view = out.split("=== what an actor on thread-2 sees")
    assert "=== observations" in observations and "User stated: I adopted a beagle named Toby." in observations
    assert "Date: Mar 1, 2025 (2 weeks ago)" in view and "--- system" in view


def test_the_model_example_runs_the_engine_through_the_client(tmp_path: Path) -> None:
    out = _run("library_with_a_model.py", "--model", "scripted/om-eval", "--cache", str(tmp_path))
    assert "Lisbon" in out.split("=== observations")[1] and "1 call(s)" in out
    again = _run("library_with_a_model.py", "--model", "scripted/om-eval", "--cache", str(tmp_path))
    assert again.split("===")[1] == out.split("===")[1]  # the cached reply gives the same memory


def test_the_readmes_plugin_runs_with_an_option_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's plugin class, as printed, run through the smoke preset with ``memory.top_k=3``."""
    import re
    import types

    from om_eval.experiment.app import run_from_config
    from om_eval.memory import registry
    from tests.runs import compose_run

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Plugging in a memory system", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    module = types.ModuleType("readme_plugin")
    exec(compile(block, "README.md", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "readme_plugin", module)
    monkeypatch.setattr(registry, "plugin_targets", lambda: {"my_memory": "readme_plugin:MyMemory"})
    done = run_from_config(compose_run(tmp_path, "memory=my_memory", "memory.top_k=3"))
    assert done["run_id"] and re.fullmatch(r"[0-9a-f]{16}", done["run_id"])
    import duckdb

    [store] = (tmp_path / "store").glob("*.duckdb")
    with duckdb.connect(str(store), read_only=True) as con:
        budget, statuses = con.execute("SELECT memory_budget FROM runs").fetchone()[0], con.execute(
            "SELECT DISTINCT status FROM items").fetchall()
    assert budget == '{"top_k": 3}' and statuses == [("done",)]
