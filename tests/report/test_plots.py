"""Plots: PNG files, byte-identical for the same data, different for different data, stable colour per variant."""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib
import pytest
from PIL import Image

from om_eval.report.plots import (
    PALETTE,
    plot_accuracy_vs_tokens,
    plot_categories,
    plot_cost_vs_accuracy,
    variant_color,
    variant_styles,
)
from om_eval.report.tables import summary_table
from tests.report.data import make_run, make_runs_items

PLOTS = [plot_categories, plot_accuracy_vs_tokens, plot_cost_vs_accuracy]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def table():
    runs, items = make_runs_items()
    return summary_table(runs, items, n_boot=200, seed=0)


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


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


def test_colour_is_a_stable_function_of_the_label():
    assert variant_color("prompt=current") == variant_color("prompt=current")
    assert variant_color("prompt=current") in PALETTE
    assert len({variant_color(f"v{i}") for i in range(50)}) > 5
    # within one plot, colliding colours are told apart by hatch and marker; the colour itself never changes
    colliding = next(f"v{i}" for i in range(1, 500) if variant_color(f"v{i}") == variant_color("v0"))
    styles = variant_styles(["v0", colliding, "prompt=legacy"])
    assert styles[0].color == styles[1].color == variant_color("v0")
    assert (styles[0].hatch, styles[0].marker) != (styles[1].hatch, styles[1].marker)
    assert styles[2].color == variant_color("prompt=legacy")


def test_a_variant_keeps_its_colour_across_plots_and_tables(tmp_path: Path):
    runs, items = make_runs_items()
    for subset in (runs, runs[:1], runs[::-1]):
        ids = {r["run_id"] for r in subset}
        table = summary_table(subset, [i for i in items if i["run_id"] in ids], n_boot=20)
        for plot in PLOTS:
            colours = colours_in(plot(table, tmp_path / f"{plot.__name__}.png"))
            for run in subset:
                assert rgb(variant_color(run["label"])) in colours, (plot.__name__, run["label"])


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
