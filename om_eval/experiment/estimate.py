"""A rough cost forecast before a run on hosted models, from haystack sizes and litellm's local prices.

The forecast assumes a cold cache and Mastra-like behaviour (about 6x compression by the Observer); it is a
guide for choosing a subset or a budget, not a quote. Unknown prices are shown as unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from om_eval.data.records import Dataset
from om_eval.llm.pricing import call_cost, price_of
from om_eval.memory.system import Forecast

#: Approximate prompt overheads (tokens) of each stage's instructions (a system's own stages: its forecast).
ACTOR_PROMPT_TOKENS = 1_500
JUDGE_PROMPT_TOKENS = 300
COMPRESSION = 6.0
CHARS_PER_TOKEN = 4.0
#: The order stages are printed in.
STAGE_ORDER = ("observer", "reflector", "retrieval", "query", "actor", "judge")


@dataclass(frozen=True)
class StageEstimate:
    stage: str
    model: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


#: Texts per embedding request (as the RAG systems send them).
EMBED_BATCH = 128


def _budget_forecast(system: Any, options: Any, roles: Any, question: Any, texts: list[str], history: int
                     ) -> Forecast:
    """A system without a forecast of its own: what it shows the actor follows its budget (``top_k`` documents of
    the haystack's average size, or at most ``context_tokens``); ingest calls the observer once per
    ``buffer_threshold`` tokens of history (``simple_om``) or embeds the history once and each question (RAG)."""
    budget = system.budget()
    shown = history
    if isinstance(top_k := budget.get("top_k"), int):
        per_document = history / max(1, len(question.sessions) if options.get("granularity") == "session"
                                     else len(texts))
        widened = 2 * int(options.get("message_range", 0)) + 1
        shown = min(history, int(top_k * widened * per_document))
    if isinstance(limit := budget.get("context_tokens"), int):
        shown = min(shown, limit)
    stages: dict[str, tuple[int, int, int]] = {}
    if "models.observer" in roles:
        threshold = int(options.get("buffer_threshold", 2000))
        calls = history // threshold
        prompt = calls * (threshold + ACTOR_PROMPT_TOKENS // 5)
        stages["observer"] = (calls, prompt, int(calls * threshold / COMPRESSION))
    if "models.embedding" in roles:
        stages["retrieval"] = (math.ceil(len(texts) / EMBED_BATCH), history, 0)
        stages["query"] = (1, math.ceil(len(question.question) / CHARS_PER_TOKEN), 0)
    return Forecast(stages, shown)


def _totals(spec: Any, dataset: Dataset) -> tuple[dict[str, list[int]], set[str]]:
    """Calls, prompt and completion tokens per stage over the dataset, and the stages a system forecast itself. A
    system shown only the evidence sessions (the oracle reader) reads only those."""
    roles = spec.role_models()
    system = spec.system()
    evidence_only = system.history_scope == "evidence"
    answer_tokens = min(200, system.max_output_tokens or 200)
    totals: dict[str, list[int]] = {}
    own: set[str] = set()
    for question in dataset.iter_questions():  # one at a time: S and M files are streamed
        texts = [t.content for s in question.sessions if s.is_evidence or not evidence_only for t in s.turns]
        history = math.ceil(sum(len(t) for t in texts) / CHARS_PER_TOKEN)
        forecast = system.forecast(history)
        if forecast is not None:
            own.update(forecast.stages)
        else:
            forecast = _budget_forecast(system, spec.memory_options, roles, question, texts, history)
        asked = {**forecast.stages, "actor": (1, forecast.shown_tokens + ACTOR_PROMPT_TOKENS, answer_tokens),
                 "judge": (1, JUDGE_PROMPT_TOKENS, 2)}
        for stage, figures in asked.items():
            total = totals.setdefault(stage, [0, 0, 0])
            for index, value in enumerate(figures):
                total[index] += value
    return totals, own


def estimate_run(spec: Any, dataset: Dataset) -> list[StageEstimate]:
    """Per-stage forecast of calls, tokens and dollars for running ``spec`` on ``dataset``."""
    totals, own = _totals(spec, dataset)
    embedding = getattr(spec, "embedding", None)
    roles = {"observer": spec.om.observation.model, "reflector": spec.om.reflection.model, "actor": spec.actor,
             "judge": spec.judge_model, "retrieval": embedding, "query": embedding}
    from om_eval.llm.request import litellm_model_id

    estimates = []
    for stage in sorted(totals, key=lambda s: STAGE_ORDER.index(s) if s in STAGE_ORDER else len(STAGE_ORDER)):
        calls, prompt, completion = totals[stage]
        if not calls and stage not in ("actor", "judge") and stage not in own:
            continue  # a stage this system does not have
        settings = roles.get(stage)
        model = litellm_model_id(settings.model) if settings is not None else ""
        price = price_of(settings.provider_options) if settings is not None else None
        cost = call_cost(model, prompt, completion, price=price) if calls else 0.0
        estimates.append(StageEstimate(stage, model, calls, prompt, completion, cost))
    return estimates


def print_estimate(spec: Any, dataset: Dataset, console: Any) -> None:
    from rich.table import Table

    table = Table(title=f"Rough cost forecast for {len(dataset)} questions (cold cache)")
    for column in ("stage", "model", "calls", "prompt tokens", "completion tokens", "cost"):
        table.add_column(column, justify="left" if column in ("stage", "model") else "right")
    known = 0.0
    unknown = []
    for e in estimate_run(spec, dataset):
        cost = "unknown" if e.cost_usd is None else f"${e.cost_usd:,.2f}"
        if e.cost_usd is None:
            unknown.append(e.model)
        else:
            known += e.cost_usd
        table.add_row(e.stage, e.model, f"{e.calls:,}", f"{e.prompt_tokens:,}", f"{e.completion_tokens:,}", cost)
    # One model may serve several stages: named once.
    table.caption = f"total about ${known:,.2f}" + (
        f" plus unknown prices for {', '.join(dict.fromkeys(unknown))}" if unknown else "")
    console.print(table)
