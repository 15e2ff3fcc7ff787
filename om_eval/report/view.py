"""``om-eval view``: the stored runs as one self-contained HTML page, from the summary down to one question.

The page has these parts: a runs table (memory system, models, judge, n, accuracies, cost), accuracy bars per
question type, the accuracy against context tokens and cost (with ingest and answer cost and recall@k per run),
the cost per turn with and without a provider's prompt cache (the table of ``om-eval report``, per run and price
profile, for runs with turn tables: :mod:`~om_eval.report.turns`), judge agreement (Cohen's kappa) and the judge
panel for runs graded by more than one judge (with each judge's graded and failed answers, and why a comparison
covers fewer answers than the run holds), and a question browser: a list of every question with a correct/wrong
mark per run, and for the chosen question the whole :func:`~om_eval.report.detail.question_detail` of one run, or
of two runs side by side.

**One file, no network.** CSS and JavaScript are inline (``templates/view.html``), the data sits in a
``<script type="application/json">`` block, nothing is fetched; the page works from ``file://``. The question
browser is drawn by the script from that block and keeps its state in the URL hash
(``#q=<question id>&a=<run id prefix>&b=<run id prefix>``), so a link names a question and two runs.

**Escaping.** Stored texts hold ``<``, ``&``, quotes, emoji and tags such as ``<observations>``. The static parts
are rendered by jinja2 with autoescape on (``templates/view.html``); the script only ever sets ``textContent``
(never ``innerHTML``) from the data; and in the JSON block every ``</`` and ``<!--`` is written as an escape
sequence, so no stored text can end the block or open a comment.

**Size caps.** Each question detail is embedded once per run, and a memory (observations by generation and the
OM events) once per memory key and question, however many runs share it. Long texts are cut to their first and
last lines, with a note saying how many were left out (``om-eval show --full`` prints them whole):

* what the actor saw: the first :data:`ACTOR_HEAD_LINES` and last :data:`ACTOR_TAIL_LINES` lines of the whole
  prompt, counted over all its messages (messages wholly in the middle collapse into one note);
* observations: the latest generation of each memory record keeps its first and last :data:`OBSERVATION_LINES`
  lines, earlier generations their first and last :data:`OLDER_GENERATION_LINES`;
* answers, judge replies and errors: their first and last :data:`REPLY_LINES` lines;
* any single line: :data:`LINE_CHARS` characters.

At about 110 bytes a line, an S-sized question (~100k-token history, observations of several hundred lines)
then costs at most ~33 kB of actor prompt, ~33 kB for its latest generation and ~11 kB per earlier one: a
500-question S run comes to about 35-45 MB. The mini set's questions take a few kB each.

**Determinism.** Runs come in the order of the summary table (a seeded bootstrap), questions sorted by id, the
JSON with sorted keys, and the only times on the page are those stored in the runs: the same store and options
give the same bytes.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import jinja2

from om_eval.bench.baseline import EVIDENCE_STATUS_TEXT as BASELINE_STATUS_TEXT
from om_eval.report import _format as fmt
from om_eval.report.agreement import JudgePair, agreement_rows, clip
from om_eval.report.detail import EVIDENCE_STATUS_TEXT, find_run, run_details
from om_eval.report.plots import variant_colors
from om_eval.report.systems import ANSWER, INGEST, budget_warnings, memory_about, memory_system_of, stage_usage
from om_eval.report.tables import (
    CAVEAT_MARK,
    Accuracy,
    ReportTable,
    RunSummary,
    caveat_notes,
    memory_name,
    summary_table,
)
from om_eval.report.turns import TURN_HEAD, TurnRow, short_note, turn_rows, unrecorded_note, unrecorded_runs
from om_eval.store.catalog import Catalog

__all__ = ["ACTOR_HEAD_LINES", "ACTOR_TAIL_LINES", "LINE_CHARS", "OBSERVATION_LINES", "OLDER_GENERATION_LINES",
           "REPLY_LINES", "clip_messages", "clip_text", "render_view", "view_data", "write_view"]

#: Lines of the actor prompt kept from its start and from its end.
ACTOR_HEAD_LINES = 150
ACTOR_TAIL_LINES = 150
#: Lines kept from the start and from the end of the latest generation of observations.
OBSERVATION_LINES = 150
#: Lines kept from the start and from the end of an earlier (reflected-away) generation.
OLDER_GENERATION_LINES = 50
#: Lines kept from the start and from the end of an answer, a judge reply or an error.
REPLY_LINES = 100
#: Characters kept of any one line.
LINE_CHARS = 1000
#: Characters of the question kept in the question list (the drill-down has it whole).
_LIST_QUESTION_CHARS = 160

_TEMPLATE = "view.html"


# ------------------------------------------------------------------------------------------------ entry point


def write_view(results_dir: Path | str, out_path: Path | str, *, run_prefixes: Sequence[str] | None = None,
               n_boot: int = 1000, seed: int = 0) -> Path:
    """Write the HTML view of the runs in ``results_dir`` to ``out_path`` (parent folders are created).

    Args:
        run_prefixes: only these runs (each a run id, an id prefix or a label); all runs by default.
        n_boot, seed: the bootstrap behind the accuracy intervals (as ``om-eval report``).

    Returns:
        The path written.

    Raises:
        LookupError: the folder holds no run, or a prefix matches no run or more than one.
    """
    results_dir = Path(results_dir)
    with Catalog(results_dir, warn=False) as catalog:
        runs = catalog.runs()
        if not runs:
            where = results_dir / "store"
            skipped = (f" ({len(catalog.skipped_files)} run file(s) could not be opened: a job may be writing "
                       "them)") if catalog.skipped_files else ""
            raise LookupError(f"no runs in {where}{skipped}; start one with: om-eval run experiment=smoke")
        if run_prefixes:
            chosen: list[dict[str, Any]] = []
            for prefix in run_prefixes:
                run = find_run(runs, prefix)
                if run not in chosen:
                    chosen.append(run)
            runs = chosen
        data, table = view_data(catalog, runs, n_boot=n_boot, seed=seed)
        skipped_files = sorted(path.name for path in catalog.skipped_files)
    page = render_view(data, table, title=f"om-eval · {results_dir.name or results_dir}",
                       skipped_files=skipped_files)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8", errors="replace")
    return out


# ------------------------------------------------------------------------------------------------------ data


def clip_text(text: str | None, head: int, tail: int, *, line_chars: int = LINE_CHARS) -> str | None:
    """``text`` cut to its first ``head`` and last ``tail`` lines (and each line to ``line_chars``), with notes."""
    if text is None:
        return None
    lines = text.splitlines()
    long_lines = any(len(line) > line_chars for line in lines)
    if len(lines) <= head + tail and not long_lines:
        return text
    lines = [_clip_line(line, line_chars) for line in lines]
    if len(lines) > head + tail:
        left_out = len(lines) - head - tail
        lines = [*lines[:head], _gap_note(left_out), *lines[len(lines) - tail:]]
    return "\n".join(lines)


def clip_messages(messages: Sequence[Mapping[str, str]] | None, head: int = ACTOR_HEAD_LINES,
                  tail: int = ACTOR_TAIL_LINES, *, line_chars: int = LINE_CHARS) -> list[dict[str, Any]] | None:
    """Chat messages cut to the first ``head`` and last ``tail`` lines of the whole conversation.

    A message partly in the kept lines is cut inside (with a note line); a run of messages wholly in the middle
    becomes one ``{"gap_messages": k, "gap_lines": n}`` entry.
    """
    if messages is None:
        return None
    texts = [str(m.get("content") or "") for m in messages]
    sizes = [max(1, len(t.splitlines())) for t in texts]
    total = sum(sizes)
    if total <= head + tail:
        return [{"role": m.get("role"), "content": clip_text(t, total, 0, line_chars=line_chars)}
                for m, t in zip(messages, texts, strict=True)]
    out: list[dict[str, Any]] = []
    start = 0
    tail_from = total - tail
    for message, text, size in zip(messages, texts, sizes, strict=True):
        lines = text.splitlines() or [""]
        keep_head = max(0, min(size, head - start))
        keep_tail = max(0, min(size, start + size - tail_from))
        start += size
        if keep_head == 0 and keep_tail == 0:
            if out and "gap_messages" in out[-1]:
                out[-1]["gap_messages"] += 1
                out[-1]["gap_lines"] += size
            else:
                out.append({"gap_messages": 1, "gap_lines": size})
            continue
        if keep_head + keep_tail < size:
            lines = [*lines[:keep_head], _gap_note(size - keep_head - keep_tail), *lines[size - keep_tail:]]
        out.append({"role": message.get("role"), "content": "\n".join(_clip_line(x, line_chars) for x in lines)})
    return out


def _clip_line(line: str, limit: int) -> str:
    return line if len(line) <= limit else f"{line[:limit]} … ({len(line) - limit} more characters)"


def _gap_note(lines: int) -> str:
    return f"… {lines} lines left out of this page (om-eval show --full prints them) …"


def _memory(detail: Mapping[str, Any]) -> dict[str, Any]:
    records = []
    for record in detail["memory"]:
        generations = record["generations"]
        kept = []
        for index, generation in enumerate(generations):
            keep = OBSERVATION_LINES if index == len(generations) - 1 else OLDER_GENERATION_LINES
            kept.append({**generation, "observations": clip_text(generation["observations"], keep, keep)})
        records.append({"record": record["record"], "generations": kept})
    return {"records": records, "events": [dict(e) for e in detail["events"]]}


def _embedded(detail: Mapping[str, Any], memory_ref: str) -> dict[str, Any]:
    """One question of one run as the page keeps it: the detail minus the run, memory and events (shared)."""
    messages = _with_calls_written(detail["actor_messages"])
    item = dict(detail["item"])
    for name in ("hypothesis", "judge_reply", "error"):
        item[name] = clip_text(item[name], REPLY_LINES, REPLY_LINES)
    judgments = [{**j, "reply": clip_text(j["reply"], REPLY_LINES, REPLY_LINES),
                  "error": clip_text(j["error"], REPLY_LINES, REPLY_LINES)} for j in detail["judgments"]]
    return {
        "item": item,
        "evidence": detail["evidence"],
        "memory": memory_ref,
        "actor": clip_messages(messages),
        "actor_size": None if messages is None else {
            "messages": len(messages), "lines": sum(max(1, len(str(m.get("content") or "").splitlines()))
                                                    for m in messages)},
        "judgments": judgments,
        "probes": [{**p, "reply": clip_text(p["reply"], REPLY_LINES, REPLY_LINES)} for p in detail["probes"]],
        "recall": None if detail.get("recall_calls") is None else [
            {**call, "result": clip_text(str(call.get("result") or ""), REPLY_LINES, REPLY_LINES)}
            for call in detail["recall_calls"]],
    }


def _with_calls_written(messages: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """The actor's messages with each tool call it asked for written under its text (``→ name(arguments)``)."""
    if messages is None:
        return None
    written = []
    for message in messages:
        calls = "".join(f"\n\u2192 {c['function']['name']}({c['function']['arguments']})"
                        for c in message.get("tool_calls") or ())
        # Every chat message has a role (str): the cast only tells mypy so.
        role = cast(str, message.get("role")) + (" (tool result)" if message.get("tool_call_id") else "")
        written.append({"role": role, "content": str(message.get("content") or "") + calls})
    return written


def _mark(item: Mapping[str, Any]) -> str:
    """How the question list marks one run's result: correct, wrong, judge-error, not-judged or failed."""
    if item.get("status") not in (None, "done"):
        return "failed"
    status = item.get("judge_status")
    if status == "error":
        return "judge-error"
    if status not in (None, "ok") or item.get("label") is None:
        return "not-judged"
    return "correct" if item["label"] else "wrong"


def _accuracy(acc: Accuracy, show_ci: bool) -> dict[str, Any]:
    return {"value": acc.value, "ci": list(acc.ci) if acc.ci and show_ci else None, "n": acc.n}


def view_data(catalog: Catalog, runs: Sequence[Mapping[str, Any]], *, n_boot: int = 1000,
              seed: int = 0) -> tuple[dict[str, Any], ReportTable]:
    """Everything the page embeds, as JSON-ready data, and the summary table behind it.

    Keys: ``runs`` (in summary-table order: ids, label, colour, judge and its caveat, n), ``types``,
    ``status_text``, ``questions`` (sorted by id, each with a mark per run), ``details`` (run id -> question id
    -> the capped question detail), ``memories`` (``memory_key|question_id`` -> observations and events),
    ``caps`` (the cut limits), ``agreement`` (judge pairs of runs with more than one judge), ``panels`` (their
    judge panels and judge quality), ``turn_costs`` (the run id and :class:`~om_eval.report.turns.TurnRow` fields
    per run with turn tables and price profile).
    """
    run_ids = [str(r["run_id"]) for r in runs]
    items = catalog.items(run_ids) if run_ids else []
    table = summary_table(runs, items, calls=stage_usage(catalog, run_ids), n_boot=n_boot, seed=seed)
    rows = table.rows
    colors = variant_colors([row.variant for row in rows])
    by_id = {str(r["run_id"]): r for r in runs}

    questions: dict[str, dict[str, Any]] = {}
    details: dict[str, dict[str, Any]] = {row.run_id: {} for row in rows}
    memories: dict[str, Any] = {}
    per_run = {rid: run_details(catalog, rid) for rid in {str(item["run_id"]) for item in items}}
    for item in sorted(items, key=lambda i: (str(i["question_id"]), str(i["run_id"]))):
        qid, rid = str(item["question_id"]), str(item["run_id"])
        entry = questions.setdefault(qid, {
            "id": qid, "type": item.get("question_type"),
            "abstention": "_abs" in qid if item.get("is_abstention") is None else bool(item["is_abstention"]),
            "text": _short(item.get("question"), _LIST_QUESTION_CHARS), "marks": {}})
        entry["marks"][rid] = _mark(item)
        detail = per_run[rid][qid]
        ref = f"{item.get('memory_key') or rid}|{item.get('haystack_id') or qid}"  # a shared memory is embedded once
        if ref not in memories:
            memories[ref] = _memory(detail)
        details[rid][qid] = _embedded(detail, ref)

    run_entries = []
    for row in rows:
        run = by_id[row.run_id]
        run_entries.append({
            "id": row.run_id, "short": row.short_id, "label": row.label, "variant": row.variant,
            "color": colors[row.variant], "caveat": row.caveat, "judge": _judge_name(row),
            "memory": memory_name(row),
            "system": memory_system_of(run),
            "dataset": run.get("dataset_name"),
            "models": _models(run, row),
            "n_items": row.n_items, "n_expected": row.n_expected, "complete": row.complete,
            "task_averaged": _accuracy(row.graded.task_averaged, not row.caveat),
            "overall": _accuracy(row.graded.overall, not row.caveat),
        })
    data = {
        "runs": run_entries,
        "types": [[c.key, c.short] for b in table.benchmarks for c in b.categories],
        "status_text": {**EVIDENCE_STATUS_TEXT, **BASELINE_STATUS_TEXT},
        "questions": [questions[q] for q in sorted(questions)],
        "details": details,
        "memories": memories,
        "caps": {"actor_head_lines": ACTOR_HEAD_LINES, "actor_tail_lines": ACTOR_TAIL_LINES,
                 "observation_lines": OBSERVATION_LINES, "older_generation_lines": OLDER_GENERATION_LINES,
                 "line_chars": LINE_CHARS},
        "agreement": [_pair(pair) for pair in agreement_rows(catalog, [by_id[row.run_id] for row in rows])],
        "panels": [panel for row in rows if (panel := _panel(catalog, by_id[row.run_id], row)) is not None],
        "turn_costs": _turn_costs([by_id[row.run_id] for row in rows], items),
        "turns_unrecorded": unrecorded_runs([by_id[row.run_id] for row in rows], items),
        "budgets": budget_warnings([by_id[row.run_id] for row in rows]),
        "n_boot": n_boot, "seed": seed,
    }
    return data, table


def _turn_costs(runs: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``om-eval report``'s cost-per-turn table (:func:`~om_eval.report.turns.turn_rows`)."""
    return [asdict(turn) for turn in turn_rows(runs, items)]


def _models(run: Mapping[str, Any], row: RunSummary) -> dict[str, Any]:
    """The models a run called, by role: OM's observer, reflector and actor; a baseline reader's actor alone; a
    seam system's actor and whichever of the others it recorded (RAG calls no observer or reflector)."""
    roles: tuple[str, ...] = ("actor",) if row.reader is not None else tuple(
        role for role in ("observer", "reflector", "actor") if role == "actor" or run.get(f"{role}_model"))
    return {role: run.get(f"{role}_model") for role in roles}


def _short(text: Any, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _judge_name(row: RunSummary) -> str:
    return f"{row.judge_mode or '?'}:{row.judge_model or '?'}"


def _pair(pair: JudgePair) -> dict[str, Any]:
    return {"run_id": pair.run_id, "first": pair.first, "second": pair.second, "n": pair.n,
            "agreement": pair.agreement, "kappa": pair.kappa, "accuracy_first": pair.accuracy_first,
            "accuracy_second": pair.accuracy_second, "answers": pair.answers, "graded_first": pair.graded_first,
            "graded_second": pair.graded_second, "graded_accuracy_first": pair.graded_accuracy_first,
            "graded_accuracy_second": pair.graded_accuracy_second, "note": pair.note}


def _panel(catalog: Catalog, run: Mapping[str, Any], row: RunSummary) -> dict[str, Any] | None:
    """A run's judge panel and judge quality as the page shows them, or ``None`` when it has neither."""
    from om_eval.bench.benchmark import benchmark_of_run
    from om_eval.report.judge_panel import judge_quality, panel_report

    benchmark = benchmark_of_run(run)
    panel = panel_report(catalog, row.run_id, benchmark)
    quality = judge_quality(catalog, row.run_id, benchmark)
    if panel is None and not quality:
        return None
    out: dict[str, Any] = {"run": row.short_id, "label": row.label, "judges": [], "quality": []}
    if panel is not None:
        out["n"] = panel.n
        out["answers"] = panel.total
        out["note"] = panel.note
        out["categories"] = [benchmark.category(c).short for c in panel.categories]
        out["judges"] = [{"label": j.label, "own": j.own, "graded": j.graded, "failed": j.failed,
                          "cells": [_pct(j.by_category.get(c)) for c in panel.categories],
                          "overall": _pct(j.accuracy), "all_graded": _pct(j.accuracy_graded),
                          "error": clip(j.error) if j.error else None} for j in panel.judges]
        out["range"] = {"cells": [_pct(panel.category_spread(c)) for c in panel.categories],
                        "overall": _pct(panel.spread)}
        out["flips"] = [{"id": f.question_id, "type": f.question_type,
                         "verdicts": "; ".join(f"{label}: {'yes' if ok else 'no'}"
                                               for label, (ok, _) in f.verdicts.items())} for f in panel.flips]
    out["quality"] = [{"label": q.label, "fa": _pct(q.false_accept), "fa_vague": _pct(q.false_accept_vague),
                       "fa_wrong": _pct(q.false_accept_wrong), "fr": _pct(q.false_reject), "errors": q.errors}
                      for q in quality]
    return out


# --------------------------------------------------------------------------------------------------- rendering


def _script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``</`` and no ``<!--`` can appear in it."""
    text = json.dumps(_no_nan(data), ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str,
                      allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


def _no_nan(value: Any) -> Any:
    """``value`` with every NaN float as None (JSON has no NaN)."""
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_no_nan(v) for v in value]
    return value


def _pct(value: float | None) -> str:
    return "n/a" if fmt.missing(value) else f"{fmt.pct(value)}%"


def _acc(acc: Accuracy, row: RunSummary) -> dict[str, str]:
    ci = "" if row.caveat or fmt.missing(acc.value) else fmt.compact_interval(acc.ci)
    return {"text": _pct(acc.value), "ci": ci}


def _memory_title(row: RunSummary) -> str:
    """What the memory badge of a run says when pointed at: the system's own words, and its budget."""
    budget = ", ".join(f"{key} {value}" for key, value in sorted(row.budget.items()))
    return memory_about(row.system) + (f" (budget: {budget})" if budget else "")


def _run_row(row: RunSummary, run: Mapping[str, Any], color: str, shows_memory: bool) -> dict[str, Any]:
    models = tuple((name, model or "?") for name, model in run["models"].items())
    one_model = models[0][1] if len(models) > 1 and len({model for _, model in models}) == 1 else None
    return {
        "run_id": row.run_id, "short_id": row.short_id, "color": color, "label": row.label,
        "memory": memory_name(row) if shows_memory else None, "memory_title": _memory_title(row),
        "dataset": run.get("dataset") or "?",
        "models": models, "one_model": one_model, "judge": _judge_name(row),
        "section": "official" if row.official else "non-official", "caveat": row.caveat,
        "judged": f"{row.n_ok}/{row.n_items}",
        "unfinished": None if row.complete else f"{row.n_items} of {row.n_expected}",
        "task_averaged": _acc(row.graded.task_averaged, row), "overall": _acc(row.graded.overall, row),
        "abstention": _acc(row.graded.abstention, row),
        "cost": f"{row.cost_usd:.4f}", "unpriced": row.unknown_cost_calls,
    }


def _bar(acc: Accuracy, row: RunSummary, color: str) -> dict[str, Any]:
    bar: dict[str, Any] = {"run_id": row.run_id, "label": row.label, "color": color, "n": acc.n, "width": None}
    value = acc.value
    if fmt.missing(value):
        return bar
    assert value is not None  # fmt.missing(None) is true
    whisker = None
    if acc.ci and not row.caveat and not any(fmt.missing(x) for x in acc.ci):
        low, high = (max(0.0, min(100.0, 100.0 * x)) for x in acc.ci)
        whisker = (low, max(high - low, 0.0))
    return {**bar, "width": max(0.0, min(100.0, 100.0 * value)), "zero": value == 0,
            "hatched": bool(row.caveat), "whisker": whisker, "text": _pct(value)}


def _own_accuracy(row: RunSummary, key: str) -> Accuracy | None:
    """A benchmark's own score of one category as a bar (no interval: it is a mean of means)."""
    if row.own is None or key not in row.own.per_type:
        return None
    value, n = row.own.per_type[key]
    return Accuracy(value, None, n)


def _bar_groups(table: ReportTable, colors: Mapping[str, str]) -> list[dict[str, Any]]:
    """One group of bars per category of each benchmark shown (a run of another benchmark has no bar there), and
    abstention where a benchmark shows it as a row of its own."""
    none = Accuracy(None, None, 0)
    groups = []
    for benchmark in table.benchmarks:
        if benchmark.own_means is not None:  # BEAM: its own score per ability, not the judge's full-marks share
            groups += [(c.short, f"{c.title} ({benchmark.own_score} score)",
                        lambda row, t=c.key: _own_accuracy(row, t) or none) for c in benchmark.categories]
            continue
        groups += [(c.short, c.title, lambda row, t=c.key: row.graded.per_type.get(t, none))
                   for c in benchmark.categories]
        if benchmark.abstention_row:
            groups.append(("Abstention", "questions with _abs in their id",
                           lambda row, name=benchmark.name: row.graded.abstention if row.benchmark == name else none))
    return [{"short": short, "full": full, "bars": [_bar(pick(row), row, colors[row.variant]) for row in table.rows]}
            for short, full, pick in groups]


def _agreement_rows(pairs: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"run": pair["run_id"][:8], "label": labels.get(pair["run_id"], ""), "first": pair["first"],
             "second": pair["second"], "n": pair["n"], "agreement": _pct(pair["agreement"]),
             "kappa": "undefined" if pair["kappa"] is None else f"{pair['kappa']:.3f}",
             "accuracy_first": _pct(pair["accuracy_first"]), "accuracy_second": _pct(pair["accuracy_second"]),
             "graded_first": f"{_pct(pair.get('graded_accuracy_first'))} of {pair.get('graded_first', 0)}",
             "graded_second": f"{_pct(pair.get('graded_accuracy_second'))} of {pair.get('graded_second', 0)}",
             "note": pair.get("note") or ""}
            for pair in pairs]


def _turn_cells(entry: Mapping[str, Any], runs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """One row of the cost-per-turn table as ``om-eval report`` writes it, its run named as in the page's other
    tables."""
    run = runs.get(entry["run_id"], {})
    cells = TurnRow(**entry).cells()
    return {**cells, "label": run.get("label", cells["label"]), "color": run.get("color", "")}


def _run_notes(table: ReportTable, skipped_files: Sequence[str], budgets: Sequence[str] = ()) -> list[str]:
    notes = [*table.notes, *(n for s in table.sections for n in s.notes), *caveat_notes(table.rows),
             *(f"{CAVEAT_MARK} {line}" for line in budgets)]
    if skipped_files:
        notes.append(f"{len(skipped_files)} run file(s) could not be opened and are left out (a job may be writing "
                      f"them): {', '.join(skipped_files)}.")
    return notes


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("om_eval.report", "templates"), autoescape=True, undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return environment.get_template(_TEMPLATE)


def render_view(data: Mapping[str, Any], table: ReportTable, *, title: str = "om-eval",
                skipped_files: Sequence[str] = ()) -> str:
    """The page: ``templates/view.html`` rendered by jinja2 with autoescape on, ``data`` embedded as JSON."""
    colors = {r["variant"]: r["color"] for r in data["runs"]}
    runs = {r["id"]: r for r in data["runs"]}
    labels = {r["id"]: r["label"] for r in data["runs"]}
    return _template().render(
        title=title, runs=data["runs"], n_questions=len(data["questions"]),
        regimes=[s.title for s in table.sections] if table.mixed else [],
        run_head=("run", "label", "dataset", "models", "judge", "n", "task-avg", "overall", "abstention", "cost $"),
        run_rows=[_run_row(row, runs[row.run_id], colors[row.variant], table.shows_memory) for row in table.rows],
        run_notes=_run_notes(table, skipped_files, data.get("budgets", ())), n_boot=table.n_boot, seed=table.seed,
        caveat_mark=CAVEAT_MARK,
        bar_groups=_bar_groups(table, colors),
        agreement_head=("run", "judge A", "judge B", "n", "agreement", "Cohen's kappa", "accuracy A", "accuracy B"),
        agreement=_agreement_rows(data["agreement"], labels),
        agreement_narrowed=any(pair.get("note") for pair in data["agreement"]),
        turn_head=TURN_HEAD,
        turn_rows=[_turn_cells(entry, runs) for entry in data.get("turn_costs", ())],
        turn_unrecorded=unrecorded_note(data.get("turns_unrecorded", ())),
        turn_short=short_note([TurnRow(**entry) for entry in data.get("turn_costs", ())]),
        panels=data["panels"],
        tradeoff_rows=[_tradeoff_row(row, colors[row.variant]) for row in table.rows],
        tradeoff_recall=table.has_recall,
        tradeoff_images=_tradeoff_images(table),
        data_json=_script_json(data),
    )


def _stage_cost(row: RunSummary, group: str) -> str:
    usage = row.stage(group)
    if usage is None or not row.n_items:
        return "n/a"
    return f"${usage.cost_usd / row.n_items:.4f}" + (f" +{usage.unpriced_calls} unpriced" if usage.unpriced_calls
                                                     else "")


def _tradeoff_row(row: RunSummary, color: str) -> dict[str, Any]:
    recall = row.recall
    return {"short_id": row.short_id, "label": row.label, "color": color, "memory": memory_name(row),
            "memory_context": fmt.tokens(row.mean_context_tokens),
            "ingest": _stage_cost(row, INGEST), "answer": _stage_cost(row, ANSWER),
            "recall": "n/a" if recall is None else f"{_pct(recall.value)} (k={recall.k}, n={recall.n})",
            "context": fmt.tokens(row.mean_actor_context_tokens),
            "observations": fmt.tokens(row.mean_observation_tokens),
            "cost": "n/a" if row.cost_per_question is None else f"${row.cost_per_question:.4f}",
            "task_averaged": "n/a" if row.graded.task_averaged.value is None
            else f"{100 * row.graded.task_averaged.value:.1f}%"}


def _tradeoff_images(table: ReportTable) -> list[dict[str, str]]:
    """The accuracy-vs-context and accuracy-vs-cost scatters (with their Pareto frontiers) as PNG data URIs."""
    from om_eval.report.plots import (
        accuracy_vs_context_figure,
        cost_vs_accuracy_figure,
        figure_png,
    )

    images = []
    for alt, figure in (("Task-averaged accuracy against mean context tokens", accuracy_vs_context_figure),
                        ("Task-averaged accuracy against known cost per question", cost_vs_accuracy_figure)):
        png = figure_png(figure(table, n_boot=table.n_boot, seed=table.seed))
        images.append({"alt": alt, "src": "data:image/png;base64," + base64.b64encode(png).decode("ascii")})
    return images
