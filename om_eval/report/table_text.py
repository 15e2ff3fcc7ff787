"""The report table written out: a rich table for the terminal, markdown and CSV (:mod:`om_eval.report.tables`
builds it)."""

from __future__ import annotations

import csv
import io
import os
import textwrap
from typing import IO, Any

from om_eval.bench.metrics import OFFICIAL_TYPE_ORDER
from om_eval.report import _format as fmt
from om_eval.report.tables import (
    _BASELINE_PREFIX,
    CAVEAT_MARK,
    Accuracy,
    ReportTable,
    RunSummary,
    Scores,
    Section,
    caveat_notes,
    memory_name,
    section_ranks,
)

__all__ = ["display_name", "to_csv", "to_markdown", "to_rich"]

#: Run headers of the compact table wrap at spaces to this width (a label is never cut).
_HEADER_WIDTH = 22
_BASELINE_NOTE = ("memory: OM = answered through Observational Memory; baseline = LongMemEval's own reader, "
                  "answering from the raw sessions with no memory built (full context: the whole haystack, cut to "
                  "the reader's context window; oracle: the evidence sessions only).")


def display_name(row: RunSummary) -> str:
    """The run's label, followed by ``⚠ <caveat>`` when its judge cannot be trusted."""
    return f"{row.label} {CAVEAT_MARK} {row.caveat}" if row.caveat else row.label


def _judged(row: RunSummary) -> str:
    return f"{row.n_ok}/{row.n_items}" + ("" if row.complete else f" of {row.n_expected} (unfinished)")


def _cell(row: RunSummary, acc: Accuracy, *, with_n: bool = True, sep: str = " ", compact: bool = False,
          strict: Accuracy | None = None) -> str:
    """One accuracy of a run; the interval is left out for a run with a judge caveat (see the module doc).

    With ``strict`` (the same statistic counting unjudged answers), the questions that could not be graded
    (errors, not run) are added as ``+k unjudged``: they are left out of the accuracy, never counted wrong.
    """
    ci = None if row.caveat else acc.ci
    n = acc.n if with_n else None
    text = fmt.compact_cell(acc.value, ci, n) if compact else fmt.accuracy_cell(acc.value, ci, n, sep=sep)
    unjudged = strict.n - acc.n if strict is not None and with_n else 0
    return f"{text} +{unjudged} unjudged" if unjudged > 0 else text


#: The rows of the compact table and the columns of the wide one, in order: (name, accuracy of a score set).
_STATISTICS: tuple[tuple[str, Any, bool], ...] = (
    *((fmt.TYPE_SHORT[t], (lambda sc, t=t: sc.per_type[t]), True) for t in OFFICIAL_TYPE_ORDER),
    ("abstention", lambda sc: sc.abstention, True),
    ("overall", lambda sc: sc.overall, True),
    ("task-avg", lambda sc: sc.task_averaged, False),
)


def _columns(table: ReportTable, *, sep: str = " ") -> list[tuple[str, bool, Any]]:
    """(header, right-aligned, cell function) for the wide rendered (markdown and rich) tables."""
    columns: list[tuple[str, bool, Any]] = [
        ("#", True, None),
        ("variant", False, display_name),
        *((("memory", False, memory_name),) if table.has_baselines else ()),
        ("run", False, lambda r: r.short_id),
        ("dataset", False, lambda r: r.dataset),
        ("judge", False, lambda r: f"{r.judge_mode or '?'} ({r.judge_model or '?'})"),
        ("official", False, lambda r: "yes" if r.official else "no"),
        ("judged/n", True, _judged),
    ]
    for name, pick, with_n in _STATISTICS:
        columns.append((name, True, lambda r, pick=pick, with_n=with_n: _cell(r, pick(r.graded), with_n=with_n,
                                                                              sep=sep, strict=pick(r.strict))))
    if any(r.unjudged for r in table.rows):
        columns += [
            ("unjudged", True, lambda r: str(r.unjudged)),
            ("strict overall", True, lambda r: _cell(r, r.strict.overall, with_n=False, sep=sep)),
            ("strict task-avg", True, lambda r: _cell(r, r.strict.task_averaged, with_n=False, sep=sep)),
        ]
    columns += [
        *_MEMORY_ROWS,
        ("cost $", True, lambda r: fmt.dollars(r.cost_usd)),
        ("unpriced calls", True, lambda r: str(r.unknown_cost_calls)),
        ("obs tokens", True, lambda r: fmt.tokens(r.mean_observation_tokens)),
        ("compression", True, lambda r: fmt.ratio(r.mean_compression_ratio)),
    ]
    return columns


#: What the memory did, per run: the rows that tell pending-token readings and thresholds apart.
_MEMORY_ROWS: tuple[tuple[str, bool, Any], ...] = (
    ("obs/question", True, lambda r: fmt.ratio(r.mean_observations)),
    ("tokens/observer call", True, lambda r: fmt.tokens(r.mean_observer_call_tokens)),
    ("raw tail tokens", True, lambda r: fmt.tokens(r.mean_raw_tail_tokens)),
)


def _cells(columns: list[tuple[str, bool, Any]], rank: int | None, row: RunSummary) -> list[str]:
    return [(fmt.MISSING if rank is None else str(rank)) if fn is None else fn(row) for _, _, fn in columns]


def _compact(table: ReportTable, section: Section) -> tuple[list[str], list[tuple[list[str], bool]]]:
    """The transposed table of one section: headers (one per run) and (cells, ends a block) rows."""
    rows = section.rows
    headers = [""]
    for rank, row in zip(section_ranks(section), rows):
        name = row.label if row.caveat else f"#{rank} {row.label}"
        lines = textwrap.wrap(name, _HEADER_WIDTH, break_long_words=False, break_on_hyphens=False) or [name]
        headers.append("\n".join([*lines, f"{CAVEAT_MARK} {row.caveat}"] if row.caveat else lines))
    body: list[tuple[list[str], bool]] = [
        (["run", *(r.short_id for r in rows)], False),
        (["dataset", *(r.dataset for r in rows)], False),
        (["judge", *(r.judge_model or "?" for r in rows)], False),
        *(((["memory", *(memory_name(r) for r in rows)], False),) if table.has_baselines else ()),
        (["judged/n", *(_judged(r) for r in rows)], True),
    ]
    for name, pick, with_n in _STATISTICS:
        body.append(([name, *(_cell(r, pick(r.graded), with_n=with_n, compact=True, strict=pick(r.strict))
                             for r in rows)],
                     name == "abstention"))
    if any(r.unjudged for r in table.rows):
        body[-1] = (body[-1][0], True)
        body.append((["strict task-avg", *(_cell(r, r.strict.task_averaged, with_n=False, compact=True)
                                            for r in rows)], False))
    if any(r.mean_observations is not None for r in rows):
        body[-1] = (body[-1][0], True)
        body += [([name, *(cell(r) for r in rows)], False) for name, _, cell in _MEMORY_ROWS]
    return headers, body


def _explanation(table: ReportTable, *, wide: bool) -> list[str]:
    level = f"{100 * table.confidence:g}%"
    if wide:
        cells = f"Cells: accuracy % [{level} CI] (n judged)."
    else:
        cells = f"Cells: accuracy % [{level} CI, whole points] n=judged questions; one column per run."
    lines = [
        f"{cells} overall = micro average over questions; task-avg = mean of the six type accuracies (macro, the "
        "official headline); abstention = questions with `_abs` in their id.",
        f"Intervals: percentile bootstrap over questions, {table.n_boot} resamples, seed {table.seed}. "
        "Graded accuracies leave unjudged answers (judge error, not run) out; strict ones count them wrong.",
    ]
    if wide:
        lines.append("cost $ = known spend (unpriced calls are counted, not guessed); obs tokens = mean observation "
                     "tokens at answer time; compression = mean raw history tokens / observation tokens.")
    else:
        lines.append("Strict accuracies of every type, cost, unpriced calls, observation tokens and compression: "
                     "the wide table (`om-eval report --wide`); the CSV always has every column.")
    if table.has_baselines:
        lines.append(_BASELINE_NOTE)
    return lines


def _warning(table: ReportTable) -> str:
    titles = "; ".join(s.title for s in table.sections)
    return (f"WARNING: these runs were scored under {len(table.sections)} different regimes ({titles}). "
            "Accuracies are not comparable across sections; each section is ranked on its own.")


def to_markdown(table: ReportTable, *, title: str = "LongMemEval results", wide: bool = False) -> str:
    """The table as GitHub markdown: explanation, a warning when regimes are mixed, one section per regime.

    Args:
        wide: one row per run with every column (as the CSV, minus raw fractions) instead of the compact
            transposed table (types as rows, runs as columns).
    """
    columns = _columns(table)
    lines = [f"# {title}", ""]
    lines += [line for text in _explanation(table, wide=wide) for line in (text, "")]
    if table.mixed:
        lines += [f"> **{_warning(table)}**", ""]
    lines += [f"> {note}" for note in table.notes] + ([""] if table.notes else [])
    for section in table.sections:
        lines += [f"## {section.title}", ""]
        lines += [f"> {note}" for note in section.notes] + ([""] if section.notes else [])
        if not section.rows:
            continue
        if wide:
            rows = [_cells(columns, rank, row) for rank, row in zip(section_ranks(section), section.rows)]
            lines += fmt.md_table([h for h, _, _ in columns], rows, [r for _, r, _ in columns])
        else:
            headers, body = _compact(table, section)
            lines += fmt.md_table(headers, [cells for cells, _ in body], [False] + [True] * len(section.rows))
        lines.append("")
    lines += [line for note in caveat_notes(table.rows) for line in (f"> {note}", "")]
    lines += [fmt.TYPE_LEGEND, ""]
    return "\n".join(lines)


def _accuracy_fields(prefix: str, acc: Accuracy, with_n: bool = True) -> dict[str, str]:
    out = {f"{prefix}_acc": fmt.csv_number(acc.value),
           f"{prefix}_ci_low": fmt.csv_number(acc.ci[0] if acc.ci else None),
           f"{prefix}_ci_high": fmt.csv_number(acc.ci[1] if acc.ci else None)}
    if with_n:
        out[f"{prefix}_n"] = str(acc.n)
    return out


def _csv_record(section: Section, rank: int | None, row: RunSummary, memory: bool = False) -> dict[str, str]:
    record = {
        "section": section.key, "rank": "" if rank is None else str(rank), "label": row.label,
        "variant": row.variant, **({"memory": f"{_BASELINE_PREFIX}{row.reader}" if row.reader else "om"} if memory else {}), "run_id": row.run_id, "judge_mode": row.judge_mode or "",
        "judge_model": row.judge_model or "", "judge_caveat": row.caveat or "",
        "official": fmt.csv_number(row.official), "n_items": str(row.n_items), "n_ok": str(row.n_ok),
        "n_error": str(row.n_error), "n_not_run": str(row.n_not_run),
    }
    for t in OFFICIAL_TYPE_ORDER:
        record.update(_accuracy_fields(t, row.graded.per_type[t]))
    record.update(_accuracy_fields("abstention", row.graded.abstention))
    record.update(_accuracy_fields("overall", row.graded.overall))
    record.update(_accuracy_fields("task_averaged", row.graded.task_averaged, with_n=False))
    record.update(_accuracy_fields("strict_overall", row.strict.overall, with_n=False))
    record.update(_accuracy_fields("strict_task_averaged", row.strict.task_averaged, with_n=False))
    record.update(_accuracy_fields("strict_abstention", row.strict.abstention, with_n=False))
    record.update({
        "cost_usd": fmt.csv_number(row.cost_usd), "unknown_cost_calls": str(row.unknown_cost_calls),
        "mean_observation_tokens": fmt.csv_number(row.mean_observation_tokens, 2),
        "mean_compression_ratio": fmt.csv_number(row.mean_compression_ratio, 4),
        "dataset": row.dataset,
        "mean_observations": fmt.csv_number(row.mean_observations, 4),
        "mean_observer_call_tokens": fmt.csv_number(row.mean_observer_call_tokens, 2),
        "mean_raw_tail_tokens": fmt.csv_number(row.mean_raw_tail_tokens, 2),
    })
    return record


def to_csv(table: ReportTable, path_or_buffer: str | os.PathLike[str] | IO[str] | None = None) -> str:
    """The table as CSV: one line per run, machine-readable (fractions, full run ids, every column always).

    The ``section`` column carries the scoring regime (``official`` or ``non-official:<judge mode>``); rank
    within a section only, empty for a run with a ``judge_caveat`` (whose intervals are kept here). Writes to
    ``path_or_buffer`` when given, and returns the text either way.
    """
    records = [_csv_record(s, rank, row, table.has_baselines)
               for s in table.sections for rank, row in zip(section_ranks(s), s.rows)]
    if records:
        fields = list(records[0])
    else:
        empty_section = Section("", "", False, ())
        fields = list(_csv_record(empty_section, 0, _empty_summary()))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    text = buffer.getvalue()
    if path_or_buffer is None:
        return text
    if hasattr(path_or_buffer, "write"):
        path_or_buffer.write(text)  # type: ignore[union-attr]
    else:
        path = os.fspath(path_or_buffer)  # type: ignore[arg-type]
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    return text


def _empty_summary() -> RunSummary:
    none = Accuracy(None, None, 0)
    scores = Scores(dict.fromkeys(OFFICIAL_TYPE_ORDER, none), none, none, none)
    return RunSummary("", "", "", "", None, None, False, 0, 0, 0, 0, scores, scores, 0.0, 0, None, None)


def to_rich(table: ReportTable, *, title: str = "LongMemEval results", wide: bool = False) -> Any:
    """The table as a rich renderable (a ``Group``): a warning when regimes are mixed, one table per section.

    Args:
        wide: one row per run with every column instead of the compact transposed table.
    """
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    columns = _columns(table, sep="\n")
    parts: list[Any] = [Text(title, style="bold")]
    if table.mixed:
        parts.append(Text(_warning(table), style="bold red"))
    parts += [Text(note, style="yellow") for note in table.notes]
    for section in table.sections:
        if wide:
            grid = Table(title=section.title, title_style="bold", show_lines=True)
            for header, right, _ in columns:
                grid.add_column(header, justify="right" if right else "left", no_wrap=header in ("variant", "run"))
            for rank, row in zip(section_ranks(section), section.rows):
                grid.add_row(*_cells(columns, rank, row), style="yellow" if row.caveat else None)
        else:
            grid = Table(title=section.title, title_style="bold")
            headers, body = _compact(table, section)
            grid.add_column(headers[0], justify="left", no_wrap=True)
            for header, row in zip(headers[1:], section.rows):
                grid.add_column(header, justify="right", overflow="fold",
                                header_style="bold yellow" if row.caveat else "bold")
            for cells, end in body:
                grid.add_row(*cells, end_section=end, style="bold" if cells[0] == "task-avg" else None)
        parts.append(grid)
        parts += [Text(note, style="yellow") for note in section.notes]
    parts += [Text(note, style="yellow") for note in caveat_notes(table.rows)]
    parts += [Text(line, style="dim") for line in (*_explanation(table, wide=wide), fmt.TYPE_LEGEND)]
    return Group(*parts)
