"""Grouped bars: graded accuracy per category of each benchmark (plus abstention, overall, task-averaged) per run.

A zero accuracy gets a thin outlined stub and a ``0`` label, while a missing one is an italic grey ``n/a`` with no
bar: missing values never become zeros. Runs with a judge caveat have no error bars (as in the tables).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from om_eval.bench.benchmark import Benchmark
from om_eval.report import _format as fmt
from om_eval.report.plotting.canvas import empty, new_figure, safe_text
from om_eval.report.plotting.panels import (
    BASELINE_HATCH,
    CAVEAT_HATCH,
    Marks,
    Panel,
    legend_columns,
    legend_name,
    marks_notes,
    panels,
    percent_err,
    regime_note,
    run_colours,
    wrap_label,
)
from om_eval.report.tables import Accuracy, ReportTable, RunSummary

__all__ = ["categories_figure", "categories_notes"]

#: Height (in accuracy points) of the stub that shows a zero accuracy.
_ZERO_STUB = 1.2


def _own_first(benchmark: Benchmark) -> bool:
    """Its own score is the headline (BEAM): bars show it, not the judge's verdicts."""
    return benchmark.own_means is not None and benchmark.own_score is not None


def _groups(benchmark: Benchmark) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The bar groups of a benchmark's panel and their tick labels: its categories, then abstention (where it is a
    row of its own), overall and task-averaged (a benchmark scored by its own score: overall, the mean of the
    category means, and the micro mean)."""
    if _own_first(benchmark):
        extra: tuple[tuple[str, str], ...] = (("own_overall", "Overall\n(mean of\nabilities)"),
                                              ("own_micro", "Micro\n(over\nquestions)"))
    else:
        extra = (("abstention", "Abstention"),) if benchmark.abstention_row else ()
        extra += (("overall", "Overall\n(micro)"), ("task_averaged", "Task-averaged\n(macro)"))
    return (*benchmark.category_keys, *(g for g, _ in extra)), (*(c.tick for c in benchmark.categories),
                                                                  *(t for _, t in extra))


def _group_accuracy(row: RunSummary, group: str, benchmark: Benchmark | None = None) -> Accuracy:
    if benchmark is not None and _own_first(benchmark):
        own = row.own
        if own is None:
            return Accuracy(None, None, 0)
        if group in own.per_type:
            value, n = own.per_type[group]
            return Accuracy(value, None, n)
        return Accuracy(own.overall if group == "own_overall" else own.micro, None, own.n)
    if group in row.graded.per_type:
        return row.graded.per_type[group]
    return getattr(row.graded, group)


def _unit(benchmark: Benchmark) -> str:
    if _own_first(benchmark):
        return "ability"
    return "question type" if benchmark.categories[0].number is None else "category"


def _measure(benchmark: Benchmark) -> str:
    return f"{benchmark.own_score} score" if _own_first(benchmark) else "accuracy"


def _title(benchmark: Benchmark, title: str | None = None, several: bool = False) -> str:
    """A panel's title: ``LongMemEval: accuracy by question type``, or ``title`` (``title: LoCoMo`` when the
    figure has several panels)."""
    if title is None:
        return f"{benchmark.title}: {_measure(benchmark)} by {_unit(benchmark)}"
    return f"{title}: {benchmark.title}" if several else title


def categories_figure(table: ReportTable, *, title: str | None = None) -> Any:
    """The grouped bars of ``table``: one panel per benchmark, stacked, one legend below them."""
    shown = panels(table)
    marks = Marks.of(table)
    colours = run_colours(table)

    def draw(figure: Any) -> None:
        names: list[str] = []
        for index, panel in enumerate(shown):
            axes = figure.add_subplot(len(shown), 1, index + 1)
            axes.set_title(safe_text(_title(panel.benchmark, title, len(shown) > 1)))
            names += _draw_panel(axes, panel, marks, colours)
        if names:
            figure.legend(loc="outside lower center", ncols=legend_columns(names), frameon=False)

    return new_figure(draw, (11.0, 4.6 * len(shown) + 0.4))


def _draw_panel(axes: Any, panel: Panel, marks: Marks, colours: dict[str, str]) -> list[str]:
    groups, ticks = _groups(panel.benchmark)
    axes.set_ylabel(f"{_measure(panel.benchmark)} (%)" if _own_first(panel.benchmark)
                    else f"{panel.benchmark.title} accuracy (%)")
    axes.set_ylim(0, 105)
    axes.set_xlim(-0.6, len(groups) - 0.4)
    axes.set_xticks(range(len(groups)), ticks, fontsize=8)
    axes.axvline(len(panel.benchmark.categories) - 0.5, color="#999999", linewidth=0.8, linestyle=":")
    axes.yaxis.grid(True, color="#dddddd", linewidth=0.6)
    axes.set_axisbelow(True)
    rows = panel.rows
    if not rows:
        empty(axes)
        return []
    width = 0.8 / len(rows)
    names = [wrap_label(legend_name(row, panel, marks)) for row in rows]
    for i, (row, name) in enumerate(zip(rows, names)):
        offset = (i - (len(rows) - 1) / 2.0) * width
        hatch = (CAVEAT_HATCH if row.caveat and marks.caveat_hatch else "") + (
            BASELINE_HATCH if row.reader and marks.baseline_hatch else "")
        xs, heights, low, high = [], [], [], []
        for g, group in enumerate(groups):
            acc = _group_accuracy(row, group, panel.benchmark)
            if fmt.missing(acc.value):
                axes.text(g + offset, 1.0, "n/a", ha="center", va="bottom", fontsize=7, style="italic",
                          color="#777777", rotation=90 if len(rows) > 4 else 0)
                continue
            xs.append(g + offset)
            heights.append(float(acc.value) * 100.0)  # type: ignore[arg-type]  # not None: not fmt.missing(acc.value)
            err = percent_err(acc)
            low.append(err[0])
            high.append(err[1])
        colour = colours[row.run_id]
        axes.bar(xs, heights, width, yerr=None if row.caveat else [low, high], color=colour, hatch=hatch or None,
                 edgecolor="#222222", linewidth=0.4, label=name,
                 error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#333333"})
        zeros = [x for x, h in zip(xs, heights) if h == 0.0]
        if zeros:  # a zero-height bar draws nothing: show a stub and say "0"
            axes.bar(zeros, [_ZERO_STUB] * len(zeros), width, color=colour, hatch=hatch or None,
                     edgecolor="#222222", linewidth=0.8, label="_zero", gid="zero-stub")
            for x in zeros:
                axes.text(x, _ZERO_STUB + 0.3, "0", ha="center", va="bottom", fontsize=7, fontweight="bold",
                          color="#222222", gid="zero-label")
    return names


def _interval_note(panel: Panel, confidence: float) -> str:
    level = f"{100 * confidence:g} %"
    if all(r.caveat for r in panel.rows) or _own_first(panel.benchmark):
        return ""
    if panel.benchmark.intervals == "wilson":
        return (f"error bars: {level} Wilson score intervals per category and overall, {level} percentile "
                "bootstrap intervals over questions for the task average")
    return f"error bars: {level} percentile bootstrap intervals over questions"


def _missing_notes(rows: Sequence[RunSummary], groups: Sequence[str], benchmark: Benchmark) -> list[str]:
    values = [_group_accuracy(r, g, benchmark).value for r in rows for g in groups]
    notes = []
    if any(fmt.missing(v) for v in values):
        notes.append("n/a: no judged question (no bar)")
    if any(not fmt.missing(v) and v == 0.0 for v in values):
        notes.append("a short outlined bar labelled 0: an accuracy of zero")
    return notes


def _own_note(benchmark: Benchmark) -> tuple[str, ...]:
    if not _own_first(benchmark):
        return ()
    return (f"bars show {benchmark.title}'s own score (per chat, then over chats), not the judge's full-marks share; "
            "no error bars (the score is a mean of means)",)


def categories_notes(table: ReportTable) -> tuple[str, list[str]]:
    """The caption of :func:`categories_figure` and its notes, one per line."""
    caption = ("Graded accuracy (unjudged answers left out) per category, then overall (micro-averaged over "
               "questions) and task-averaged (macro-averaged over categories), one bar per run and one panel per "
               "benchmark.")
    if any(_own_first(panel.benchmark) for panel in panels(table)):
        caption += (" A benchmark scored by its own score (BEAM) draws that score instead: per ability, then the mean "
                    "of the ability means and the mean over questions.")
    notes = []
    for panel in panels(table):
        if not panel.rows:
            continue
        title = panel.benchmark.title
        groups, _ = _groups(panel.benchmark)
        for note in (_interval_note(panel, table.confidence), regime_note(panel),
                     *_missing_notes(panel.rows, groups, panel.benchmark), *_own_note(panel.benchmark)):
            if note:
                notes.append(f"{title}: {note}")
    return caption, [*notes, *marks_notes(table, Marks.of(table), bars=True)]
