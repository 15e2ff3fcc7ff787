"""The turn-by-turn cost figures of ``om-eval plot``: what they fold from the turn tables, their lines and colours,
the price profile, and the line printed when no run recorded turn tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib.colors import to_hex

from om_eval.bench.turn_costs import TurnTable, turn_costs
from om_eval.cli import main
from om_eval.cli import plot as plot_command
from om_eval.experiment.app import run_from_config
from om_eval.llm.cache_profiles import PROFILES
from om_eval.report.plots import (
    DEFAULT_PROFILE,
    FIGURE_NAMES,
    NOTES_FILE,
    TURN_FIGURE_NAMES,
    figure_bytes,
    run_turn_tables,
    turn_figures,
    write_figures,
)
from om_eval.report.plotting.panels import run_colours
from om_eval.report.plotting.turns import turn_series
from om_eval.report.tables import summary_table
from tests.report.data import make_runs_items
from tests.runs import compose_run

SKIPPED = "turn-cost figures skipped: no run here recorded turn tables"
START = 1_700_000_000.0


def conversation(kind: str, turns: int, bump: int = 0) -> TurnTable:
    """A memory's turns: ``full`` grows by 400 tokens a turn and shares the previous prompt; ``om`` stays near 2,500
    tokens with a stable 2,400-token prefix and an Observer call every 10 turns. A new session every 10 turns
    (a day later: the cache has forgotten the prefix)."""
    table = TurnTable()
    previous = 0
    for i in range(turns):
        at = START + 60 * i + 86_400 * (i // 10)
        if kind == "full":
            prompt, shared = 1500 + 400 * i + bump, previous if i % 10 else 0
        else:
            prompt, shared = 2500 + 150 * (i % 10) + bump, 2400 if i % 10 else 0
        table.append(at, prompt, shared, 1200, 80)
        if kind == "om" and i % 10 == 9:
            table.observer_prompt[-1] += 6000
            table.observer_completion[-1] += 500
        previous = prompt
    return table


@pytest.fixture(scope="module")
def synthetic() -> tuple[list[dict], list[dict]]:
    """Three runs: an OM-like one and a full-context-like one with turn tables of 20 to 34 turns, one without."""
    runs, items = make_runs_items()
    kinds = {runs[0]["run_id"]: "om", runs[1]["run_id"]: "full"}
    for n, item in enumerate(items):
        kind = kinds.get(item["run_id"])
        if kind is not None:
            item["turns"] = conversation(kind, 20 + 2 * (n % 8), bump=n).to_json()
    return runs, items


def test_turn_tables_fold_by_turn_index() -> None:
    short, long = conversation("full", 12), conversation("full", 25, bump=7)
    profile = PROFILES["gpt-5-mini"]
    line = turn_series([short, long, TurnTable()], profile, questions=4)  # an empty table adds nothing
    assert line is not None and (line.tables, line.shortest, line.longest, line.questions) == (2, 12, 25, 4)
    assert line.context[0] == (short.prompt[0] + long.prompt[0]) / 2
    assert line.context[20] == long.prompt[20]  # past the short table's end: the mean of those that reach it
    priced = [turn_costs(t, profile, cumulative=True) for t in (short, long)]
    # the share is pooled: every table's cached tokens over their prompt tokens, turn by turn
    assert sum(s * (short.prompt[i] + long.prompt[i]) for i, s in enumerate(line.cached[:12])) + sum(
        s * long.prompt[i] for i, s in enumerate(line.cached[12:], 12)) == pytest.approx(
        sum(p.cached_tokens for p in priced))
    assert line.cached[0] == 0 and line.cached[10] == 0 and line.cached[5] > 0.8  # new sessions pay in full
    # cumulative: an ended table keeps its total, and the run's lines end at its cost per question
    assert line.cost[-1] == pytest.approx(sum(p.total_usd for p in priced) / 4)
    assert line.uncached_cost[-1] == pytest.approx(sum(p.total_uncached_usd for p in priced) / 4)
    assert line.cost[15] == pytest.approx((priced[0].cumulative_usd[-1] + priced[1].cumulative_usd[15]) / 4)
    assert all(a <= b for a, b in zip(line.cost, line.cost[1:]))
    assert all(c <= u for c, u in zip(line.cost, line.uncached_cost))
    assert turn_series([TurnTable()], profile) is None


def test_one_line_per_run_with_turn_tables_in_its_colour(synthetic) -> None:
    runs, items = synthetic
    table = summary_table(runs, items, n_boot=0)
    turns = run_turn_tables(runs, items)
    assert set(turns) == {runs[0]["run_id"], runs[1]["run_id"]}  # the third run has none
    figures = turn_figures(table, turns)
    assert list(figures) == list(TURN_FIGURE_NAMES)
    colours = run_colours(table)
    expected = {row.label: colours[row.run_id] for row in table.rows if row.run_id in turns}
    for name, figure in figures.items():
        (axes,) = figure.axes  # one benchmark: one panel
        assert axes.get_title().startswith("LongMemEval: ") and len(axes.get_title()) <= 60
        solid = {line.get_label(): to_hex(line.get_color()) for line in axes.lines
                 if not line.get_label().startswith("_")}
        assert solid == expected, name
        assert "prompt=condensed" not in "".join(t.get_text() for t in figure.legends[0].get_texts())
    cost = figures["turn_cumulative_cost"].axes[0]
    dashed = [line for line in cost.lines if line.get_gid() == "uncached"]
    assert sorted(to_hex(line.get_color()) for line in dashed) == sorted(expected.values())
    assert all(line.get_linestyle() == "--" for line in dashed)
    legend = [t.get_text() for t in figures["turn_cumulative_cost"].legends[0].get_texts()]
    assert legend[-2:] == ["with the prompt cache", "without it"]
    assert "per question" in cost.get_ylabel()
    assert "mean over" in figures["turn_context_tokens"].axes[0].get_ylabel()
    assert "pooled" in figures["turn_cached_share"].axes[0].get_ylabel()
    shares = [y for line in figures["turn_cached_share"].axes[0].lines for y in line.get_ydata()]
    assert min(shares) == 0 and 0 < max(shares) <= 100


def test_write_figures_adds_the_turn_figures_and_their_notes(synthetic, tmp_path: Path) -> None:
    runs, items = synthetic
    table = summary_table(runs, items, n_boot=0)
    written = write_figures(table, tmp_path, turns=run_turn_tables(runs, items))
    assert [p.name for p in written] == [*(f"{n}.png" for n in (*FIGURE_NAMES, *TURN_FIGURE_NAMES)), NOTES_FILE]
    notes = (tmp_path / NOTES_FILE).read_text(encoding="utf-8")
    for name in TURN_FIGURE_NAMES:
        assert f"## {name}.png" in notes
    assert "- No turn table recorded, not shown: prompt=condensed." in notes
    assert "gpt-5-mini" in notes and "cost divided by 24 questions" in notes
    again = tmp_path / "again"
    write_figures(table, again, turns=run_turn_tables(runs[::-1], items[::-1]))
    for name in TURN_FIGURE_NAMES:  # the same bytes, whatever the order runs and items came in
        assert (again / f"{name}.png").read_bytes() == (tmp_path / f"{name}.png").read_bytes()
    assert write_figures(table, tmp_path / "none", turns={})[-2].name == "cost_vs_accuracy.png"


def test_the_profile_prices_and_names_the_figures(synthetic) -> None:
    runs, items = synthetic
    table = summary_table(runs, items, n_boot=0)
    turns = run_turn_tables(runs, items)
    default = turn_figures(table, turns)
    claude = turn_figures(table, turns, profile="claude-sonnet-4")
    assert "(gpt-5-mini)" in default["turn_cumulative_cost"].axes[0].get_title()
    assert "(claude-sonnet-4)" in claude["turn_cumulative_cost"].axes[0].get_title()
    ends = [figures["turn_cumulative_cost"].axes[0].lines[0].get_ydata()[-1] for figures in (default, claude)]
    assert ends[0] > 0 and ends[1] > 3 * ends[0]  # Claude's prices are several times gpt-5-mini's
    assert figure_bytes(default["turn_context_tokens"]) == figure_bytes(claude["turn_context_tokens"])  # no prices
    with pytest.raises(ValueError, match="no price profile 'gpt-9'.*gpt-4o, gpt-5-mini, gemini-2.5-flash, claude"):
        turn_figures(table, turns, profile="gpt-9")
    assert tuple(PROFILES) == plot_command.PROFILES and plot_command.DEFAULT_PROFILE == DEFAULT_PROFILE


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A smoke run with turn tables (the default)."""
    results = tmp_path_factory.mktemp("turn-plots")
    run_from_config(compose_run(results))
    return results


def test_om_eval_plot_writes_the_turn_figures(stored: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plots"
    assert main(["plot", "--results", str(stored), "--out", str(out), "--n-boot", "20"]) == 0
    printed = capsys.readouterr().out
    assert SKIPPED not in printed
    for name in TURN_FIGURE_NAMES:
        assert str(out / f"{name}.png") in printed and (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    assert "at gpt-5-mini prices" in (out / NOTES_FILE).read_text(encoding="utf-8")
    first = {name: (out / f"{name}.png").read_bytes() for name in TURN_FIGURE_NAMES}
    assert main(["plot", "--results", str(stored), "--out", str(out), "--n-boot", "20", "--profile", "gpt-4o"]) == 0
    notes = (out / NOTES_FILE).read_text(encoding="utf-8")
    assert "at gpt-4o prices" in notes and "gpt-5-mini" not in notes
    assert (out / "turn_cumulative_cost.png").read_bytes() != first["turn_cumulative_cost"]
    assert (out / "turn_context_tokens.png").read_bytes() == first["turn_context_tokens"]


def test_an_unknown_profile_is_refused_with_the_choices(stored: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["plot", "--results", str(stored), "--out", str(tmp_path), "--profile", "gpt-9"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'gpt-9'" in err and all(name in err for name in PROFILES)
    assert not list(tmp_path.iterdir())


def test_the_turn_figures_are_skipped_with_one_line_when_no_run_has_turn_tables(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    run_from_config(compose_run(results, "run.turn_costs=false"))
    out = tmp_path / "plots"
    capsys.readouterr()
    assert main(["plot", "--results", str(results), "--out", str(out), "--n-boot", "20"]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if not line.startswith(str(out))]
    assert len(said) == 1 and said[0].startswith(SKIPPED) and "run.turn_costs=false" in said[0]
    assert sorted(p.name for p in out.iterdir()) == sorted([NOTES_FILE, *(f"{n}.png" for n in FIGURE_NAMES)])
    assert "turn_" not in (out / NOTES_FILE).read_text(encoding="utf-8")
