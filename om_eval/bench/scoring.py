"""A benchmark's own scores of an answer, beside the judge's verdict: against the published gold and, where a
known-errors list corrects it (``dataset.corrections``), against the corrected gold too.

The corrected verdict is one more judge call, made only for questions whose gold a correction changes (99 of
LoCoMo's 1,986 with the audit), and cached like every call.

**The answerable aggregate** (:func:`answerable_metrics`; LoCoMo's "categories 1-4"). Most papers quote LoCoMo
without category 5, its adversarial (unanswerable) questions. A benchmark whose unanswerable questions form
categories of their own (``abstention_row`` false, those categories routed to the house judge's ``abstention``
template) gets one more aggregate over the other categories:

* judge accuracy: the micro average over the questions of those categories, graded (a question whose verdict
  failed or was never asked is left out, as in the overall accuracy);
* the benchmark's own score (LoCoMo's F1): the micro mean over their answered questions.

Unanswerable questions are left out entirely, from numerator and denominator. The answerable categories hold none,
so nothing else is dropped; an answer there that declines ("not mentioned") is scored like any other answer.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from om_eval.bench.benchmark import Benchmark, Category
from om_eval.bench.judging.judge import Judge, judge_answer
from om_eval.bench.metrics import category_metrics
from om_eval.data.records import Question
from om_eval.llm.client import LLMClient

__all__ = ["answerable_categories", "answerable_metrics", "answerable_title", "benchmark_columns", "run_metrics"]


async def benchmark_columns(benchmark: Benchmark, question: Question, hypothesis: str | None, label: bool | None,
                            *, judge: Judge, client: LLMClient) -> dict[str, Any]:
    """The item columns ``haystack_id``, ``score``, ``corrected_answer``, ``corrected_score`` and
    ``corrected_label`` (``None`` where they do not apply; a failed corrected verdict stays ``None``, and the
    report then counts the published verdict for it). A benchmark without a scorer of its own leaves ``score`` to
    its judge (BEAM's rubric score)."""
    row: dict[str, Any] = {"haystack_id": question.haystack_id}
    if benchmark.scorer is not None:
        row["score"] = benchmark.score(question, hypothesis)
    gold = question.corrected_answer
    if gold is None:
        return row
    row.update(corrected_answer=gold, corrected_score=benchmark.score(question, hypothesis, gold))
    if hypothesis is not None and label is not None:
        verdict = await judge_answer(judge, client, replace(question, answer=gold, corrected_answer=None), hypothesis)
        row["corrected_label"] = verdict.label
    return row


def answerable_categories(benchmark: Benchmark) -> tuple[Category, ...]:
    """The categories of the answerable aggregate (LoCoMo: 1-4): all but those routed to the abstention template,
    when the benchmark's unanswerable questions are categories of their own; empty otherwise (LongMemEval)."""
    if benchmark.abstention_row:
        return ()
    answerable = tuple(c for c in benchmark.categories if benchmark.house_routes.get(c.key) != "abstention")
    return answerable if 0 < len(answerable) < len(benchmark.categories) else ()


def answerable_title(categories: tuple[Category, ...]) -> str:
    """``categories 1-4`` for a contiguous numbered run, ``categories 1, 2, 4`` otherwise, else their keys."""
    numbers = [c.number for c in categories]
    if any(n is None for n in numbers):
        return "categories " + ", ".join(c.key for c in categories)
    ordered = sorted(n for n in numbers if n is not None)
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"categories {ordered[0]}-{ordered[-1]}"
    return "categories " + ", ".join(map(str, ordered))


def answerable_metrics(benchmark: Benchmark, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The answerable aggregate of judged rows (see the module docstring), or ``None`` when the benchmark has none.

    Returns:
        ``{"title": "categories 1-4", "categories": [...], "overall": graded accuracy or None, "n": judged
        questions counted, "own": {"overall": mean own score or None, "n": answered questions counted}}``
        (``own`` only for a benchmark with its own score).
    """
    categories = answerable_categories(benchmark)
    if not categories:
        return None
    keys = tuple(c.key for c in categories)
    kept = [r for r in rows if r.get("question_type") in keys]
    judged = category_metrics(kept, keys)
    out: dict[str, Any] = {"title": answerable_title(categories), "categories": list(keys),
                           "overall": judged["overall"], "n": sum(v["n"] for v in judged["per_type"].values())}
    if benchmark.own_score is not None:
        own = benchmark.own_score_means(kept)
        out["own"] = {"overall": own["overall"], "n": own["n"]}
    return out


def run_metrics(benchmark: Benchmark, judged: list[dict[str, Any]]) -> dict[str, Any]:
    """The judge's metrics over the benchmark's categories (rows: ``question_id``, ``question_type``, ``label``,
    ``status``); with the benchmark's own score (LoCoMo's F1) under ``own`` and, where gold answers were
    corrected, both again under ``corrected``; the answerable aggregate (LoCoMo's categories 1-4) under
    ``answerable``, raw and corrected. What a run writes to ``metrics.json`` and an export re-scores."""
    keys = benchmark.category_keys
    if benchmark.own_score is None:
        return category_metrics(judged, keys)
    metrics = {**category_metrics(judged, keys),
               "own": {"name": benchmark.own_score, **benchmark.own_score_means(judged)}}
    if (answerable := answerable_metrics(benchmark, judged)) is not None:
        metrics["answerable"] = answerable
    if any(r.get("corrected_answer") is not None for r in judged):
        fixed = [{**r, "label": r["label"] if r.get("corrected_label") is None else r["corrected_label"],
                  "score": r["score"] if r.get("corrected_score") is None else r["corrected_score"]}
                 for r in judged]
        metrics["corrected"] = {**category_metrics(fixed, keys), "own": benchmark.own_score_means(fixed),
                                "changed": sum(r.get("corrected_answer") is not None for r in judged)}
        if (answerable := answerable_metrics(benchmark, fixed)) is not None:
            metrics["corrected"]["answerable"] = answerable
    return metrics
