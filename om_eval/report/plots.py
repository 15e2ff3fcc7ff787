"""Plots of a summary table (matplotlib): accuracy per type, accuracy against memory size, accuracy against cost.

**Deterministic artefacts.** The same table and options give a byte-identical PNG: each plot is drawn on a
fresh ``Figure`` with an Agg canvas attached (no pyplot, no global backend switch, no figure registry), under
matplotlib's default style plus fixed settings (so a user's ``matplotlibrc`` cannot change the output),
at a fixed size and dpi, and saved with ``metadata={"Software": None}`` (no version string, no date).

**Distinct colours, as stable as possible.** A variant's *preferred* colour is the sha256 of its label (the run's
``label``) modulo a fixed ten-colour palette, so it tends to be the same in every plot and sweep. Hashing alone
lets two variants of one plot share a colour (1 chance in 10 per pair), so :func:`variant_colors` walks the
plot's labels in sorted order and gives each its preferred colour if still free, else the next free palette
colour. Up to ten variants never share a colour; the result depends only on the set of labels, so the three
plots of one report agree and the same table gives the same PNG. Beyond ten, colours repeat as evenly as
possible and the repeats are told apart by a hatch (bars) and a marker shape (points).

**Official and non-official runs.** When the table mixes scoring regimes, each non-official variant is marked
``(non-official)`` in the legend, the subtitle says so, and no Pareto frontier is drawn across regimes.

**Untrusted judges** (:func:`~om_eval.report.tables.judge_caveat`: a local model, the scripted test model, an
unrecorded one) are marked ``⚠ <caveat>`` in the legend and named in the subtitle; their bars are hatched and
their points hollow, both without error bars (as in the tables), and they never join a Pareto frontier.

**Baseline readers** (runs that answered from the raw sessions, no memory: ``baseline=full_context|oracle``)
stand beside the OM variants: their legend entry ends in ``[full-context reader]`` or ``[oracle reader]``, their
bars carry a vertical hatch (``||``) and the subtitle says so. They have no observation tokens, so the
memory-size plot lists them as having no data.

**Readable at a glance.** A zero accuracy gets a thin outlined stub and a ``0`` label, while a missing one is
an italic grey ``n/a`` with no bar. Scatter points carry their number, not their label (coinciding points
share one ``1,2`` tag), and the legend holds the full labels, wrapped at spaces, never cut. When every
x value is zero (typically local or scripted models costing $0), the axis spans a small fixed range and the
subtitle says why, instead of matplotlib's default span.

Missing values (a type with no judged question, a run without observation tokens or cost) are shown as
``n/a`` or left out with a note; they never become zeros.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from om_eval.bench.benchmark import Benchmark
from om_eval.common.files import atomic_write
from om_eval.report import _format as fmt
from om_eval.report.tables import (
    BASELINE_READERS,
    CAVEAT_MARK,
    Accuracy,
    ReportTable,
    RunSummary,
    summary_table,
)

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["PALETTE", "VariantStyle", "accuracy_vs_context_figure", "accuracy_vs_tokens_figure", "categories_figure",
           "cost_vs_accuracy_figure", "figure_png", "plot_accuracy_vs_context", "plot_accuracy_vs_tokens",
           "plot_categories", "plot_cost_vs_accuracy", "variant_color", "variant_colors", "variant_styles"]

#: Matplotlib's tab10 colours, spelled out so a matplotlib upgrade cannot change them.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
_HATCHES = ("", "..", "xx", "\\\\", "++", "--", "oo", "**")
#: Added to the bars of a run with a judge caveat.
_CAVEAT_HATCH = "//"
#: Added to the bars of a baseline reader (no memory).
_BASELINE_HATCH = "||"
#: Height (in accuracy points) of the stub that shows a zero accuracy.
_ZERO_STUB = 1.2
#: Legend labels are wrapped at spaces to this many characters.
_LABEL_WIDTH = 44
_NBSP = "\u00a0"
#: Phrases a line break must not split: a judge caveat, and "(+n calls unpriced)".
_KEEP_TOGETHER = re.compile(re.escape(CAVEAT_MARK) + r" \S+ \S+|\(\+[^)]*\)")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DPI = 100
_RC: dict[RcKeyType, Any] = {
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "path.simplify": True,
}

Source = ReportTable | tuple[Sequence[Mapping[str, Any]], Iterable[Mapping[str, Any]]]


@dataclass(frozen=True)
class VariantStyle:
    color: str
    hatch: str
    marker: str


def variant_color(variant: str) -> str:
    """The variant's preferred colour: sha256 of its label into :data:`PALETTE`."""
    digest = hashlib.sha256(variant.encode("utf-8")).digest()
    return PALETTE[int.from_bytes(digest[:8], "big") % len(PALETTE)]


def variant_colors(variants: Iterable[str]) -> dict[str, str]:
    """Colours for the variants of one plot, distinct while there are at most ``len(PALETTE)`` of them.

    In sorted label order, each variant takes the least used palette colour, searching from its preferred
    colour (:func:`variant_color`) onwards; so it keeps that colour unless a variant earlier in the order
    already has it. Depends only on the set of labels.
    """
    uses = dict.fromkeys(PALETTE, 0)
    out: dict[str, str] = {}
    for variant in sorted(set(variants)):
        start = PALETTE.index(variant_color(variant))
        ring = PALETTE[start:] + PALETTE[:start]
        color = min(ring, key=lambda c: uses[c])  # the first of the least used, from the preferred one on
        uses[color] += 1
        out[variant] = color
    return out


def variant_styles(variants: Sequence[str]) -> list[VariantStyle]:
    """Styles for the variants of one plot, in order: distinct colours; a hatch and marker only past ten.

    Entries sharing a colour (more than ten variants, or one label given twice) are ordered by label (then
    position); the first keeps the plain style.
    """
    palette = variant_colors(variants)
    colors = [palette[v] for v in variants]
    styles: list[VariantStyle | None] = [None] * len(variants)
    for color in sorted(set(colors)):
        members = sorted((v, i) for i, (v, c) in enumerate(zip(variants, colors)) if c == color)
        for rank, (_, i) in enumerate(members):
            styles[i] = VariantStyle(color, _HATCHES[rank % len(_HATCHES)], _MARKERS[rank % len(_MARKERS)])
    return [s for s in styles if s is not None]


# ------------------------------------------------------------------------------------------------ machinery


def _table(source: Source, n_boot: int, seed: int) -> ReportTable:
    if isinstance(source, ReportTable):
        return source
    runs, items = source
    return summary_table(runs, items, n_boot=n_boot, seed=seed)


def _name(table: ReportTable, row: RunSummary) -> str:
    """The legend text of a run: its full label, its regime when mixed, and its judge caveat."""
    name = f"{row.label} (non-official)" if table.mixed and not row.official else row.label
    if row.reader is not None:
        name += f" [{BASELINE_READERS.get(row.reader, row.reader).replace(' ', '-')} reader]"
    return f"{name} {CAVEAT_MARK} {row.caveat}" if row.caveat else name


def _wrap_lines(text: str, width: int) -> list[str]:
    """Wrap at spaces, never inside a word or a caveat (``⚠ local judge`` stays on one line), never cut."""
    import textwrap

    glued = _KEEP_TOGETHER.sub(lambda m: m.group(0).replace(" ", _NBSP), text)
    lines = textwrap.wrap(glued, width, break_long_words=False, break_on_hyphens=False) or [glued]
    return [line.replace(_NBSP, " ") for line in lines]


def _wrap_label(text: str, width: int = _LABEL_WIDTH) -> str:
    return "\n".join(_wrap_lines(text, width))


def _legend_columns(names: Sequence[str], most: int = 3) -> int:
    longest = max((len(line) for name in names for line in name.split("\n")), default=0)
    return max(1, min(len(names), most if longest <= 28 else 2 if longest <= _LABEL_WIDTH else 1))


def _caveat_note(table: ReportTable) -> str:
    kinds: dict[str, list[str]] = {}
    for row in table.rows:
        if row.caveat:
            kinds.setdefault(row.caveat, []).append(row.label)
    everyone = len(kinds) == 1 and sum(map(len, kinds.values())) == len(table.rows)
    parts = [f"{CAVEAT_MARK} {kind}, scores unreliable, no error bars: "
             + ("every run" if everyone else ", ".join(labels)) for kind, labels in sorted(kinds.items())]
    return "; ".join(parts)


def _baseline_note(table: ReportTable) -> str:
    if not table.has_baselines:
        return ""
    return "[… reader] = a baseline answering from the raw sessions, no memory (bars hatched ||)"


def _regime_note(table: ReportTable) -> str:
    if table.mixed:
        return "Mixes official and non-official scoring: compare only within one judge"
    if table.sections and table.sections[0].official:
        return "Official scoring"
    if table.sections:
        return f"Non-official scoring ({table.sections[0].rows[0].judge_mode or 'unknown'} judge)"
    return ""


@contextlib.contextmanager
def _style() -> Iterator[None]:
    """Matplotlib's default style plus :data:`_RC`, whatever the user's rc says."""
    import matplotlib
    import matplotlib.style

    with matplotlib.style.context("default"), matplotlib.rc_context(_RC):
        yield


def _figure(draw: Callable[[Any], None], size: tuple[float, float]) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with _style():
        figure = Figure(figsize=size, dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure)
    return figure


def figure_png(figure: Any) -> bytes:
    """The figure as PNG bytes, the same for the same figure (no software or date in the metadata)."""
    with _style():  # some settings (path simplification, hatch width) are read when drawing
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def _save(figure: Any, path: str | os.PathLike[str]) -> Path:
    return atomic_write(path, figure_png(figure))


def _percent_err(acc: Accuracy) -> tuple[float, float]:
    if acc.ci is None or fmt.missing(acc.value):
        return (0.0, 0.0)
    value = float(acc.value)  # type: ignore[arg-type]  # not None: fmt.missing(acc.value) was false
    return (max(0.0, value - acc.ci[0]) * 100.0, max(0.0, acc.ci[1] - value) * 100.0)


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


def _sentences(notes: Iterable[str]) -> str:
    """Notes as sentences: the empty ones dropped, each capitalised, joined with full stops."""
    return ". ".join(n[0].upper() + n[1:] for n in notes if n) + "."


def _bars_note(table: ReportTable) -> str:
    if table.rows and all(r.caveat for r in table.rows):
        return "Graded accuracy"
    return f"Graded accuracy; error bars: {100 * table.confidence:g}% bootstrap CI"


def _wrap(text: str, width: int = 90) -> list[str]:
    return _wrap_lines(text, width)


def _empty(axes: Any, text: str = "no runs to plot") -> None:
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes, color="#555555")


# ---------------------------------------------------------------------------------------------------- plots

def _groups(benchmark: Benchmark) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The bar groups of a benchmark's plot and their tick labels: its categories, then abstention (where it is a
    row of its own), overall and task-averaged."""
    extra: tuple[tuple[str, str], ...] = (("abstention", "Abstention"),) if benchmark.abstention_row else ()
    extra += (("overall", "Overall\n(micro)"), ("task_averaged", "Task-averaged\n(macro)"))
    return (*benchmark.category_keys, *(g for g, _ in extra)), (*(c.tick for c in benchmark.categories),
                                                                  *(t for _, t in extra))


def _group_accuracy(row: RunSummary, group: str) -> Accuracy:
    if group in row.graded.per_type:
        return row.graded.per_type[group]
    return getattr(row.graded, group)


def _default_title(benchmark: Benchmark) -> str:
    unit = "question type" if benchmark.categories[0].number is None else "category"
    return f"{benchmark.title} accuracy by {unit}"


def categories_figure(source: Source, *, n_boot: int = 1000, seed: int = 0, title: str | None = None) -> Any:
    """The figure of :func:`plot_categories`, drawn but not saved (a matplotlib ``Figure``, for inspection). Runs of
    several benchmarks get one panel each, with that benchmark's categories."""
    table = _table(source, n_boot, seed)
    benchmarks = table.benchmarks

    def draw(figure: Any) -> None:
        for index, benchmark in enumerate(benchmarks):
            rows = tuple(r for r in table.rows if r.benchmark == benchmark.name)
            named = title or _default_title(benchmark)
            if title is not None and len(benchmarks) > 1:
                named = f"{title}: {benchmark.title}"
            _draw_categories(figure.add_subplot(len(benchmarks), 1, index + 1), figure, table, rows, benchmark,
                             named, legend=index == len(benchmarks) - 1)

    return _figure(draw, (11.0, 5.5 * len(benchmarks)))


def _draw_categories(axes: Any, figure: Any, table: ReportTable, rows: Sequence[RunSummary], benchmark: Benchmark,
                     title: str, *, legend: bool = True) -> None:
    groups, ticks = _groups(benchmark)
    notes = [_bars_note(table), _regime_note(table), _caveat_note(table), _baseline_note(table)]
    axes.set_title("\n".join([title, *_wrap(_sentences(notes), 130)]), fontsize=11)
    axes.set_ylabel("Accuracy (%)")
    axes.set_ylim(0, 105)
    axes.set_xlim(-0.6, len(groups) - 0.4)
    axes.set_xticks(range(len(groups)), ticks, fontsize=8)
    axes.axvline(len(benchmark.categories) - 0.5, color="#999999", linewidth=0.8, linestyle=":")
    axes.yaxis.grid(True, color="#dddddd", linewidth=0.6)
    axes.set_axisbelow(True)
    if not rows:
        _empty(axes)
        return
    width = 0.8 / len(rows)
    names = [_wrap_label(_name(table, row)) for row in rows]
    for i, (row, style, name) in enumerate(zip(rows, variant_styles([r.variant for r in rows]), names)):
        offset = (i - (len(rows) - 1) / 2.0) * width
        hatch = style.hatch + (_CAVEAT_HATCH if row.caveat else "") + (_BASELINE_HATCH if row.reader else "")
        xs, heights, low, high = [], [], [], []
        for g, group in enumerate(groups):
            acc = _group_accuracy(row, group)
            if fmt.missing(acc.value):
                axes.text(g + offset, 1.0, "n/a", ha="center", va="bottom", fontsize=7, style="italic",
                          color="#777777", rotation=90 if len(rows) > 4 else 0)
                continue
            xs.append(g + offset)
            heights.append(float(acc.value) * 100.0)  # type: ignore[arg-type]  # not None: not fmt.missing(acc.value)
            err = _percent_err(acc)
            low.append(err[0])
            high.append(err[1])
        axes.bar(xs, heights, width, yerr=None if row.caveat else [low, high], color=style.color, hatch=hatch,
                 edgecolor="#222222", linewidth=0.4, label=name,
                 error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#333333"})
        zeros = [x for x, h in zip(xs, heights) if h == 0.0]
        if zeros:  # a zero-height bar draws nothing: show a stub and say "0"
            axes.bar(zeros, [_ZERO_STUB] * len(zeros), width, color=style.color, hatch=hatch,
                     edgecolor="#222222", linewidth=0.8, label="_zero", gid="zero-stub")
            for x in zeros:
                axes.text(x, _ZERO_STUB + 0.3, "0", ha="center", va="bottom", fontsize=7, fontweight="bold",
                          color="#222222", gid="zero-label")
    if legend:
        figure.legend(loc="outside lower center", ncols=_legend_columns(names), frameon=False)


def plot_categories(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000, seed: int = 0,
                    title: str | None = None) -> Path:
    """Grouped bars: graded accuracy per type (plus abstention, overall, task-averaged) per variant, with CIs.

    Args:
        source: a :class:`~om_eval.report.tables.ReportTable`, or ``(runs, items)`` to build one with
            ``n_boot`` and ``seed``.
        path: the PNG to write (parents are created; the file is replaced atomically).

    Returns:
        The path written.
    """
    return _save(categories_figure(source, n_boot=n_boot, seed=seed, title=title), path)


def _frontier(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points not beaten by one with less x and at least as much y (less cost or memory, more accuracy)."""
    best = float("-inf")
    out = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if y > best:
            out.append((x, y))
            best = y
    return out


#: Approximate size of the scatter axes in points, to tell which number tags would touch.
_AXES_PT = (500.0, 270.0)
_TAG_OFFSET = (6.0, 4.0)
_TAG_CHAR_PT, _TAG_HEIGHT_PT = 5.5, 10.0


def _tags(points: Sequence[tuple[float, float, int]], xlim: tuple[float, float],
          ylim: tuple[float, float]) -> list[tuple[float, float, str, float]]:
    """Number tags for scatter points: ``(x, y, text, vertical offset in points)``, none overprinting another.

    Points whose tags would sit on top of each other share one tag (``1,3``); a tag that would still touch an
    earlier one is moved down a line at a time. Points are taken in number order, so the layout is fixed.
    """
    def place(x: float, y: float) -> tuple[float, float]:
        return ((x - xlim[0]) / (xlim[1] - xlim[0]) * _AXES_PT[0], (y - ylim[0]) / (ylim[1] - ylim[0]) * _AXES_PT[1])

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


def _scatter_figure(table: ReportTable, *, x_of: Callable[[RunSummary], float | None], xlabel: str, title: str,
                    note_of: Callable[[RunSummary], str] = lambda r: "", extra_note: str = "",
                    zero_span: float = 1.0, zero_note: str = "") -> Any:
    rows = table.rows

    def draw(figure: Any) -> None:
        axes = figure.add_subplot()
        axes.set_xlabel(xlabel)
        axes.set_ylabel("Task-averaged accuracy (%)")
        axes.grid(True, color="#dddddd", linewidth=0.6)
        axes.set_axisbelow(True)
        points, omitted, names = [], [], []
        for number, (row, style) in enumerate(zip(rows, variant_styles([r.variant for r in rows])), 1):
            x, acc = x_of(row), row.graded.task_averaged
            if fmt.missing(x) or fmt.missing(acc.value):
                omitted.append(row.label)
                continue
            y = float(acc.value) * 100.0  # type: ignore[arg-type]  # not None: not fmt.missing(acc.value)
            err = _percent_err(acc)
            name = _wrap_label(f"{number}. {_name(table, row)}{note_of(row)}")
            hollow = row.caveat is not None
            axes.errorbar([x], [y], yerr=None if hollow else [[err[0]], [err[1]]], fmt=style.marker,
                          color=style.color, markersize=8, capsize=3, elinewidth=0.8,
                          markerfacecolor="white" if hollow else style.color,
                          markeredgecolor=style.color if hollow else "#222222",
                          markeredgewidth=1.8 if hollow else 0.5, label=name)
            points.append((float(x), y, number, not hollow))  # type: ignore[arg-type]  # not None: not fmt.missing(x)
            names.append(name)
        notes = [_bars_note(table), _regime_note(table), _caveat_note(table), extra_note]
        all_zero = bool(points) and all(p[0] == 0.0 for p in points)
        if all_zero:
            notes.append(zero_note)
        if omitted:
            notes.append("no data, not shown: " + ", ".join(omitted))
        axes.set_title("\n".join([title, *_wrap(_sentences(notes))]), fontsize=11)
        if not points:
            _empty(axes, "no variant has both values")
            return
        trusted = [(p[0], p[1]) for p in points if p[3]]
        if len(trusted) >= 2 and not table.mixed:
            frontier = _frontier(trusted)
            axes.plot([p[0] for p in frontier], [p[1] for p in frontier], linestyle="--", color="#888888",
                      linewidth=1.0, zorder=1, label="Pareto frontier")
            names.append("Pareto frontier")
        right = zero_span if all_zero else 1.12 * max(p[0] for p in points)  # room for the number tags
        xlim, ylim = (-0.04 * right, right), (0.0, 105.0)
        axes.set_xlim(*xlim)
        axes.set_ylim(*ylim)
        for x, y, text, dy in _tags([p[:3] for p in points], xlim, ylim):
            axes.annotate(text, (x, y), xytext=(_TAG_OFFSET[0], dy), textcoords="offset points", fontsize=8,
                          fontweight="bold", gid="point-tag")
        figure.legend(loc="outside lower center", ncols=_legend_columns(names, most=2), frameon=False)

    return _figure(draw, (8.0, 6.0))


def accuracy_vs_tokens_figure(source: Source, *, n_boot: int = 1000, seed: int = 0) -> Any:
    """The figure of :func:`plot_accuracy_vs_tokens`, drawn but not saved."""
    table = _table(source, n_boot, seed)
    return _scatter_figure(table, x_of=lambda r: r.mean_observation_tokens,
                           xlabel="Mean observation tokens at answer time (tokens)",
                           title="Task-averaged accuracy vs memory size at answer time",
                           zero_span=100.0, zero_note="every run has 0 observation tokens")


def plot_accuracy_vs_tokens(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000,
                            seed: int = 0) -> Path:
    """Task-averaged accuracy against mean observation tokens at answer time: one numbered point per variant.

    The dashed line (single regime, trusted judges only) is the Pareto frontier: no other variant is both
    smaller and better.
    """
    return _save(accuracy_vs_tokens_figure(source, n_boot=n_boot, seed=seed), path)


def accuracy_vs_context_figure(source: Source, *, n_boot: int = 1000, seed: int = 0) -> Any:
    """The figure of :func:`plot_accuracy_vs_context`, drawn but not saved."""
    table = _table(source, n_boot, seed)
    return _scatter_figure(table, x_of=lambda r: r.mean_actor_context_tokens,
                           xlabel="Mean actor context per question (prompt tokens)",
                           title="Task-averaged accuracy vs what the actor reads",
                           zero_span=100.0, zero_note="no run recorded the actor's prompt tokens")


def plot_accuracy_vs_context(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000,
                             seed: int = 0) -> Path:
    """Task-averaged accuracy against the actor's mean prompt tokens per question (memory, raw tail and
    instructions: what a memory system costs at answer time), with the Pareto frontier as for
    :func:`plot_accuracy_vs_tokens`."""
    return _save(accuracy_vs_context_figure(source, n_boot=n_boot, seed=seed), path)


def cost_vs_accuracy_figure(source: Source, *, n_boot: int = 1000, seed: int = 0, per_question: bool = True) -> Any:
    """The figure of :func:`plot_cost_vs_accuracy`, drawn but not saved."""
    table = _table(source, n_boot, seed)
    unpriced = sum(r.unknown_cost_calls for r in table.rows)
    return _scatter_figure(
        table,
        x_of=(lambda r: r.cost_per_question) if per_question else (lambda r: r.cost_usd),
        xlabel="Known cost per question (USD)" if per_question else "Known cost of the run (USD)",
        title="Task-averaged accuracy vs cost",
        note_of=lambda r: f" (+{_calls(r.unknown_cost_calls)} unpriced)" if r.unknown_cost_calls else "",
        extra_note=f"{_calls(unpriced)} had no known price and count as $0" if unpriced else "",
        zero_span=0.01,
        zero_note="no run has a known cost above $0" if unpriced else "all runs cost $0 (local/scripted models)",
    )


def plot_cost_vs_accuracy(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000, seed: int = 0,
                          per_question: bool = True) -> Path:
    """Task-averaged accuracy against known cost (per question by default, else the run total).

    Calls without a known price add nothing to the cost; variants with such calls are annotated with their
    count. When every run cost $0 the axis spans $0 to $0.01 and the subtitle says so.
    """
    return _save(cost_vs_accuracy_figure(source, n_boot=n_boot, seed=seed, per_question=per_question), path)
