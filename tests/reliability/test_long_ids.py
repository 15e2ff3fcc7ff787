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
