"""The README's first commands, run top to bottom on a fresh results folder, each exit 0 (issue 47).

Run in order, the README once tripped itself: after its sweep, ``om-eval show smoke <question>`` matched three runs
and exited 2. One deviation from the page: the quickstart's models are the scripted ones (its label kept), since the
local model's cold run takes minutes and what is tested here is the order of the commands, not the model.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = [f"model@models.{role}=scripted" for role in ("observer", "reflector", "actor", "judge")]

pytestmark = pytest.mark.integration  # four runs and a page


def first_commands() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## First commands", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line.split("#", 1)[0]) for line in block.splitlines() if line.strip()]


def test_the_readmes_first_commands_run_in_order(tmp_path: Path) -> None:
    from om_eval.cli import main

    commands = first_commands()
    assert [c[:2] for c in commands] == [["om-eval", "run"], ["om-eval", "run"], ["om-eval", "report"],
                                         ["om-eval", "show"], ["om-eval", "view"]]
    for command in commands:
        argv = command[1:]
        if argv[0] == "run":
            argv += [f"run.results_dir={tmp_path}", f"run.cache_dir={tmp_path / 'cache'}", "run.progress=false"]
            if "experiment=quickstart" in argv:
                argv += [*SCRIPTED, "run.label=quickstart"]
        else:
            argv[1:1] = ["--results", str(tmp_path)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(argv)
        assert code == 0, f"{' '.join(command)} exited {code}: {out.getvalue()[-2000:]}"
    assert (tmp_path / "report.html").is_file()
