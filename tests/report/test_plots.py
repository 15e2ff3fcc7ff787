"""Plots: deterministic files, distinct colours, visible zeros, judge caveats, readable labels, a sane cost axis."""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib
import pytest
from PIL import Image

from om_eval.report.plots import (
    PALETTE,
    accuracy_vs_context_figure,
    accuracy_vs_tokens_figure,
    categories_figure,
    cost_vs_accuracy_figure,
    plot_accuracy_vs_context,
    plot_accuracy_vs_tokens,
    plot_categories,
    plot_cost_vs_accuracy,
    variant_color,
    variant_colors,
)
from om_eval.report.plotting.bars import categories_notes
from om_eval.report.plotting.scatter import TOKENS, cost_axis, scatter_notes
from om_eval.report.tables import summary_table
from tests.report.data import make_run, make_runs_items

PLOTS = [plot_categories, plot_accuracy_vs_tokens, plot_accuracy_vs_context, plot_cost_vs_accuracy]
FIGURES = [categories_figure, accuracy_vs_tokens_figure, accuracy_vs_context_figure, cost_vs_accuracy_figure]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: Two realistic sweep labels whose sha256 colours collide (both #e377c2 under the plain hash).
TOKENS_100 = "prompt=current om.observation.message_tokens=100"
TOKENS_400 = "prompt=current om.observation.message_tokens=400"


@pytest.fixture(scope="module")
def table():
    runs, items = make_runs_items()
    return summary_table(runs, items, n_boot=200, seed=0)


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]  # three ints, one per colour channel


def colours_in(path: Path) -> set[tuple[int, int, int]]:
    with Image.open(path) as image:
        return {c for _, c in image.convert("RGB").getcolors(maxcolors=1 << 20)}


@pytest.mark.parametrize("plot", PLOTS, ids=lambda f: f.__name__)
def test_png_is_byte_identical_across_calls(plot, table, tmp_path: Path):
    first = plot(table, tmp_path / "a.png")
    second = plot(table, tmp_path / "sub" / "b.png")
    data = first.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert data == second.read_bytes()
    assert b"Matplotlib" not in data and b"Software" not in data  # no version stamp


@pytest.mark.parametrize("plot", PLOTS, ids=lambda f: f.__name__)
def test_png_differs_when_the_data_differ(plot, table, tmp_path: Path):
    runs, items = make_runs_items()
    for item in items:
        if item["question_id"] == "tr1" and item["label"] is False:
            item["label"] = True
        item["observation_tokens"] = (item["observation_tokens"] or 0) * 2
        item["cost_usd"] = 0.05
    changed = summary_table(runs, items, n_boot=200, seed=0)
    assert plot(table, tmp_path / "a.png").read_bytes() != plot(changed, tmp_path / "b.png").read_bytes()


@pytest.mark.parametrize("plot", PLOTS, ids=lambda f: f.__name__)
def test_runs_and_items_are_accepted_directly(plot, table, tmp_path: Path):
    runs, items = make_runs_items()
    direct = plot((runs, items), tmp_path / "direct.png", n_boot=200, seed=0)
    assert direct.read_bytes() == plot(table, tmp_path / "table.png").read_bytes()


def hosted(runs: list[dict]) -> list[dict]:
    return [{**run, "judge_model": "openai/gpt-4o-mini"} for run in runs]


def relabel(runs: list[dict], items: list[dict], labels: list[str]) -> tuple[list[dict], list[dict]]:
    """The runs under new labels (and ids), with their items."""
    mapping = {run["run_id"]: f"{label}-id" for run, label in zip(runs, labels)}
    new_runs = [{**run, "run_id": mapping[run["run_id"]], "label": label} for run, label in zip(runs, labels)]
    return new_runs, [{**item, "run_id": mapping[item["run_id"]]} for item in items if item["run_id"] in mapping]


def test_colliding_labels_get_distinct_colours():
    assert variant_color(TOKENS_100) == variant_color(TOKENS_400)  # the plain hash collides
    colours = variant_colors([TOKENS_100, TOKENS_400, "prompt=legacy"])
    assert len(set(colours.values())) == 3 and set(colours.values()) <= set(PALETTE)
    assert colours[TOKENS_100] == variant_color(TOKENS_100)  # first in sorted order keeps its preferred colour
    # the assignment depends on the set of labels only, never on their order
    assert variant_colors([TOKENS_400, "prompt=legacy", TOKENS_100]) == colours
    # never two labels with one colour: past ten, the palette grows (deterministically)
    for n in (2, 5, 10, 13, 40):
        many = variant_colors(f"v{i}" for i in range(n))
        assert len(set(many.values())) == n
        assert variant_colors(f"v{i}" for i in reversed(range(n))) == many
    assert set(variant_colors(f"v{i}" for i in range(13)).values()) >= set(PALETTE)


def test_colliding_variants_are_drawn_in_distinct_colours(tmp_path: Path):
    runs, items = make_runs_items(("prompt=current", "prompt=legacy"))
    runs, items = relabel(hosted(runs), items, [TOKENS_100, TOKENS_400])
    table = summary_table(runs, items, n_boot=20)
    expected = variant_colors([TOKENS_100, TOKENS_400])
    assert expected[TOKENS_100] != expected[TOKENS_400]
    for plot in PLOTS:
        colours = colours_in(plot(table, tmp_path / f"{plot.__name__}.png"))
        assert {rgb(c) for c in expected.values()} <= colours, plot.__name__


def test_colours_agree_across_plots_and_input_orders(tmp_path: Path):
    runs, items = make_runs_items()
    runs = hosted(runs)
    for subset in (runs, runs[:1], runs[::-1]):
        ids = {r["run_id"] for r in subset}
        table = summary_table(subset, [i for i in items if i["run_id"] in ids], n_boot=20)
        palette = variant_colors(r["label"] for r in subset)
        for plot in PLOTS:
            colours = colours_in(plot(table, tmp_path / f"{plot.__name__}.png"))
            for run in subset:
                assert rgb(palette[run["label"]]) in colours, (plot.__name__, run["label"])


def bars_of(figure) -> list:
    from matplotlib.patches import Rectangle

    return [p for p in figure.axes[0].patches if isinstance(p, Rectangle)]


def test_a_zero_accuracy_is_visible_and_unlike_a_missing_one():
    runs, items = make_runs_items(("prompt=condensed",))  # single-session-assistant: all judge errors -> n/a
    for item in items:
        if item["question_type"] == "temporal-reasoning":  # every temporal answer wrong -> 0 %
            item["label"], item["judge_status"] = False, "ok"
    table = summary_table(hosted(runs), items, n_boot=20)
    assert table.rows[0].graded.per_type["temporal-reasoning"].value == 0.0
    figure = categories_figure(table)
    axes = figure.axes[0]
    temporal = 4  # the fifth group on the x axis
    stubs = [p for p in bars_of(figure) if p.get_gid() == "zero-stub"]
    assert len(stubs) == 1 and stubs[0].get_height() > 0.5 and stubs[0].get_visible()
    assert abs(stubs[0].get_x() + stubs[0].get_width() / 2 - temporal) < 0.5
    labels = {t.get_text(): t for t in axes.texts}
    assert "0" in labels and abs(labels["0"].get_position()[0] - temporal) < 0.5
    assert "n/a" in labels and labels["n/a"].get_style() == "italic"
    assert abs(labels["n/a"].get_position()[0] - 2) < 0.5  # single-session-assistant: text, no bar
    assert not [p for p in bars_of(figure) if abs(p.get_x() + p.get_width() / 2 - 2) < 0.4 and p.get_height() > 0]


def legend_text(figure) -> str:
    return "\n".join(t.get_text() for legend in figure.legends for t in legend.get_texts())


@pytest.mark.parametrize("figure_of", FIGURES, ids=lambda f: f.__name__)
def test_a_local_judge_is_marked_in_the_legend_and_explained_in_the_notes(figure_of, table):
    figure = figure_of(table)
    legend = legend_text(figure)
    assert "prompt=condensed" in legend and "⚠ local judge" in legend
    assert legend.count("⚠") == 1  # only the local-judge run
    title = figure.axes[0].get_title()
    assert "\n" not in title and "⚠" not in title and "prompt=" not in title  # what it shows, no caveats
    _, notes = categories_notes(table) if figure_of is categories_figure else scatter_notes(
        table, cost_axis(table))
    assert any("⚠ local judge (prompt=condensed)" in note for note in notes), notes


def test_local_judge_points_and_bars_carry_no_error_bars(table):
    figure = cost_vs_accuracy_figure(table)
    lines = {c.get_label(): c for c in figure.axes[0].containers}
    local = next(c for label, c in lines.items() if "local judge" in label)
    trusted = next(c for label, c in lines.items() if label.startswith("1. prompt=legacy"))
    assert not local.has_yerr and trusted.has_yerr
    assert local.lines[0].get_markerfacecolor() == "white"  # hollow


def test_cost_axis_for_runs_that_all_cost_nothing():
    runs, items = make_runs_items()
    for item in items:
        item["cost_usd"], item["unknown_cost_calls"] = 0.0, 0
    table = summary_table(runs, items, n_boot=20)
    axes = cost_vs_accuracy_figure(table).axes[0]
    low, high = axes.get_xlim()
    assert low <= 0.0 and high == pytest.approx(0.01)  # matplotlib's own choice was about 1.2
    _, notes = scatter_notes(table, cost_axis(table))
    assert "LongMemEval: all runs cost $0 (local/scripted models)" in notes
    tokens = accuracy_vs_tokens_figure(table).axes[0]
    assert tokens.get_xlim()[1] > 1000 and not any("cost $0" in note for note in scatter_notes(table, TOKENS)[1])


def tag_boxes(figure) -> list:
    figure.draw_without_rendering()
    renderer = figure.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in figure.axes[0].texts if t.get_gid() == "point-tag"]


def test_scatter_tags_never_overprint():
    runs, items = make_runs_items()
    runs = hosted(runs)
    same = summary_table(runs, [{**i, "observation_tokens": 700, "cost_usd": 0.01} for i in items], n_boot=20)
    for figure_of in (accuracy_vs_tokens_figure, cost_vs_accuracy_figure):
        figure = figure_of(same)
        texts = [t.get_text() for t in figure.axes[0].texts if t.get_gid() == "point-tag"]
        assert not any("prompt=" in t.get_text() for t in figure.axes[0].texts)  # names live in the legend
        assert sorted(texts) == sorted(set(texts)) and sorted(",".join(texts).split(",")) == ["1", "2", "3"]
    # close but not equal points: separate tags whose boxes do not overlap
    close = [{**i, "observation_tokens": 1000 + 3 * (i["run_id"] == runs[0]["run_id"])} for i in items]
    boxes = tag_boxes(accuracy_vs_tokens_figure(summary_table(runs, close, n_boot=20)))
    assert boxes and all(not a.overlaps(b) for k, a in enumerate(boxes) for b in boxes[k + 1:])


def test_long_labels_are_wrapped_not_cut():
    runs, items = make_runs_items(("prompt=current", "prompt=legacy"))
    runs, items = relabel(hosted(runs), items, [TOKENS_100, "prompt=legacy"])
    table = summary_table(runs, items, n_boot=20)
    for figure_of in FIGURES:
        legend = legend_text(figure_of(table))
        assert TOKENS_100 in legend.replace("\n", " ")  # every character kept
        assert max(len(line) for line in legend.splitlines()) < len(TOKENS_100)


def test_missing_values_do_not_break_plots(tmp_path: Path):
    runs, items = make_runs_items(("prompt=condensed",))  # single-session-assistant: all judge errors
    empty_run = make_run("prompt=legacy")  # no items at all: every accuracy None
    table = summary_table([*runs, empty_run], items, n_boot=20)
    assert table.run(empty_run["run_id"]).graded.task_averaged.value is None
    for plot in PLOTS:
        assert plot(table, tmp_path / f"{plot.__name__}.png").read_bytes().startswith(PNG_MAGIC)
    nothing = summary_table([], [], n_boot=0)
    for plot in PLOTS:
        assert plot(nothing, tmp_path / f"empty_{plot.__name__}.png").stat().st_size > 0


def test_no_global_matplotlib_state_leaks(table, tmp_path: Path):
    # rcParams.copy() reads the raw values; dict(rcParams) or get_backend() would import pyplot themselves
    had_pyplot = "matplotlib.pyplot" in sys.modules
    before = matplotlib.rcParams.copy()
    with matplotlib.rc_context({"font.size": 23, "axes.facecolor": "black"}):
        custom = plot_categories(table, tmp_path / "custom.png").read_bytes()
    assert custom == plot_categories(table, tmp_path / "plain.png").read_bytes()  # user rc cannot change it
    assert matplotlib.rcParams.copy() == before  # backend included: nothing switched it
    if not had_pyplot:
        assert "matplotlib.pyplot" not in sys.modules


def test_accuracy_against_actor_context_places_each_run_at_its_mean_prompt_tokens(table):
    axes = accuracy_vs_context_figure(table).axes[0]
    assert "actor context" in axes.get_xlabel().lower()
    drawn = {round(line.get_xdata()[0], 3) for line in axes.lines if len(line.get_xdata()) == 1}  # points, caps
    expected = {round(r.mean_actor_context_tokens, 3) for r in table.rows
                if r.mean_actor_context_tokens is not None and r.graded.task_averaged.value is not None}
    assert drawn == expected and len(expected) >= 2
    # the official runs trade context for accuracy: their frontier is drawn, apart from the house-judged run
    (line,) = [line for line in axes.lines if line.get_gid() == "pareto-frontier"]
    official = sorted((r.mean_actor_context_tokens, 100 * r.graded.task_averaged.value) for r in table.rows
                      if r.official)
    assert [*line.get_xdata(), *line.get_ydata()] == pytest.approx([x for x, _ in official] + [y for _, y in official])
    assert line.get_label() == "Pareto frontier (official)"
