"""``om-eval view``: the stored runs as one self-contained HTML page, from the summary down to one question.

The page has four parts: a runs table (models, judge, n, accuracies, cost), accuracy bars per question type,
judge agreement (Cohen's kappa) for runs graded by more than one judge, and a question browser: a list of
every question with a correct/wrong mark per run, and for the chosen question the whole
:func:`~om_eval.report.detail.question_detail` of one run, or of two runs side by side.

**One file, no network.** CSS and JavaScript are inline (``templates/view.html``), the data sits in a
``<script type="application/json">`` block, nothing is fetched; the page works from ``file://``. The question
browser is drawn by the script from that block and keeps its state in the URL hash
(``#q=<question id>&a=<run id prefix>&b=<run id prefix>``), so a link names a question and two runs.

**Escaping.** Stored texts hold ``<``, ``&``, quotes, emoji and tags such as ``<observations>``. The parts
written here go through :func:`html.escape`; the script only ever sets ``textContent`` (never ``innerHTML``)
from the data; and in the JSON block every ``</`` and ``<!--`` is written as an escape sequence, so no stored
text can end the block or open a comment.

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

import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from om_eval.bench.baseline import EVIDENCE_STATUS_TEXT as BASELINE_STATUS_TEXT
from om_eval.bench.metrics import OFFICIAL_TYPE_ORDER
from om_eval.report import _format as fmt
from om_eval.report.agreement import JudgePair, agreement_rows
from om_eval.report.detail import EVIDENCE_STATUS_TEXT, find_run, run_details
from om_eval.report.plots import variant_colors
from om_eval.report.tables import (CAVEAT_MARK, Accuracy, ReportTable, RunSummary, caveat_notes, memory_name,
                                   summary_table)
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
_DATA_MARK = "/*@VIEW_DATA@*/"
_BODY_MARK = "<!--@VIEW_BODY@-->"
_TITLE_MARK = "@VIEW_TITLE@"


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
    messages = detail["actor_messages"]
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
    }


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
    ``caps`` (the cut limits), ``agreement`` (judge pairs of runs with more than one judge).
    """
    run_ids = [str(r["run_id"]) for r in runs]
    items = catalog.items(run_ids) if run_ids else []
    table = summary_table(runs, items, n_boot=n_boot, seed=seed)
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
            "id": qid, "type": item.get("question_type"), "abstention": "_abs" in qid,
            "text": _short(item.get("question"), _LIST_QUESTION_CHARS), "marks": {}})
        entry["marks"][rid] = _mark(item)
        detail = per_run[rid][qid]
        ref = f"{item.get('memory_key') or rid}|{qid}"
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
            "dataset": run.get("dataset_name"),
            "models": {role: run.get(f"{role}_model")  # a baseline reader calls no observer or reflector
                       for role in (("actor",) if row.reader else ("observer", "reflector", "actor"))},
            "n_items": row.n_items, "n_expected": row.n_expected, "complete": row.complete,
            "task_averaged": _accuracy(row.graded.task_averaged, not row.caveat),
            "overall": _accuracy(row.graded.overall, not row.caveat),
        })
    data = {
        "runs": run_entries,
        "types": [[t, fmt.TYPE_SHORT[t]] for t in OFFICIAL_TYPE_ORDER],
        "status_text": {**EVIDENCE_STATUS_TEXT, **BASELINE_STATUS_TEXT},
        "questions": [questions[q] for q in sorted(questions)],
        "details": details,
        "memories": memories,
        "caps": {"actor_head_lines": ACTOR_HEAD_LINES, "actor_tail_lines": ACTOR_TAIL_LINES,
                 "observation_lines": OBSERVATION_LINES, "older_generation_lines": OLDER_GENERATION_LINES,
                 "line_chars": LINE_CHARS},
        "agreement": [_pair(pair) for pair in agreement_rows(catalog, [by_id[row.run_id] for row in rows])],
        "n_boot": n_boot, "seed": seed,
    }
    return data, table


def _short(text: Any, limit: int) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _judge_name(row: RunSummary) -> str:
    return f"{row.judge_mode or '?'}:{row.judge_model or '?'}"


def _pair(pair: JudgePair) -> dict[str, Any]:
    return {"run_id": pair.run_id, "first": pair.first, "second": pair.second, "n": pair.n,
            "agreement": pair.agreement, "kappa": pair.kappa, "accuracy_first": pair.accuracy_first,
            "accuracy_second": pair.accuracy_second}


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


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _pct(value: float | None) -> str:
    return "n/a" if fmt.missing(value) else f"{fmt.pct(value)}%"


def _acc_cell(acc: Accuracy, row: RunSummary) -> str:
    ci = "" if row.caveat or fmt.missing(acc.value) else fmt.compact_interval(acc.ci)
    ci_html = f' <span class="ci-text">{_e(ci)}</span>' if ci else ""
    return f'<td class="num">{_e(_pct(acc.value))}{ci_html}</td>'


def _models(models: Mapping[str, Any]) -> str:
    roles = tuple(models.items())
    if len(roles) > 1 and len({model for _, model in roles}) == 1:
        return f"{_e(roles[0][1] or '?')} <span class=\"muted\">(all roles)</span>"
    return "<br>".join(f'<span class="muted">{name}</span> {_e(model or "?")}' for name, model in roles)


def _caveat_badge(row: RunSummary) -> str:
    if not row.caveat:
        return ""
    return (f' <span class="caveat" title="{_e(row.caveat)}: see the note under the table">{CAVEAT_MARK} '
            f'{_e(row.caveat)}</span>')


def _baseline_badge(row: RunSummary) -> str:
    if row.reader is None:
        return ""
    return (f' <span class="badge" title="answered from the raw sessions, no memory built">'
            f"{_e(memory_name(row))}</span>")


def _swatch(color: str) -> str:
    return f'<i class="swatch" style="background:{_e(color)}"></i>'


def _runs_section(table: ReportTable, runs: Mapping[str, Mapping[str, Any]], colors: Mapping[str, str],
                  skipped_files: Sequence[str]) -> str:
    """The runs table; ``runs`` maps run ids to the page's run entries (dataset, models)."""
    head = ("run", "label", "dataset", "models", "judge", "n", "task-avg", "overall", "abstention", "cost $")
    lines = ['<section id="runs"><h2>Runs</h2>']
    if table.mixed:
        titles = "; ".join(s.title for s in table.sections)
        lines.append(f'<p class="warning">These runs were scored under {len(table.sections)} regimes ({_e(titles)}): '
                     "accuracies are not comparable across them.</p>")
    lines.append('<table class="runs"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head)
                 + "</tr></thead><tbody>")
    for row in table.rows:
        run = runs[row.run_id]
        judged = f"{row.n_ok}/{row.n_items}"
        if not row.complete:
            judged += f' <span class="unfinished">unfinished: {row.n_items} of {row.n_expected}</span>'
        cost = f"{row.cost_usd:.4f}"
        if row.unknown_cost_calls:
            cost += f' <span class="muted">+{row.unknown_cost_calls} unpriced calls</span>'
        section = "official" if row.official else "non-official"
        lines.append(
            f'<tr data-run="{_e(row.run_id)}"><td class="mono">{_swatch(colors[row.variant])}{_e(row.short_id)}</td>'
            f"<td>{_e(row.label)}{_baseline_badge(row)}</td><td>{_e(run.get('dataset') or '?')}</td>"
            f"<td>{_models(run['models'])}</td>"
            f'<td>{_e(_judge_name(row))} <span class="muted">({section})</span>{_caveat_badge(row)}</td>'
            f'<td class="num">{judged}</td>{_acc_cell(row.graded.task_averaged, row)}'
            f"{_acc_cell(row.graded.overall, row)}{_acc_cell(row.graded.abstention, row)}"
            f'<td class="num">{cost}</td></tr>')
    lines.append("</tbody></table>")
    notes = [*table.notes, *(n for s in table.sections for n in s.notes), *caveat_notes(table.rows)]
    if skipped_files:
        notes.append(f"{len(skipped_files)} run file(s) could not be opened and are left out (a job may be writing "
                     f"them): {', '.join(skipped_files)}.")
    lines += [f'<p class="note">{_e(note)}</p>' for note in notes]
    lines.append(f'<p class="muted small">task-avg = mean of the six type accuracies (the official headline); '
                 f"overall = over all questions. Intervals: 95% percentile bootstrap over questions "
                 f"({table.n_boot} resamples, seed {table.seed}), left out for runs whose judge carries a "
                 f"{CAVEAT_MARK} caveat. n = judged/answered questions.</p></section>")
    return "\n".join(lines)


def _bar(acc: Accuracy, row: RunSummary, color: str) -> str:
    value = acc.value
    if fmt.missing(value):
        track, fill, ci, text = "track na", "", "", '<span class="na-text">n/a</span>'
    else:
        width = max(0.0, min(100.0, 100.0 * value))  # type: ignore[operator]
        track = "track zero" if value == 0 else "track"
        hatch = " hatched" if row.caveat else ""
        fill = f'<span class="fill{hatch}" style="width:{width:.1f}%;background-color:{_e(color)}"></span>'
        ci = ""
        if acc.ci and not row.caveat and not any(fmt.missing(x) for x in acc.ci):
            low, high = (max(0.0, min(100.0, 100.0 * x)) for x in acc.ci)
            ci = f'<span class="whisker" style="left:{low:.1f}%;width:{max(high - low, 0.0):.1f}%"></span>'
        text = _e(_pct(value))
    return (f'<div class="bar-row" data-run="{_e(row.run_id)}"><span class="bar-label" title="{_e(row.label)}">'
            f'{_swatch(color)}{_e(row.label)}</span><span class="{track}">{fill}{ci}</span>'
            f'<span class="bar-value">{text} <small>n={acc.n}</small></span></div>')


def _bars_section(table: ReportTable, colors: Mapping[str, str]) -> str:
    groups = [(fmt.TYPE_SHORT[t], t, lambda row, t=t: row.graded.per_type[t]) for t in OFFICIAL_TYPE_ORDER]
    groups.append(("Abstention", "questions with _abs in their id", lambda row: row.graded.abstention))
    lines = ['<section id="categories"><h2>Accuracy by question type</h2><div class="bar-groups">']
    for short, full, pick in groups:
        lines.append(f'<div class="bar-group"><h3 title="{_e(full)}">{_e(short)} <small>{_e(full)}</small></h3>')
        lines += [_bar(pick(row), row, colors[row.variant]) for row in table.rows]
        lines.append("</div>")
    lines.append('</div><p class="muted small">Bars: graded accuracy; the thin line is the 95% interval. A dark '
                 'stub marks 0%, a striped empty track marks n/a (no judged question of that type); hatched bars '
                 f"belong to runs with a {CAVEAT_MARK} judge caveat.</p></section>")
    return "\n".join(lines)


def _agreement_section(pairs: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> str:
    lines = ['<section id="agreement"><h2>Judge agreement</h2>']
    if not pairs:
        lines.append('<p class="muted">Every run here has a single judge. <code>om-eval rejudge &lt;run&gt; '
                     "judge=…</code> adds a second one, and this table then shows how far they agree.</p></section>")
        return "\n".join(lines)
    head = ("run", "judge A", "judge B", "n", "agreement", "Cohen's kappa", "accuracy A", "accuracy B")
    lines.append('<table class="agreement"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head)
                 + "</tr></thead><tbody>")
    for pair in pairs:
        kappa = "undefined" if pair["kappa"] is None else f"{pair['kappa']:.3f}"
        lines.append(
            f'<tr><td><span class="mono">{_e(pair["run_id"][:8])}</span> {_e(labels.get(pair["run_id"], ""))}</td>'
            f'<td>{_e(pair["first"])}</td><td>{_e(pair["second"])}</td><td class="num">{pair["n"]}</td>'
            f'<td class="num">{_e(_pct(pair["agreement"]))}</td><td class="num">{_e(kappa)}</td>'
            f'<td class="num">{_e(_pct(pair["accuracy_first"]))}</td>'
            f'<td class="num">{_e(_pct(pair["accuracy_second"]))}</td></tr>')
    lines.append("</tbody></table>")
    lines.append('<p class="muted small">Only verdicts on the answer the run holds now, with status ok on both '
                 "sides. Kappa corrects agreement for chance; undefined when both judges give everything one and "
                 "the same grade.</p></section>")
    return "\n".join(lines)


def render_view(data: Mapping[str, Any], table: ReportTable, *, title: str = "om-eval",
                skipped_files: Sequence[str] = ()) -> str:
    """The page: the template with the static sections written in and ``data`` embedded as JSON."""
    colors = {r["variant"]: r["color"] for r in data["runs"]}
    labels = {r["id"]: r["label"] for r in data["runs"]}
    n_questions = len(data["questions"])
    summary = (f'<p class="muted">{len(data["runs"])} run(s), {n_questions} question(s). Texts longer than the '
               f"page keeps are cut to their first and last lines, with a note (om-eval show --full prints them "
               "whole).</p>")
    body = "\n".join([
        summary,
        _runs_section(table, {r["id"]: r for r in data["runs"]}, colors, skipped_files),
        _bars_section(table, colors),
        _agreement_section(data["agreement"], labels),
    ])
    template = resources.files("om_eval.report").joinpath("templates", _TEMPLATE).read_text(encoding="utf-8")
    for mark in (_DATA_MARK, _BODY_MARK, _TITLE_MARK):
        if mark not in template:
            raise RuntimeError(f"the view template lacks its {mark} placeholder")
    fills = {_TITLE_MARK: _e(title), _BODY_MARK: body, _DATA_MARK: _script_json(data)}
    # One pass, so a stored text that happens to spell a placeholder is never filled in itself.
    return re.sub("|".join(re.escape(mark) for mark in fills), lambda m: fills[m.group(0)], template)
