"""The report table's memory-system parts as text: the notes on what each system showed the actor, the rows of
context tokens, ingest and answer cost and recall_any@k, the retrieval table per category, and the CSV fields.

:mod:`om_eval.report.table_text` lays them into the compact, wide, markdown and CSV renderings;
:mod:`om_eval.report.systems` computes the numbers.
"""

from __future__ import annotations

import json
from typing import Any

from om_eval.bench.benchmark import Benchmark
from om_eval.report import _format as fmt
from om_eval.report.systems import ANSWER, INGEST, STAGE_GROUPS, memory_about
from om_eval.report.tables import _BASELINE_PREFIX, ReportTable, RunSummary, Section

__all__ = ["RECALL_NOTE", "SYSTEMS_NOTE", "memory_fields", "memory_note", "retrieval_table", "retrieval_title",
           "system_fields", "system_rows"]

SYSTEMS_NOTE = ("context tokens = mean tokens of the memory the actor was shown (the run's tokenizer); ingest $ = "
                "known spend building the memory (observer, reflector, retrieval embeddings; a cache hit costs $0); "
                "answer $ = the actor's calls (and its recall rounds); judging is counted apart. Calls and tokens of "
                "each part, and the judge's: the CSV.")
RECALL_NOTE = ("recall_any@k = the share of questions with at least one evidence document (session, turn or "
               "message, as the system indexes them) among the k it retrieved, at the run's own k (top_k); "
               "abstention questions and questions without evidence ids are left out, as in LongMemEval's retrieval "
               "evaluation. Wrong answers are split into retrieval misses (evidence not in the top k) and reading "
               "misses (evidence retrieved, answer still wrong); right, not retrieved = right answers whose evidence "
               "was not in the top k (answered from elsewhere, or by chance).")


def memory_note(table: ReportTable) -> str:
    """What each memory system of the table showed the actor, in the systems' own words (their ``about``), with
    the names its runs go by, in the order the table first shows each system."""
    names: dict[str, list[str]] = {}
    for row in table.rows:
        if row.memory not in names.setdefault(row.system, []):
            names[row.system].append(row.memory)
    return "memory: " + "; ".join(f"{', '.join(sorted(found))} = {memory_about(system)}"
                                  for system, found in names.items()) + "."


def _stage_cell(row: RunSummary, group: str) -> str:
    """Known spend of one stage group, ``+k unpriced`` when some of its calls had no price; ``–`` without calls."""
    usage = row.stage(group)
    if usage is None:
        return fmt.MISSING
    return fmt.dollars(usage.cost_usd) + (f" +{usage.unpriced_calls} unpriced" if usage.unpriced_calls else "")


def _recall_cell(row: RunSummary) -> str:
    recall = row.recall
    return fmt.MISSING if recall is None else f"{fmt.pct(recall.value)} n={recall.n} k={recall.k}"


def system_rows(table: ReportTable) -> tuple[tuple[str, Any], ...]:
    """(name, cell of a run) rows that set memory systems side by side: context tokens, ingest and answer cost
    when the table compares systems, recall_any@k when a run retrieved."""
    rows: tuple[tuple[str, Any], ...] = ()
    if table.compares_memory:
        rows += (("context tokens", lambda r: fmt.tokens(r.mean_context_tokens)),
                 ("ingest $", lambda r: _stage_cell(r, INGEST)), ("answer $", lambda r: _stage_cell(r, ANSWER)))
    if table.has_recall:
        rows += (("recall_any@k", _recall_cell),)
    return rows


def retrieval_table(section: Section) -> tuple[list[str], list[list[str]]] | None:
    """The recall table of a section's runs that retrieved: recall_any@k per category and overall, then their wrong
    answers split into retrieval and reading misses; ``None`` when none of them retrieved."""
    rows = [row for row in section.rows if row.recall is not None]
    if not rows:
        return None
    recalls = [row.recall for row in rows if row.recall is not None]
    headers = ["recall_any@k", *(row.label for row in rows)]
    body = [[c.short, *(f"{fmt.pct(r.per_type[c.key][0])} n={r.per_type[c.key][1]}" for r in recalls)]
            for c in section.benchmark.categories]
    body += [
        ["overall", *(f"{fmt.pct(r.value)} n={r.n}" for r in recalls)],
        ["k", *(str(r.k) for r in recalls)],
        ["retrieval misses", *(str(r.retrieval_misses) for r in recalls)],
        ["reading misses", *(str(r.reading_misses) for r in recalls)],
        ["right, not retrieved", *(str(r.right_without_evidence) for r in recalls)],
    ]
    return headers, body


def retrieval_title(table: ReportTable, section: Section) -> str:
    title = "Retrieval: recall_any@k at each run's own k"
    return f"{title} ({section.title})" if len(table.sections) > 1 else title


def memory_fields(row: RunSummary) -> dict[str, str]:
    """The memory system (``om``, ``baseline:<reader>``, a seam system's name), its shown name and its budget."""
    return {"memory": f"{_BASELINE_PREFIX}{row.reader}" if row.reader else row.system, "memory_name": row.memory,
            "memory_budget": json.dumps(dict(row.budget), sort_keys=True) if row.budget else ""}


def system_fields(benchmark: Benchmark, row: RunSummary) -> dict[str, str]:
    """Calls, tokens and known spend per stage group (empty when the calls were not given), and recall_any@k."""
    out: dict[str, str] = {}
    for group in STAGE_GROUPS:
        usage = row.stage(group)
        out[f"{group}_cost_usd"] = fmt.csv_number(None if usage is None else usage.cost_usd)
        for name in ("calls", "prompt_tokens", "completion_tokens", "unpriced_calls"):
            out[f"{group}_{name}"] = "" if usage is None else str(getattr(usage, name))
    recall = row.recall
    out.update({
        "recall_k": "" if recall is None else str(recall.k),
        "recall_any_at_k": fmt.csv_number(None if recall is None else recall.value),
        "recall_n": "" if recall is None else str(recall.n),
        "retrieval_misses": "" if recall is None else str(recall.retrieval_misses),
        "reading_misses": "" if recall is None else str(recall.reading_misses),
        "right_without_evidence": "" if recall is None else str(recall.right_without_evidence),
    })
    for key in benchmark.category_keys:
        value = recall.per_type[key][0] if recall is not None and key in recall.per_type else None
        out[f"{key}_recall_any_at_k"] = fmt.csv_number(value)
    return out
