"""Task-averaged accuracy against a cost of memory (observation tokens, the actor's context, dollars).

One numbered point per run, one panel per benchmark. The legend holds the full labels (wrapped at spaces, never
cut); points carry their number only, and coinciding points share one tag (``1,2``).

**The Pareto frontier** (dashed) joins the runs no other run beats with both a smaller x and a higher accuracy.
It is drawn per panel and per group of runs that can be compared: one scoring regime, and one judge caveat (runs
with a caveat get a frontier of their own, in a lighter grey, never one shared with trusted runs).

When every x of a panel is zero (typically local or scripted models costing $0), its axis spans a small fixed
range and the notes say why, instead of matplotlib's default span.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from om_eval.report import _format as fmt
from om_eval.report.plotting.canvas import empty, new_figure
from om_eval.report.plotting.panels import (
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
from om_eval.report.tables import CAVEAT_MARK, ReportTable, RunSummary

__all__ = ["CONTEXT", "MEMORY_CONTEXT", "TOKENS", "Axis", "context_axis", "cost_axis", "frontier", "scatter_figure",
           "scatter_notes"]

#: A group of runs one frontier joins: (official, judge mode, judge caveat).
Group = tuple[bool, str, str | None]


@dataclass(frozen=True)
class Axis:
    """What a scatter puts on its x axis."""

    label: str
    """The x axis label."""
    what: str
    """The end of each panel's title: ``<benchmark>: task-averaged accuracy vs <what>``."""
    caption: str
    """The x values, as the notes describe them."""
    value: Callable[[RunSummary], float | None]
    smaller: str
    """What is better on this axis, for the frontier's caption (``a smaller memory``)."""
    zero_span: float
    """The x range of a panel whose values are all zero."""
    zero_note: str
    point_note: Callable[[RunSummary], str] = field(default=lambda row: "")
    """Added to a run's legend entry."""
    extra_notes: tuple[str, ...] = ()


TOKENS = Axis("Mean observation tokens at answer time", "memory size",
              "the mean observation tokens in memory when the actor answered", lambda r: r.mean_observation_tokens,
              "a smaller memory", 100.0, "every run has 0 observation tokens")
CONTEXT = Axis("Mean actor context per question (prompt tokens)", "actor context",
               "the actor's mean prompt tokens per question (memory, unobserved raw messages, instructions)",
               lambda r: r.mean_actor_context_tokens, "a smaller actor context", 100.0,
               "no run recorded the actor's prompt tokens")
MEMORY_CONTEXT = Axis("Mean context tokens per question (memory shown to the actor)", "context tokens",
                      "the mean tokens of the memory the actor was shown per question (items.context_tokens, counted "
                      "with each run's tokenizer)", lambda r: r.mean_context_tokens, "a smaller context", 100.0,
                      "every run showed the actor an empty memory")


def context_axis(table: ReportTable) -> Axis:
    """The context tokens of the memory each run showed its actor (:data:`MEMORY_CONTEXT`, the measure memory
    systems are compared on) when every run recorded them; else, for a table with runs stored before they were,
    the actor's whole prompt (:data:`CONTEXT`), so that one axis never mixes the two."""
    rows = table.rows
    return MEMORY_CONTEXT if rows and all(r.mean_context_tokens is not None for r in rows) else CONTEXT


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


def cost_axis(table: ReportTable, per_question: bool = True) -> Axis:
    """The known cost, per question or of the whole run; calls without a known price count as $0 and are noted."""
    unpriced = sum(r.unknown_cost_calls for r in table.rows)
    return Axis(
        "Known cost per question (USD)" if per_question else "Known cost of the run (USD)", "cost",
        "the known cost " + ("per question" if per_question else "of the whole run") + " (US dollars)",
        (lambda r: r.cost_per_question) if per_question else (lambda r: r.cost_usd), "a lower cost", 0.01,
        "no run has a known cost above $0" if unpriced else "all runs cost $0 (local/scripted models)",
        lambda r: f" (+{_calls(r.unknown_cost_calls)} unpriced)" if r.unknown_cost_calls else "",
        (f"{_calls(unpriced)} had no known price and {'counts' if unpriced == 1 else 'count'} as $0",)
        if unpriced else (),
    )


def frontier(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points not beaten by one with less x and at least as much y (less cost or memory, more accuracy)."""
    best = float("-inf")
    out = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if y > best:
            out.append((x, y))
            best = y
    return out


@dataclass(frozen=True)
class _Point:
    x: float
    y: float
    number: int
    row: RunSummary

    @property
    def group(self) -> Group:
        return (self.row.official, self.row.judge_mode or "unrecorded", self.row.caveat)


def _points(panel: Panel, axis: Axis, numbers: dict[str, int]) -> tuple[list[_Point], list[str]]:
    """The drawable points of a panel, and the labels of its runs missing a value."""
    points, omitted = [], []
    for row in panel.rows:
        x, y = axis.value(row), row.graded.task_averaged.value
        if fmt.missing(x) or fmt.missing(y):
            omitted.append(row.label)
        else:
            points.append(_Point(float(x), float(y) * 100.0, numbers[row.run_id], row))  # type: ignore[arg-type]  # not None: not fmt.missing
    return points, omitted


def _frontiers(points: Sequence[_Point]) -> dict[Group, list[_Point]]:
    """The frontier of each group of at least two points, official and trusted groups first. A frontier of one
    point (a run at least as good as the others of its group on both axes) is kept, to be named, not drawn."""
    groups: dict[Group, list[_Point]] = {}
    for point in points:
        groups.setdefault(point.group, []).append(point)
    ordered = sorted(groups, key=lambda g: (g[2] is not None, not g[0], g[1], g[2] or ""))
    out = {}
    for group in ordered:
        members = groups[group]
        if len(members) >= 2:
            line = frontier([(p.x, p.y) for p in members])
            out[group] = [next(p for p in members if (p.x, p.y) == xy) for xy in line]
    return out


def _frontier_label(group: Group, panel: Panel, marks: Marks) -> str:
    official, mode, caveat = group
    qualifiers = []
    if panel.mixed:
        qualifiers.append("official" if official else f"{mode} judge")
    if caveat and marks.caveat_suffix:
        qualifiers.append(f"{CAVEAT_MARK} {caveat}")
    return "Pareto frontier" + (f" ({', '.join(qualifiers)})" if qualifiers else "")


#: The frontiers' line styles, by group in order: trusted groups dark, caveated ones light.
_FRONTIER_STYLES = ("--", "-.", ":")
_TAG_OFFSET = (6.0, 4.0)
_TAG_CHAR_PT, _TAG_HEIGHT_PT = 5.5, 10.0


def tags(points: Sequence[tuple[float, float, int]], xlim: tuple[float, float], ylim: tuple[float, float],
         size_pt: tuple[float, float]) -> list[tuple[float, float, str, float]]:
    """Number tags for scatter points: ``(x, y, text, vertical offset in points)``, none overprinting another.

    Points whose tags would sit on top of each other (on axes of about ``size_pt`` points) share one tag
    (``1,3``); a tag that would still touch an earlier one is moved down a line at a time. Points are taken in
    number order, so the layout is fixed.
    """
    def place(x: float, y: float) -> tuple[float, float]:
        return ((x - xlim[0]) / (xlim[1] - xlim[0]) * size_pt[0], (y - ylim[0]) / (ylim[1] - ylim[0]) * size_pt[1])

    groups: list[list[tuple[float, float, int]]] = []
    for point in sorted(points, key=lambda p: p[2]):
        px, py = place(point[0], point[1])
        for group in groups:
            gx, gy = place(group[0][0], group[0][1])
            if abs(px - gx) < 3 * _TAG_CHAR_PT and abs(py - gy) < _TAG_HEIGHT_PT:
                group.append(point)
                break
        else:
            groups.append([point])
    boxes: list[tuple[float, float, float, float]] = []
    out = []
    for group in groups:
        text = ",".join(str(p[2]) for p in group)
        ax, ay = max(p[0] for p in group), max(p[1] for p in group)  # right of and above every member
        gx, gy = place(ax, ay)
        left, right = gx + _TAG_OFFSET[0], gx + _TAG_OFFSET[0] + _TAG_CHAR_PT * len(text)
        dy = _TAG_OFFSET[1]
        for _ in range(len(boxes) + 1):
            bottom, top = gy + dy, gy + dy + _TAG_HEIGHT_PT
            if not any(left < b[1] and b[0] < right and bottom < b[3] and b[2] < top for b in boxes):
                break
            dy -= _TAG_HEIGHT_PT
        boxes.append((left, right, gy + dy, gy + dy + _TAG_HEIGHT_PT))
        out.append((ax, ay, text, dy))
    return out


def _panel_width(count: int) -> float:
    return 8.0 if count == 1 else 6.0


def scatter_figure(table: ReportTable, axis: Axis) -> Any:
    """Task-averaged accuracy against ``axis`` for the runs of ``table``: one panel per benchmark, side by side."""
    shown = panels(table)
    marks = Marks.of(table)
    colours = run_colours(table)
    numbers = {row.run_id: number for number, row in enumerate(table.rows, 1)}
    width = _panel_width(len(shown))
    size_pt = (0.8 * 72 * width, 300.0)  # about the axes' size, to tell which number tags would touch

    def draw(figure: Any) -> None:
        entries: list[tuple[str, Any]] = []
        for index, panel in enumerate(shown):
            axes = figure.add_subplot(1, len(shown), index + 1)
            entries += _draw_panel(axes, panel, axis, marks, colours, numbers, size_pt)
        legend: dict[str, Any] = {}
        for label, handle in sorted(entries, key=lambda e: e[0].startswith("Pareto frontier")):  # runs first
            legend.setdefault(label, handle)
        if legend:
            figure.legend(list(legend.values()), list(legend), loc="outside lower center",
                          ncols=legend_columns(list(legend), most=2), frameon=False)

    return new_figure(draw, (width * len(shown), 6.0))


def _draw_panel(axes: Any, panel: Panel, axis: Axis, marks: Marks, colours: dict[str, str], numbers: dict[str, int],
                size_pt: tuple[float, float]) -> list[tuple[str, Any]]:
    axes.set_title(f"{panel.benchmark.title}: task-averaged accuracy vs {axis.what}")
    axes.set_xlabel(axis.label)
    axes.set_ylabel(f"{panel.benchmark.title} task-averaged accuracy (%)")
    axes.grid(True, color="#dddddd", linewidth=0.6)
    axes.set_axisbelow(True)
    points, _ = _points(panel, axis, numbers)
    if not points:
        axes.set_ylim(0.0, 105.0)
        empty(axes, "no run to plot" if not panel.rows else "no run has both values")
        return []
    legend = []
    for point in points:
        row, colour = point.row, colours[point.row.run_id]
        err = percent_err(row.graded.task_averaged)
        hollow = row.caveat is not None and marks.caveat_hatch
        name = wrap_label(f"{point.number}. {legend_name(row, panel, marks)}{axis.point_note(row)}")
        handle = axes.errorbar([point.x], [point.y], yerr=None if row.caveat else [[err[0]], [err[1]]], fmt="o",
                               color=colour, markersize=8, capsize=3, elinewidth=0.8,
                               markerfacecolor="white" if hollow else colour,
                               markeredgecolor=colour if hollow else "#222222",
                               markeredgewidth=1.8 if hollow else 0.5, label=name)
        legend.append((name, handle))
    for rank, (group, line) in enumerate(_frontiers(points).items()):
        if len(line) < 2:
            continue
        label = _frontier_label(group, panel, marks)
        (handle,) = axes.plot([p.x for p in line], [p.y for p in line], color="#aaaaaa" if group[2] else "#555555",
                              linestyle=_FRONTIER_STYLES[rank % len(_FRONTIER_STYLES)], linewidth=1.0, zorder=1,
                              label=label, gid="pareto-frontier")
        legend.append((label, handle))
    all_zero = all(p.x == 0.0 for p in points)
    right = axis.zero_span if all_zero else 1.12 * max(p.x for p in points)  # room for the number tags
    xlim, ylim = (-0.04 * right, right), (0.0, 105.0)
    axes.set_xlim(*xlim)
    axes.set_ylim(*ylim)
    for x, y, text, dy in tags([(p.x, p.y, p.number) for p in points], xlim, ylim, size_pt):
        axes.annotate(text, (x, y), xytext=(_TAG_OFFSET[0], dy), textcoords="offset points", fontsize=8,
                      fontweight="bold", gid="point-tag")
    return legend


def _among(group: Group, panel: Panel) -> str:
    official, mode, caveat = group
    parts = ([("official" if official else f"{mode} judge")] if panel.mixed else []) + ([caveat] if caveat else [])
    return f" among the {', '.join(parts)} runs" if parts else ""


def scatter_notes(table: ReportTable, axis: Axis) -> tuple[str, list[str]]:
    """The caption of :func:`scatter_figure` and its notes, one per line."""
    numbers = {row.run_id: number for number, row in enumerate(table.rows, 1)}
    caption = (f"Graded task-averaged accuracy against {axis.caption}: one point per run, numbered as in the "
               "legend; one panel per benchmark, each with its own accuracy axis.")
    if any(not r.caveat for r in table.rows):
        caption += f" Error bars: {100 * table.confidence:g} % percentile bootstrap intervals over questions."
    notes: list[str] = []
    drawn: set[Group] = set()
    for panel in panels(table):
        if not panel.rows:
            continue
        points, omitted = _points(panel, axis, numbers)
        title = panel.benchmark.title
        for note in (regime_note(panel), axis.zero_note if points and all(p.x == 0.0 for p in points) else "",
                     "no value, not shown: " + ", ".join(omitted) if omitted else ""):
            if note:
                notes.append(f"{title}: {note}")
        for group, line in _frontiers(points).items():
            if len(line) >= 2:
                drawn.add(group)
            else:
                notes.append(f"{title}: no Pareto line{_among(group, panel)}: run {line[0].number} is at least as "
                             f"good as the others on both axes")
    if drawn:
        apart = ""
        if any(g[2] for g in drawn):
            apart = (" (lighter grey: every run has a judge caveat)" if all(r.caveat for r in table.rows)
                     else ", and apart for runs with a judge caveat (lighter grey)")
        caption += (f" Dashed line: the Pareto frontier, the runs no other run beats with both {axis.smaller} and "
                    f"a higher accuracy; drawn per benchmark and per scoring regime{apart}.")
    return caption, [*notes, *axis.extra_notes, *marks_notes(table, Marks.of(table), bars=False)]
