"""A sweep over the three pending-token readings lands three runs, and the report shows their observation counts,
Observer call sizes and raw tails side by side (two synthetic S-sized questions, 30k threshold, scripted model)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from om_eval.cli import main
from tests.reliability.harness import invoke, query

READINGS = ("exact", "mastra_dev", "mastra_step")


def test_the_three_readings_side_by_side(tmp_path: Path) -> None:
    sweep = invoke(tmp_path, "dataset=synthetic_s", "dataset.synthetic.questions_per_type=1", "dataset.subset.first=2",
                   "om.observation.message_tokens=30000", "om.replay.final_flush=false",
                   f"om.replay.pending_accounting={','.join(READINGS)}", multirun=True)
    assert sweep.code == 0, sweep.output[-2000:]
    stored = {row["label"].rsplit("=", 1)[-1]: row for row in query(tmp_path, """
        SELECT r.label, avg(i.observation_cycles) AS cycles, avg(i.raw_tail_tokens) AS tail
        FROM runs r JOIN items i USING (run_id) GROUP BY r.label""")}
    assert set(stored) == set(READINGS)
    # The dev reading counts a session again on every pair: it observes most often and leaves the least raw.
    assert stored["mastra_dev"]["cycles"] > stored["exact"]["cycles"]
    assert stored["mastra_dev"]["tail"] < stored["exact"]["tail"]

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["report", "--results", str(tmp_path)]) == 0
    report = buffer.getvalue()
    # Piped, the report fits 80 columns: a wide table is split into "(continued)" parts, each with the row names.
    rows = [line for line in report.splitlines() if "obs/question" in line]
    shown = [float(value) for row in rows for value in re.findall(r"\d+\.\d", row)]
    assert sorted(shown) == sorted(round(stored[r]["cycles"], 1) for r in READINGS)
    assert "raw tail tokens" in report and "tokens/obs call" in report
