"""Paired comparison of two runs on the same questions: per-type deltas, paired bootstrap CIs, McNemar's test.

Why paired: variants of a sweep answer the same questions, so the question-to-question variation is shared.
Comparing two independent intervals throws that away; resampling *question ids jointly* and testing the
discordant pairs uses it (lessons-from-peers §6.6).

* **Pairing.** Rows whose ``label`` is ``None`` (judge error, not run) are left out first, on each side, and
  counted; the remaining rows are paired by ``question_id`` and the unmatched ones are counted too. Nothing
  unjudged is ever counted as wrong here: a judge outage on one side must not look like a regression.
* **Point estimates** come from :func:`om_eval.bench.metrics.longmemeval_metrics` on each side's paired rows;
  the delta is ``b - a`` (positive: B is better).
* **Intervals.** Percentile bootstrap: the paired questions are resampled with replacement, the same draw
  for both runs, and each statistic's delta is recomputed per replicate (a type that drew no rows is left
  out of that replicate, as in :mod:`om_eval.bench.metrics`). Seeded, so deterministic.
* **McNemar's test** on the discordant pairs (``a_only``: A right and B wrong; ``b_only``: the reverse): the
  exact two-sided binomial test when ``a_only + b_only < 25``, otherwise the chi-square statistic with
  continuity correction, ``(max(|b - c| - 1, 0))^2 / (b + c)``, whose 1-dof survival function is
  ``erfc(sqrt(x / 2))``. No discordant pairs: p = 1. Per-type p-values are also Holm-adjusted over the
  types that have pairs (six tests at once inflate false positives).
* **Untrusted judges.** When a run's judge has a caveat (:func:`om_eval.report.tables.judge_caveat`: a small
  local model, the scripted test model, or none recorded) the comparison warns about it: a delta between
  verdicts that are often wrong measures the judge as much as the memory.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from om_eval.bench.benchmark import (
    DEFAULT_BENCHMARK,
    Benchmark,
    benchmark_of_run,
    default_benchmark,
)
from om_eval.bench.metrics import (
    OFFICIAL_TYPE_ORDER,
    category_metrics,
    percentile_interval,
)
from om_eval.report import _format as fmt
from om_eval.report.tables import CAVEAT_MARK, judge_caveat

__all__ = ["Comparison", "ComparisonRow", "comparison_to_markdown", "comparison_to_rich", "holm", "mcnemar",
           "paired_comparison"]

#: Discordant-pair count from which the chi-square approximation replaces the exact binomial test.
EXACT_BELOW = 25


def mcnemar(a_only: int, b_only: int) -> tuple[float, str]:
    """McNemar's two-sided p-value for the discordant counts, and the method used.

    >>> mcnemar(2, 8)
    (0.109375, 'exact')
    """
    if a_only < 0 or b_only < 0:
        raise ValueError(f"discordant counts must be >= 0, got {a_only}, {b_only}")
    n = a_only + b_only
    if n == 0:
        return 1.0, "none"
    if n < EXACT_BELOW:
        k = min(a_only, b_only)
        tail = sum(math.comb(n, i) for i in range(k + 1))
        return min(1.0, 2 * tail / 2**n), "exact"
    statistic = max(abs(a_only - b_only) - 1, 0) ** 2 / n
    return math.erfc(math.sqrt(statistic / 2.0)), "chi2-cc"


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm–Bonferroni adjusted p-values (``None`` entries are not tests and stay ``None``)."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(tested)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class ComparisonRow:
    """One statistic (a type, ``abstention``, ``overall`` or ``task_averaged``) of a paired comparison."""

    name: str
    n: int
    acc_a: float | None
    acc_b: float | None
    delta: float | None
    ci: tuple[float, float] | None
    both_right: int | None = None
    both_wrong: int | None = None
    a_only: int | None = None
    b_only: int | None = None
    p_value: float | None = None
    test: str | None = None
    p_holm: float | None = None


@dataclass(frozen=True)
class Comparison:
    """Run B against run A on their shared judged questions."""

    label_a: str
    label_b: str
    n_paired: int
    unjudged_a: int
    """Rows of A left out because their label is None."""
    unjudged_b: int
    unmatched_a: int
    """Judged rows of A whose question B did not judge (or does not have)."""
    unmatched_b: int
    rows: tuple[ComparisonRow, ...]
    n_boot: int
    seed: int
    confidence: float
    warnings: tuple[str, ...] = ()
    benchmark: Benchmark = dataclasses.field(default_factory=default_benchmark)
    """Whose categories the rows are."""

    def row(self, name: str) -> ComparisonRow:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(name)


def _judged(items: Iterable[Mapping[str, Any]], side: str) -> tuple[dict[str, Mapping[str, Any]], int]:
    judged: dict[str, Mapping[str, Any]] = {}
    seen: set[str] = set()
    run_ids: set[str] = set()
    unjudged = 0
    for item in items:
        qid = item.get("question_id")
        if not isinstance(qid, str) or not qid:
            raise ValueError(f"run {side}: every item needs a question_id; got {item!r}")
        if qid in seen:
            raise ValueError(f"run {side}: question {qid} appears twice")
        seen.add(qid)
        if item.get("run_id") is not None:
            run_ids.add(str(item["run_id"]))
        if item.get("label") is None:
            unjudged += 1
        else:
            judged[qid] = item
    if len(run_ids) > 1:
        raise ValueError(f"run {side}: items of several runs ({', '.join(sorted(run_ids))}); pass one run per side")
    return judged, unjudged


def _paired_bootstrap(ya: np.ndarray, yb: np.ndarray, types: np.ndarray, abstain: np.ndarray, n_boot: int,
                      seed: int, confidence: float, categories: Sequence[str] = OFFICIAL_TYPE_ORDER,
                      ) -> dict[str, tuple[float, float] | None]:
    names = [*categories, "abstention", "overall", "task_averaged"]
    if ya.size == 0 or n_boot == 0:
        return dict.fromkeys(names)
    draws = np.random.default_rng(seed).integers(0, ya.size, size=(n_boot, ya.size))
    d, t = (yb - ya)[draws], types[draws]

    def mean_delta(mask: np.ndarray) -> np.ndarray:
        count = mask.sum(axis=1)
        return np.where(count > 0, (d * mask).sum(axis=1) / np.maximum(count, 1), np.nan)

    per_type = np.stack([mean_delta(t == k) for k in range(len(categories))], axis=1)
    present = [k for k in range(len(categories)) if (types == k).any()]
    columns = per_type[:, present]
    counts = (~np.isnan(columns)).sum(axis=1)
    with np.errstate(invalid="ignore"):
        task = np.where(counts > 0, np.nansum(columns, axis=1) / np.maximum(counts, 1), np.nan)
    out = {name: percentile_interval(per_type[:, k], confidence) for k, name in enumerate(categories)}
    out["abstention"] = percentile_interval(mean_delta(abstain[draws]), confidence)
    out["overall"] = percentile_interval(d.mean(axis=1), confidence)
    out["task_averaged"] = percentile_interval(task, confidence)
    return out


def _counts(pairs: Sequence[tuple[int, int]]) -> dict[str, Any]:
    both_right = sum(1 for a, b in pairs if a and b)
    both_wrong = sum(1 for a, b in pairs if not a and not b)
    a_only = sum(1 for a, b in pairs if a and not b)
    b_only = sum(1 for a, b in pairs if b and not a)
    p, test = mcnemar(a_only, b_only) if pairs else (None, None)
    return {"both_right": both_right, "both_wrong": both_wrong, "a_only": a_only, "b_only": b_only,
            "p_value": p, "test": test}


def _sub(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _setup_warnings(run_a: Mapping[str, Any] | None, run_b: Mapping[str, Any] | None) -> tuple[str, ...]:
    if run_a is None or run_b is None:
        return ()
    out = []
    for side, run in (("A", run_a), ("B", run_b)):
        caveat = judge_caveat(run)
        if caveat:
            name = run.get("label") or run.get("run_id") or side
            judge = run.get("judge_model") or "an unrecorded model"
            out.append(f"{CAVEAT_MARK} {caveat}: run {side} ({name}) was judged by {judge}; its verdicts are not "
                       "trustworthy, so neither are these deltas.")
    for field in ("judge_mode", "official", "judge_model"):
        if run_a.get(field) != run_b.get(field):
            out.append(f"The runs differ in {field} ({run_a.get(field)!r} vs {run_b.get(field)!r}): the deltas "
                       "mix a judge difference with a memory difference.")
    for field in ("dataset_sha256", "dataset_name"):
        a, b = run_a.get(field), run_b.get(field)
        if a and b and a != b:
            out.append(f"The runs used different datasets ({field} {a!r} vs {b!r}): questions with the same id "
                       "may not be the same question, so the pairing is not meaningful.")
            break
    return tuple(out)


def paired_comparison(
    items_a: Iterable[Mapping[str, Any]],
    items_b: Iterable[Mapping[str, Any]],
    *,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    label_a: str | None = None,
    label_b: str | None = None,
    run_a: Mapping[str, Any] | None = None,
    run_b: Mapping[str, Any] | None = None,
) -> Comparison:
    """Compare run B with run A on the questions both judged.

    Args:
        items_a, items_b: item rows of one run each (``question_id``, ``question_type``, ``label``).
        n_boot, seed, confidence: the paired percentile bootstrap.
        label_a, label_b: names in the rendering (default: the runs' labels, else ``A`` and ``B``).
        run_a, run_b: the runs' rows, optional; when their judge mode, official flag or judge model differ
            the comparison carries a warning.

    Returns:
        A :class:`Comparison` with rows for the six types, ``abstention``, ``overall`` and ``task_averaged``.

    Raises:
        ValueError: duplicate question ids, items of several runs on one side, or a question whose type
        differs between the runs.
    """
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    judged_a, unjudged_a = _judged(items_a, "A")
    judged_b, unjudged_b = _judged(items_b, "B")
    shared = sorted(set(judged_a) & set(judged_b))
    for qid in shared:
        if judged_a[qid].get("question_type") != judged_b[qid].get("question_type"):
            raise ValueError(f"question {qid}: type {judged_a[qid].get('question_type')!r} in A but "
                             f"{judged_b[qid].get('question_type')!r} in B; not the same question")

    benchmark = benchmark_of_run(run_a or {})
    if run_b is not None and benchmark_of_run(run_b).name != benchmark.name:
        raise ValueError(f"run A is scored on {benchmark.title}, run B on {benchmark_of_run(run_b).title}: a paired "
                         "comparison needs the same questions")
    categories = benchmark.category_keys
    by_id = benchmark.name == DEFAULT_BENCHMARK

    def unanswerable(qid: str) -> bool:
        flag = judged_a[qid].get("is_abstention")
        return "_abs" in qid if by_id or flag is None else bool(flag)

    def rows(judged: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
        return [{"question_id": q, "question_type": judged[q].get("question_type"), "label": judged[q]["label"],
                 "status": "ok", "is_abstention": unanswerable(q)} for q in shared]

    metrics_a, metrics_b = category_metrics(rows(judged_a), categories), category_metrics(rows(judged_b), categories)
    ya = np.array([int(bool(judged_a[q]["label"])) for q in shared], dtype=float)
    yb = np.array([int(bool(judged_b[q]["label"])) for q in shared], dtype=float)
    types = np.array([categories.index(judged_a[q]["question_type"]) for q in shared], dtype=np.int64)
    abstain = np.array([unanswerable(q) for q in shared], dtype=bool)
    cis = _paired_bootstrap(ya, yb, types, abstain, n_boot, seed, confidence, categories)
    pairs = list(zip(ya.astype(int), yb.astype(int)))

    out: list[ComparisonRow] = []
    for k, name in enumerate(categories):
        acc_a, acc_b = metrics_a["per_type"][name]["accuracy"], metrics_b["per_type"][name]["accuracy"]
        subset = [p for p, t in zip(pairs, types) if t == k]
        out.append(ComparisonRow(name, len(subset), acc_a, acc_b, _sub(acc_b, acc_a), cis[name], **_counts(subset)))
    adjusted = holm([r.p_value for r in out])
    out = [replace(r, p_holm=p) for r, p in zip(out, adjusted)]
    if benchmark.abstention_row:
        subset = [p for p, a in zip(pairs, abstain) if a]
        abs_a, abs_b = metrics_a["abstention"]["accuracy"], metrics_b["abstention"]["accuracy"]
        out.append(ComparisonRow("abstention", len(subset), abs_a, abs_b, _sub(abs_b, abs_a), cis["abstention"],
                                 **_counts(subset)))
    out.append(ComparisonRow("overall", len(pairs), metrics_a["overall"], metrics_b["overall"],
                             _sub(metrics_b["overall"], metrics_a["overall"]), cis["overall"], **_counts(pairs)))
    out.append(ComparisonRow("task_averaged", len(pairs), metrics_a["task_averaged"], metrics_b["task_averaged"],
                             _sub(metrics_b["task_averaged"], metrics_a["task_averaged"]), cis["task_averaged"]))
    return Comparison(
        label_a=label_a or (str(run_a.get("label")) if run_a and run_a.get("label") else "A"),
        label_b=label_b or (str(run_b.get("label")) if run_b and run_b.get("label") else "B"),
        n_paired=len(shared), unjudged_a=unjudged_a, unjudged_b=unjudged_b,
        unmatched_a=len(judged_a) - len(shared), unmatched_b=len(judged_b) - len(shared),
        rows=tuple(out), n_boot=n_boot, seed=seed, confidence=confidence, warnings=_setup_warnings(run_a, run_b),
        benchmark=benchmark,
    )


# ------------------------------------------------------------------------------------------------ rendering

_ROW_NAMES = {"abstention": "abstention", "overall": "overall", "task_averaged": "task-avg"}



def _header(c: Comparison) -> list[str]:
    return ["", "n", c.label_a, c.label_b, f"Δ ({c.label_b} − {c.label_a})", f"{100 * c.confidence:g}% CI",
            "both right", "both wrong", f"{c.label_a} only", f"{c.label_b} only", "McNemar p", "test", "p (Holm)"]


def _cells(row: ComparisonRow, benchmark: Benchmark) -> list[str]:
    def count(v: int | None) -> str:
        return fmt.MISSING if v is None else str(v)

    name = _ROW_NAMES.get(row.name) or benchmark.category(row.name).short
    return [name, str(row.n), fmt.pct(row.acc_a), fmt.pct(row.acc_b), fmt.signed_pct(row.delta),
            fmt.interval(row.ci, signed=True) or fmt.MISSING, count(row.both_right), count(row.both_wrong),
            count(row.a_only), count(row.b_only), fmt.p_value(row.p_value), row.test or fmt.MISSING,
            fmt.p_value(row.p_holm)]


def _explanation(c: Comparison) -> list[str]:
    return [
        f"Paired on {fmt.plural(c.n_paired, 'question')} judged in both runs. Left out: {c.label_a}: "
        f"{c.unjudged_a} unjudged "
        f"(label None), {c.unmatched_a} not judged in {c.label_b}; {c.label_b}: {c.unjudged_b} unjudged, "
        f"{c.unmatched_b} not judged in {c.label_a}.",
        f"Accuracies in %, Δ in points (positive: {c.label_b} better). CI: paired percentile bootstrap, "
        f"{c.n_boot} resamples of question ids, seed {c.seed}. McNemar: exact binomial (two-sided) when the "
        f"discordant pairs are fewer than {EXACT_BELOW}, else chi-square with continuity correction; "
        "p (Holm): adjusted over the types that have paired questions.",
    ]


def comparison_to_markdown(c: Comparison, *, title: str | None = None) -> str:
    """The comparison as GitHub markdown."""
    lines = [f"# {title or f'Paired comparison: {c.label_b} vs {c.label_a}'}", ""]
    lines += [f"> **WARNING: {w}**" for w in c.warnings] + ([""] if c.warnings else [])
    lines += [line for text in _explanation(c) for line in (text, "")]
    right = [False, True, True, True, True, True, True, True, True, True, True, False, True]
    lines += fmt.md_table(_header(c), [_cells(r, c.benchmark) for r in c.rows], right)
    lines += ["", *([c.benchmark.legend, ""] if c.benchmark.legend else [""])]
    return "\n".join(lines)


def comparison_to_rich(c: Comparison, *, title: str | None = None) -> Any:
    """The comparison as a rich renderable; its table fits the console without splitting a word, folded into parts
    that repeat the row names when too wide (:mod:`om_eval.report._fit`)."""
    from rich.console import Group
    from rich.text import Text

    from om_eval.report._fit import Column, FittedTable

    rows = [_cells(row, c.benchmark) for row in c.rows]
    columns = [Column(header, tuple(cells[i] for cells in rows), i not in (0, 11))
               for i, header in enumerate(_header(c))]
    grid = FittedTable(title or f"Paired comparison: {c.label_b} vs {c.label_a}", tuple(columns[:1]),
                       tuple(columns[1:]),
                       tuple("bold" if row.name in ("overall", "task_averaged") else None for row in c.rows))
    parts: list[Any] = [Text(f"WARNING: {w}", style="bold red") for w in c.warnings]
    parts += [grid, *(Text(t, style="dim") for t in (*_explanation(c), c.benchmark.legend) if t)]
    return Group(*parts)
