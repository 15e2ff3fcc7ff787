"""A bad option is a one-line error naming it, a failed command, and no run left behind (issue 20 case 5).

Before: ``run.budget_usd=nan`` turned the budget off, ``dataset.subset.first=0`` wrote an empty run and exited 0,
and an unknown token estimator or judge parse rule printed a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.harness import invoke

BAD = [
    ("run.budget_usd=nan", "run.budget_usd"),
    ("run.budget_usd=-1", "run.budget_usd"),
    ("dataset.subset.first=0", "dataset.subset.first"),
    ("dataset.subset.per_type=0", "dataset.subset.per_type"),
    ("dataset.subset.sample=0", "dataset.subset.sample"),
    ("dataset.subset.ids=[no_such_question]", "no_such_question"),
    ("dataset.subset.types=[tr]", "dataset.subset"),  # the mini set's only tr question is answerable...
    ("om.token_estimator=words", "om.token_estimator"),
    ("judge.parse=lenient", "judge.parse"),
    ("judge.mode=sloppy", "judge.mode"),
    ("judge.no_verdict=maybe", "judge.no_verdict"),
    ("om.replay.pending_accounting=maybe", "om.replay.pending_accounting"),
    ("om.other_threads_limit=0", "om.other_threads_limit"),
    ("om.replay.scope=session", "om.replay.scope"),
    ("om.replay.turn_spacing_seconds=-5", "om.replay.turn_spacing_seconds"),
]


@pytest.mark.parametrize(("override", "named"), BAD)
def test_bad_option_fails_cleanly(tmp_path: Path, override: str, named: str) -> None:
    extra = ("dataset.subset.abstention=true",) if override == "dataset.subset.types=[tr]" else ()
    result = invoke(tmp_path, override, *extra)
    assert result.code != 0, result.output
    assert "Traceback" not in result.output, result.output
    error_lines = [line for line in result.output.splitlines() if line.startswith("om-eval run:")]
    assert len(error_lines) == 1 and named in error_lines[0], result.output
    assert not list(tmp_path.glob("store/*.duckdb")), "a refused run must leave no run file"


def test_rejudge_with_the_official_judge_offline_is_one_line(tmp_path: Path) -> None:
    import contextlib
    import io

    from om_eval.cli import main

    assert invoke(tmp_path).code == 0
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = main(["rejudge", "--results", str(tmp_path), "smoke", "judge=official"])
    assert code != 0
    assert "Traceback" not in buffer.getvalue()
    (line,) = [line for line in buffer.getvalue().splitlines() if line.strip()]
    assert line.startswith("om-eval rejudge:") and "judge.source=" in line
