"""BEAM through the harness: the four systems of the comparison answer one chat's ten abilities from one memory,
the rubric judge's calls are in the ledger, the report has one row per ability per system, and bad input stops
before any model call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from om_eval.bench.beam import ABILITIES, ABILITY_SHORT
from om_eval.report.archive import rescore_archive
from om_eval.store.catalog import Catalog
from tests.data.beam_fixture import write_tier

SYSTEMS = ("om", "rag_mastra", "simple_om", "full_context")


def _om_eval(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "om_eval.cli", *arguments], capture_output=True, text=True,
                          env=dict(os.environ), timeout=600, check=False)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("beam")
    data = write_tier(folder / "data")
    done = _om_eval("run", "-m", "experiment=beam_smoke", f"dataset.path={data}", "dataset.verify=false",
                    f"memory={','.join(SYSTEMS)}", "om.observation.message_tokens=60",
                    f"run.results_dir={folder}", f"run.cache_dir={folder / 'cache'}", "run.progress=false")
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def test_every_system_answers_all_ten_abilities_from_one_memory_per_chat(results: Path) -> None:
    with Catalog(results) as catalog:
        runs = catalog.runs()
        items = catalog.query("SELECT * FROM items ORDER BY run_id, question_id")
        judged = catalog.query("SELECT run_id, count(*) AS n FROM llm_calls WHERE stage = 'judge' GROUP BY run_id")
    assert sorted(r["memory_system"] for r in runs) == sorted(SYSTEMS)
    assert {r["benchmark"] for r in runs} == {"beam"}
    for run in runs:
        mine = [i for i in items if i["run_id"] == run["run_id"]]
        assert len(mine) == 10 and all(i["status"] == "done" for i in mine), run["memory_system"]
        assert sorted(i["question_type"] for i in mine) == sorted(ABILITIES)
        assert all(i["score"] is not None and 0.0 <= i["score"] <= 1.0 for i in mine)
        assert sum(not i["reused_memory"] for i in mine) == 1  # one build for the chat's ten questions
        assert {i["haystack_id"] for i in mine} == {"beam_100K_1"}
        detail = [json.loads(i["judge_reply"]) for i in mine]
        ordering = next(d for d, i in zip(detail, mine, strict=True) if i["question_type"] == "event_ordering")
        assert "aligned" in ordering["ordering"]
        # one judge call per rubric item, and the ordering's equivalence calls beside them
        calls = next(j["n"] for j in judged if j["run_id"] == run["run_id"])
        assert calls >= sum(len(d["items"]) for d in detail) + 1


def test_the_report_shows_ten_ability_rows_for_each_system(results: Path) -> None:
    done = _om_eval("report", "--results", str(results), "--markdown", str(results / "report.md"))
    assert done.returncode == 0, done.stderr[-2000:]
    lines = (results / "report.md").read_text().splitlines()
    for short in ABILITY_SHORT.values():
        row = next(line for line in lines if line.startswith(f"| BEAM {short} "))
        assert row.count("n=1") == len(SYSTEMS), row


@pytest.mark.parametrize(("change", "message"), [
    (["dataset.tier=500K"], "BEAM tier 500K not found"),
    (["+damage=chat"], "chat.json: not JSON"),
    (["+damage=rubric"], "field summarization[0].rubric: every BEAM question needs a rubric"),
    (["judge.source=beam"], "judge.source=beam reads upstream's BEAM judge prompts, which only judge=official uses"),
    (["judge=official"], "BEAM's judge prompts are not cached"),
])
def test_bad_input_stops_with_one_line_before_any_model_call(tmp_path: Path, change: list[str], message: str) -> None:
    data = write_tier(tmp_path / "data")
    chat = data / "100K" / "1" / "chat.json"
    if change == ["+damage=chat"]:
        chat.write_text('[{"turns": ')
    if change == ["+damage=rubric"]:
        asked = chat.parent / "probing_questions" / "probing_questions.json"
        questions = json.loads(asked.read_text())
        del questions["summarization"][0]["rubric"]
        asked.write_text(json.dumps(questions))
    overrides = [c for c in change if not c.startswith("+damage")]
    done = _om_eval("run", "experiment=beam_smoke", f"dataset.path={data}", "dataset.verify=false", *overrides,
                    f"run.results_dir={tmp_path / 'results'}", "run.progress=false")
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and message in errors[0], done.stderr
    assert not list((tmp_path / "results").glob("store/*.duckdb"))


def test_the_report_says_which_conditions_of_beams_protocol_each_run_misses(results: Path) -> None:
    text = (results / "report.md").read_text() if (results / "report.md").exists() else ""
    if not text:
        _om_eval("report", "--results", str(results), "--markdown", str(results / "report.md"))
        text = (results / "report.md").read_text()
    assert "A BEAM run is scored as upstream's scripts score when it meets every condition below" in text
    assert "✗ BEAM's judge prompts: the house prompts (om-eval's own words)" in text
    assert "✗ whole tier: 10/400 questions of tier 100K judged" in text
    assert "LongMemEval numbers" not in text
    assert "| rounding | upstream (int() per item)" in text


def test_show_lays_out_the_rubric_and_the_ordering(results: Path) -> None:
    with Catalog(results) as catalog:
        run = next(r for r in catalog.runs() if r["memory_system"] == "om")
    done = _om_eval("show", run["run_id"][:8], "beam_100K_1_event_ordering_0", "--results", str(results))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Rubric (rounding upstream)" in done.stdout and "Event ordering: precision" in done.stdout
    assert "BEAM score:" in done.stdout and "full marks:" in done.stdout


def test_a_beam_run_exports_to_an_archive(results: Path) -> None:
    with Catalog(results) as catalog:
        run = next(r for r in catalog.runs() if r["memory_system"] == "rag_mastra")
    done = _om_eval("export", run["run_id"][:8], "--results", str(results), "--out", str(results / "run.zip"))
    assert done.returncode == 0, done.stderr[-2000:]
    rescored = rescore_archive(results / "run.zip")  # the archive proves itself, scores recomputed from replies
    stored = json.loads((results / "runs" / run["run_id"] / "metrics.json").read_text())
    assert rescored["own"]["overall"] == stored["own"]["overall"] is not None


def test_the_view_draws_each_abilitys_beam_score(results: Path) -> None:
    done = _om_eval("view", "--results", str(results), "--out", str(results / "view.html"))
    assert done.returncode == 0, done.stderr[-2000:]
    page = (results / "view.html").read_text()
    assert all(f"{ability} (BEAM score)" in page for ability in ABILITIES)
