"""``om-eval report`` after the README's sweeps fits 80 columns, prints no warning and defines every row (issue 47).

The first reading went wrong here: six systems and a prompt sweep gave rows wrapped mid-cell, a Python
``RuntimeWarning`` with its source line at the top, and rows (``obs/question``, ``raw tail tokens``, ``right, not
retrieved``) defined nowhere on the page.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.harness import invoke

pytestmark = pytest.mark.integration  # nine runs and a report in a child process

#: Row names that say what they are: ids, the data, the judge model and the retrieval depth.
SELF_EXPLAINING = {"run", "dataset", "judge", "k", ""}
ROW = re.compile(r"^│ (.+?) +│")


def test_the_report_after_the_readmes_sweeps_fits_80_columns_and_defines_its_rows(tmp_path: Path) -> None:
    for sweep in (("prompt=current,legacy,condensed",),
                  ("memory=om,simple_om,rag_mastra,rag_lme,full_context,oracle",)):
        assert invoke(tmp_path, *sweep, multirun=True).code == 0
    env = {**os.environ, "COLUMNS": "80", "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-m", "om_eval.cli", "report", "--results", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    text = done.stdout + done.stderr
    lines = text.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    assert "Warning" not in text and "warnings.warn" not in text
    rows = {match.group(1).strip() for line in lines if (match := ROW.match(line))}
    # A wrapped row name continues on the next line with the first cell empty: none may be wrapped.
    undefined = sorted(name for name in rows - SELF_EXPLAINING if not _defined(name, text))
    assert undefined == [], undefined


def _defined(name: str, text: str) -> bool:
    flat = " ".join(text.split())
    return any(f"{name}{sep}" in flat for sep in (" =", ":", " (")) or f"{name} = " in flat
