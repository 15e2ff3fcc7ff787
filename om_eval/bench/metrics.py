"""LongMemEval QA metrics, exactly as the official ``print_qa_metrics.py`` computes them, plus what it lacks.

The official formulas (longmemeval-reference §2.2), for judged rows with label y in {0, 1}:

* per type: ``acc_t = mean(y over rows of type t)``; abstention (``_abs``) questions stay in their base type;
* overall (micro): ``sum(y) / N`` over every judged row;
* task-averaged (macro): the mean of the six per-type accuracies, over the fixed list of six types, summed in
  upstream's order (so the floating-point result is bit-identical);
* abstention: ``mean(y over rows with '_abs' in question_id)``.

Nothing is rounded here; reports round.

**A type with no rows.** Upstream takes ``np.mean([])``: that type is NaN, and so is the task average. That is
right for a full 500-question run (a missing type is a bug) but useless for subsets. Our default,
``empty="skip"``, reports an empty type (or an empty abstention set) as accuracy ``None`` with ``n == 0`` and
averages the types that have rows; ``empty="nan"`` reproduces upstream (NaN everywhere it appears).

**Graded vs strict.** Rows may carry ``status``: ``ok`` (judged), ``error`` (the judge call failed) or
``not_run`` (never answered or judged). *Graded* leaves non-ok rows out, as upstream does (it never writes an
entry it could not judge); *strict* counts them wrong over the full denominator (NeMo Gym's ``accuracy_strict``).
Report both: a judge outage must not look like a better or worse memory.

**Confidence intervals.** Percentile bootstrap over questions: rows are resampled with replacement and every
statistic is recomputed on each replicate, from one seeded generator, so the intervals are deterministic. In a
replicate where a type drew no rows, that type is left out of the replicate's task average and of its own
interval.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np

from om_eval.common.files import atomic_writer

__all__ = [
    "OFFICIAL_TYPE_ORDER",
    "category_metrics",
    "longmemeval_metrics",
    "metric_report",
    "read_eval_results_jsonl",
    "read_hypotheses_jsonl",
    "score_means",
    "wilson_interval",
    "write_eval_results_jsonl",
    "write_hypotheses_jsonl",
]

#: The six types in the order ``print_qa_metrics.py`` lists (and sums) them.
OFFICIAL_TYPE_ORDER = (
    "single-session-user",
    "single-session-preference",
    "single-session-assistant",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
#: The judge model ``print_qa_metrics.py`` asserts on every line.
OFFICIAL_JUDGE_MODEL = "gpt-4o-2024-08-06"
STATUSES = ("ok", "error", "not_run")
Empty = Literal["skip", "nan"]
Errors = Literal["exclude", "wrong"]


def _get(row: Any, name: str, default: Any = None) -> Any:
    if isinstance(row, Mapping):
        return row.get(name, default)
    return getattr(row, name, default)


def _label(value: Any, question_id: str) -> int:
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
        return int(bool(value))
    raise ValueError(f"question {question_id}: label must be a boolean for a judged row, got {value!r}")


Prepared = tuple[str, int, str, "int | None", bool]
"""(question id, category index, status, label, unanswerable) of one row."""


def _prepare(rows: Iterable[Any], categories: Sequence[str] = OFFICIAL_TYPE_ORDER) -> list[Prepared]:
    """One :data:`Prepared` per row, validated. Abstention is the row's ``is_abstention`` when it has one (a
    benchmark that marks it by a field), else ``_abs`` in the id (LongMemEval, as upstream reads it)."""
    prepared: list[Prepared] = []
    seen: set[str] = set()
    for row in rows:
        qid = _get(row, "question_id")
        if not isinstance(qid, str) or not qid:
            raise ValueError(f"every row needs a question_id; got {row!r}")
        if qid in seen:
            raise ValueError(f"question {qid} appears twice; each question is scored once")
        seen.add(qid)
        qtype = _get(row, "question_type")
        if qtype not in categories:
            raise ValueError(f"question {qid}: question_type {qtype!r} is not one of {', '.join(categories)}")
        label = _get(row, "label")
        status = _get(row, "status")
        if status is None:
            if label is None:
                raise ValueError(f"question {qid}: no label and no status ('error' or 'not_run')")
            status = "ok"
        if status not in STATUSES:
            raise ValueError(f"question {qid}: status {status!r} is not one of {', '.join(STATUSES)}")
        flag = _get(row, "is_abstention")
        abstain = "_abs" in qid if flag is None else bool(flag)
        prepared.append((qid, categories.index(qtype), status, _label(label, qid) if status == "ok" else None,
                         abstain))
    return prepared


Scored = tuple[str, int, int, bool]
"""(question id, category index, label, unanswerable) of one counted row."""


def _scored(prepared: Sequence[Prepared], errors: Errors) -> list[Scored]:
    if errors not in ("exclude", "wrong"):
        raise ValueError(f"errors={errors!r}: use 'exclude' (graded) or 'wrong' (strict)")
    if errors == "exclude":
        return [(qid, t, y, a)  # type: ignore[misc]  # an "ok" row's label is an int (_prepare)
                for qid, t, status, y, a in prepared if status == "ok"]
    return [(qid, t, y if status == "ok" else 0, a)  # type: ignore[misc]  # an "ok" row's label is an int (_prepare)
            for qid, t, status, y, a in prepared]


def _mean(values: Sequence[int] | Sequence[float], empty: Empty) -> float | None:
    if not values:
        return math.nan if empty == "nan" else None
    return float(np.mean(values))


def _metrics(scored: Sequence[Scored], empty: Empty, categories: Sequence[str] = OFFICIAL_TYPE_ORDER) -> dict[str, Any]:
    if empty not in ("skip", "nan"):
        raise ValueError(f"empty={empty!r}: use 'skip' or 'nan' (upstream)")
    by_type: list[list[int]] = [[] for _ in categories]
    abstention: list[int] = []
    for _, t, y, abstain in scored:
        by_type[t].append(y)
        if abstain:
            abstention.append(y)
    per_type = {name: {"accuracy": _mean(ys, empty), "n": len(ys)} for name, ys in zip(categories, by_type)}
    accuracies = [v["accuracy"] for v in per_type.values()]
    if empty == "nan":
        task_averaged: float | None = float(np.mean(cast(list[float], accuracies)))  # _mean gives nan, not None
    else:
        present = [a for a in accuracies if a is not None]
        task_averaged = float(np.mean(present)) if present else None
    return {
        "per_type": per_type,
        "overall": _mean([y for ys in by_type for y in ys], empty),
        "task_averaged": task_averaged,
        "abstention": {"accuracy": _mean(abstention, empty), "n": len(abstention)},
    }


def longmemeval_metrics(rows: Iterable[Any], *, empty: Empty = "skip", errors: Errors = "exclude") -> dict[str, Any]:
    """The official LongMemEval QA metrics of judged rows.

    Args:
        rows: mappings (or objects) with ``question_id``, ``question_type`` (one of the six), a boolean
            ``label`` and optionally ``status`` (``ok``, ``error``, ``not_run``; default ``ok`` when a label
            is present).
        empty: ``skip`` (default): an empty type has accuracy ``None`` and is left out of the task average;
            ``nan``: upstream's NaN.
        errors: ``exclude`` (graded, as upstream) or ``wrong`` (strict).

    Returns:
        ``{"per_type": {type: {"accuracy", "n"}}, "overall", "task_averaged", "abstention": {"accuracy", "n"}}``,
        with all six types in upstream order, unrounded.

    Raises:
        ValueError: naming the question, for an unknown type, a duplicate id or a judged row without a boolean label.
    """
    return category_metrics(rows, OFFICIAL_TYPE_ORDER, empty=empty, errors=errors)


def category_metrics(rows: Iterable[Any], categories: Sequence[str], *, empty: Empty = "skip",
                     errors: Errors = "exclude") -> dict[str, Any]:
    """:func:`longmemeval_metrics` over another benchmark's ``categories`` (in the order it sums them)."""
    return _metrics(_scored(_prepare(rows, categories), errors), empty, categories)


def score_means(rows: Iterable[Any], categories: Sequence[str], column: str = "score") -> dict[str, Any]:
    """Means of a benchmark's own per-answer score (LoCoMo's F1): per category over its rows, overall over all
    rows (micro), as LoCoMo's evaluation aggregates; rows without a score (unanswered) are left out.

    Returns:
        ``{"overall": mean or None, "n": rows counted, "per_type": {category: {"mean", "n"}}}``.
    """
    sums = dict.fromkeys(categories, 0.0)
    counts = dict.fromkeys(categories, 0)
    for row in rows:
        value = _get(row, column)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        qtype = _get(row, "question_type")
        if qtype not in sums:
            raise ValueError(f"question {_get(row, 'question_id')}: question_type {qtype!r} is not one of "
                             f"{', '.join(categories)}")
        sums[qtype] += float(value)
        counts[qtype] += 1
    n = sum(counts.values())
    return {
        "overall": math.fsum(sums.values()) / n if n else None,
        "n": n,
        "per_type": {c: {"mean": sums[c] / counts[c] if counts[c] else None, "n": counts[c]} for c in categories},
    }


# ------------------------------------------------------------------------------------------------ bootstrap


def percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float] | None:
    """The central ``confidence`` interval of bootstrap values (NaN replicates left out), or None."""
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return (float(low), float(high))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes`` out of ``n`` (``None`` for ``n == 0``): unlike the normal
    approximation it stays inside [0, 1] and is sensible at 0 % and 100 %, which small categories often hit."""
    if n <= 0:
        return None
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At 0 % and 100 % the bound is exactly 0 or 1; the formula leaves rounding noise there.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def _wilson(scored: Sequence[Scored], categories: Sequence[str], confidence: float) -> dict[str, Any]:
    """Wilson intervals of the per-category, overall and abstention accuracies (the task average has none: it is
    not a proportion, so it keeps its bootstrap interval)."""
    def of(rows: list[int]) -> tuple[float, float] | None:
        return wilson_interval(sum(rows), len(rows), confidence)

    return {
        "overall": of([y for _, _, y, _ in scored]),
        "per_type": {name: of([y for _, t, y, _ in scored if t == k]) for k, name in enumerate(categories)},
        "abstention": of([y for _, _, y, a in scored if a]),
    }


def _bootstrap(scored: Sequence[Scored], n_boot: int, seed: int, confidence: float,
               categories: Sequence[str] = OFFICIAL_TYPE_ORDER) -> dict[str, Any]:
    labels = np.array([y for _, _, y, _ in scored], dtype=float)
    types = np.array([t for _, t, _, _ in scored], dtype=np.int64)
    abstain = np.array([a for _, _, _, a in scored], dtype=bool)
    empty_ci = {"overall": None, "task_averaged": None, "per_type": dict.fromkeys(categories),
                "abstention": None}
    if labels.size == 0 or n_boot == 0:
        return empty_ci
    draws = np.random.default_rng(seed).integers(0, labels.size, size=(n_boot, labels.size))
    y, t, a = labels[draws], types[draws], abstain[draws]

    def rate(mask: np.ndarray) -> np.ndarray:
        count = mask.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, (y * mask).sum(axis=1) / np.maximum(count, 1), np.nan)

    per_type = np.stack([rate(t == k) for k in range(len(categories))], axis=1)
    present = [k for k in range(len(categories)) if (types == k).any()]
    with np.errstate(invalid="ignore"):
        columns = per_type[:, present]
        counts = (~np.isnan(columns)).sum(axis=1)
        task = np.where(counts > 0, np.nansum(columns, axis=1) / np.maximum(counts, 1), np.nan)
    return {
        "overall": percentile_interval(y.mean(axis=1), confidence),
        "task_averaged": percentile_interval(task, confidence),
        "per_type": {name: percentile_interval(per_type[:, k], confidence) for k, name in enumerate(categories)},
        "abstention": percentile_interval(rate(a), confidence),
    }


def metric_report(
    rows: Iterable[Any], *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95, empty: Empty = "skip",
    categories: Sequence[str] = OFFICIAL_TYPE_ORDER, intervals: str = "bootstrap",
) -> dict[str, Any]:
    """Graded and strict metrics, each with percentile-bootstrap confidence intervals.

    ``categories`` are the benchmark's (LongMemEval's six types by default); ``intervals="wilson"`` gives the
    per-category, overall and abstention accuracies Wilson score intervals instead (the task average keeps its
    bootstrap one).

    Returns:
        ``{"counts": {"total", "ok", "error", "not_run"}, "graded": {...metrics, "ci": {...}},
        "strict": {...metrics, "ci": {...}}, "bootstrap": {"n_boot", "seed", "confidence", "method"}}``, where
        each ``ci`` holds ``(low, high)`` (or ``None`` when nothing was drawn) for ``overall``,
        ``task_averaged``, ``abstention`` and every type under ``per_type``.
    """
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if intervals not in ("bootstrap", "wilson"):
        raise ValueError(f"intervals={intervals!r}: use 'bootstrap' or 'wilson'")
    prepared = _prepare(rows, categories)
    report: dict[str, Any] = {
        "counts": {"total": len(prepared), **{s: sum(1 for p in prepared if p[2] == s) for s in STATUSES}},
    }
    readings: tuple[tuple[str, Errors], ...] = (("graded", "exclude"), ("strict", "wrong"))
    for name, errors in readings:
        scored = _scored(prepared, errors)
        ci = _bootstrap(scored, n_boot, seed, confidence, categories)
        if intervals == "wilson":
            ci.update(_wilson(scored, categories, confidence))
        report[name] = {**_metrics(scored, empty, categories), "ci": ci}
    method = "percentile bootstrap, questions resampled with replacement"
    if intervals == "wilson":
        method = "Wilson score intervals per category, overall and abstention; " + method + " for the task average"
    report["bootstrap"] = {"n_boot": n_boot, "seed": seed, "confidence": confidence, "method": method}
    return report


# -------------------------------------------------------------------------------------------------- exports


def _write_lines(path: str | os.PathLike[str], lines: Iterable[str]) -> Path:
    with atomic_writer(path) as handle:
        for line in lines:
            handle.write(line + "\n")
    return Path(path)


def _read_json_lines(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    text = Path(path).read_text(encoding="utf-8")
    if not text.strip():
        return []
    try:
        entries = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError:
        entries = []
    if entries and all(isinstance(e, dict) for e in entries):
        return entries
    try:
        data = json.loads(text)  # upstream's fallback: one JSON array
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: neither JSON lines nor a JSON array ({error})") from None
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise ValueError(f"{path}: neither JSON lines of objects nor a JSON array of objects")
    return data


def write_hypotheses_jsonl(path: str | os.PathLike[str], rows: Iterable[Any]) -> Path:
    """Write the ``hyp_file`` of ``evaluate_qa.py``: one ``{"question_id", "hypothesis"}`` per line.

    Rows without a hypothesis (``None``: never answered) are left out.
    """
    lines = (json.dumps({"question_id": _get(r, "question_id"), "hypothesis": _get(r, "hypothesis")})
             for r in rows if _get(r, "hypothesis") is not None)
    return _write_lines(path, lines)


def read_hypotheses_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a hypotheses file (JSON lines, or a JSON array as upstream also accepts)."""
    return _read_json_lines(path)


def write_eval_results_jsonl(
    path: str | os.PathLike[str], rows: Iterable[Any], judge_model: str = OFFICIAL_JUDGE_MODEL
) -> Path:
    """Write judged rows as ``evaluate_qa.py`` does, so the official ``print_qa_metrics.py`` can read them.

    One line per judged row, ``json.dumps`` with its default separators: the hypothesis entry
    (``question_id``, ``hypothesis``) plus ``"autoeval_label": {"model": judge_model, "label": bool}``. Rows
    that were not judged (status ``error`` or ``not_run``) are left out, as upstream never writes them.

    ``print_qa_metrics.py`` asserts ``autoeval_label.model == 'gpt-4o-2024-08-06'``: files judged by any other
    model are written faithfully but that script will refuse them (use :func:`longmemeval_metrics` instead).
    A litellm-style ``openai/`` prefix is dropped, since upstream records the bare OpenAI model name.
    """
    model = judge_model.removeprefix("openai/")
    lines = []
    for row in rows:
        status = _get(row, "status") or ("ok" if _get(row, "label") is not None else "not_run")
        if status != "ok":
            continue
        qid = _get(row, "question_id")
        entry = {"question_id": qid, "hypothesis": _get(row, "hypothesis"),
                 "autoeval_label": {"model": model, "label": bool(_label(_get(row, "label"), qid))}}
        lines.append(json.dumps(entry))
    return _write_lines(path, lines)


def read_eval_results_jsonl(
    path: str | os.PathLike[str], question_types: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Read an eval-results file (ours or upstream's) into metric rows.

    Each row has ``question_id``, ``hypothesis``, ``label``, ``judge_model``, ``status="ok"`` and, when
    ``question_types`` (question id -> type, from the reference file) is given, ``question_type``.
    """
    rows = []
    for entry in _read_json_lines(path):
        qid = entry["question_id"]
        verdict = entry["autoeval_label"]
        row = {"question_id": qid, "hypothesis": entry.get("hypothesis"), "label": bool(verdict["label"]),
               "judge_model": verdict["model"], "status": "ok"}
        if question_types is not None:
            if qid not in question_types:
                raise ValueError(f"{path}: question {qid} is not in the reference data")
            row["question_type"] = question_types[qid]
        rows.append(row)
    return rows
