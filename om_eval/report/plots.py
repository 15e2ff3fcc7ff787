"""Figures of a summary table (matplotlib): accuracy per category, and accuracy against memory size, the actor's
context and cost; as ``Figure`` objects, as PNG, PDF or SVG files, or as the folder ``om-eval plot`` writes. Runs
with turn tables add three figures of the turn-by-turn cost replay (prompt tokens, cached share and cumulative cost
per user turn under one price profile: :mod:`~om_eval.report.plotting.turns`).

**Fit for a paper.** A figure carries a short title (what it shows), axis labels and a legend. Everything else a
reader needs (scoring regimes, judge caveats, intervals, runs left out) goes into a notes file beside the figures
(:data:`~om_eval.report.plotting.notes.NOTES_FILE`, see :func:`write_figures`), one caption per figure.

**One benchmark per axis**: runs of several benchmarks get one panel each, with its own accuracy axis
(:mod:`~om_eval.report.plotting.panels`). **One colour per run**, the same in every figure of a table and never
shared (:mod:`~om_eval.report.plotting.colours`). **Marks only where they tell runs apart**: a judge caveat or a
baseline reader is hatched (or drawn hollow) only beside runs without one.

**Deterministic artefacts.** The same table and options give the same bytes in every format
(:mod:`~om_eval.report.plotting.canvas`: fixed style and font, no dates or versions in the metadata).

Missing values (a category with no judged question, a run without observation tokens or cost) are shown as
``n/a`` or left out with a note; they never become zeros.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from om_eval.bench.turn_costs import TurnTable
from om_eval.common.files import atomic_write
from om_eval.llm.cache_profiles import CacheProfile
from om_eval.report.plotting.bars import categories_figure as _categories
from om_eval.report.plotting.bars import categories_notes
from om_eval.report.plotting.canvas import DPI, FORMATS, figure_bytes, format_of
from om_eval.report.plotting.colours import PALETTE, variant_color, variant_colors
from om_eval.report.plotting.notes import HEADING, NOTES_FILE, render_notes
from om_eval.report.plotting.scatter import TOKENS, Axis, context_axis, cost_axis, scatter_figure, scatter_notes
from om_eval.report.plotting.turns import (
    DEFAULT_PROFILE,
    TURN_KINDS,
    TurnSeries,
    profile_named,
    turn_figure,
    turn_notes,
    turn_series,
)
from om_eval.report.tables import ReportTable, summary_table

__all__ = ["DEFAULT_PROFILE", "DPI", "FIGURE_NAMES", "FORMATS", "NOTES_FILE", "PALETTE", "TURN_FIGURE_NAMES",
           "accuracy_vs_context_figure", "accuracy_vs_tokens_figure", "categories_figure", "cost_vs_accuracy_figure",
           "figure_bytes", "figure_png", "plot_accuracy_vs_context", "plot_accuracy_vs_tokens", "plot_categories",
           "plot_cost_vs_accuracy", "run_turn_tables", "turn_figures", "variant_color", "variant_colors",
           "write_figures"]

Source = ReportTable | tuple[Sequence[Mapping[str, Any]], Iterable[Mapping[str, Any]]]
#: The figures :func:`write_figures` draws, by file name (without the suffix).
FIGURE_NAMES = ("accuracy_by_category", "accuracy_vs_observation_tokens", "accuracy_vs_actor_context",
                "cost_vs_accuracy")
#: The turn-by-turn cost figures :func:`write_figures` adds when some run has turn tables, by file name.
TURN_FIGURE_NAMES = ("turn_context_tokens", "turn_cached_share", "turn_cumulative_cost")
#: Turn tables per run id (:func:`run_turn_tables`).
TurnTables = Mapping[str, Sequence[TurnTable]]


def _table(source: Source, n_boot: int, seed: int) -> ReportTable:
    if isinstance(source, ReportTable):
        return source
    runs, items = source
    return summary_table(runs, items, n_boot=n_boot, seed=seed)


def _save(figure: Any, path: str | os.PathLike[str], dpi: int) -> Path:
    return atomic_write(path, figure_bytes(figure, format_of(path), dpi))


def figure_png(figure: Any, dpi: int = DPI) -> bytes:
    """The figure as PNG bytes, the same for the same figure (no software or date in the metadata)."""
    return figure_bytes(figure, "png", dpi)


def categories_figure(source: Source, *, n_boot: int = 1000, seed: int = 0, title: str | None = None) -> Any:
    """The figure of :func:`plot_categories`, drawn but not saved (a matplotlib ``Figure``, for inspection)."""
    return _categories(_table(source, n_boot, seed), title=title)


def plot_categories(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000, seed: int = 0,
                    title: str | None = None, dpi: int = DPI) -> Path:
    """Grouped bars: graded accuracy per category (plus abstention, overall, task-averaged) per run, with CIs; one
    panel per benchmark.

    Args:
        source: a :class:`~om_eval.report.tables.ReportTable`, or ``(runs, items)`` to build one with
            ``n_boot`` and ``seed``.
        path: the file to write, ``.png``, ``.pdf`` or ``.svg`` (parents are created; it is replaced atomically).
        n_boot: bootstrap resamples, when ``source`` is ``(runs, items)``.
        seed: the bootstrap's seed, likewise.
        title: instead of ``<benchmark>: accuracy by <category>``.
        dpi: the resolution of a PNG.

    Returns:
        The path written.
    """
    return _save(categories_figure(source, n_boot=n_boot, seed=seed, title=title), path, dpi)


def accuracy_vs_tokens_figure(source: Source, *, n_boot: int = 1000, seed: int = 0) -> Any:
    """The figure of :func:`plot_accuracy_vs_tokens`, drawn but not saved."""
    return scatter_figure(_table(source, n_boot, seed), TOKENS)


def plot_accuracy_vs_tokens(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000, seed: int = 0,
                            dpi: int = DPI) -> Path:
    """Task-averaged accuracy against mean observation tokens at answer time: one numbered point per run, one panel
    per benchmark, and the Pareto frontier (dashed: no other run is both smaller and better). Arguments as for
    :func:`plot_categories`."""
    return _save(accuracy_vs_tokens_figure(source, n_boot=n_boot, seed=seed), path, dpi)


def accuracy_vs_context_figure(source: Source, *, n_boot: int = 1000, seed: int = 0) -> Any:
    """The figure of :func:`plot_accuracy_vs_context`, drawn but not saved."""
    table = _table(source, n_boot, seed)
    return scatter_figure(table, context_axis(table))


def plot_accuracy_vs_context(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000, seed: int = 0,
                             dpi: int = DPI) -> Path:
    """Task-averaged accuracy against the mean context tokens per question: the memory each run showed its actor
    (``items.context_tokens``), or, when a run stored before it was recorded is in the table, the actor's whole
    prompt (memory, raw tail and instructions) for every run (:func:`~om_eval.report.plotting.scatter.context_axis`);
    with the Pareto frontier as for :func:`plot_accuracy_vs_tokens`."""
    return _save(accuracy_vs_context_figure(source, n_boot=n_boot, seed=seed), path, dpi)


def cost_vs_accuracy_figure(source: Source, *, n_boot: int = 1000, seed: int = 0, per_question: bool = True) -> Any:
    """The figure of :func:`plot_cost_vs_accuracy`, drawn but not saved."""
    table = _table(source, n_boot, seed)
    return scatter_figure(table, cost_axis(table, per_question))


def plot_cost_vs_accuracy(source: Source, path: str | os.PathLike[str], *, n_boot: int = 1000, seed: int = 0,
                          per_question: bool = True, dpi: int = DPI) -> Path:
    """Task-averaged accuracy against known cost (per question by default, else the run total), with the Pareto
    frontier as for :func:`plot_accuracy_vs_tokens`.

    Calls without a known price add nothing to the cost; runs with such calls have their count in the legend. When
    every run of a benchmark cost $0 its axis spans $0 to $0.01.
    """
    return _save(cost_vs_accuracy_figure(source, n_boot=n_boot, seed=seed, per_question=per_question), path, dpi)


def run_turn_tables(runs: Sequence[Mapping[str, Any]],
                    items: Iterable[Mapping[str, Any]]) -> dict[str, list[TurnTable]]:
    """The turn tables each run's items hold (``items.turns``), by run id, in question id order (so that sums over
    them do not depend on the order items came in); runs without any are left out."""
    from om_eval.report.turns import run_tables

    ids = {str(run["run_id"]) for run in runs}
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for item in items:
        if str(item["run_id"]) in ids and item.get("turns"):
            grouped.setdefault(str(item["run_id"]), []).append(item)
    return {run_id: run_tables(sorted(grouped[run_id], key=lambda item: str(item["question_id"])))
            for run_id in sorted(grouped)}


def _series(table: ReportTable, turns: TurnTables, profile: CacheProfile) -> dict[str, TurnSeries]:
    out = {}
    for row in table.rows:
        line = turn_series(turns.get(row.run_id, ()), profile, questions=row.n_items)
        if line is not None:
            out[row.run_id] = line
    return out


def turn_figures(table: ReportTable, turns: TurnTables, *,
                 profile: str | CacheProfile = DEFAULT_PROFILE) -> dict[str, Any]:
    """The turn-by-turn cost figures of the runs of ``table`` (:data:`TURN_FIGURE_NAMES` -> ``Figure``), drawn but
    not saved: prompt tokens per turn, the share of them a prompt cache serves and the cumulative cost with and
    without it, one line per run that has turn tables (see :mod:`om_eval.report.plotting.turns`).

    Args:
        table: the runs (their order, labels and colours).
        turns: turn tables per run id, as :func:`run_turn_tables` gives them.
        profile: the price profile (a name in :data:`~om_eval.llm.cache_profiles.PROFILES`, or the profile).

    Returns:
        The figures by file name; empty when no run of ``table`` has a turn.

    Raises:
        ValueError: ``profile`` names no profile (the message lists them).
    """
    chosen = profile_named(profile)
    series = _series(table, turns, chosen)
    if not series:
        return {}
    return {name: turn_figure(table, series, kind, chosen) for name, kind in zip(TURN_FIGURE_NAMES, TURN_KINDS)}


def write_figures(table: ReportTable, out: str | os.PathLike[str], *, fmt: str = "png", dpi: int = DPI,
                  notes: bool = True, turns: TurnTables | None = None,
                  profile: str | CacheProfile = DEFAULT_PROFILE) -> list[Path]:
    """The four figures of ``om-eval plot`` (:data:`FIGURE_NAMES`), the turn figures when some run has turn tables
    (:data:`TURN_FIGURE_NAMES`), and their notes file, in the folder ``out``.

    Args:
        table: the runs to draw.
        out: the folder (created if missing).
        fmt: ``png``, ``pdf`` or ``svg``.
        dpi: the resolution of PNGs (and of any raster part of a PDF or SVG).
        notes: write :data:`NOTES_FILE` (captions, regimes, judge caveats); without it, a notes file an earlier
            call wrote there is removed, so none is left describing other figures.
        turns: turn tables per run id (:func:`run_turn_tables`); no turn figure without them.
        profile: the price profile of the turn figures (see :func:`turn_figures`).

    Returns:
        The paths written, the notes file last.

    Raises:
        ValueError: an unknown format or price profile.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: use one of {', '.join(FORMATS)}")
    chosen = profile_named(profile)
    folder = Path(out)
    axes: dict[str, Axis] = {"accuracy_vs_observation_tokens": TOKENS, "accuracy_vs_actor_context": context_axis(table),
                             "cost_vs_accuracy": cost_axis(table)}
    written, captions = [], []
    for name in FIGURE_NAMES:
        axis = axes.get(name)
        figure = _categories(table) if axis is None else scatter_figure(table, axis)
        written.append(atomic_write(folder / f"{name}.{fmt}", figure_bytes(figure, fmt, dpi)))
        caption, lines = categories_notes(table) if axis is None else scatter_notes(table, axis)
        captions.append((f"{name}.{fmt}", caption, lines))
    series = _series(table, turns or {}, chosen)
    if series:
        for name, kind in zip(TURN_FIGURE_NAMES, TURN_KINDS):
            figure = turn_figure(table, series, kind, chosen)
            written.append(atomic_write(folder / f"{name}.{fmt}", figure_bytes(figure, fmt, dpi)))
            captions.append((f"{name}.{fmt}", *turn_notes(table, series, kind, chosen)))
    path = folder / NOTES_FILE
    if notes:
        written.append(atomic_write(path, render_notes(table, captions)))
    elif path.is_file() and path.read_text(encoding="utf-8").startswith(HEADING + "\n"):
        path.unlink()
    return written
