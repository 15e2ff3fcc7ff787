"""Question ids of any length and characters run like any other (issue 20 case 4).

Before: an id over ~233 characters passed ``om-eval data check`` and then failed every run with "File name too
long" from the build lock; ids differing only in ``.`` vs ``_`` shared a snapshot file.
"""

from __future__ import annotations

import json
from pathlib import Path

from om_eval.data import mini_fixture_path
from tests.reliability.harness import assert_consistent, invoke, query


def test_long_and_odd_question_ids_run_and_resume(tmp_path: Path) -> None:
    records = json.loads(mini_fixture_path().read_text())
    renamed = {
        records[0]["question_id"]: "q/" + "x" * 300,
        records[1]["question_id"]: "same.id",
        records[2]["question_id"]: "same_id",
    }
    for record in records:
        record["question_id"] = renamed.get(record["question_id"], record["question_id"])
    data = tmp_path / "odd_ids.json"
    data.write_text(json.dumps(records))
    results = tmp_path / "results"

    first = invoke(results, f"dataset.path={data}")
    assert first.code == 0, first.output
    assert_consistent(results, questions=len(records))
    done = {row["question_id"] for row in query(results, "SELECT question_id FROM items WHERE status = 'done'")}
    assert set(renamed.values()) <= done
    snapshots = list((results).rglob("*.json"))
    assert all(len(p.name.encode()) < 255 for p in snapshots)

    again = invoke(results, f"dataset.path={data}")
    assert again.code == 0 and "0 answered" in again.flat, again.output


def test_escape_sequences_in_a_dataset_never_reach_the_terminal(tmp_path: Path) -> None:
    import contextlib
    import io

    from om_eval.cli import main

    records = json.loads(mini_fixture_path().read_text())
    records[0]["question_id"] = "esc\x1b[31mRED"
    records[0]["question"] = "What \x1b]0;retitled\x07 is \x1b[2J this?"
    data = tmp_path / "escapes.json"
    data.write_text(json.dumps(records))
    results = tmp_path / "results"
    run = invoke(results, f"dataset.path={data}")
    assert run.code == 0, run.output
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        run_id = query(results, "SELECT run_id FROM runs")[0]["run_id"]
        assert main(["show", "--results", str(results), run_id, "esc"]) == 0
    for output in (run.output, buffer.getvalue()):
        assert "\x1b]" not in output and "\x1b[2J" not in output and "\x1b[31mRED" not in output
    assert "esc\\x1b[31mRED" in buffer.getvalue()


def test_progress_lines_escape_question_ids() -> None:
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from om_eval.experiment.app import ProgressLines

    console = Console(file=io.StringIO(), width=200)
    totals = SimpleNamespace(cost_usd=0.0, unknown_cost_calls=0)
    progress = SimpleNamespace(total=1, skipped_done=0, done=1, errors=0, not_run=0, totals=totals,
                               finished=[("esc\x1b[31mRED", "ok")])
    ProgressLines(console, clock=lambda: 0.0)(progress)
    assert "\x1b" not in console.file.getvalue() and "esc\\x1b[31mRED ok" in console.file.getvalue()
