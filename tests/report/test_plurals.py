"""Counts printed in the report agree with their nouns: 1 answer, 2 answers (a user read "1 answers")."""

from __future__ import annotations

import re

import pytest

from om_eval.bench.benchmark import benchmark_named
from om_eval.report import _format as fmt
from om_eval.report.judge_panel import JudgeScores, PanelReport, floor_line, panel_markdown
from om_eval.report.recall import RecallUse, recall_markdown
from om_eval.report.tables import summary_table
from tests.report.data import make_items, make_run

LME = benchmark_named("longmemeval")
#: A count followed by a plural noun: "1 answers", "1 questions"... (only 1 takes the singular).
ONE_PLURAL = re.compile(r"(?<![\d.,/])1 (answers|questions|conditions|numeric golds|probes|rounds|items|tokens)\b")


@pytest.mark.parametrize(("n", "expected"), [(0, "0 answers"), (1, "1 answer"), (2, "2 answers")])
def test_plural(n: int, expected: str) -> None:
    assert fmt.plural(n, "answer") == expected
    assert fmt.plural(n, "reply", "replies") == expected.replace("answers", "replies").replace("answer", "reply")


def item(qid: str, gold: str | None, answer: str, label: bool, **extra: object) -> dict[str, object]:
    return {"question_id": qid, "question_type": "multi-session", "gold_answer": gold, "hypothesis": answer,
            "label": label, "judge_status": "ok", "is_abstention": False, **extra}


def test_the_floor_line_of_one_of_each() -> None:
    # one question checked (its gold in the answer, graded wrong), one numeric gold, one question skipped
    line = floor_line("r", [item("q1", "3 days", "it took 3 days", False), item("q2", None, "x", True)], LME)
    assert "of 1 numeric gold)" in line and "of 1 question," in line
    assert "1 answer holding the gold judged wrong" in line and "1 question without a gold" in line
    assert not ONE_PLURAL.search(line), line
    two = floor_line("r", [item(f"q{i}", "3 days", "it took 3 days", False) for i in range(2)], LME)
    assert "2 answers holding the gold judged wrong" in two and "of 2 questions," in two and "0 questions" in two


def test_the_panel_and_recall_sections_of_one() -> None:
    judges = tuple(JudgeScores(name, name, 1.0, {}, own) for name, own in (("a", True), ("b", False)))
    panel = panel_markdown(PanelReport("r" * 16, 1, judges, (), ()), LME)
    assert "2 judges on the same 1 answer (accuracy %)" in panel and "0 of 1 question flip" in panel
    use = RecallUse("r", questions=1, calls=1, questions_calling=1, result_tokens=1, errors={}, rounds=1,
                    rounds_cost_usd=0.0, rounds_prompt_tokens=1, per_category={"MS": (1, 1)})
    text = recall_markdown([use])
    assert "(1 over 1 question;" in text and "1 round after tool results" in text and "1 token read back" in text
    assert not ONE_PLURAL.search(panel + text), panel + text


def test_the_note_on_stray_items() -> None:
    one = summary_table([make_run("prompt=legacy")], make_items("prompt=current")[:1], n_boot=0)
    assert one.notes == ("1 item of runs not in this table was ignored.",)
