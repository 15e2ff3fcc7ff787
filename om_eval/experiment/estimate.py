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

#: Approximate prompt overheads (tokens) of each stage's instructions.
OBSERVER_PROMPT_TOKENS = 4_000
REFLECTOR_PROMPT_TOKENS = 5_000
ACTOR_PROMPT_TOKENS = 1_500
JUDGE_PROMPT_TOKENS = 300
COMPRESSION = 6.0
CHARS_PER_TOKEN = 4.0


@dataclass(frozen=True)
class StageEstimate:
    stage: str
    model: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None


def _history_tokens(dataset: Dataset) -> list[int]:
    return [
        math.ceil(sum(len(t.content) for s in q.sessions for t in s.turns)
                  / CHARS_PER_TOKEN)
        for q in dataset.iter_questions()  # one at a time: S and M files are streamed
    ]


#: Texts per embedding request (as the RAG systems send them).
EMBED_BATCH = 128


def _estimate_seam(spec: Any, dataset: Dataset) -> dict[str, list[int]]:
    """A system answered through the memory seam: what it shows the actor follows its budget (``top_k`` documents
    of the haystack's average size, or at most ``context_tokens``); ingest calls the observer once per
    ``buffer_threshold`` tokens of history (``simple_om``) or embeds the history once and each question (RAG). A
    system shown only the evidence sessions (the oracle reader) reads only those."""
    roles = spec.role_models()
    system = spec.system()
    budget = system.budget()
    options = spec.memory_options
    evidence_only = system.history_scope == "evidence"
    answer_tokens = min(200, system.max_output_tokens or 200)
    totals = {stage: [0, 0, 0] for stage in ("observer", "retrieval", "query", "actor", "judge")}
    for question in dataset.iter_questions():  # one at a time: S and M files are streamed
        texts = [t.content for s in question.sessions if s.is_evidence or not evidence_only for t in s.turns]
        history = math.ceil(sum(len(t) for t in texts) / CHARS_PER_TOKEN)
        shown = history
        if isinstance(top_k := budget.get("top_k"), int):
            per_document = history / max(1, len(question.sessions) if options.get("granularity") == "session"
                                         else len(texts))
            widened = 2 * int(options.get("message_range", 0)) + 1
            shown = min(history, int(top_k * widened * per_document))
        if isinstance(limit := budget.get("context_tokens"), int):
            shown = min(shown, limit)
        if "models.observer" in roles:
            threshold = int(options.get("buffer_threshold", 2000))
            calls = history // threshold
            totals["observer"][0] += calls
            totals["observer"][1] += calls * (threshold + ACTOR_PROMPT_TOKENS // 5)
            totals["observer"][2] += int(calls * threshold / COMPRESSION)
        if "models.embedding" in roles:
            totals["retrieval"][0] += math.ceil(len(texts) / EMBED_BATCH)
            totals["retrieval"][1] += history
            totals["query"][0] += 1
            totals["query"][1] += math.ceil(len(question.question) / CHARS_PER_TOKEN)
        totals["actor"][0] += 1
        totals["actor"][1] += shown + ACTOR_PROMPT_TOKENS
        totals["actor"][2] += answer_tokens
        totals["judge"][0] += 1
        totals["judge"][1] += JUDGE_PROMPT_TOKENS
        totals["judge"][2] += 2
    return totals


def estimate_run(spec: Any, dataset: Dataset) -> list[StageEstimate]:
    """Per-stage forecast of calls, tokens and dollars for running ``spec`` on ``dataset``."""
    obs_cfg, ref_cfg = spec.om.observation, spec.om.reflection
    totals: dict[str, list[int]] = {stage: [0, 0, 0] for stage in ("observer", "reflector", "actor", "judge")}
    seam = spec.memory_system != "om"  # OM's forecast follows its thresholds; every other system's, its budget
    if seam:
        totals = _estimate_seam(spec, dataset)
    for history in [] if seam else _history_tokens(dataset):
        observe_calls = max(1, history // obs_cfg.message_tokens) if (history >= obs_cfg.message_tokens
                                                                        or spec.replay.final_flush) else 0
        observed = history if spec.replay.final_flush else observe_calls * obs_cfg.message_tokens
        observations = observed / COMPRESSION
        previous = min(observations / 2, obs_cfg.previous_observer_tokens or observations / 2)
        totals["observer"][0] += observe_calls
        totals["observer"][1] += int(observed + observe_calls * (OBSERVER_PROMPT_TOKENS + previous))
        totals["observer"][2] += int(observations)
        reflections = int(observations // ref_cfg.observation_tokens)
        totals["reflector"][0] += reflections
        totals["reflector"][1] += reflections * (ref_cfg.observation_tokens + REFLECTOR_PROMPT_TOKENS)
        totals["reflector"][2] += reflections * ref_cfg.observation_tokens // 2
        shown = min(observations, ref_cfg.observation_tokens) + (history - observed)
        totals["actor"][0] += 1
        totals["actor"][1] += int(shown + ACTOR_PROMPT_TOKENS)
        totals["actor"][2] += 200
        totals["judge"][0] += 1
        totals["judge"][1] += JUDGE_PROMPT_TOKENS
        totals["judge"][2] += 2
    embedding = getattr(spec, "embedding", None)
    roles = {"observer": obs_cfg.model, "reflector": ref_cfg.model, "actor": spec.actor, "judge": spec.judge_model,
             "retrieval": embedding, "query": embedding}
    from om_eval.llm.request import litellm_model_id

    estimates = []
    for stage, (calls, prompt, completion) in totals.items():
        if seam and not calls and stage not in ("actor", "judge"):
            continue  # a stage this system does not have
        settings = roles[stage]
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
