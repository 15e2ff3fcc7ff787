"""Paired comparison: hand-computed deltas and McNemar p-values, pairing counts, deterministic intervals."""

from __future__ import annotations

import io
import math
import re
from fractions import Fraction
from statistics import NormalDist

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from om_eval.report.compare import comparison_to_markdown, comparison_to_rich, holm, mcnemar, paired_comparison
from tests.golden import assert_golden
from tests.report.data import KU, LOCAL_JUDGE, MS, SSA, SSP, SSU, TR


def item(qid: str, qtype: str, label: bool | None, run: str) -> dict:
    return {"run_id": run, "question_id": qid, "question_type": qtype, "label": label,
            "judge_status": "ok" if label is not None else "error"}


def pair_items() -> tuple[list[dict], list[dict]]:
    """Paired: SSU 5 both right (ssu5_abs); MS 10: 3 both right, 1 both wrong, 1 A only, 5 B only;
    TR 10: 4 both right, 2 both wrong, 1 A only, 3 B only. Overall: 12 / 3 / 2 / 8 of 25.

    Left out: A's ssp1 (label None; B judged it), A's ku1 (not in B), A's ku2 (B's label None), B's ssa1.
    """
    a, b = [], []

    def add(prefix: str, qtype: str, outcomes: list[tuple[bool, bool]]) -> None:
        for i, (ya, yb) in enumerate(outcomes, 1):
            qid = f"{prefix}{i}" + ("_abs" if prefix == "ssu" and i == 5 else "")
            a.append(item(qid, qtype, ya, "A"))
            b.append(item(qid, qtype, yb, "B"))

    add("ssu", SSU, [(True, True)] * 5)
    add("ms", MS, [(True, True)] * 3 + [(False, False)] + [(True, False)] + [(False, True)] * 5)
    add("tr", TR, [(True, True)] * 4 + [(False, False)] * 2 + [(True, False)] + [(False, True)] * 3)
    a += [item("ssp1", SSP, None, "A"), item("ku1", KU, True, "A"), item("ku2", KU, False, "A")]
    b += [item("ssp1", SSP, True, "B"), item("ku2", KU, None, "B"), item("ssa1", SSA, True, "B")]
    return a, b


@pytest.fixture(scope="module")
def comparison():
    a, b = pair_items()
    return paired_comparison(a, b, n_boot=1000, seed=0, label_a="current", label_b="legacy")


def test_mcnemar_hand_values():
    assert mcnemar(8, 2) == (0.109375, "exact")  # 2 * (C(10,0) + C(10,1) + C(10,2)) / 2**10
    assert mcnemar(2, 8) == (0.109375, "exact")
    assert mcnemar(0, 0) == (1.0, "none")
    assert mcnemar(3, 3) == (1.0, "exact")
    assert mcnemar(0, 5) == (pytest.approx(2 / 32), "exact")
    # 30 discordant pairs: chi-square with continuity correction, (|20 - 10| - 1)^2 / 30 = 2.7
    p, method = mcnemar(10, 20)
    assert method == "chi2-cc"
    assert p == pytest.approx(2 * (1 - NormalDist().cdf(math.sqrt(2.7))), rel=1e-9)
    assert mcnemar(24, 0)[1] == "exact" and mcnemar(25, 0)[1] == "chi2-cc"
    with pytest.raises(ValueError):
        mcnemar(-1, 2)


@given(st.integers(0, 24), st.integers(0, 24))
def test_exact_mcnemar_matches_the_binomial_definition(b, c):
    n = b + c
    if n == 0 or n >= 25:
        return
    probs = [Fraction(math.comb(n, k), 2**n) for k in range(n + 1)]
    observed = probs[b]
    two_sided = min(Fraction(1), sum(p for p in probs if p <= observed))  # symmetric: same as doubling the tail
    p, _ = mcnemar(b, c)
    assert p == pytest.approx(float(two_sided), abs=1e-12)


@given(st.integers(0, 200), st.integers(0, 200))
def test_mcnemar_is_a_symmetric_probability(b, c):
    p, _ = mcnemar(b, c)
    assert 0.0 <= p <= 1.0
    assert p == mcnemar(c, b)[0]


def test_holm():
    assert holm([0.01, None, 0.04, 0.03]) == [pytest.approx(0.03), None, pytest.approx(0.06), pytest.approx(0.06)]
    assert holm([]) == []


def test_pairing_counts(comparison):
    c = comparison
    assert c.n_paired == 25
    assert (c.unjudged_a, c.unjudged_b) == (1, 1)
    assert (c.unmatched_a, c.unmatched_b) == (2, 2)


def test_deltas_and_mcnemar_match_hand_computation(comparison):
    overall = comparison.row("overall")
    assert (overall.both_right, overall.both_wrong, overall.a_only, overall.b_only) == (12, 3, 2, 8)
    assert (overall.acc_a, overall.acc_b) == (pytest.approx(14 / 25), pytest.approx(20 / 25))
    assert overall.delta == pytest.approx(6 / 25)
    assert overall.p_value == 0.109375 and overall.test == "exact"
    ms, tr, ssu = comparison.row(MS), comparison.row(TR), comparison.row(SSU)
    assert (ms.acc_a, ms.acc_b, ms.delta) == (pytest.approx(0.4), pytest.approx(0.8), pytest.approx(0.4))
    assert ms.p_value == pytest.approx(14 / 64)  # 2 * (1 + 6) / 2**6
    assert (tr.delta, tr.p_value) == (pytest.approx(0.2), pytest.approx(10 / 16))
    assert (ssu.delta, ssu.p_value, ssu.test) == (0.0, 1.0, "none")
    # Holm over the three types with pairs: 3 * 14/64, then max(., 2 * 10/16) capped at 1
    assert ms.p_holm == pytest.approx(3 * 14 / 64) and tr.p_holm == 1.0 and ssu.p_holm == 1.0
    empty = comparison.row(KU)
    assert empty.n == 0 and empty.delta is None and empty.ci is None and empty.p_value is None
    task = comparison.row("task_averaged")
    assert task.acc_a == pytest.approx((1 + 0.4 + 0.5) / 3) and task.acc_b == pytest.approx((1 + 0.8 + 0.7) / 3)
    assert task.delta == pytest.approx(0.2) and task.p_value is None
    abstention = comparison.row("abstention")
    assert (abstention.n, abstention.delta) == (1, 0.0)


def test_intervals_contain_the_estimate_and_are_deterministic(comparison):
    for row in comparison.rows:
        if row.delta is not None:
            assert row.ci is not None and row.ci[0] - 1e-12 <= row.delta <= row.ci[1] + 1e-12, row.name
    assert comparison.row(SSU).ci == (0.0, 0.0)  # no discordant pair: every replicate's delta is zero
    assert comparison.row("overall").ci[0] < 0.24 < comparison.row("overall").ci[1]
    a, b = pair_items()
    again = paired_comparison(a[::-1], b, n_boot=1000, seed=0, label_a="current", label_b="legacy")
    assert again == comparison
    other = paired_comparison(a, b, n_boot=1000, seed=1)
    assert other.row("overall").ci != comparison.row("overall").ci


def test_markdown_golden(comparison):
    text = comparison_to_markdown(comparison)
    assert "Paired on 25 questions" in text and "1 unjudged" in text
    assert_golden("report_comparison.md", text)


def test_rich_rendering(comparison):
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(comparison_to_rich(comparison))
    text = console.export_text()
    assert "Paired comparison: legacy vs current" in text and "0.1094" in text


def test_piped_rich_rendering_fits_80_columns_without_splitting_a_word(comparison, monkeypatch):
    from om_eval.report._fit import FittedTable

    monkeypatch.delenv("COLUMNS", raising=False)
    renderable = comparison_to_rich(comparison)
    console = Console(file=io.StringIO())  # not a terminal, as when piped
    console.print(renderable)
    text = console.file.getvalue()  # type: ignore[attr-defined]  # the StringIO given above
    assert console.width == 80 and max(len(line) for line in text.splitlines()) <= 80, text
    (fitted,) = [part for part in renderable.renderables if isinstance(part, FittedTable)]
    words = {w for column in (*fitted.keys, *fitted.data) for cell in (column.header, *column.cells)
             for w in cell.split()}
    printed = {w for line in text.splitlines() if "│" in line or "┃" in line for w in re.split(r"[│┃\s]+", line) if w}
    assert printed <= words, sorted(printed - words)
    assert "(continued)" in text and "McNemar" in printed and "0.1094" in printed


def test_judge_difference_is_flagged():
    a, b = pair_items()
    run_a = {"run_id": "A", "label": "current", "judge_mode": "official", "official": True, "judge_model": "x"}
    run_b = {"run_id": "B", "label": "legacy", "judge_mode": "house", "official": False, "judge_model": "x"}
    c = paired_comparison(a, b, n_boot=10, run_a=run_a, run_b=run_b)
    assert (c.label_a, c.label_b) == ("current", "legacy")
    assert len(c.warnings) == 2 and "judge_mode" in c.warnings[0]
    assert "WARNING" in comparison_to_markdown(c).split("Paired on")[0]


def test_an_untrusted_judge_is_flagged():
    a, b = pair_items()
    run_a = {"run_id": "A", "label": "current", "judge_mode": "house", "official": False,
             "judge_model": LOCAL_JUDGE}
    run_b = {**run_a, "run_id": "B", "label": "legacy"}
    c = paired_comparison(a, b, n_boot=10, run_a=run_a, run_b=run_b)
    assert [w.split(":")[0] for w in c.warnings] == ["⚠ local judge", "⚠ local judge"]
    assert LOCAL_JUDGE in c.warnings[0] and "(current)" in c.warnings[0] and "(legacy)" in c.warnings[1]
    assert "⚠ local judge" in comparison_to_markdown(c).split("Paired on")[0]
    hosted = {**run_a, "judge_model": "gpt-4o-2024-08-06"}
    assert not paired_comparison(a, b, n_boot=10, run_a=hosted, run_b={**hosted, "run_id": "B"}).warnings


def test_invalid_pairs_are_refused():
    a, b = pair_items()
    with pytest.raises(ValueError, match="twice"):
        paired_comparison(a + a[:1], b)
    with pytest.raises(ValueError, match="several runs"):
        paired_comparison(a + [item("x1", KU, True, "C")], b)
    with pytest.raises(ValueError, match="not the same question"):
        paired_comparison(a, [{**b[0], "question_type": SSP}] + b[1:])


def test_nothing_in_common():
    c = paired_comparison([item("a1", SSU, True, "A")], [item("b1", SSU, True, "B")], n_boot=10)
    assert c.n_paired == 0 and c.row("overall").delta is None and c.row("overall").p_value is None
    assert "Paired on 0 questions" in comparison_to_markdown(c)


def test_pairing_runs_on_different_datasets_is_flagged() -> None:
    from om_eval.report.compare import paired_comparison

    items = [{"question_id": "q1", "question_type": "multi-session", "label": True, "judge_status": "ok"}]
    run_a = {"run_id": "a", "judge_mode": "house", "official": False, "judge_model": "m", "dataset_sha256": "aaa"}
    run_b = {**run_a, "run_id": "b", "dataset_sha256": "bbb"}
    comparison = paired_comparison(items, items, n_boot=20, run_a=run_a, run_b=run_b)
    assert any("different datasets" in w for w in comparison.warnings)
    assert not paired_comparison(items, items, n_boot=20, run_a=run_a, run_b={**run_a, "run_id": "b"}).warnings
