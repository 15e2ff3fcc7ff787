"""The memory-systems sweep of the smoke experiment, end to end: ``om-eval run memory=...`` for every built-in
system (and Mastra's recall at top 20), then the report, the plots and the view read from its results folder.

The sweep is run once for the module (seconds: the mini set and the scripted model). The scripted model costs $0,
so the split of the spend is checked on calls and tokens here; :mod:`tests.report.test_systems` checks dollars.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from om_eval.cli import main
from om_eval.experiment.app import run_from_config
from om_eval.memory.system import INGEST_STAGES
from om_eval.report.plots import categories_figure
from om_eval.report.plotting.scatter import MEMORY_CONTEXT, context_axis
from om_eval.report.systems import stage_usage
from om_eval.report.table_text import to_csv, to_markdown
from om_eval.report.tables import summary_table
from om_eval.report.view import write_view
from om_eval.store import Catalog
from tests.report.test_systems import hand_recall
from tests.runs import compose_run

#: memory= choice -> the name the report gives it
NAMES = {
    "om": "OM",
    "simple_om": "simple OM",
    "rag_mastra": "RAG (Mastra recall, top 10)",
    "rag_mastra_top20": "RAG (Mastra recall, top 20)",
    "rag_lme": "RAG (LongMemEval BM25, session, top 10)",
    "full_context": "baseline: full context",
    "oracle": "baseline: oracle",
}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("memory-sweep")
    for memory in NAMES:
        run_from_config(compose_run(results, f"memory={memory}", f"run.label={memory}"))
    return results


@pytest.fixture(scope="module")
def stored(sweep: Path) -> dict[str, Any]:
    with Catalog(sweep) as catalog:
        runs = catalog.runs()
        ids = [r["run_id"] for r in runs]
        return {"runs": runs, "items": catalog.items(ids), "usage": stage_usage(catalog, ids),
                "calls": catalog.query("SELECT run_id, stage, cost_usd, prompt_tokens FROM llm_calls")}


@pytest.fixture(scope="module")
def table(stored: dict[str, Any]):
    return summary_table(stored["runs"], stored["items"], calls=stored["usage"], n_boot=20)


def rows(table) -> dict[str, Any]:
    return {row.label: row for row in table.rows}


def test_each_run_is_named_and_stores_its_budget(table) -> None:
    found = rows(table)
    assert {label: row.memory for label, row in found.items()} == NAMES
    assert found["rag_mastra_top20"].budget == {"top_k": 20, "message_range": 2}
    assert found["rag_lme"].budget["top_k"] == 10 and "context_tokens" in found["full_context"].budget
    records = {r["label"]: r for r in csv.DictReader(io.StringIO(to_csv(table)))}
    assert {label: r["memory_name"] for label, r in records.items()} == NAMES
    assert records["oracle"]["memory"] == "baseline:oracle" and records["rag_lme"]["memory"] == "rag_lme"


def test_context_tokens_are_the_items_mean_for_every_system(table, stored) -> None:
    for label, row in rows(table).items():
        own = [i["context_tokens"] for i in stored["items"] if i["run_id"] == row.run_id]
        assert own and all(isinstance(value, int) for value in own), label  # every system records it now
        assert row.mean_context_tokens == pytest.approx(sum(own) / len(own))
    assert context_axis(table) is MEMORY_CONTEXT
    found = rows(table)
    assert found["oracle"].mean_context_tokens < found["full_context"].mean_context_tokens  # evidence sessions only


def test_the_calls_split_into_ingest_answer_and_judge(table, stored) -> None:
    for label, row in rows(table).items():
        own = [c for c in stored["calls"] if c["run_id"] == row.run_id]
        parts = {group: row.stage(group) for group in ("ingest", "answer", "judge")}
        assert sum(p.calls for p in parts.values()) == len(own), label
        assert sum(p.prompt_tokens for p in parts.values()) == sum(c["prompt_tokens"] or 0 for c in own)
        assert sum(p.cost_usd for p in parts.values()) == pytest.approx(sum(c["cost_usd"] or 0.0 for c in own))
        assert parts["ingest"].calls == sum(c["stage"] in INGEST_STAGES for c in own), label
        assert parts["judge"].calls == sum(c["stage"] == "judge" for c in own) == row.n_items
    found = rows(table)
    assert found["om"].stage("ingest").calls > 0 and found["simple_om"].stage("ingest").calls > 0  # observers
    assert found["rag_mastra"].stage("ingest").calls > 0  # embeddings, in the retrieval stage
    assert found["rag_lme"].stage("ingest").calls == 0 == found["full_context"].stage("ingest").calls  # BM25, reader


def test_recall_is_reported_where_it_applies(table, stored) -> None:
    for label, row in rows(table).items():
        own = [i for i in stored["items"] if i["run_id"] == row.run_id]
        if not label.startswith("rag_"):
            assert row.recall is None and all(i["retrieval"] is None for i in own), label
            continue
        value, n, per_type = hand_recall(own, row.budget["top_k"])
        assert row.recall is not None and (row.recall.k, row.recall.value, row.recall.n) == (
            row.budget["top_k"], pytest.approx(value), n)
        for qtype, hits in per_type.items():
            assert row.recall.per_type[qtype] == (pytest.approx(sum(hits) / len(hits)), len(hits))
        abstention = [i for i in own if i["is_abstention"]]
        assert abstention and all("metrics" not in json.loads(i["retrieval"]) for i in abstention)
        wrong = sum(1 for i in own if i["label"] is False and "metrics" in json.loads(i["retrieval"]))
        assert row.recall.retrieval_misses + row.recall.reading_misses == wrong
    assert "### Retrieval: recall_any@k at each run's own k" in to_markdown(table)


def test_the_report_warns_once_that_the_two_mastra_budgets_differ(sweep: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    markdown = sweep / "report.md"
    assert main(["report", "--results", str(sweep), "--n-boot", "20", "--markdown", str(markdown)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    line = "budgets differ: rag_mastra top_k 10, rag_mastra_top20 top_k 20 — their accuracies are not like for like."
    assert out.count("budgets differ") == 1 and line in out
    text = markdown.read_text(encoding="utf-8")
    assert text.count(line) == 1
    assert text.index("## Comparability with published numbers") < text.index(line) < text.index("## Judge-free")
    others = [label for label in NAMES if label != "rag_mastra_top20"]
    assert main(["report", "--results", str(sweep), "--n-boot", "20", "--runs", *others]) == 0
    assert "budgets differ" not in capsys.readouterr().out


def test_plots_and_view_name_every_system(table, sweep: Path, tmp_path: Path) -> None:
    legend = [t.get_text().replace("\n", " ") for t in categories_figure(table).legends[0].get_texts()]
    for label, name in NAMES.items():
        suffix = f"[{name.removeprefix('baseline: ').replace(' ', '-')} reader]" if label in (
            "full_context", "oracle") else f"[{name}]"
        assert any(entry.startswith(f"{label} [") and suffix in entry for entry in legend), (label, legend)
    page = write_view(sweep, tmp_path / "view.html", n_boot=20).read_text(encoding="utf-8")
    assert all(f">{name}</span>" in page for name in NAMES.values())
    assert "<th>context tokens / question</th>" in page and "budgets differ: rag_mastra top_k 10" in page
