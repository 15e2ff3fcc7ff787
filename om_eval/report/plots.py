"""Plots of a summary table (matplotlib): accuracy per type, accuracy against memory size, accuracy against cost.

**Deterministic artefacts.** The same table and options give a byte-identical PNG: each plot is drawn on a
fresh ``Figure`` with an Agg canvas attached (no pyplot, no global backend switch, no figure registry), under
matplotlib's default style plus fixed settings (so a user's ``matplotlibrc`` cannot change the output),
at a fixed size and dpi, and saved with ``metadata={"Software": None}`` (no version string, no date).

**A variant keeps its colour.** The colour is the sha256 of the variant label (the run's ``label``) taken modulo
a fixed ten-colour palette, so it is the same in every plot, table and sweep. Two variants of one plot that
hash to the same colour are told apart by a hatch (bars) and a marker shape (points), assigned in label order.

**Official and non-official runs.** When the table mixes scoring regimes, each non-official variant is marked
``(non-official)`` in the legend, the subtitle says so, and no Pareto frontier is drawn across regimes.

Missing values (a type with no judged question, a run without observation tokens or cost) are shown as
``n/a`` or left out with a note; they never become zeros.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from om_eval.bench.metrics import OFFICIAL_TYPE_ORDER
from om_eval.report import _format as fmt
from om_eval.report.tables import Accuracy, ReportTable, RunSummary, summary_table

__all__ = ["PALETTE", "VariantStyle", "plot_accuracy_vs_tokens", "plot_categories", "plot_cost_vs_accuracy",
           "variant_color", "variant_styles"]

#: Matplotlib's tab10 colours, spelled out so a matplotlib upgrade cannot change them.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
_HATCHES = ("", "//", "..", "xx", "\\\\", "++", "--", "oo")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DPI = 100
_RC = {
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
    """The variant's fixed colour: sha256 of its label into :data:`PALETTE`."""
    digest = hashlib.sha256(variant.encode("utf-8")).digest()
    return PALETTE[int.from_bytes(digest[:8], "big") % len(PALETTE)]


def variant_styles(variants: Sequence[str]) -> list[VariantStyle]:
    """Styles for the variants of one plot, in order: hash colour; a hatch and marker only to split collisions.

    Entries sharing a colour are ordered by label (then position); the first keeps the plain style.
    """
    colors = [variant_color(v) for v in variants]
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
    return f"{row.label} (non-official)" if table.mixed and not row.official else row.label


def _regime_note(table: ReportTable) -> str:
    if table.mixed:
        return "Mixes official and non-official scoring: compare only within one judge"
    if table.sections and table.sections[0].official:
        return "Official scoring"
    if table.sections:
        return f"Non-official scoring ({table.sections[0].rows[0].judge_mode or 'unknown'} judge)"
    return ""


def _render(draw: Callable[[Any], None], path: str | os.PathLike[str], size: tuple[float, float]) -> Path:
    import matplotlib
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.style.context("default"), matplotlib.rc_context(_RC):
        figure = Figure(figsize=size, dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        draw(figure)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(buffer.getvalue())
    os.replace(tmp, target)
    return target


def _percent_err(acc: Accuracy) -> tuple[float, float]:
    if acc.ci is None or fmt.missing(acc.value):
        return (0.0, 0.0)
    value = float(acc.value)  # type: ignore[arg-type]
    return (max(0.0, value - acc.ci[0]) * 100.0, max(0.0, acc.ci[1] - value) * 100.0)


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


def _wrap(text: str, width: int = 90) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def _empty(axes: Any, text: str = "no runs to plot") -> None:
    axes.text(0.5, 0.5, text, ha="center", va="center", transform=axes.transAxes, color="#555555")


# ---------------------------------------------------------------------------------------------------- plots

_GROUPS = (*OFFICIAL_TYPE_ORDER, "abstention", "overall", "task_averaged")
_GROUP_TICKS = (*(fmt.TYPE_TICK[t] for t in OFFICIAL_TYPE_ORDER), "Abstention", "Overall\n(micro)",
                "Task-averaged\n(macro)")


def _group_accuracy(row: RunSummary, group: str) -> Accuracy:
    if group in OFFICIAL_TYPE_ORDER:
        return row.graded.per_type[group]
    return getattr(row.graded, group)


def plot_categories(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000, seed: int = 0,
                    title: str = "LongMemEval accuracy by question type") -> Path:
    """Grouped bars: graded accuracy per type (plus abstention, overall, task-averaged) per variant, with CIs.

    Args:
        source: a :class:`~om_eval.report.tables.ReportTable`, or ``(runs, items)`` to build one with
            ``n_boot`` and ``seed``.
        path: the PNG to write (parents are created; the file is replaced atomically).

    Returns:
        The path written.
    """
    table = _table(source, n_boot, seed)
    rows = table.rows

    def draw(figure: Any) -> None:
        axes = figure.add_subplot()
        level = f"{100 * table.confidence:g}%"
        subtitle = f"Graded accuracy; error bars: {level} bootstrap CI. {_regime_note(table)}".strip()
        axes.set_title("\n".join([title, *_wrap(subtitle, 130)]), fontsize=11)
        axes.set_ylabel("Accuracy (%)")
        axes.set_ylim(0, 105)
        axes.set_xlim(-0.6, len(_GROUPS) - 0.4)
        axes.set_xticks(range(len(_GROUPS)), _GROUP_TICKS, fontsize=8)
        axes.axvline(len(OFFICIAL_TYPE_ORDER) - 0.5, color="#999999", linewidth=0.8, linestyle=":")
        axes.yaxis.grid(True, color="#dddddd", linewidth=0.6)
        axes.set_axisbelow(True)
        if not rows:
            _empty(axes)
            return
        width = 0.8 / len(rows)
        for i, (row, style) in enumerate(zip(rows, variant_styles([r.variant for r in rows]))):
            offset = (i - (len(rows) - 1) / 2.0) * width
            xs, heights, low, high = [], [], [], []
            for g, group in enumerate(_GROUPS):
                acc = _group_accuracy(row, group)
                if fmt.missing(acc.value):
                    axes.text(g + offset, 1.5, "n/a", ha="center", va="bottom", fontsize=7, color="#555555")
                    continue
                xs.append(g + offset)
                heights.append(float(acc.value) * 100.0)  # type: ignore[arg-type]
                err = _percent_err(acc)
                low.append(err[0])
                high.append(err[1])
            axes.bar(xs, heights, width, yerr=[low, high], color=style.color, hatch=style.hatch,
                     edgecolor="#222222", linewidth=0.4, label=_name(table, row),
                     error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#333333"})
        figure.legend(loc="outside lower center", ncols=min(len(rows), 3), frameon=False)

    return _render(draw, path, (11.0, 5.5))


def _frontier(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points not beaten by one with less x and at least as much y (less cost or memory, more accuracy)."""
    best = float("-inf")
    out = []
    for x, y in sorted(points, key=lambda p: (p[0], -p[1])):
        if y > best:
            out.append((x, y))
            best = y
    return out


def _scatter(table: ReportTable, path: str | os.PathLike[str], *, x_of: Callable[[RunSummary], float | None],
             xlabel: str, title: str, note_of: Callable[[RunSummary], str] = lambda r: "",
             extra_note: str = "") -> Path:
    rows = table.rows

    def draw(figure: Any) -> None:
        axes = figure.add_subplot()
        axes.set_xlabel(xlabel)
        axes.set_ylabel("Task-averaged accuracy (%)")
        axes.grid(True, color="#dddddd", linewidth=0.6)
        axes.set_axisbelow(True)
        level = f"{100 * table.confidence:g}%"
        points, omitted = [], []
        for row, style in zip(rows, variant_styles([r.variant for r in rows])):
            x, acc = x_of(row), row.graded.task_averaged
            if fmt.missing(x) or fmt.missing(acc.value):
                omitted.append(row.label)
                continue
            y = float(acc.value) * 100.0  # type: ignore[arg-type]
            err = _percent_err(acc)
            name = _name(table, row)
            axes.errorbar([x], [y], yerr=[[err[0]], [err[1]]], fmt=style.marker, color=style.color, markersize=7,
                          capsize=3, elinewidth=0.8, markeredgecolor="#222222", markeredgewidth=0.5, label=name)
            axes.annotate(name + note_of(row), (x, y), xytext=(6, 4), textcoords="offset points", fontsize=8)
            points.append((float(x), y))  # type: ignore[arg-type]
        notes = [f"Graded; error bars: {level} bootstrap CI", _regime_note(table), extra_note]
        if omitted:
            notes.append("no data, not shown: " + ", ".join(omitted))
        axes.set_title("\n".join([title, *_wrap(". ".join(n for n in notes if n) + ".")]), fontsize=11)
        if not points:
            _empty(axes, "no variant has both values")
            return
        if len(points) >= 2 and not table.mixed:
            frontier = _frontier(points)
            axes.plot([p[0] for p in frontier], [p[1] for p in frontier], linestyle="--", color="#888888",
                      linewidth=1.0, zorder=1, label="Pareto frontier")
        right = max(p[0] for p in points) or 1.0
        axes.set_xlim(-0.04 * right, 1.3 * right)  # room for the point labels, and for a point at zero
        axes.set_ylim(0, 105)
        figure.legend(loc="outside lower center", ncols=min(len(points) + 1, 3), frameon=False)

    return _render(draw, path, (8.0, 6.0))


def plot_accuracy_vs_tokens(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000,
                            seed: int = 0) -> Path:
    """Task-averaged accuracy against mean observation tokens at answer time: one point per variant.

    The dashed line (single regime only) is the Pareto frontier: no other variant is both smaller and better.
    """
    table = _table(source, n_boot, seed)
    return _scatter(table, path, x_of=lambda r: r.mean_observation_tokens,
                    xlabel="Mean observation tokens at answer time (tokens)",
                    title="Task-averaged accuracy vs memory size at answer time")


def plot_cost_vs_accuracy(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000, seed: int = 0,
                          per_question: bool = True) -> Path:
    """Task-averaged accuracy against known cost (per question by default, else the run total).

    Calls without a known price add nothing to the cost; variants with such calls are annotated with their
    count.
    """
    table = _table(source, n_boot, seed)
    unpriced = sum(r.unknown_cost_calls for r in table.rows)
    return _scatter(
        table, path,
        x_of=(lambda r: r.cost_per_question) if per_question else (lambda r: r.cost_usd),
        xlabel="Known cost per question (USD)" if per_question else "Known cost of the run (USD)",
        title="Task-averaged accuracy vs cost",
        note_of=lambda r: f" (+{_calls(r.unknown_cost_calls)} unpriced)" if r.unknown_cost_calls else "",
        extra_note=f"{_calls(unpriced)} had no known price and count as $0" if unpriced else "",
    )
