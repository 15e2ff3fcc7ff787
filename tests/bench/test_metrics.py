"""LongMemEval metrics against hand-computed values, graded vs strict, bootstrap intervals, official exports."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.bench.metrics import (
    OFFICIAL_TYPE_ORDER,
    longmemeval_metrics,
    metric_report,
    read_eval_results_jsonl,
    read_hypotheses_jsonl,
    write_eval_results_jsonl,
    write_hypotheses_jsonl,
)

SSU, SSP, SSA = "single-session-user", "single-session-preference", "single-session-assistant"
MS, TR, KU = "multi-session", "temporal-reasoning", "knowledge-update"


def row(qid: str, qtype: str, label: bool | None, status: str | None = None, hypothesis: str = "h") -> dict[str, Any]:
    out: dict[str, Any] = {"question_id": qid, "question_type": qtype, "label": label, "hypothesis": hypothesis}
    if status is not None:
        out["status"] = status
    return out


#: A judged set with no knowledge-update rows.
#: SSU 3/4 (u4_abs right), SSA 2/2, SSP 1/3, MS 2/5 (m5_abs wrong), TR 1/2 (t2_abs right).
JUDGED = [
    row("u1", SSU, True), row("u2", SSU, False), row("u3", SSU, True), row("u4_abs", SSU, True),
    row("a1", SSA, True), row("a2", SSA, True),
    row("p1", SSP, False), row("p2", SSP, True), row("p3", SSP, False),
    row("m1", MS, True), row("m2", MS, False), row("m3", MS, False), row("m4", MS, True), row("m5_abs", MS, False),
    row("t1", TR, False), row("gpt4_t2_abs", TR, True),
]
#: The same set with two knowledge-update rows (1/2, k2_abs wrong): every type present.
FULL = [*JUDGED, row("k1", KU, True), row("k2_abs", KU, False)]


def test_hand_computed_metrics_with_an_empty_type() -> None:
    metrics = longmemeval_metrics(JUDGED)
    assert list(metrics["per_type"]) == list(OFFICIAL_TYPE_ORDER)
    assert metrics["per_type"] == {
        SSU: {"accuracy": 0.75, "n": 4},
        SSP: {"accuracy": 1 / 3, "n": 3},
        SSA: {"accuracy": 1.0, "n": 2},
        MS: {"accuracy": 0.4, "n": 5},
        TR: {"accuracy": 0.5, "n": 2},
        KU: {"accuracy": None, "n": 0},
    }
    assert metrics["overall"] == 9 / 16
    # macro over the five present types, summed in upstream order: 179/300
    assert metrics["task_averaged"] == (0.75 + 1 / 3 + 1.0 + 0.4 + 0.5) / 5
    assert metrics["task_averaged"] == pytest.approx(179 / 300, abs=1e-15)
    assert metrics["abstention"] == {"accuracy": 2 / 3, "n": 3}


def test_upstream_nan_behaviour_for_an_empty_type_is_available() -> None:
    metrics = longmemeval_metrics(JUDGED, empty="nan")
    assert math.isnan(metrics["per_type"][KU]["accuracy"]) and metrics["per_type"][KU]["n"] == 0
    assert math.isnan(metrics["task_averaged"])
    assert metrics["overall"] == 9 / 16 and metrics["per_type"][MS]["accuracy"] == 0.4
    nothing = longmemeval_metrics([], empty="nan")
    assert math.isnan(nothing["overall"]) and math.isnan(nothing["abstention"]["accuracy"])
    assert longmemeval_metrics([]) == {
        "per_type": {t: {"accuracy": None, "n": 0} for t in OFFICIAL_TYPE_ORDER},
        "overall": None, "task_averaged": None, "abstention": {"accuracy": None, "n": 0},
    }


def test_hand_computed_metrics_over_all_six_types() -> None:
    metrics = longmemeval_metrics(FULL)
    assert metrics["per_type"][KU] == {"accuracy": 0.5, "n": 2}
    assert metrics["overall"] == 10 / 18
    assert metrics["task_averaged"] == (0.75 + 1 / 3 + 1.0 + 0.4 + 0.5 + 0.5) / 6  # 209/360
    assert metrics["task_averaged"] == pytest.approx(209 / 360, abs=1e-15)
    assert metrics["abstention"] == {"accuracy": 0.5, "n": 4}
    assert longmemeval_metrics(FULL, empty="nan") == metrics  # identical when no type is empty
    assert longmemeval_metrics(reversed(FULL)) == metrics  # row order is irrelevant


def official_formulas(rows: list[dict[str, Any]]) -> tuple[dict[str, float], float, float, float]:
    """longmemeval-reference §2.2 written out independently: per type, micro, macro over six, abstention."""
    by_type: dict[str, list[int]] = {t: [] for t in OFFICIAL_TYPE_ORDER}
    abstention: list[int] = []
    for r in rows:
        by_type[r["question_type"]].append(1 if r["label"] else 0)
        if "_abs" in r["question_id"]:
            abstention.append(1 if r["label"] else 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # np.mean([]) is NaN upstream, with a warning
        per_type = {t: float(np.mean(v)) for t, v in by_type.items()}
        pooled = [y for v in by_type.values() for y in v]
        return per_type, float(np.mean(pooled)), float(np.mean(list(per_type.values()))), float(np.mean(abstention))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OFFICIAL_TYPE_ORDER), st.booleans(), st.booleans()), min_size=1,
                max_size=60))
def test_metrics_equal_the_official_formulas_bit_for_bit(draws: list[tuple[str, bool, bool]]) -> None:
    rows = [row(f"q{i}" + ("_abs" if abstains else ""), t, y) for i, (t, y, abstains) in enumerate(draws)]
    per_type, overall, task, abstention = official_formulas(rows)
    ours = longmemeval_metrics(rows, empty="nan")

    def same(a: float, b: float) -> bool:
        return (math.isnan(a) and math.isnan(b)) or a == b

    assert all(same(ours["per_type"][t]["accuracy"], per_type[t]) for t in OFFICIAL_TYPE_ORDER)
    assert same(ours["overall"], overall) and same(ours["task_averaged"], task)
    assert same(ours["abstention"]["accuracy"], abstention)
    assert 0 <= ours["overall"] <= 1


def test_graded_excludes_errors_and_strict_counts_them_wrong() -> None:
    rows = [*JUDGED, row("u5", SSU, None, "error"), row("m6_abs", MS, None, "not_run")]
    graded = longmemeval_metrics(rows)
    assert graded == longmemeval_metrics(JUDGED)
    strict = longmemeval_metrics(rows, errors="wrong")
    assert strict["per_type"][SSU] == {"accuracy": 3 / 5, "n": 5}
    assert strict["per_type"][MS] == {"accuracy": 2 / 6, "n": 6}
    assert strict["overall"] == 9 / 18
    assert strict["task_averaged"] == (3 / 5 + 1 / 3 + 1.0 + 2 / 6 + 0.5) / 5
    assert strict["abstention"] == {"accuracy": 2 / 4, "n": 4}
    report = metric_report(rows, n_boot=0)
    assert report["counts"] == {"total": 18, "ok": 16, "error": 1, "not_run": 1}
    assert {k: v for k, v in report["graded"].items() if k != "ci"} == graded
    assert {k: v for k, v in report["strict"].items() if k != "ci"} == strict
    assert report["graded"]["ci"]["overall"] is None  # no bootstrap asked for


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (row("x1", "single-session-everything", True), "question_type"),
        (row("x1", SSU, None), "no label and no status"),
        (row("x1", SSU, "yes"), "label must be a boolean"),  # type: ignore[arg-type]  # a text label on purpose
        (row("x1", SSU, True, "skipped"), "status"),
        (row("u1", SSU, True), "appears twice"),
    ],
)
def test_bad_rows_name_the_question(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        longmemeval_metrics([*JUDGED, bad])


def test_bootstrap_intervals_are_deterministic_and_contain_the_point_estimates() -> None:
    rows = [*FULL, row("u9", SSU, None, "error")]
    first = metric_report(rows, n_boot=400, seed=7)
    assert metric_report(rows, n_boot=400, seed=7) == first
    assert metric_report(rows, n_boot=400, seed=8)["graded"]["ci"] != first["graded"]["ci"]
    assert first["bootstrap"] == {"n_boot": 400, "seed": 7, "confidence": 0.95,
                                  "method": "percentile bootstrap, questions resampled with replacement"}
    for view in ("graded", "strict"):
        part = first[view]
        ci = part["ci"]
        for name in ("overall", "task_averaged"):
            low, high = ci[name]
            assert 0 <= low <= part[name] <= high <= 1
        low, high = ci["abstention"]
        assert low <= part["abstention"]["accuracy"] <= high
        for qtype in OFFICIAL_TYPE_ORDER:
            low, high = ci["per_type"][qtype]
            assert low <= part["per_type"][qtype]["accuracy"] <= high
    assert first["graded"]["ci"]["per_type"][SSA] == (1.0, 1.0)  # both right in every replicate


def test_bootstrap_leaves_empty_types_without_an_interval() -> None:
    report = metric_report(JUDGED, n_boot=200, seed=0)
    assert report["graded"]["ci"]["per_type"][KU] is None
    low, high = report["graded"]["ci"]["task_averaged"]
    assert low <= report["graded"]["task_averaged"] <= high
    assert metric_report([], n_boot=50)["graded"]["ci"]["overall"] is None
    with pytest.raises(ValueError, match="confidence"):
        metric_report(JUDGED, confidence=1.5)


# --------------------------------------------------------------------------------------------------- exports


def test_hypotheses_file_round_trips_in_the_official_layout(tmp_path: Path) -> None:
    rows = [row("q1", SSU, True, hypothesis="Lisbon, since March."), row("q2_abs", MS, None, "not_run"),
            {"question_id": "q3", "hypothesis": "Ünïcode ✓"}]
    rows[1]["hypothesis"] = None  # never answered: left out
    path = write_hypotheses_jsonl(tmp_path / "out" / "hyp.jsonl", rows)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines == ['{"question_id": "q1", "hypothesis": "Lisbon, since March."}',
                     '{"question_id": "q3", "hypothesis": "\\u00dcn\\u00efcode \\u2713"}']
    assert read_hypotheses_jsonl(path) == [{"question_id": "q1", "hypothesis": "Lisbon, since March."},
                                           {"question_id": "q3", "hypothesis": "Ünïcode ✓"}]
    array = tmp_path / "hyp.json"
    array.write_text(json.dumps([{"question_id": "q1", "hypothesis": "x"}]))
    assert read_hypotheses_jsonl(array) == [{"question_id": "q1", "hypothesis": "x"}]


def test_eval_results_file_has_exactly_the_official_layout_and_round_trips(tmp_path: Path) -> None:
    rows = [*FULL, row("u9", SSU, None, "error")]
    path = write_eval_results_jsonl(tmp_path / "hyp.jsonl.eval-results-gpt-4o", rows, "openai/gpt-4o-2024-08-06")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(FULL)  # the errored row is not written
    assert lines[0] == ('{"question_id": "u1", "hypothesis": "h", '
                        '"autoeval_label": {"model": "gpt-4o-2024-08-06", "label": true}}')
    assert lines[1].endswith('"label": false}}')
    for line in lines:
        entry = json.loads(line)
        assert list(entry) == ["question_id", "hypothesis", "autoeval_label"]
        assert list(entry["autoeval_label"]) == ["model", "label"]
        assert entry["autoeval_label"]["model"] == "gpt-4o-2024-08-06"  # what print_qa_metrics.py asserts
        assert isinstance(entry["autoeval_label"]["label"], bool)
    types = {r["question_id"]: r["question_type"] for r in rows}
    back = read_eval_results_jsonl(path, types)
    assert back[0] == {"question_id": "u1", "hypothesis": "h", "label": True, "judge_model": "gpt-4o-2024-08-06",
                       "status": "ok", "question_type": SSU}
    assert longmemeval_metrics(back) == longmemeval_metrics(FULL)
    with pytest.raises(ValueError, match="not in the reference"):
        read_eval_results_jsonl(path, {"u1": SSU})


def test_eval_results_keep_another_judge_model_verbatim(tmp_path: Path) -> None:
    path = write_eval_results_jsonl(tmp_path / "e.jsonl", FULL[:1], "scripted/judge")
    assert json.loads(path.read_text())["autoeval_label"] == {"model": "scripted/judge", "label": True}
