"""Memory systems side by side: each run's memory name and budget, its ingest and answer cost, and its recall@k.

``om-eval run memory=<system>`` answers through Observational Memory, a LongMemEval baseline reader, or a system
of the memory seam (:mod:`om_eval.memory`: the simple OM layer, RAG, a plugin). A report that sets their
accuracies side by side has to say, per run, what answered and what it cost; this module reads that from the
store's rows, and :mod:`om_eval.report.tables` puts it in the table.

**Names** (:func:`memory_name_of`) are each system's own (its ``label`` hook, read from its class by
:func:`om_eval.memory.registry.system_label`) given ``runs.memory_budget`` and the run's ``memory`` config group:
``OM``, ``baseline: full context``, ``simple OM``, ``RAG (Mastra recall, top 10)``, ``RAG (LongMemEval BM25,
session, top 10)``; a plugin that gives none, or is no longer installed, is shown by its name. Runs stored
before the seam have no ``memory_system``: theirs is the reader of a ``baseline:<reader>`` memory key, else ``om``.

**Cost by stage group** (:func:`stage_group`). A model call's ``llm_calls.stage`` says what it did: the stages of
:data:`om_eval.memory.system.INGEST_STAGES` (observer, reflector, retrieval embeddings) built the memory
(*ingest*), the judge graded the answer (*judge*, re-gradings included), every other stage answered (*answer*:
the actor and its recall rounds). The three sums add up to the run's whole spend. Judging is kept apart because
it is the same for every system and grows with each ``om-eval rejudge``.

**recall_any@k** (:func:`recall_at_k`): the share of questions with at least one evidence document (a session,
turn or message, as the system indexes them) among the k it retrieved, at the run's own k (``top_k`` of its
budget). As LongMemEval's retrieval evaluation, abstention questions and questions without evidence ids are left
out (their ``items.retrieval`` has no ``metrics``). Set beside the verdicts, it tells a *retrieval miss* (a
wrong answer whose evidence was not retrieved) from a *reading miss* (evidence retrieved, answer still wrong).

**Budgets** (:func:`budget_warnings`): runs of one memory system whose stored budgets differ in a key they share
(``top_k`` 10 against 20, ``context_tokens``) are named in one line each. Keys are compared within a system
only: ``context_tokens`` caps the simple OM block but is a reader's window for RAG, and comparing different
systems is the point of the table.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from om_eval.bench.benchmark import Benchmark, benchmark_of_run
from om_eval.llm.ledger import REJECTED_PREFIX
from om_eval.memory.registry import DEFAULT_SYSTEM, system_about, system_label, system_trait
from om_eval.memory.system import INGEST_STAGES
from om_eval.store.writer import UNPRICED_CALL

__all__ = ["ANSWER", "INGEST", "JUDGE", "STAGE_GROUPS", "RecallAtK", "StageUsage", "budget_text", "budget_warnings",
           "memory_about", "memory_budget_of", "memory_name_of", "memory_system_of", "recall_at_k", "retrieval_text",
           "stage_group", "stage_usage", "usage_by_run"]

_BASELINE_PREFIX = "baseline:"

INGEST, ANSWER, JUDGE = "ingest", "answer", "judge"
#: The stage groups a run's calls are summed by, in the order reports show them.
STAGE_GROUPS = (INGEST, ANSWER, JUDGE)


def _config(run: Mapping[str, Any]) -> Mapping[str, Any]:
    config = run.get("config_json")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except ValueError:
            return {}
    return config if isinstance(config, Mapping) else {}


def memory_system_of(run: Mapping[str, Any]) -> str:
    """The memory system a ``runs`` row answered through: the reader of a ``baseline:<reader>`` memory key (only a
    reader's run has one, whatever else it stored), else ``runs.memory_system``, else (a run stored before it was
    kept) its ``memory`` config group's, else ``om``.

    >>> memory_system_of({"memory_key": "baseline:oracle"}), memory_system_of({"memory_key": "d163bbf8"})
    ('oracle', 'om')
    """
    key = run.get("memory_key")
    if isinstance(key, str) and key.startswith(_BASELINE_PREFIX):
        return key[len(_BASELINE_PREFIX):]
    stored = run.get("memory_system")
    if isinstance(stored, str) and stored:
        return stored
    group = _config(run).get("memory")
    if isinstance(group, Mapping) and group.get("system"):
        return str(group["system"])
    return DEFAULT_SYSTEM


def memory_budget_of(run: Mapping[str, Any]) -> dict[str, Any]:
    """The context budget a run stored (``runs.memory_budget``: ``top_k``, ``context_tokens``...); ``{}`` when it
    stored none (runs made before budgets were kept)."""
    stored = run.get("memory_budget")
    if isinstance(stored, Mapping):
        return dict(stored)
    if not isinstance(stored, str) or not stored:
        return {}
    try:
        budget = json.loads(stored)
    except ValueError:
        return {}
    return dict(budget) if isinstance(budget, Mapping) else {}


def memory_name_of(run: Mapping[str, Any]) -> str:
    """How a ``runs`` row's memory system is named in tables, legends and the HTML view.

    >>> memory_name_of({"memory_system": "rag_mastra", "memory_budget": '{"top_k": 20, "message_range": 2}'})
    'RAG (Mastra recall, top 20)'
    >>> memory_name_of({"memory_system": "my_plugin"}), memory_name_of({"memory_key": "baseline:full_context"})
    ('my_plugin', 'baseline: full context')
    """
    system = memory_system_of(run)
    config = _config(run)
    options = config.get(system_trait(system, "options_group"))
    return system_label(system, memory_budget_of(run), options if isinstance(options, Mapping) else {})


def memory_about(system: str) -> str:
    """A few words on what ``system`` shows the actor (the system's own ``about``; a plugin's: that it is one)."""
    return system_about(system)


# --------------------------------------------------------------------------------------------------- budgets


def budget_text(value: Any) -> str:
    """A budget value as printed: ``10``, ``126500``, ``[500, 2500]``."""
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else json.dumps(value)


def budget_warnings(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per memory system whose runs here stored budgets that differ in a key they share.

    Runs are grouped by benchmark and memory system (:func:`memory_system_of`); runs without a stored budget are
    left out. Each line names the runs (label, or short id) and their differing values.

    >>> budget_warnings([{"run_id": "a1", "label": "rag10", "memory_system": "rag_mastra", "memory_budget":
    ...                   '{"top_k": 10, "message_range": 2}'}, {"run_id": "b2", "label": "rag20", "memory_system":
    ...                   "rag_mastra", "memory_budget": '{"top_k": 20, "message_range": 2}'}])
    ['budgets differ: rag10 top_k 10, rag20 top_k 20 — their accuracies are not like for like.']
    """
    labels = [str(r.get("label") or str(r["run_id"])[:8]) for r in runs]
    groups: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
    for run, label in zip(runs, labels):
        budget = memory_budget_of(run)
        if budget:
            name = label if labels.count(label) == 1 else f"{label} ({str(run['run_id'])[:8]})"
            groups.setdefault((benchmark_of_run(run).name, memory_system_of(run)), []).append((name, budget))
    lines = []
    for key in sorted(groups):
        members = sorted(groups[key], key=lambda member: member[0])
        if len(members) < 2:
            continue
        shared = set.intersection(*(set(budget) for _, budget in members))
        differ = sorted(k for k in shared if len({json.dumps(b[k], sort_keys=True) for _, b in members}) > 1)
        if differ:
            runs_text = ", ".join(f"{name} " + " ".join(f"{k} {budget_text(budget[k])}" for k in differ)
                                  for name, budget in members)
            lines.append(f"budgets differ: {runs_text} — their accuracies are not like for like.")
    return lines


# ------------------------------------------------------------------------------------------------ stage costs


def stage_group(stage: str | None) -> str:
    """``ingest`` (a stage of :data:`~om_eval.memory.system.INGEST_STAGES`), ``judge``, or ``answer``."""
    if stage in INGEST_STAGES:
        return INGEST
    return JUDGE if stage == "judge" else ANSWER


@dataclass(frozen=True)
class StageUsage:
    """What a run's calls of one stage group did: calls, tokens and known spend."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    """Sum of the known costs (a cache hit costs $0)."""
    unpriced_calls: int = 0
    """Paid calls whose price is unknown (their cost is not in ``cost_usd``)."""

    def __add__(self, other: StageUsage) -> StageUsage:
        return StageUsage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))


def stage_usage(catalog: Any, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The sums of the ``llm_calls`` of ``run_ids`` per run and stage (the ``calls`` argument of
    :func:`~om_eval.report.tables.summary_table`), from a :class:`~om_eval.store.Catalog`."""
    if not run_ids:
        return []
    return catalog.query(
        "SELECT run_id, stage, count(*) AS calls, coalesce(sum(prompt_tokens), 0) AS prompt_tokens, "
        "coalesce(sum(completion_tokens), 0) AS completion_tokens, coalesce(sum(cost_usd), 0) AS cost_usd, "
        f"count(*) FILTER (WHERE {UNPRICED_CALL}) AS unpriced_calls "
        "FROM llm_calls WHERE list_contains(?, run_id) GROUP BY run_id, stage ORDER BY run_id, stage",
        [REJECTED_PREFIX, list(run_ids)])


def _usage_of(row: Mapping[str, Any]) -> StageUsage:
    """One row: a sum per (run, stage) as :func:`stage_usage` gives it, or a single ``llm_calls`` row (a paid call
    without a price counts as unpriced, as :class:`~om_eval.llm.ledger.LedgerTotals` counts it)."""
    if "calls" in row:
        return StageUsage(int(row["calls"] or 0), int(row.get("prompt_tokens") or 0),
                          int(row.get("completion_tokens") or 0), float(row.get("cost_usd") or 0.0),
                          int(row.get("unpriced_calls") or 0))
    cost = row.get("cost_usd")
    error = row.get("error")
    unpriced = (cost is None and not row.get("cached")
                and (error is None or str(error).startswith(REJECTED_PREFIX)))
    return StageUsage(1, int(row.get("prompt_tokens") or 0), int(row.get("completion_tokens") or 0),
                      float(cost or 0.0), int(unpriced))


def usage_by_run(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, StageUsage]]:
    """Run id -> stage group -> usage, from :func:`stage_usage` rows or plain ``llm_calls`` rows; every group is
    present for a run with any call."""
    out: dict[str, dict[str, StageUsage]] = {}
    for row in rows:
        groups = out.setdefault(str(row["run_id"]), {group: StageUsage() for group in STAGE_GROUPS})
        group = stage_group(row.get("stage"))
        groups[group] = groups[group] + _usage_of(row)
    return out


# ------------------------------------------------------------------------------------------------- recall@k


@dataclass(frozen=True)
class RecallAtK:
    """recall_any@k of one run at its own k, overall and per category, with the misses it explains."""

    k: int
    value: float | None
    """The share of counted questions with evidence in the top k (``None``: no question counts)."""
    n: int
    """Questions counted (not abstention, with evidence ids)."""
    per_type: Mapping[str, tuple[float | None, int]] = field(default_factory=dict)
    """Category key -> (recall_any@k, questions counted), for every category of the run's benchmark."""
    retrieval_misses: int = 0
    """Counted questions judged wrong whose evidence was not in the top k."""
    reading_misses: int = 0
    """Counted questions judged wrong although their evidence was in the top k."""
    right_without_evidence: int = 0
    """Counted questions judged right although no evidence was in the top k."""


def _hit(record: Mapping[str, Any], k: int) -> float | None:
    """recall_any@k of one stored ``items.retrieval`` record: its own metric where it has one at this k, else
    computed from its stored ranking; ``None`` when it has no metrics, or its kept ranking is shorter than k."""
    metrics = record.get("metrics")
    if not isinstance(metrics, Mapping):
        return None
    stored = metrics.get(f"recall_any@{k}")
    if stored is not None:
        return float(stored)
    ranked = list(record.get("ranked") or ())
    if len(ranked) < k and int(record.get("corpus") or 0) > len(ranked):
        return None  # the store keeps the top of the ranking only
    correct = set(record.get("correct") or ())
    return float(any(doc in correct for doc in ranked[:k]))


def recall_at_k(items: Iterable[Mapping[str, Any]], k: int | None, benchmark: Benchmark) -> RecallAtK | None:
    """recall_any@k of a run's items at ``k`` (its budget's ``top_k``; ``None``: the k its records stored).

    Returns ``None`` for a run that retrieved nothing (no ``items.retrieval``) or has no k.
    """
    records = []
    for item in items:
        text = item.get("retrieval")
        if isinstance(text, str) and text:
            records.append((item, json.loads(text)))
    if not records:
        return None
    if k is None:
        k = next((int(r["k"]) for _, r in records if r.get("k") is not None), None)
    if k is None or k < 1:
        return None
    hits: list[float] = []
    by_type: dict[str, list[float]] = {key: [] for key in benchmark.category_keys}
    misses = {"retrieval": 0, "reading": 0, "right": 0}
    for item, record in records:
        hit = _hit(record, k)
        if hit is None:
            continue
        hits.append(hit)
        if str(item.get("question_type")) in by_type:
            by_type[str(item.get("question_type"))].append(hit)
        label = item.get("label") if item.get("judge_status") in (None, "ok") else None
        if label is False:
            misses["reading" if hit else "retrieval"] += 1
        elif label is True and not hit:
            misses["right"] += 1
    return RecallAtK(k, _share(hits), len(hits), {key: (_share(v), len(v)) for key, v in by_type.items()},
                     misses["retrieval"], misses["reading"], misses["right"])


def _share(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def retrieval_text(stored: str | None) -> str | None:
    """One line on a question's stored ``items.retrieval``: where its evidence ranked against the run's k.

    >>> retrieval_text('{"k": 10, "ranked": ["a", "b", "c"], "correct": ["c"], "corpus": 3, "metrics": {}}')
    'evidence in the top 10 (first at rank 3; 1 of 1 evidence ids retrieved) · 3 documents searched'
    """
    if not stored:
        return None
    record = json.loads(stored)
    ranked, correct = list(record.get("ranked") or ()), set(record.get("correct") or ())
    k = record.get("k")
    top = ranked[:k] if isinstance(k, int) else ranked
    searched = f" · {record.get('corpus', '?')} documents searched"
    if "metrics" not in record:
        return "not scored (an abstention question, or no evidence ids)" + searched
    first = next((rank for rank, doc in enumerate(ranked, 1) if doc in correct), None)
    found = len(correct & set(top))
    where = f"the top {k}" if isinstance(k, int) else "the ranking"
    if found:
        return (f"evidence in {where} (first at rank {first}; {found} of {len(correct)} evidence ids retrieved)"
                + searched)
    return f"no evidence in {where}" + (f" (first at rank {first})" if first else "") + searched
