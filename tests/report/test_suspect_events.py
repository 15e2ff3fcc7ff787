"""Observer replies that repeat old observations show up in ``om-eval show`` and under the report table."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from om_eval.experiment.app import run_from_config
from om_eval.llm.providers import register_scripted
from om_eval.report.detail import question_detail
from om_eval.report.show import render_detail
from om_eval.report.table_text import to_markdown
from om_eval.report.tables import (
    summary_table,
    suspect_counts,
    with_suspect_note,
)
from om_eval.store import Catalog
from om_eval.testing.scripted.model import ScriptedModel
from tests.runs import compose_run


@pytest.fixture(scope="module")
def repeating_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A smoke run whose Observer copies the previous observations on every call that has some."""
    results = tmp_path_factory.mktemp("suspect")
    name = register_scripted("repeating-observer", ScriptedModel(faults={"observer": ["repeat"] * 10_000}))
    summary = run_from_config(compose_run(results, f"models.observer.model={name}"))
    return results, summary["run_id"]


def _suspect_events(results: Path) -> list[dict]:
    with Catalog(results) as catalog:
        return catalog.query("SELECT memory_key, question_id, seq, kind, detail FROM om_events "
                             "WHERE kind = 'observation_suspect' ORDER BY question_id, seq")


def test_show_lists_the_suspect_replies_of_a_question(repeating_run: tuple[Path, str]) -> None:
    results, run_id = repeating_run
    events = _suspect_events(results)
    assert events, "the repeating observer should have left observation_suspect events"
    with Catalog(results) as catalog:
        detail = question_detail(catalog, run_id, events[0]["question_id"])
    console = Console(record=True, width=240, color_system=None)
    render_detail(detail, console)
    text = console.export_text()
    assert "Observer warnings" in text
    assert "observation_suspect" in text and "repeat earlier observations" in text


def test_the_report_table_counts_them_per_run(repeating_run: tuple[Path, str]) -> None:
    results, run_id = repeating_run
    with Catalog(results) as catalog:
        runs, items = catalog.runs(), catalog.items()
    counts = suspect_counts(items, _suspect_events(results))
    assert counts == {run_id: len(_suspect_events(results))}
    table = with_suspect_note(summary_table(runs, items, n_boot=50), counts)
    markdown = to_markdown(table)
    assert f"⚠ {counts[run_id]} observer repl" in markdown and "(observation_suspect; " in markdown


def test_no_note_without_suspect_events() -> None:
    table = summary_table([], [], n_boot=10)
    assert with_suspect_note(table, {}) is table
    assert suspect_counts([{"run_id": "r", "memory_key": "k", "question_id": "q"}],
                          [{"memory_key": "k", "question_id": "other", "seq": 1, "kind": "observation_suspect"}]) == {}


def test_om_eval_report_prints_the_note(repeating_run: tuple[Path, str], tmp_path: Path) -> None:
    from om_eval.cli import main

    results, _ = repeating_run
    out = tmp_path / "report.md"
    assert main(["report", "--results", str(results), "--markdown", str(out)]) == 0
    assert "looked like repeats of old observations (observation_suspect; " in out.read_text(encoding="utf-8")
