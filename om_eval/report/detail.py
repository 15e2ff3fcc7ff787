"""One question of one run, everything about it: the drill-down behind ``om-eval show`` and ``om-eval view``.

A question's story is spread over the store: its item row (question, gold answer, the answer, the verdict, what the
actor saw, where the evidence went), the memory snapshot of its build (observations generation by generation,
possibly in another run's file when the memory was reused), the build's OM events (observations and reflections)
and every verdict any judge gave (``judgments``). :func:`question_detail` gathers them into one plain dict, the
same for the terminal and the HTML page. Runs stored before a field existed read ``None`` there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from om_eval.bench.baseline import EVIDENCE_STATUS_TEXT as BASELINE_STATUS_TEXT
from om_eval.bench.judging.probes import PROBE_KINDS
from om_eval.bench.pipeline import hypothesis_hash, unpack_messages
from om_eval.report.agreement import judge_name
from om_eval.report.systems import memory_system_of, retrieval_text
from om_eval.store.catalog import Catalog

__all__ = ["EVIDENCE_STATUS_TEXT", "find_question", "find_run", "question_detail", "run_details"]

#: The OM event columns a question's detail shows (DISTINCT: a memory reused by several runs is stored once per
#: run file that built it).
_EVENT_COLUMNS = ('seq, kind, "at", generation, thread_count, message_tokens, observation_tokens_before, '
                  "observation_tokens_after, level, levels, calls, detail, record_id")

#: How each evidence status reads to a person (see ``om_eval.bench.trace``).
EVIDENCE_STATUS_TEXT = {
    "in_memory": "captured",
    "lost_at_reflection": "lost at reflection",
    "not_captured": "not captured",
    "in_raw_tail": "never observed (raw tail)",
    "retrieved": "ranked in the top k",
    "not_retrieved": "not ranked in the top k",
    "not_traced": "not reported by the memory system",
    **BASELINE_STATUS_TEXT,
}
_ITEM_FIELDS = ("question_id", "question_type", "is_abstention", "question", "gold_answer", "question_date",
                "status", "hypothesis", "label", "judge_status", "judge_reply", "error", "memory_key",
                "reused_memory", "observer_calls", "reflector_calls", "observations", "reflections",
                "history_tokens", "observation_tokens", "pending_tokens", "compression_ratio",
                "actor_prompt_tokens", "actor_completion_tokens", "cost_usd", "finished_at", "observed_message_tokens",
                "observation_cycles",
                "raw_tail_tokens", "haystack_id", "score",
                "corrected_answer", "corrected_score", "corrected_label", "tool_calls", "context_tokens")
_RUN_FIELDS = ("run_id", "label", "experiment", "dataset_name", "observer_model", "reflector_model",
               "actor_model", "judge_model", "judge_mode", "official", "benchmark")


#: The id a question's memory is stored under (its haystack's, when questions share one).
_OWNER = "coalesce(haystack_id, question_id)"


#: A stored run's record, whichever mapping type the caller holds it as.
_RunT = TypeVar("_RunT", bound=Mapping[str, Any])


def find_run(runs: Sequence[_RunT], wanted: str) -> _RunT:
    """The run named by an id, an id prefix, an exact label or the experiment (preset) it was run with.

    The first of these that names any run decides: ``smoke`` is the run labelled ``smoke`` when there is one,
    else the one run of ``experiment=smoke``.

    Raises:
        LookupError: naming the choices, when nothing or more than one run matches.
    """
    candidates = (("id prefix", [r for r in runs if r["run_id"].startswith(wanted)]),
                  ("label", [r for r in runs if r.get("label") == wanted]),
                  ("experiment", [r for r in runs if r.get("experiment") == wanted]))
    kind, matches = next(((kind, found) for kind, found in candidates if found), ("", []))
    if len(matches) == 1:
        return matches[0]
    if not matches:
        known = ", ".join(_run_name(r) for r in runs[:12]) or "none"
        raise LookupError(f"no run matches {wanted!r}; runs here: {known}")
    names = ", ".join(_run_name(r, 12) for r in matches[:12])
    hint = "give more of the run id" if kind == "id prefix" else "name one by its id prefix"
    raise LookupError(f"{len(matches)} runs match {wanted!r} as {kind}: {names}; {hint}")


def _run_name(run: Mapping[str, Any], width: int = 8) -> str:
    """``1825af23 (prompt=legacy)``: a run's id prefix and label, the names a person can give it by."""
    return f"{run['run_id'][:width]} ({run.get('label')})"


def find_question(question_ids: Sequence[str], wanted: str) -> str:
    """The question named by its id or an unambiguous prefix of it."""
    if wanted in question_ids:
        return wanted
    matches = [q for q in question_ids if q.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        shown = ", ".join(sorted(question_ids)[:10]) or "none"
        raise LookupError(f"the run has no question {wanted!r}; some of its questions: {shown}")
    raise LookupError(f"{len(matches)} questions start with {wanted!r}: {', '.join(sorted(matches)[:10])}")


def _generations(snapshot: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Per memory record (the resource, or each thread), its generations oldest first."""
    if not snapshot:
        return []
    records = []
    for key, generations in sorted(snapshot.get("generations", {}).items()):
        records.append({
            "record": key,
            "generations": [{
                "generation": g.get("generation_count", i),
                "origin": g.get("origin_type"),
                "observation_tokens": g.get("observation_token_count"),
                "last_observed_at": g.get("last_observed_at"),
                "observations": g.get("active_observations", ""),
            } for i, g in enumerate(generations)],
        })
    return records


def _judgments(rows: Sequence[Mapping[str, Any]], hypothesis: str | None) -> list[dict[str, Any]]:
    current = hypothesis_hash(hypothesis)
    return [{
        "judge_key": r["judge_key"], "judge_mode": r["judge_mode"], "judge_model": r["judge_model"],
        "judge": (judge_name(r["judge_identity"]) if r.get("judge_identity")
                  else f"{r['judge_mode']}:{r['judge_model']}"),
        "official": r["official"], "label": r["label"], "status": r["status"], "reply": r["reply"],
        "error": r["error"], "judged_at": r["judged_at"], "current": r["hypothesis_hash"] == current,
    } for r in sorted(rows, key=lambda r: (str(r["judged_at"]), r["judge_key"]))]


def _probes(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    order = {kind: index for index, kind in enumerate(PROBE_KINDS)}
    return [{
        "judge": judge_name(r["judge_identity"]), "probe": r["probe"], "probe_text": r["probe_text"],
        "expected": r["expected"], "label": r["label"], "status": r["status"], "reply": r["reply"],
        "error": r["error"],
    } for r in sorted(rows, key=lambda r: (judge_name(r["judge_identity"]), order.get(r["probe"], 9)))]


def question_detail(catalog: Catalog, run_id: str, question_id: str) -> dict[str, Any]:
    """Everything stored about one question of one run, as plain data (JSON-ready but for timestamps).

    Keys: ``run`` (the run's models and judge), ``item`` (question, gold answer, answer, verdict, memory
    statistics), ``evidence`` (list, or None for runs stored before it was kept), ``memory`` (records with their
    generations of observations, or [] when no snapshot is found), ``events`` (the build's OM events, in order),
    ``reflections`` (those events that are reflections), ``actor_messages`` (what the actor saw, or None) and
    ``judgments`` (every verdict on this question, ``current`` when it grades the stored answer, ``judge`` its
    ``protocol:model``) and ``probes`` (each judge's verdicts on the question's probe answers, ``rejudge --probes``).

    Raises:
        LookupError: the run or the question is not in the catalog.
    """
    runs = catalog.query("SELECT * FROM runs WHERE run_id = ?", [run_id])
    if not runs:
        raise LookupError(f"no run {run_id} in {catalog.results_dir}")
    items = catalog.query("SELECT * FROM items WHERE run_id = ? AND question_id = ?", [run_id, question_id])
    if not items:
        raise LookupError(f"run {run_id[:12]} has no question {question_id}")
    item = items[0]
    owner = item.get("haystack_id") or question_id  # a shared memory is stored once, under its owner
    snapshot_rows = catalog.query(
        "SELECT snapshot FROM memory_snapshots WHERE memory_key = ? AND question_id = ? LIMIT 1",
        [item["memory_key"], owner])
    events = catalog.query(
        f"SELECT DISTINCT {_EVENT_COLUMNS} FROM om_events WHERE memory_key = ? AND question_id = ? ORDER BY seq",
        [item["memory_key"], owner])
    judgments = catalog.query("SELECT * FROM judgments WHERE run_id = ? AND question_id = ?", [run_id, question_id])
    probes = catalog.query("SELECT * FROM probe_verdicts WHERE run_id = ? AND question_id = ?", [run_id, question_id])
    return _assemble(runs[0], item, snapshot_rows[0]["snapshot"] if snapshot_rows else None, events, judgments,
                     probes)


def run_details(catalog: Catalog, run_id: str) -> dict[str, dict[str, Any]]:
    """:func:`question_detail` of every question of a run, keyed by question id, in five queries in all.

    What ``om-eval view`` embeds: one query per kind of row for the whole run, instead of five per question.
    """
    runs = catalog.query("SELECT * FROM runs WHERE run_id = ?", [run_id])
    if not runs:
        raise LookupError(f"no run {run_id} in {catalog.results_dir}")
    items = catalog.query("SELECT * FROM items WHERE run_id = ?", [run_id])
    snapshots: dict[tuple[str, str], str] = {}
    for row in catalog.query(
            "SELECT s.memory_key, s.question_id, s.snapshot FROM memory_snapshots s JOIN "
            f"(SELECT DISTINCT memory_key, {_OWNER} AS owner FROM items WHERE run_id = ?) i "
            "ON s.memory_key = i.memory_key AND s.question_id = i.owner", [run_id]):
        snapshots.setdefault((row["memory_key"], row["question_id"]), row["snapshot"])
    events: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in catalog.query(
            f"SELECT DISTINCT e.memory_key, e.question_id, {_EVENT_COLUMNS} FROM om_events e JOIN "
            f"(SELECT DISTINCT memory_key, {_OWNER} AS owner FROM items WHERE run_id = ?) i "
            "ON e.memory_key = i.memory_key AND e.question_id = i.owner ORDER BY seq", [run_id]):
        key = (row.pop("memory_key"), row.pop("question_id"))
        events.setdefault(key, []).append(row)
    judgments: dict[str, list[dict[str, Any]]] = {}
    for row in catalog.query("SELECT * FROM judgments WHERE run_id = ?", [run_id]):
        judgments.setdefault(row["question_id"], []).append(row)
    probes: dict[str, list[dict[str, Any]]] = {}
    for row in catalog.query("SELECT * FROM probe_verdicts WHERE run_id = ?", [run_id]):
        probes.setdefault(row["question_id"], []).append(row)
    details = {}
    for item in items:
        key = (item["memory_key"], item.get("haystack_id") or item["question_id"])
        details[item["question_id"]] = _assemble(runs[0], item, snapshots.get(key), events.get(key, []),
                                                 judgments.get(item["question_id"], []),
                                                 probes.get(item["question_id"], []))
    return details


def recall_calls(steps_text: str | None, messages: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Retrieval mode: each recall call with what it returned (the tool message answering its call id); ``None``
    when the actor had no tool."""
    if not steps_text:
        return None
    results = {m.get("tool_call_id"): m.get("content") for m in messages or () if m.get("role") == "tool"}
    return [{**step, "result": results.get(step["call_id"])} for step in json.loads(steps_text)]


def figures_text(figures: Mapping[str, Any]) -> str:
    """A system's own figures for an answer (``items.detail``) as one line, for ``show`` and ``view``.

    >>> figures_text({"hits": 3, "shown_messages": 9, "by_day": {"a": 1}})
    'hits 3 · shown messages 9 · by day {"a": 1}'
    """
    return " · ".join(f"{str(key).replace('_', ' ')} "
                      f"{json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value}"
                      for key, value in figures.items())


def _assemble(run: Mapping[str, Any], item: Mapping[str, Any], snapshot_text: str | None,
              events: list[dict[str, Any]], judgments: Sequence[Mapping[str, Any]],
              probes: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    snapshot = json.loads(snapshot_text) if snapshot_text else None
    evidence = json.loads(item["evidence"]) if item.get("evidence") else None
    for trace in evidence or []:
        trace["status_text"] = EVIDENCE_STATUS_TEXT.get(trace["status"], trace["status"])
    messages = unpack_messages(item.get("actor_prompt"))
    own = json.loads(item["detail"]) if item.get("detail") else {}
    return {
        "run": {**{name: run.get(name) for name in _RUN_FIELDS}, "memory_system": memory_system_of(run)},
        "item": {**{name: item.get(name) for name in _ITEM_FIELDS}, "retrieval": retrieval_text(item.get("retrieval")),
                 "system_detail": own, "system_figures": figures_text(own)},
        "evidence": evidence,
        "memory": _generations(snapshot),
        "events": events,
        "reflections": [e for e in events if e["kind"].startswith("reflection")],
        "actor_messages": messages,
        "recall_calls": recall_calls(item.get("recall_steps"), messages),
        "judgments": _judgments(judgments, item.get("hypothesis")),
        "probes": _probes(probes),
    }
