"""A benchmark's own scores of an answer, beside the judge's verdict: against the published gold and, where a
known-errors list corrects it (``dataset.corrections``), against the corrected gold too.

The corrected verdict is one more judge call, made only for questions whose gold a correction changes (99 of
LoCoMo's 1,986 with the audit), and cached like every call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from om_eval.bench.benchmark import Benchmark
from om_eval.bench.judging.judge import Judge, judge_answer
from om_eval.bench.metrics import category_metrics, score_means
from om_eval.data.records import Question
from om_eval.llm.client import LLMClient

__all__ = ["benchmark_columns", "run_metrics"]


async def benchmark_columns(benchmark: Benchmark, question: Question, hypothesis: str | None, label: bool | None,
                            *, judge: Judge, client: LLMClient) -> dict[str, Any]:
    """The item columns ``haystack_id``, ``score``, ``corrected_answer``, ``corrected_score`` and
    ``corrected_label`` (``None`` where they do not apply; a failed corrected verdict stays ``None``, and the
    report then counts the published verdict for it)."""
    row: dict[str, Any] = {"haystack_id": question.haystack_id, "score": benchmark.score(question, hypothesis)}
    gold = question.corrected_answer
    if gold is None:
        return row
    row.update(corrected_answer=gold, corrected_score=benchmark.score(question, hypothesis, gold))
    if hypothesis is not None and label is not None:
        verdict = await judge_answer(judge, client, replace(question, answer=gold, corrected_answer=None), hypothesis)
        row["corrected_label"] = verdict.label
    return row


def run_metrics(benchmark: Benchmark, judged: list[dict[str, Any]]) -> dict[str, Any]:
    """The judge's metrics over the benchmark's categories (rows: ``question_id``, ``question_type``, ``label``,
    ``status``); with the benchmark's own score (LoCoMo's F1) under ``own`` and, where gold answers were
    corrected, both again under ``corrected``. What a run writes to ``metrics.json`` and an export re-scores."""
    keys = benchmark.category_keys
    if benchmark.own_score is None:
        return category_metrics(judged, keys)
    metrics = {**category_metrics(judged, keys), "own": {"name": benchmark.own_score, **score_means(judged, keys)}}
    if any(r.get("corrected_answer") is not None for r in judged):
        fixed = [{**r, "label": r["label"] if r.get("corrected_label") is None else r["corrected_label"],
                  "score": r["score"] if r.get("corrected_score") is None else r["corrected_score"]}
                 for r in judged]
        metrics["corrected"] = {**category_metrics(fixed, keys), "own": score_means(fixed, keys),
                                "changed": sum(r.get("corrected_answer") is not None for r in judged)}
    return metrics
