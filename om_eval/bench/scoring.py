"""A benchmark's own scores of an answer, beside the judge's verdict: against the published gold and, where a
known-errors list corrects it (``dataset.corrections``), against the corrected gold too.

The corrected verdict is one more judge call, made only for questions whose gold a correction changes (99 of
LoCoMo's 1,986 with the audit), and cached like every call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from om_eval.bench.benchmark import Benchmark
from om_eval.bench.judge import Judge, judge_answer
from om_eval.data.records import Question
from om_eval.llm.client import LLMClient

__all__ = ["benchmark_columns"]


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
