"""The report table written out: a rich table for the terminal, markdown and CSV (:mod:`om_eval.report.tables`
builds it)."""

from __future__ import annotations

import csv
import io
import os
import textwrap
from typing import IO, Any

from om_eval.bench.benchmark import DEFAULT_BENCHMARK, Benchmark, default_benchmark
from om_eval.bench.scoring import answerable_categories, answerable_title
from om_eval.report import _format as fmt
from om_eval.report._fit import Column, FittedTable
from om_eval.report._systems_text import (
    RECALL_NOTE,
    SYSTEMS_NOTE,
    memory_fields,
    memory_note,
    retrieval_table,
    retrieval_title,
    system_fields,
    system_rows,
)
from om_eval.report.tables import (
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


def _statistics(benchmark: Benchmark) -> tuple[tuple[str, Any, bool], ...]:
    """The rows of the compact table and the columns of the wide one, in order: (name, accuracy of a score set,
    with n); the benchmark's categories first, then abstention (where it is a row of its own), overall, task-avg."""
    return (
        *((c.short, (lambda sc, t=c.key: sc.per_type[t]), True) for c in benchmark.categories),
        *((("abstention", lambda sc: sc.abstention, True),) if benchmark.abstention_row else ()),
        ("overall", lambda sc: sc.overall, True),
        ("task-avg", lambda sc: sc.task_averaged, False),
    )


def _own_cell(own: Any, key: str | None) -> str:
    if own is None:
        return fmt.MISSING
    value, n = (own.overall, own.n) if key is None else own.per_type[key]
    return f"{fmt.pct(value)} n={n}"


def _benchmark_rows(benchmark: Benchmark) -> tuple[tuple[str, Any], ...]:
    """(name, cell of a run) rows of a benchmark's own score and of its corrected gold: LoCoMo's F1 per category and
    overall; with corrections, the accuracy and F1 against the corrected gold and the ceiling of the raw scores."""
    if benchmark.own_score is None:
        return ()
    name = benchmark.own_score
    micro: tuple[tuple[str, Any], ...] = ()
    if benchmark.own_means is not None:  # a mean of means: the mean over questions beside it
        micro = ((f"{name} micro", lambda r: f"{fmt.pct(r.own.micro)} n={r.own.n}" if r.own else fmt.MISSING),
                 (f"{name} undefined", lambda r: str(r.own.undefined) if r.own else fmt.MISSING))
    return (
        *((f"{name} {c.short}", lambda r, k=c.key: _own_cell(r.own, k)) for c in benchmark.categories),
        (f"{name} overall", lambda r: _own_cell(r.own, None)),
        *micro,
        *_answerable_rows(benchmark, ""),
    )


def _answerable_rows(benchmark: Benchmark, prefix: str) -> tuple[tuple[str, Any], ...]:
    """Rows of the aggregate most papers quote (LoCoMo's categories 1-4): judge accuracy and own score; ``prefix``
    ``corrected `` reads the corrected gold's."""
    categories = answerable_categories(benchmark)
    if not categories:
        return ()
    title, name = answerable_title(categories), benchmark.own_score

    def pick(r: RunSummary) -> Any:
        return r.corrected_answerable if prefix else r.answerable

    rows: tuple[tuple[str, Any], ...] = (
        (f"{prefix}overall {title}", lambda r: _cell(r, pick(r).accuracy, compact=True) if pick(r) else fmt.MISSING),
    )
    if name is not None:
        rows += ((f"{prefix}{name} {title}", lambda r: f"{fmt.pct(pick(r).own[0])} n={pick(r).own[1]}"
                  if pick(r) and pick(r).own else fmt.MISSING),)
    return rows


def _corrected_rows(benchmark: Benchmark) -> tuple[tuple[str, Any], ...]:
    """Rows shown when a run's gold answers were corrected (``dataset.corrections``): how many, the ceiling of the raw
    scores, and the accuracies (and the benchmark's own score) against the corrected gold."""
    rows: tuple[tuple[str, Any], ...] = (
        ("gold corrected", lambda r: str(r.n_corrected) if r.corrected is not None else fmt.MISSING),
        ("ceiling (raw)", lambda r: fmt.pct(r.ceiling)),
        ("corrected overall", lambda r: _cell(r, r.corrected.overall, compact=True) if r.corrected else fmt.MISSING),
        ("corrected task-avg", lambda r: _cell(r, r.corrected.task_averaged, with_n=False, compact=True)
         if r.corrected else fmt.MISSING),
    )
    if benchmark.own_score is not None:
        rows += ((f"corrected {benchmark.own_score} overall",
                  lambda r: _own_cell(r.corrected_own, None) if r.corrected_own else fmt.MISSING),)
    return rows + _answerable_rows(benchmark, "corrected ")


def _columns(table: ReportTable, *, sep: str = " ", section: Section | None = None) -> list[tuple[str, bool, Any]]:
    """(header, right-aligned, cell function) for the wide rendered (markdown and rich) tables."""
    columns: list[tuple[str, bool, Any]] = [
        ("#", True, None),
        ("variant", False, display_name),
        *((("memory", False, memory_name),) if table.shows_memory else ()),
        ("run", False, lambda r: r.short_id),
        ("dataset", False, lambda r: r.dataset),
        ("judge", False, lambda r: f"{r.judge_mode or '?'} ({r.judge_model or '?'})"),
        ("official", False, lambda r: "yes" if r.official else "no"),
        ("judged/n", True, _judged),
    ]
    benchmark = section.benchmark if section is not None else default_benchmark()
    for name, pick, with_n in _statistics(benchmark):
        columns.append((name, True, lambda r, pick=pick, with_n=with_n: _cell(r, pick(r.graded), with_n=with_n,
                                                                              sep=sep, strict=pick(r.strict))))
    columns += [(name, True, cell) for name, cell in _benchmark_rows(benchmark)]
    if section is not None and any(r.corrected is not None for r in section.rows):
        columns += [(name, True, cell) for name, cell in _corrected_rows(benchmark)]
    if any(r.unjudged for r in table.rows):
        columns += [
            ("unjudged", True, lambda r: str(r.unjudged)),
            ("strict overall", True, lambda r: _cell(r, r.strict.overall, with_n=False, sep=sep)),
            ("strict task-avg", True, lambda r: _cell(r, r.strict.task_averaged, with_n=False, sep=sep)),
        ]
    columns += [(name, True, cell) for name, cell in system_rows(table)]
    columns += [
        *_MEMORY_ROWS,
        ("cost $", True, lambda r: fmt.dollars(r.cost_usd)),
        ("unpriced calls", True, lambda r: str(r.unknown_cost_calls)),
        ("obs tokens", True, lambda r: fmt.tokens(r.mean_observation_tokens)),
        ("compression", True, lambda r: fmt.ratio(r.mean_compression_ratio)),
    ]
    return columns


#: What the memory did, per run: the rows that tell pending-token readings and thresholds apart
#: (:data:`MEMORY_ROWS_NOTE` defines them).
_MEMORY_ROWS: tuple[tuple[str, bool, Any], ...] = (
    ("obs/question", True, lambda r: fmt.ratio(r.mean_observations)),
    ("tokens/obs call", True, lambda r: fmt.tokens(r.mean_observer_call_tokens)),
    ("raw tail tokens", True, lambda r: fmt.tokens(r.mean_raw_tail_tokens)),
)


MEMORY_ROWS_NOTE = ("obs/question = Observer calls per question; tokens/obs call = message tokens an Observer call "
                    "read, on average; raw tail tokens = tokens of raw messages the actor was shown after the "
                    "observations (not yet observed), on average.")


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
        *(((["memory", *(memory_name(r) for r in rows)], False),) if table.shows_memory else ()),
        (["judged/n", *(_judged(r) for r in rows)], True),
    ]
    benchmark = section.benchmark
    if any(r.rounding for r in rows):
        body.insert(len(body) - 1, (["rounding", *(r.rounding or fmt.MISSING for r in rows)], False))
    own_rows = [([name, *(cell(r) for r in rows)], False) for name, cell in _benchmark_rows(benchmark)]
    own_first = benchmark.own_means is not None and bool(own_rows)  # BEAM: its own score leads, full marks after
    if own_first:
        body += own_rows
        body[-1] = (body[-1][0], True)
    prefix = "" if benchmark.verdict_name == "accuracy" else f"{benchmark.verdict_name.split()[0]} "
    last_group = len(benchmark.categories) - (0 if benchmark.abstention_row else 1)
    for index, (name, pick, with_n) in enumerate(_statistics(benchmark)):
        body.append(([prefix + name, *(_cell(r, pick(r.graded), with_n=with_n, compact=True, strict=pick(r.strict))
                                       for r in rows)],
                     index == last_group))
    if own_rows and not own_first:
        body[-1] = (body[-1][0], True)
        body += own_rows
    if any(r.corrected is not None for r in rows):
        body[-1] = (body[-1][0], True)
        body += [([name, *(cell(r) for r in rows)], False) for name, cell in _corrected_rows(section.benchmark)]
    if any(r.unjudged for r in table.rows):
        body[-1] = (body[-1][0], True)
        body.append((["strict task-avg", *(_cell(r, r.strict.task_averaged, with_n=False, compact=True)
                                            for r in rows)], False))
    if systems := system_rows(table):
        body[-1] = (body[-1][0], True)
        body += [([name, *(cell(r) for r in rows)], False) for name, cell in systems]
    if any(r.mean_observations is not None for r in rows):
        body[-1] = (body[-1][0], True)
        body += [([name, *(cell(r) for r in rows)], False) for name, _, cell in _MEMORY_ROWS]
    return headers, body


def _cells_legend(table: ReportTable, *, wide: bool) -> str:
    """What an accuracy cell of the rendered table holds, as printed: the interval is named only when some run shows
    one (a run with a judge caveat shows none), ``+k unjudged`` only when some cell carries it."""
    level = f"{100 * table.confidence:g}%"
    shown = any(row.caveat is None for row in table.rows)
    hidden = any(row.caveat for row in table.rows)
    interval = (f" [{level} CI]" if wide else f" [{level} CI, whole points]") if shown else ""
    text = f"Cells: accuracy %{interval}" + (" (n judged)" if wide else " n=judged questions")
    if shown and hidden:
        text += f"; no interval for runs marked {CAVEAT_MARK}"
    elif hidden:
        text += f" (no interval: every run here is marked {CAVEAT_MARK})"
    text += "; task-avg has no n"
    if any(row.unjudged for row in table.rows):
        text += "; +k unjudged = answers left out of the accuracy (judge error, not run)"
    return text + ("; judged/n = answers judged / questions run." if wide
                   else "; one column per run; judged/n = answers judged / questions run.")


def _explanation(table: ReportTable, *, wide: bool) -> list[str]:
    cells = _cells_legend(table, wide=wide)
    shown = not table.rows or any(row.caveat is None for row in table.rows)
    names = [b.name for b in table.benchmarks]
    lines = []
    if DEFAULT_BENCHMARK in names:
        lines += [
            f"{cells} overall = micro average over questions; task-avg = mean of the six type accuracies (macro, "
            "the official headline); abstention = questions with `_abs` in their id.",
            f"Intervals{'' if shown else f' (in the CSV; not printed for {CAVEAT_MARK} runs)'}: percentile "
            f"bootstrap over questions, {table.n_boot} resamples, seed {table.seed}. "
            "Graded accuracies leave unjudged answers (judge error, not run) out; strict ones count them wrong.",
        ]
    for benchmark in table.benchmarks:
        if benchmark.name != DEFAULT_BENCHMARK:
            lines += _benchmark_explanation(benchmark, cells if DEFAULT_BENCHMARK not in names else None, table)
    if wide:
        lines.append("cost $ = known spend (unpriced calls are counted, not guessed); obs tokens = mean observation "
                     "tokens at answer time; compression = mean raw history tokens / observation tokens.")
    else:
        lines.append("Strict accuracies of every type, cost, unpriced calls, observation tokens and compression: "
                     "the wide table (`om-eval report --wide`); the CSV always has every column.")
    if any(r.mean_observations is not None for r in table.rows):
        lines.append(MEMORY_ROWS_NOTE)
    if table.shows_memory:
        lines.append(memory_note(table))
    if table.compares_memory:
        lines.append(SYSTEMS_NOTE)
    if table.has_recall:
        lines.append(RECALL_NOTE)
    return lines


def _benchmark_explanation(benchmark: Benchmark, cells: str | None, table: ReportTable) -> list[str]:
    """What a section of another benchmark shows (LoCoMo: categories with their numbers, its own score, Wilson
    intervals, corrected gold)."""
    level = f"{100 * table.confidence:g}%"
    numbered = benchmark.categories[0].number is not None
    lines = [f"{benchmark.title}: " + (f"{cells} " if cells else "")
             + ("categories are shown with the benchmark's own numbers; " if numbered else "")
             + "overall = micro average over questions; task-avg = mean of the category accuracies."]
    if benchmark.verdict_name != "accuracy":
        word = benchmark.verdict_name.split()[0]
        lines.append(f"{word} = {benchmark.verdict_name}: the share of questions whose every rubric item the judge "
                     f"scored 1 (a strict pass shown beside {benchmark.title}'s own score, never instead of it).")
    intervals = (f"Wilson {level} score intervals per category and overall (the task average: percentile "
                 f"bootstrap, {table.n_boot} resamples, seed {table.seed})" if benchmark.intervals == "wilson" else
                 f"percentile bootstrap over questions, {table.n_boot} resamples, seed {table.seed}")
    lines.append(f"{benchmark.title} intervals: {intervals}. Graded accuracies leave unjudged answers out.")
    if benchmark.own_score is not None and benchmark.own_means is not None:
        lines.append(f"{benchmark.own_score} = {benchmark.title}'s own score as its report script takes it: per "
                     "ability the mean of question scores (the rubric score under the run's rounding; event "
                     "ordering's tau_norm), per chat and then over chats; overall = the mean of the ability means; "
                     "micro = the mean over all questions; undefined = event-ordering scores whose Kendall tau-b is "
                     "NaN (a constant rank vector), counted here and left out of every mean. rounding upstream = "
                     "each item's score truncated with int() for nine abilities, as upstream's script adds them. "
                     "overall is om-eval's summary (upstream's report has per-ability columns only). tau_norm rewards "
                     "order alone and reads the answer one line per event: on a five-event rubric an answer naming "
                     "no event scores 0.21 and two events in order 0.92 (show gives F1 and final_score beside it).")
        for row in table.rows:
            if row.benchmark == benchmark.name and row.own is not None and row.own.undefined_ids:
                shown = ", ".join(row.own.undefined_ids[:10]) + (" ..." if len(row.own.undefined_ids) > 10 else "")
                lines.append(f"{benchmark.own_score} undefined in {row.label}: {shown}.")
    elif benchmark.own_score is not None:
        lines.append(f"{benchmark.own_score} = {benchmark.title}'s own answer score, computed with its evaluation "
                     "script's arithmetic: the mean per category and over all answered questions.")
    if categories := answerable_categories(benchmark):
        title = answerable_title(categories)
        left = ", ".join(c.title for c in benchmark.categories if c not in categories)
        lines.append(f"{title} = the micro average over the questions of {title}, as most papers quote "
                     f"{benchmark.title}: {left} (unanswerable) left out.")
    if any(r.corrected is not None for r in table.rows if r.benchmark == benchmark.name):
        lines.append("corrected = scored against the audit's corrected gold answers where it says the published one "
                     "is wrong (gold corrected = how many); ceiling (raw) = the best raw score possible, 1 minus "
                     "their share.")
    return lines


def _warning(table: ReportTable) -> str:
    titles = "; ".join(s.title for s in table.sections)
    return (f"WARNING: these runs were scored under {len(table.sections)} different regimes ({titles}). "
            "Accuracies are not comparable across sections; each section is ranked on its own.")


def _legends(table: ReportTable) -> list[str]:
    return [b.legend for b in table.benchmarks if b.legend]


def to_markdown(table: ReportTable, *, title: str | None = None, wide: bool = False) -> str:
    """The table as GitHub markdown: explanation, a warning when regimes are mixed, one section per regime.

    Args:
        wide: one row per run with every column (as the CSV, minus raw fractions) instead of the compact
            transposed table (types as rows, runs as columns).
    """
    lines = [f"# {title or table.title}", ""]
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
            columns = _columns(table, section=section)
            rows = [_cells(columns, rank, row) for rank, row in zip(section_ranks(section), section.rows)]
            lines += fmt.md_table([h for h, _, _ in columns], rows, [r for _, r, _ in columns])
        else:
            headers, body = _compact(table, section)
            lines += fmt.md_table(headers, [cells for cells, _ in body], [False] + [True] * len(section.rows))
        lines.append("")
        if retrieval := retrieval_table(section):
            headers, cells = retrieval
            lines += [f"### {retrieval_title(table, section)}", ""]
            lines += fmt.md_table(headers, cells, [False] + [True] * (len(headers) - 1)) + [""]
    lines += [line for note in caveat_notes(table.rows) for line in (f"> {note}", "")]
    lines += [line for legend in _legends(table) for line in (legend, "")]
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
        "variant": row.variant,
        **(memory_fields(row) if memory else {}),
        "run_id": row.run_id, "judge_mode": row.judge_mode or "",
        "judge_model": row.judge_model or "", "judge_caveat": row.caveat or "",
        "official": fmt.csv_number(row.official), "n_items": str(row.n_items), "n_ok": str(row.n_ok),
        "n_error": str(row.n_error), "n_not_run": str(row.n_not_run),
    }
    benchmark = section.benchmark
    if benchmark.name != DEFAULT_BENCHMARK:
        record["benchmark"] = benchmark.name
    for t in benchmark.category_keys:
        record.update(_accuracy_fields(t, row.graded.per_type[t]))
    record.update(_accuracy_fields("abstention", row.graded.abstention))
    record.update(_accuracy_fields("overall", row.graded.overall))
    record.update(_accuracy_fields("task_averaged", row.graded.task_averaged, with_n=False))
    record.update(_accuracy_fields("strict_overall", row.strict.overall, with_n=False))
    record.update(_accuracy_fields("strict_task_averaged", row.strict.task_averaged, with_n=False))
    record.update(_accuracy_fields("strict_abstention", row.strict.abstention, with_n=False))
    record.update(_own_fields(benchmark, row))
    record.update({
        "cost_usd": fmt.csv_number(row.cost_usd), "unknown_cost_calls": str(row.unknown_cost_calls),
        "mean_observation_tokens": fmt.csv_number(row.mean_observation_tokens, 2),
        "mean_actor_context_tokens": fmt.csv_number(row.mean_actor_context_tokens, 2),
        "mean_compression_ratio": fmt.csv_number(row.mean_compression_ratio, 4),
        "dataset": row.dataset,
        "mean_observations": fmt.csv_number(row.mean_observations, 4),
        "mean_observer_call_tokens": fmt.csv_number(row.mean_observer_call_tokens, 2),
        "mean_raw_tail_tokens": fmt.csv_number(row.mean_raw_tail_tokens, 2),
        "mean_context_tokens": fmt.csv_number(row.mean_context_tokens, 2),
    })
    record.update(system_fields(benchmark, row))
    return record


def _own_fields(benchmark: Benchmark, row: RunSummary) -> dict[str, str]:
    """A benchmark's own score per category and overall, raw and (with corrections) corrected, and the ceiling."""
    if benchmark.own_score is None:
        return {}
    name = benchmark.own_score.lower()
    out: dict[str, str] = {}
    if benchmark.own_means is not None:  # BEAM: its overall is a mean of means; the micro mean and NaN count too
        out[f"{name}_micro"] = fmt.csv_number(row.own.micro if row.own else None)
        out[f"{name}_undefined"] = str(row.own.undefined) if row.own else ""
    for prefix, own in ((name, row.own), (f"corrected_{name}", row.corrected_own)):
        out[f"{prefix}_overall"] = fmt.csv_number(own.overall if own else None)
        for key in benchmark.category_keys:
            out[f"{prefix}_{key}"] = fmt.csv_number(own.per_type[key][0] if own else None)
    fixed = row.corrected
    if categories := answerable_categories(benchmark):
        slug = answerable_title(categories).replace(" ", "_").replace("-", "_").replace(",", "")
        for prefix, part in (("", row.answerable), ("corrected_", row.corrected_answerable)):
            out.update(_accuracy_fields(f"{prefix}{slug}", part.accuracy if part else Accuracy(None, None, 0)))
            out[f"{prefix}{name}_{slug}"] = fmt.csv_number(part.own[0] if part and part.own else None)
    out["gold_corrected"] = str(row.n_corrected) if fixed is not None else ""
    out["ceiling"] = fmt.csv_number(row.ceiling)
    for key in benchmark.category_keys:
        out.update(_accuracy_fields(f"corrected_{key}", fixed.per_type[key] if fixed else Accuracy(None, None, 0),
                                    with_n=False))
    out.update(_accuracy_fields("corrected_overall", fixed.overall if fixed else Accuracy(None, None, 0),
                                with_n=False))
    return out


def to_csv(table: ReportTable, path_or_buffer: str | os.PathLike[str] | IO[str] | None = None) -> str:
    """The table as CSV: one line per run, machine-readable (fractions, full run ids, every column always).

    The ``section`` column carries the scoring regime (``official`` or ``non-official:<judge mode>``); rank
    within a section only, empty for a run with a ``judge_caveat`` (whose intervals are kept here). Writes to
    ``path_or_buffer`` when given, and returns the text either way.
    """
    records = [_csv_record(s, rank, row, table.shows_memory)
               for s in table.sections for rank, row in zip(section_ranks(s), s.rows)]
    if records:
        fields = list(dict.fromkeys(name for record in records for name in record))  # benchmarks' columns differ
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
        path_or_buffer.write(text)
    else:
        path = os.fspath(path_or_buffer)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    return text


def _empty_summary() -> RunSummary:
    none = Accuracy(None, None, 0)
    scores = Scores(dict.fromkeys(default_benchmark().category_keys, none), none, none, none)
    return RunSummary("", "", "", "", None, None, False, 0, 0, 0, 0, scores, scores, 0.0, 0, None, None)


def to_rich(table: ReportTable, *, title: str | None = None, wide: bool = False) -> Any:
    """The table as a rich renderable (a ``Group``): a warning when regimes are mixed, one table per section.

    Each section's table fits the console it is printed on without splitting a word (80 columns when the output
    is not a terminal): it wraps at spaces and, when still too wide, is folded into parts that repeat the row
    names (compact) or rank and variant (wide); :mod:`om_eval.report._fit` says how.

    Args:
        wide: one row per run with every column instead of the compact transposed table.
    """
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [Text(title or table.title, style="bold")]
    if table.mixed:
        parts.append(Text(_warning(table), style="bold red"))
    parts += [Text(note, style="yellow") for note in table.notes]
    for section in table.sections:
        if wide:
            columns = _columns(table, sep="\n", section=section)
            rows = [_cells(columns, rank, row) for rank, row in zip(section_ranks(section), section.rows)]
            fitted = [Column(header, tuple(cells[i] for cells in rows), right)
                      for i, (header, right, _) in enumerate(columns)]
            parts.append(FittedTable(section.title, tuple(fitted[:2]), tuple(fitted[2:]),
                                     tuple("yellow" if row.caveat else None for row in section.rows),
                                     show_lines=True))
        else:
            headers, body = _compact(table, section)
            names = Column(headers[0], tuple(cells[0] for cells, _ in body))
            runs = tuple(Column(header, tuple(cells[i] for cells, _ in body), True,
                                "bold yellow" if row.caveat else "bold")
                         for i, (header, row) in enumerate(zip(headers[1:], section.rows), 1))
            parts.append(FittedTable(section.title, (names,), runs,
                                     tuple("bold" if cells[0] == "task-avg" else None for cells, _ in body),
                                     tuple(end for _, end in body)))
        if retrieval := retrieval_table(section):
            headers, rows = retrieval
            recall = [Column(header, tuple(cells[i] for cells in rows), i > 0) for i, header in enumerate(headers)]
            parts.append(FittedTable(retrieval_title(table, section), tuple(recall[:1]), tuple(recall[1:]),
                                     tuple("bold" if cells[0] == "overall" else None for cells in rows),
                                     tuple(i == len(section.benchmark.categories) - 1 or cells[0] == "k"
                                           for i, cells in enumerate(rows))))
        parts += [Text(note, style="yellow") for note in section.notes]
    parts += [Text(note, style="yellow") for note in caveat_notes(table.rows)]
    parts += [Text(line, style="dim") for line in (*_explanation(table, wide=wide), *_legends(table))]
    return Group(*parts)
