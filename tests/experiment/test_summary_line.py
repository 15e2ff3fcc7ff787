"""The end-of-run score line of a LoCoMo run shows categories 1-4 beside the overall."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from om_eval.bench.locomo import BENCHMARK
from om_eval.experiment.app import _print_summary


def test_the_score_line_shows_categories_1_to_4(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "abc"
    folder.mkdir(parents=True)
    metrics = {"overall": 0.5, "task_averaged": 0.4, "abstention": {"accuracy": None, "n": 0},
               "own": {"name": "F1", "overall": 0.3},
               "answerable": {"title": "categories 1-4", "overall": 0.6, "n": 10, "own": {"overall": 0.35, "n": 10}}}
    (folder / "metrics.json").write_text(json.dumps(metrics))
    progress = SimpleNamespace(skipped_done=0, done=12, errors=0, describe=lambda: "12 done")
    spec = SimpleNamespace(run=SimpleNamespace(results_dir=str(tmp_path), label="x"),
                           judge_model=SimpleNamespace(model="scripted/judge"))
    job = SimpleNamespace(spec=spec, run_id="abc", progress=progress, benchmark=BENCHMARK)
    out = StringIO()
    _print_summary(job, Console(file=out, width=300))
    assert "overall 0.5000 · F1 0.3000 · categories 1-4: overall 0.6000, F1 0.3500" in out.getvalue()
