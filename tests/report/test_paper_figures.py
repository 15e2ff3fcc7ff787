"""Figures fit for a paper: short titles, one benchmark per axis, one colour per run everywhere, caveats in a notes
file (or none), PNG, PDF and SVG with the same bytes for the same store, no glyph warnings.

The results folder holds scripted runs of LongMemEval (two variants) and LoCoMo, all graded by the house judge,
as a researcher's first hour makes them.
"""

from __future__ import annotations

import io
import logging
import shutil
import warnings
from pathlib import Path

import pytest
from matplotlib.colors import to_hex
from PIL import Image

from om_eval.cli import main
from om_eval.cli import plot as plot_command
from om_eval.experiment.app import run_from_config
from om_eval.report.plots import (
    DPI,
    FIGURE_NAMES,
    FORMATS,
    NOTES_FILE,
    TURN_FIGURE_NAMES,
    accuracy_vs_context_figure,
    accuracy_vs_tokens_figure,
    categories_figure,
    cost_vs_accuracy_figure,
    figure_bytes,
    run_turn_tables,
    turn_figures,
    write_figures,
)
from om_eval.report.plotting.bars import categories_notes
from om_eval.report.plotting.scatter import CONTEXT, TOKENS, cost_axis, frontier, scatter_notes
from om_eval.report.tables import summary_table
from om_eval.store import Catalog
from tests.locomo_shaped import write_locomo_shaped
from tests.report.data import make_runs_items
from tests.runs import compose_run

FIGURES = (categories_figure, accuracy_vs_tokens_figure, accuracy_vs_context_figure, cost_vs_accuracy_figure)
LABELS = ("lme-current", "lme-legacy", "locomo-current")
BENCHMARKS = ("LongMemEval", "LoCoMo")


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("paper")
    for label, prompt in zip(LABELS[:2], ("current", "legacy")):
        run_from_config(compose_run(folder, f"prompt={prompt}", "dataset.subset.first=3", f"run.label={label}"))
    conversations = write_locomo_shaped(folder, conversations=1, sessions=2)
    run_from_config(compose_run(folder, "dataset=locomo", f"dataset.path={conversations}", f"run.label={LABELS[2]}"))
    return folder


@pytest.fixture(scope="module")
def stored(results: Path) -> tuple[list[dict], list[dict]]:
    with Catalog(results) as catalog:
        runs = catalog.runs()
        return runs, catalog.items([r["run_id"] for r in runs])


@pytest.fixture(scope="module")
def table(stored):
    return summary_table(*stored, n_boot=50)


@pytest.fixture(scope="module")
def plotted(results: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``om-eval plot`` with its defaults: PNGs and the notes file."""
    out = tmp_path_factory.mktemp("plotted") / "plots"
    assert main(["plot", "--results", str(results), "--out", str(out), "--n-boot", "50"]) == 0
    return out


def run_of(entry: str) -> str:
    """The run label a legend entry (``2. lme-legacy (…)``, wrapped or not) starts with."""
    text = entry.replace("\n", " ").split(". ", 1)[-1] if entry[:1].isdigit() else entry.replace("\n", " ")
    return next(label for label in LABELS if text.startswith(label))


def drawn_colours(figure) -> dict[tuple[int, str], str]:
    """(axes index, run label) -> colour of its bars or point, read from the figure."""
    out = {}
    for index, axes in enumerate(figure.axes):
        for container in axes.containers:
            label = container.get_label()
            if label.startswith("_"):
                continue
            if hasattr(container, "patches"):  # bars
                colour = to_hex(container.patches[0].get_facecolor())
            else:  # errorbar: the point is its first line
                colour = to_hex(container.lines[0].get_color())
            out[(index, run_of(label))] = colour
    return out


def test_titles_are_short_and_each_benchmark_has_its_own_axes(table) -> None:
    for figure_of in FIGURES:
        figure = figure_of(table)
        assert len(figure.axes) == 2, figure_of.__name__
        for axes, benchmark in zip(figure.axes, BENCHMARKS):
            title = axes.get_title()
            assert "\n" not in title and len(title) <= 60 and title.startswith(benchmark), title
            assert not any(word in title for word in ("⚠", "judge", "official", "lme-", "locomo-")), title
            assert axes.get_ylabel().startswith(f"{benchmark} ") and "accuracy" in axes.get_ylabel()
            others = [b for b in BENCHMARKS if b != benchmark]
            assert not any(other in axes.get_ylabel() for other in others)
        runs = {key[1]: key[0] for key in drawn_colours(figure)}
        assert runs == {"lme-current": 0, "lme-legacy": 0, "locomo-current": 1}, figure_of.__name__


def test_each_run_has_one_colour_in_every_figure_and_no_two_share_one(table, stored) -> None:
    colours: dict[str, set[str]] = {}
    for figure_of in FIGURES:
        for (_, label), colour in drawn_colours(figure_of(table)).items():
            colours.setdefault(label, set()).add(colour)
    assert all(len(found) == 1 for found in colours.values()), colours
    assert len({next(iter(found)) for found in colours.values()}) == len(LABELS)
    runs, items = stored
    reversed_table = summary_table(runs[::-1], items[::-1], n_boot=50)
    for figure_of in FIGURES:
        again = {label: colour for (_, label), colour in drawn_colours(figure_of(reversed_table)).items()}
        assert again == {label: next(iter(found)) for label, found in colours.items()}


def test_turn_figures_have_a_panel_per_benchmark_and_the_runs_colours(table, stored) -> None:
    colours = {label: colour for (_, label), colour in drawn_colours(categories_figure(table)).items()}
    for name, figure in turn_figures(table, run_turn_tables(*stored)).items():
        assert [axes.get_title().split(":")[0] for axes in figure.axes] == list(BENCHMARKS), name
        drawn = {(index, line.get_label()): to_hex(line.get_color()) for index, axes in enumerate(figure.axes)
                 for line in axes.lines if not line.get_label().startswith("_")}
        assert drawn == {
            (0, "lme-current"): colours["lme-current"], (0, "lme-legacy"): colours["lme-legacy"],
            (1, "locomo-current"): colours["locomo-current"]}, name


def test_more_runs_than_base_colours_never_share_one() -> None:
    runs, items = make_runs_items(("prompt=current",))
    many_runs = [{**runs[0], "run_id": f"{i:02d}" + runs[0]["run_id"][2:], "label": f"variant {i}",
                  "judge_model": "openai/gpt-4o-mini"} for i in range(13)]
    many_items = [{**item, "run_id": run["run_id"]} for run in many_runs for item in items]
    figure = categories_figure(summary_table(many_runs, many_items, n_boot=0))
    colours = [to_hex(c.patches[0].get_facecolor()) for c in figure.axes[0].containers
               if not c.get_label().startswith("_")]
    assert len(colours) == 13 and len(set(colours)) == 13
    assert not any(p.get_hatch() for p in figure.axes[0].patches)  # nothing to tell apart: no hatching


def test_notes_say_what_the_figures_no_longer_do(plotted: Path, table) -> None:
    names = (*FIGURE_NAMES, *TURN_FIGURE_NAMES)  # every run recorded turn tables
    assert sorted(p.name for p in plotted.iterdir()) == sorted([NOTES_FILE, *(f"{n}.png" for n in names)])
    notes = (plotted / NOTES_FILE).read_text(encoding="utf-8")
    for name in names:
        assert f"## {name}.png" in notes
    assert all(f"`{label}`" in notes for label in LABELS)
    # all three runs are house-judged: nothing is mixed, in either benchmark
    assert "mixes" not in notes.lower()
    assert "LongMemEval: non-official scoring (house judge)" in notes and "LoCoMo: non-official scoring" in notes
    # every run has the same caveat: said once in the notes, not as a mark on every bar or legend entry
    assert "⚠ test judge (every run)" in notes
    figure = categories_figure(table)
    assert not any(p.get_hatch() for axes in figure.axes for p in axes.patches)
    assert "⚠" not in "".join(t.get_text() for t in figure.legends[0].get_texts())


def test_the_pareto_frontier_is_drawn_per_benchmark_where_runs_trade_off(table) -> None:
    for figure_of in FIGURES[1:]:
        _, notes = scatter_notes(table, {accuracy_vs_tokens_figure: TOKENS, accuracy_vs_context_figure: CONTEXT}.get(
            figure_of) or cost_axis(table))
        for axes, benchmark in zip(figure_of(table).axes, BENCHMARKS):
            points = [(c.lines[0].get_xdata()[0], c.lines[0].get_ydata()[0]) for c in axes.containers]
            expected = frontier(points)  # one group per panel: house-judged, one caveat
            lines = [line for line in axes.lines if line.get_gid() == "pareto-frontier"]
            if len(expected) >= 2:
                assert len(lines) == 1 and list(zip(*lines[0].get_data())) == expected
            else:
                assert not lines
            if len(points) >= 2 and len(expected) == 1:  # a run at least as good as the others on both axes
                assert any(n.startswith(f"{benchmark}: no Pareto line") for n in notes), notes


def test_the_mixing_note_appears_only_where_runs_mix_regimes() -> None:
    runs, items = make_runs_items()  # LongMemEval: two official runs and a house-judged one
    _, notes = categories_notes(summary_table(runs, items, n_boot=0))
    assert any(n.startswith("LongMemEval: mixes official and non-official") for n in notes)
    house = [r for r in runs if not r["official"]]
    ids = {r["run_id"] for r in house}
    _, notes = categories_notes(summary_table(house, [i for i in items if i["run_id"] in ids], n_boot=0))
    assert not any("mixes" in n for n in notes)


@pytest.mark.parametrize("fmt, magic", [("pdf", b"%PDF-"), ("svg", b"<?xml")])
def test_pdf_and_svg_are_written_and_deterministic(fmt: str, magic: bytes, results: Path, table,
                                                    tmp_path: Path) -> None:
    assert main(["plot", "--results", str(results), "--out", str(tmp_path), "--format", fmt, "--n-boot", "50"]) == 0
    files = sorted(tmp_path.glob(f"*.{fmt}"))
    assert [p.stem for p in files] == sorted((*FIGURE_NAMES, *TURN_FIGURE_NAMES))
    for path in files:
        data = path.read_bytes()
        assert data.startswith(magic), path.name
        assert b"CreationDate" not in data and b"<dc:date>" not in data and b"Matplotlib v" not in data
    assert f"## accuracy_by_category.{fmt}" in (tmp_path / NOTES_FILE).read_text(encoding="utf-8")
    figure = cost_vs_accuracy_figure(table)
    assert figure_bytes(figure, fmt) == figure_bytes(cost_vs_accuracy_figure(table), fmt)  # no date, no random ids


def test_no_notes_writes_none_and_removes_an_earlier_one(plotted: Path, results: Path, tmp_path: Path) -> None:
    out = tmp_path / "plots"
    shutil.copytree(plotted, out)
    assert main(["plot", "--results", str(results), "--out", str(out), "--n-boot", "50", "--no-notes"]) == 0
    assert not (out / NOTES_FILE).exists() and len(list(out.glob("*.png"))) == len(FIGURE_NAMES + TURN_FIGURE_NAMES)
    mine = tmp_path / "mine" / NOTES_FILE
    mine.parent.mkdir()
    mine.write_text("# my own notes\n", encoding="utf-8")  # not written by om-eval: kept
    write_figures(summary_table([], []), mine.parent, notes=False)
    assert mine.read_text(encoding="utf-8") == "# my own notes\n"


def test_dpi_sets_the_png_resolution(table) -> None:
    figure = categories_figure(table)
    with Image.open(io.BytesIO(figure_bytes(figure))) as low, \
            Image.open(io.BytesIO(figure_bytes(figure, dpi=200))) as high:
        assert high.size == (2 * low.size[0], 2 * low.size[1])
    with pytest.raises(SystemExit):
        main(["plot", "--dpi", "0"])
    assert plot_command.FORMATS == FORMATS and plot_command.DEFAULT_DPI == DPI


def test_no_matplotlib_warning_for_emoji_or_dollars_in_labels(tmp_path: Path, caplog) -> None:
    runs, items = make_runs_items()
    runs[0] = {**runs[0], "label": "prompt=current 🔴 costs $1 and $2 ❤️"}
    table = summary_table(runs, items, n_boot=0)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, logger="matplotlib"):
        warnings.simplefilter("always")
        write_figures(table, tmp_path)
        for fmt in ("pdf", "svg"):
            figure_bytes(categories_figure(table), fmt)
            figure_bytes(cost_vs_accuracy_figure(table), fmt)
    assert [str(w.message) for w in caught] == []
    assert [r.getMessage() for r in caplog.records if r.name.startswith("matplotlib")] == []
    legend = "".join(t.get_text() for t in categories_figure(table).legends[0].get_texts())
    assert "[large red circle]" in legend and "\\$1" in legend  # spelled out; dollars drawn as dollars
    assert "🔴" in (tmp_path / NOTES_FILE).read_text(encoding="utf-8")  # the notes keep the label as it is
