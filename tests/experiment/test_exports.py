"""The official exports of a run, read back and scored as upstream's print_qa_metrics.py would, agree with the report.

Three kinds of run: a house-judged run, a run graded with official-layout templates (an invented stand-in file, as
no upstream text ships here), and a run whose judge fails on some questions. For each, the exported
``hypotheses.jsonl.eval-results-*`` is re-read and scored twice: by our ``longmemeval_metrics`` and by an
independent few-line transcription of the upstream script's arithmetic (per-type mean with ``_abs`` questions
in their base type, micro overall, macro over the six types, abstention mean). Both must match the report.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from om_eval.bench.judging.judge import Judge
from om_eval.bench.metrics import OFFICIAL_TYPE_ORDER, longmemeval_metrics, read_eval_results_jsonl
from om_eval.data import mini_fixture_path
from om_eval.experiment import job as job_module
from om_eval.experiment.app import run_from_config
from om_eval.experiment.job import eval_results_name
from om_eval.llm.providers import register_scripted
from om_eval.report import summary_table
from om_eval.store import Catalog
from om_eval.testing.scripted.model import ScriptedModel
from tests.bench.judging.test_judge import standin_source, write_standin
from tests.runs import compose_run

# An invented official-layout file whose prompts the scripted judge can read (a "<Label>: <gold>" section, then
# "Response: <answer>", then a yes-or-no request).
READABLE_STANDIN = '''
def get_anscheck_prompt(task, question, answer, response, abstention=False):
    if abstention:
        layout = ("Invented refusal check.\\n\\nAsked: {}\\n\\nWhy unanswerable: {}\\n\\nResponse: {}"
                  "\\n\\nRefused? yes or no.")
    else:
        layout = ("Invented check for " + task + ".\\n\\nAsked: {}\\n\\nExpected: {}\\n\\nResponse: {}"
                  "\\n\\nRight? yes or no.")
    return layout.format(question, answer, response)
'''


def composed(results: Path, *overrides: str):
    return compose_run(results, *overrides)


def upstream_arithmetic(eval_file: Path, reference: list[dict]) -> dict:
    """print_qa_metrics.py's sums, transcribed independently (no assert on the judge model: ours is scripted)."""
    types = {entry["question_id"]: entry["question_type"] for entry in reference}
    by_type: dict[str, list[int]] = {t: [] for t in OFFICIAL_TYPE_ORDER}
    labels, abstention = [], []
    for line in eval_file.read_text().splitlines():
        entry = json.loads(line)
        y = 1 if entry["autoeval_label"]["label"] else 0
        labels.append(y)
        by_type[types[entry["question_id"]]].append(y)
        if "_abs" in entry["question_id"]:
            abstention.append(y)
    present = [np.mean(v) for v in by_type.values() if v]  # the mini set has every type; S has all six too
    return {"overall": float(np.mean(labels)), "task_averaged": float(np.mean(present)),
            "abstention": float(np.mean(abstention)) if abstention else None,
            "per_type": {t: float(np.mean(v)) for t, v in by_type.items() if v}, "n": len(labels)}


def check_against_report(results: Path) -> dict:
    reference = json.loads(mini_fixture_path().read_text())
    with Catalog(results) as catalog:
        runs = catalog.runs()
        items = catalog.items()
    assert len(runs) == 1
    run = runs[0]
    eval_file = results / "runs" / run["run_id"] / eval_results_name(run["judge_model"])
    judged = [i for i in items if i["status"] == "done" and i["judge_status"] == "ok"]
    assert len(eval_file.read_text().splitlines()) == len(judged) > 0  # empty before the fix
    types = {entry["question_id"]: entry["question_type"] for entry in reference}
    ours = longmemeval_metrics(read_eval_results_jsonl(eval_file, types))
    upstream = upstream_arithmetic(eval_file, reference)
    graded = summary_table(runs, items, n_boot=0).rows[0].graded
    assert upstream["n"] == graded.overall.n
    for name in ("overall", "task_averaged"):
        assert ours[name] == pytest.approx(upstream[name], abs=1e-12)
        assert getattr(graded, name).value == pytest.approx(upstream[name], abs=1e-12)
    assert graded.abstention.value == pytest.approx(upstream["abstention"], abs=1e-12)
    for qtype, accuracy in upstream["per_type"].items():
        assert ours["per_type"][qtype]["accuracy"] == pytest.approx(accuracy, abs=1e-12)
        assert graded.per_type[qtype].value == pytest.approx(accuracy, abs=1e-12)
    metrics = json.loads((results / "runs" / run["run_id"] / "metrics.json").read_text())
    assert metrics["task_averaged"] == pytest.approx(upstream["task_averaged"], abs=1e-12)
    return upstream


def test_house_judged_run_exports_every_verdict(tmp_path: Path) -> None:
    run_from_config(composed(tmp_path))
    upstream = check_against_report(tmp_path)
    assert upstream["n"] == 7


def test_official_layout_run_exports_every_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, _ = write_standin(tmp_path / "upstream", standin_source(READABLE_STANDIN))
    # The pinned sha256 guards real runs; the stand-in's bytes are not upstream's, so the pin is off here only.
    monkeypatch.setattr(job_module, "make_judge", lambda spec: Judge.official(
        source, model=spec.judge_model, parse=spec.judge_parse, expected_sha256=None))
    run_from_config(composed(tmp_path / "results", "judge=official"))
    upstream = check_against_report(tmp_path / "results")
    assert upstream["n"] == 7


def test_run_with_judge_failures_exports_only_graded_answers(tmp_path: Path) -> None:
    model = register_scripted("export-judge-fails", ScriptedModel(faults={"judge": ["bad_request", "bad_request"]}))
    run_from_config(composed(tmp_path, f"models.judge.model={model}"))
    upstream = check_against_report(tmp_path)
    assert upstream["n"] == 5
    with Catalog(tmp_path) as catalog:
        statuses = sorted(i["judge_status"] for i in catalog.items())
    assert statuses.count("error") == 2
