"""The report's retrieval-mode section: how much each run's actor used the recall tool and what that cost.

Read from the items (``tool_calls``, ``recall_steps``) and from the model calls of stage ``recall``: the rounds an
actor spent after tool results, which are what reading raw history costs beyond answering.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from om_eval.bench.benchmark import Benchmark
from om_eval.report._format import plural


@dataclass(frozen=True)
class RecallUse:
    """One run's recall figures."""

    label: str
    questions: int
    calls: int
    questions_calling: int
    result_tokens: int
    errors: Mapping[str, int]
    rounds: int
    """Model calls of stage ``recall`` (each follows tool results)."""
    rounds_cost_usd: float
    rounds_prompt_tokens: int
    per_category: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Category title -> (questions, calls)."""

    @property
    def calls_per_question(self) -> float:
        return self.calls / self.questions if self.questions else 0.0


def _error_kind(error: str) -> str:
    return error.split(":", 1)[0]


def recall_use(label: str, items: Iterable[Mapping[str, Any]], rounds: Sequence[Mapping[str, Any]],
               benchmark: Benchmark) -> RecallUse | None:
    """The figures of one run's items (``None`` when its actor had no tool)."""
    tooled = [item for item in items if item.get("tool_calls") is not None]
    if not tooled:
        return None
    steps = [step for item in tooled for step in json.loads(item.get("recall_steps") or "[]")]
    per_category: dict[str, tuple[int, int]] = {}
    for item in tooled:
        try:
            title = benchmark.category(item["question_type"]).short
        except KeyError:
            title = str(item["question_type"])
        questions, calls = per_category.get(title, (0, 0))
        per_category[title] = (questions + 1, calls + int(item["tool_calls"]))
    return RecallUse(
        label=label, questions=len(tooled), calls=sum(int(i["tool_calls"]) for i in tooled),
        questions_calling=sum(1 for i in tooled if i["tool_calls"]),
        result_tokens=sum(int(s.get("result_tokens") or 0) for s in steps),
        errors=dict(Counter(_error_kind(s["error"]) for s in steps if s.get("error"))),
        rounds=len(rounds), rounds_cost_usd=sum(float(r.get("cost_usd") or 0) for r in rounds),
        rounds_prompt_tokens=sum(int(r.get("prompt_tokens") or 0) for r in rounds), per_category=per_category,
    )


def recall_markdown(uses: Sequence[RecallUse]) -> str:
    """The section's text: one entry per run that offered the tool."""
    if not uses:
        return ""
    lines = ["## Recall (retrieval mode)", "",
             "Tool calls the actor made to read raw messages, and the model rounds spent after their results.", ""]
    for use in uses:
        errors = ", ".join(f"{kind} {count}" for kind, count in sorted(use.errors.items())) or "none"
        lines.append(
            f"- **{use.label}**: {use.calls_per_question:.2f} calls per question ({use.calls} over "
            f"{plural(use.questions, 'question')}; {use.questions_calling} called it at least once); "
            f"{use.result_tokens:,} {'token' if use.result_tokens == 1 else 'tokens'} read back; errors: {errors}; "
            f"{plural(use.rounds, 'round')} after tool results, {use.rounds_prompt_tokens:,} prompt "
            f"{'token' if use.rounds_prompt_tokens == 1 else 'tokens'}, ${use.rounds_cost_usd:.4f}")
        lines.append("  - calls per question by category: " + ", ".join(
            f"{title} {calls / questions:.2f}" for title, (questions, calls) in use.per_category.items()))
    return "\n".join(lines) + "\n"


def recall_section(catalog: Any, runs: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]]) -> str:
    """The section for ``runs`` (empty when none of them offered the tool)."""
    from om_eval.bench.benchmark import benchmark_of_run

    uses = []
    for run in runs:
        own = [item for item in items if item["run_id"] == run["run_id"]]
        if not any(item.get("tool_calls") is not None for item in own):
            continue
        rounds = catalog.query("SELECT cost_usd, prompt_tokens FROM llm_calls WHERE run_id = ? AND stage = 'recall'",
                               [run["run_id"]])
        use = recall_use(run.get("label") or run["run_id"][:8], own, rounds, benchmark_of_run(run))
        if use is not None:
            uses.append(use)
    return recall_markdown(uses)
