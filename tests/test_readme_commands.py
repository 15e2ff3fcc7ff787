"""The README's first commands, run top to bottom on a fresh results folder, each exit 0; then, after its memory
systems sweep, ``om-eval report`` fits 80 columns, prints no warning and defines every row (issue 47).

Run in order, the README once tripped itself: after its sweep, ``om-eval show smoke <question>`` matched three runs
and exited 2. One deviation from the page: the quickstart's models are the scripted ones (its label kept), since the
local model's cold run takes minutes and what is tested here is the order of the commands, not the model. The report
once gave six systems and a prompt sweep rows wrapped mid-cell, a Python ``RuntimeWarning`` with its source line, and
rows (``obs/question``, ``raw tail tokens``, ``right, not retrieved``) defined nowhere on the page.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = [f"model@models.{role}=scripted" for role in ("observer", "reflector", "actor", "judge")]

pytestmark = pytest.mark.integration  # nine runs, a page and a report in a child process
#: Row names that say what they are: ids, the data, the judge model and the retrieval depth.
SELF_EXPLAINING = {"run", "dataset", "judge", "k", ""}
ROW = re.compile(r"^│ (.+?) +│")


def first_commands() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## First commands", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line.split("#", 1)[0]) for line in block.splitlines() if line.strip()]


def test_the_readmes_commands_run_in_order_and_the_report_fits_80_columns(tmp_path: Path) -> None:
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

    # The README's next command: six memory systems side by side, then the report on a terminal of 80 columns.
    sweep = shlex.split(readme_sweep())
    assert sweep[:4] == ["om-eval", "run", "-m", "experiment=smoke"]
    assert main([*sweep[1:], f"run.results_dir={tmp_path}", f"run.cache_dir={tmp_path / 'cache'}",
                 "run.progress=false"]) == 0
    env = {**os.environ, "COLUMNS": "80", "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-m", "om_eval.cli", "report", "--results", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    text = done.stdout + done.stderr
    lines = text.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    # The cost tables once came out as markdown, each row wrapped mid-row: every table is a fitted one now.
    assert [line for line in lines if line.lstrip().startswith("|")] == []
    assert "Cost per 1,000 turns" in text and "ratio = no cache / $/1k" in " ".join(text.split())
    assert "Warning" not in text and "warnings.warn" not in text
    rows = {match.group(1).strip() for line in lines if (match := ROW.match(line))}
    # A wrapped row name continues on the next line with the first cell empty: none may be wrapped.
    undefined = sorted(name for name in rows - SELF_EXPLAINING if not _defined(name, text))
    assert undefined == [], undefined


def readme_sweep() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"`(om-eval run -m experiment=smoke memory=[^`]+)`", readme).group(1)  # type: ignore[union-attr]


def _defined(name: str, text: str) -> bool:
    flat = " ".join(text.split())
    return any(f"{name}{sep}" in flat for sep in (" =", ":", " ("))
