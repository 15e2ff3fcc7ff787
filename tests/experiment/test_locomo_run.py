"""LoCoMo end to end with the scripted model: one memory per conversation, its own F1 beside the judge, the audit's
corrected gold beside the published one, and the report, plot, show and view in LoCoMo's categories."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from rich.console import Console

from om_eval.bench.locomo import CATEGORY_NUMBERS, locomo_f1, locomo_scores
from om_eval.experiment.job import RunJob
from om_eval.experiment.spec import spec_from_config
from om_eval.om.config import ConfigError
from om_eval.report import summary_table, to_csv, to_markdown
from om_eval.report.detail import question_detail
from om_eval.report.plots import categories_figure
from om_eval.report.show import render_detail
from om_eval.report.view import view_data
from om_eval.store import Catalog
from tests.locomo_shaped import write_audit, write_locomo_shaped
from tests.runs import compose_run

AUDIT = [{"question_id": "locomo_1_qa0", "error_type": "WRONG_ANSWER", "golden_answer": "a grey cat called Pixel",
          "correct_answer": "a grey kitten called Pixel", "correct_evidence": ["D1:1"], "reasoning": "ours"}]


def _data(folder: Path) -> list[str]:
    path = write_locomo_shaped(folder, conversations=2, sessions=3)
    return ["dataset=locomo", f"dataset.path={path}", "dataset.corrections=locomo_audit",
            f"dataset.audit_path={write_audit(folder, AUDIT)}"]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("locomo")
    command = [sys.executable, "-m", "om_eval.cli", "run", "-m", "experiment=smoke", *_data(folder),
               "baseline=none,full_context,oracle", "om.observation.message_tokens=60",
               "om.reflection.observation_tokens=200",
               f"run.results_dir={folder}", f"run.cache_dir={folder / 'cache'}", "run.progress=false"]
    done = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ), timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder


def _runs(results: Path) -> tuple[dict, dict, list[dict]]:
    with Catalog(results) as catalog:
        runs = catalog.runs()
        items = catalog.query("SELECT * FROM items ORDER BY run_id, question_id")
    om = next(r for r in runs if not r["memory_key"].startswith("baseline:"))
    oracle = next(r for r in runs if r["memory_key"] == "baseline:oracle")
    return om, oracle, items


def test_one_memory_per_conversation_answers_all_of_its_questions(results: Path) -> None:
    om, _, items = _runs(results)
    mine = [i for i in items if i["run_id"] == om["run_id"]]
    assert len(mine) == 14 and all(i["status"] == "done" for i in mine)
    assert om["benchmark"] == "locomo"
    built = [i for i in mine if not i["reused_memory"]]
    assert sorted(i["haystack_id"] for i in built) == ["locomo_0", "locomo_1"]  # 2 builds for 14 questions
    assert {i["memory_key"] for i in mine if i["haystack_id"] == "locomo_0"} == {built[0]["memory_key"]}
    with Catalog(results) as catalog:
        snapshots = catalog.query("SELECT question_id FROM memory_snapshots ORDER BY 1")
        owners = catalog.query("SELECT DISTINCT question_id FROM om_events ORDER BY 1")
    assert [s["question_id"] for s in snapshots] == ["locomo_0", "locomo_1"]
    assert [e["question_id"] for e in owners] == ["locomo_0", "locomo_1"]
    assert all(i["observations"] > 0 for i in mine)  # the low thresholds made OM observe


def test_the_readers_answer_every_question_and_the_oracle_reads_each_questions_own_evidence(results: Path) -> None:
    with Catalog(results) as catalog:
        runs, items = catalog.runs(), catalog.query("SELECT * FROM items ORDER BY question_id")
    by_reader = {}
    for reader in ("full_context", "oracle"):
        run = next(r for r in runs if r["memory_key"] == f"baseline:{reader}")
        by_reader[reader] = [i for i in items if i["run_id"] == run["run_id"]]
        assert len(by_reader[reader]) == 14 and all(i["status"] == "done" for i in by_reader[reader]), reader
    # The full-context reader lays each conversation out once; the oracle's history is each question's own.
    assert sum(not i["reused_memory"] for i in by_reader["full_context"]) == 2
    assert not any(i["reused_memory"] for i in by_reader["oracle"])
    traces = [t for i in by_reader["oracle"] for t in json.loads(i["evidence"])]
    assert traces and all(t["status"] == "in_reader_prompt" for t in traces)


def test_each_answer_has_locomo_f1_and_the_corrected_gold_its_own_scores(results: Path) -> None:
    om, oracle, items = _runs(results)
    for item in items:
        expected = locomo_f1(item["hypothesis"], item["gold_answer"], CATEGORY_NUMBERS[item["question_type"]])
        assert item["score"] == pytest.approx(expected)
    fixed = [i for i in items if i["corrected_answer"] is not None]
    assert {i["question_id"] for i in fixed} == {"locomo_1_qa0"} and len(fixed) == 3  # OM and both baselines
    assert {i["run_id"] for i in fixed} >= {om["run_id"], oracle["run_id"]}
    for item in fixed:
        assert item["corrected_answer"] == "a grey kitten called Pixel"
        assert item["corrected_score"] == pytest.approx(locomo_f1(item["hypothesis"], item["corrected_answer"], 4))
        assert item["corrected_label"] is not None


def test_the_report_shows_numbered_categories_f1_and_raw_against_corrected(results: Path) -> None:
    with Catalog(results) as catalog:
        runs, items = catalog.runs(), catalog.query("SELECT * FROM items")
    table = summary_table(runs, items, n_boot=50)
    markdown = to_markdown(table)
    assert markdown.startswith("# LoCoMo results")
    for row in ("1 multi-hop", "2 temporal", "3 open-domain", "4 single-hop", "5 adversarial", "F1 overall",
                "gold corrected", "ceiling (raw)", "corrected overall", "corrected F1 overall", "Wilson"):
        assert row in markdown, row
    assert "single-session" not in markdown and "abstention" not in markdown.split("Cells")[0]
    om_items = [i for i in items if i["run_id"] == _runs(results)[0]["run_id"]]
    upstream = locomo_scores({"category": CATEGORY_NUMBERS[i["question_type"]], "score": i["score"]}
                             for i in om_items)
    summary = table.run(_runs(results)[0]["run_id"])
    assert summary.own is not None and summary.own.overall == pytest.approx(upstream["overall"])
    for name, number in CATEGORY_NUMBERS.items():
        assert summary.own.per_type[name][0] == pytest.approx(upstream["per_category"][number])
    assert summary.ceiling == pytest.approx(1 - 1 / 14)
    record = next(csv.DictReader(io.StringIO(to_csv(table))))
    assert record["benchmark"] == "locomo" and float(record["f1_overall"]) >= 0
    assert {"1 multi-hop", "5 adversarial"} <= {c.title for c in table.sections[0].benchmark.categories}


def test_categories_1_to_4_sit_beside_the_overall_in_the_report_and_metrics(results: Path) -> None:
    with Catalog(results) as catalog:
        runs, items = catalog.runs(), catalog.query("SELECT * FROM items")
    table = summary_table(runs, items, n_boot=50)
    markdown = to_markdown(table)
    for row in ("overall categories 1-4", "F1 categories 1-4", "corrected overall categories 1-4",
                "categories 1-4 = the micro average"):
        assert row in markdown, row
    om = _runs(results)[0]
    mine = [i for i in items if i["run_id"] == om["run_id"] and i["question_type"] != "adversarial"]
    summary = table.run(om["run_id"])
    assert summary.answerable is not None and summary.answerable.accuracy.n == len(mine) == 12
    assert summary.answerable.accuracy.value == pytest.approx(sum(bool(i["label"]) for i in mine) / 12)
    assert summary.answerable.own == (pytest.approx(sum(i["score"] for i in mine) / 12), 12)
    record = next(r for r in csv.DictReader(io.StringIO(to_csv(table))) if r["run_id"] == om["run_id"])
    assert float(record["categories_1_4_acc"]) == pytest.approx(summary.answerable.accuracy.value)
    assert record["f1_categories_1_4"] and record["corrected_categories_1_4_acc"]
    written = json.loads((results / "runs" / om["run_id"] / "metrics.json").read_text())
    assert written["answerable"]["title"] == "categories 1-4" and written["answerable"]["n"] == 12
    assert written["answerable"]["overall"] == pytest.approx(summary.answerable.accuracy.value)
    assert "answerable" in written["corrected"]


def test_plot_show_and_view_use_locomo_categories(results: Path) -> None:
    with Catalog(results) as catalog:
        runs, items = catalog.runs(), catalog.query("SELECT * FROM items")
        om = _runs(results)[0]
        detail = question_detail(catalog, om["run_id"], "locomo_1_qa0")
        data, _ = view_data(catalog, runs, n_boot=20)
    figure = categories_figure((runs, items), n_boot=20)
    ticks = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert ticks[:5] == ["1\nmulti-hop", "2\ntemporal", "3\nopen-domain", "4\nsingle-hop", "5\nadversarial"]
    console = Console(record=True, width=140)
    render_detail(detail, console)
    shown = console.export_text()
    assert "(4 single-hop)" in shown and "LoCoMo F1" in shown and "Corrected gold" in shown
    assert "memory shared by every question of locomo_1" in shown and "Ada1" in shown  # the conversation's words
    assert [t[0] for t in data["types"]] == list(CATEGORY_NUMBERS)
    # a shared memory is embedded once per run, not once per question (3 runs x 2 conversations, 42 questions)
    assert len(data["memories"]) == 6


def test_the_official_longmemeval_judge_is_refused_for_locomo(tmp_path: Path) -> None:
    config = compose_run(tmp_path, *_data(tmp_path), "judge=official")
    spec = spec_from_config(OmegaConf.to_container(config, resolve=True))
    with pytest.raises(ConfigError, match="judge.mode=official cannot grade LoCoMo"):
        import asyncio

        asyncio.run(RunJob(spec).run())


def test_rejudging_a_locomo_run_grades_the_same_prompts(results: Path) -> None:
    from om_eval.experiment.rejudge import rejudge_run

    om, _, items = _runs(results)
    result = rejudge_run(results, om["run_id"], ["judge.no_verdict=wrong"], cache_dir=str(results / "cache"))
    assert result.judged == 14 and result.errors == 0
    with Catalog(results) as catalog:
        verdicts = catalog.query("SELECT question_id, label FROM judgments WHERE run_id = ? AND judge_identity LIKE "
                                 "'%no_verdict%'", [om["run_id"]])
    labels = {i["question_id"]: i["label"] for i in items if i["run_id"] == om["run_id"]}
    assert {v["question_id"]: v["label"] for v in verdicts} == labels  # unanswerable ones routed as before


def test_a_locomo_export_re_scores_to_the_runs_f1_and_corrected_numbers(results: Path, tmp_path: Path) -> None:
    from om_eval.report.export import archive_bytes, export_run, rescore_archive

    om, _, _ = _runs(results)
    path = export_run(results, om["run_id"], tmp_path / "locomo.zip")
    written = json.loads((results / "runs" / om["run_id"] / "metrics.json").read_text())
    rescored = rescore_archive(path)
    assert rescored == written and rescored["own"]["name"] == "F1" and "corrected" in rescored
    verdict = json.loads(archive_bytes(path)["metrics.json"])["comparability"]
    assert not verdict["comparable"] and "no official judge protocol" in verdict["conditions"][0]["detail"]
