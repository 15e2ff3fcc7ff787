"""The aggregate most papers quote for LoCoMo (categories 1-4, no adversarial category 5), and the line a run prints
when an audit file is given but its corrections are off."""

from __future__ import annotations

import pytest

from om_eval.bench.benchmark import benchmark_named
from om_eval.bench.locomo import BENCHMARK, corrections_notice
from om_eval.bench.scoring import answerable_categories, answerable_metrics, answerable_title, run_metrics


def _row(qid: str, qtype: str, label: bool | None, score: float | None, status: str = "ok", **more: object) -> dict:
    return {"question_id": qid, "question_type": qtype, "label": label, "status": status, "score": score,
            "is_abstention": qtype == "adversarial", **more}


ROWS = [
    _row("q1", "multi-hop", True, 0.5),
    _row("q2", "temporal", False, 0.0),
    _row("q3", "single-hop", True, 1.0),
    _row("q4", "single-hop", None, None, status="error"),  # a failed verdict: left out, like the overall
    _row("q5", "adversarial", True, 1.0),
    _row("q6", "adversarial", True, 1.0),
]


def test_locomo_aggregates_categories_1_to_4_and_longmemeval_has_none() -> None:
    assert [c.number for c in answerable_categories(BENCHMARK)] == [1, 2, 3, 4]
    assert answerable_title(answerable_categories(BENCHMARK)) == "categories 1-4"
    assert answerable_categories(benchmark_named("longmemeval")) == ()
    assert answerable_metrics(benchmark_named("longmemeval"), ROWS) is None


def test_it_is_the_micro_average_over_the_questions_of_categories_1_to_4() -> None:
    found = answerable_metrics(BENCHMARK, ROWS)
    assert found is not None and found["title"] == "categories 1-4" and found["n"] == 3
    assert found["overall"] == pytest.approx(2 / 3)  # category 5 left out of numerator and denominator
    assert found["own"] == {"overall": pytest.approx(1.5 / 3), "n": 3}
    assert found["categories"] == ["multi-hop", "temporal", "open-domain", "single-hop"]


def test_run_metrics_carry_it_raw_and_corrected() -> None:
    rows = [*ROWS[:2], _row("q3", "single-hop", True, 1.0, corrected_answer="fixed", corrected_label=False,
                            corrected_score=0.0), *ROWS[3:]]
    metrics = run_metrics(BENCHMARK, rows)
    assert metrics["answerable"]["overall"] == pytest.approx(2 / 3)
    assert metrics["overall"] == pytest.approx(4 / 5)  # beside the overall, which keeps category 5
    assert metrics["corrected"]["answerable"]["overall"] == pytest.approx(1 / 3)
    assert metrics["corrected"]["answerable"]["own"]["overall"] == pytest.approx(0.5 / 3)


def test_an_audit_path_without_corrections_is_said_once() -> None:
    line = corrections_notice({"audit_path": "/a/errors.json", "corrections": None}, environ={})
    assert line is not None and "OFF" in line and "dataset.corrections=locomo_audit" in line
    assert "/b/errors.json" in (corrections_notice({}, environ={"LOCOMO_AUDIT_PATH": "/b/errors.json"}) or "")
    assert corrections_notice({"audit_path": "/a", "corrections": "locomo_audit"}, environ={}) is None
    assert corrections_notice({"corrections": None}, environ={}) is None


def test_loading_prints_the_notice(tmp_path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from om_eval.bench.locomo import load_locomo_run
    from tests.locomo_shaped import write_audit, write_locomo_shaped

    monkeypatch.delenv("LOCOMO_AUDIT_PATH", raising=False)
    path, audit = write_locomo_shaped(tmp_path, conversations=1), write_audit(tmp_path, [])
    loaded = load_locomo_run({"path": str(path), "audit_path": str(audit)})
    assert loaded.extras["corrections"] is None
    assert capsys.readouterr().err.count("audit corrections are OFF") == 1
