"""Summary table: hand-computed numbers, official/house split, judge caveats, compact and wide renderings."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from om_eval.report import _format as fmt
from om_eval.report.table_text import to_csv, to_markdown, to_rich
from om_eval.report.tables import judge_caveat, metric_rows, summary_table
from tests.golden import assert_golden
from tests.report.data import (
    KU,
    LOCAL_JUDGE,
    MS,
    SSA,
    SSP,
    SSU,
    TR,
    make_items,
    make_run,
    make_runs_items,
    run_id,
)

CURRENT, LEGACY, CONDENSED = "prompt=current", "prompt=legacy", "prompt=condensed"


@pytest.fixture(scope="module")
def table():
    runs, items = make_runs_items()
    return summary_table(runs, items, n_boot=500, seed=0)


def test_numbers_of_one_run_match_hand_computation(table):
    # prompt=current: SSU 1101, SSP 1E00, SSA 1111, MS 1001, TR 0110, KU 1110; abstention = 4th of SSU/MS/TR/KU.
    row = table.run(run_id(CURRENT))
    assert (row.n_items, row.n_ok, row.n_error, row.n_not_run, row.unjudged) == (24, 23, 1, 0, 1)
    expected = {SSU: (3 / 4, 4), SSP: (1 / 3, 3), SSA: (1.0, 4), MS: (2 / 4, 4), TR: (2 / 4, 4), KU: (3 / 4, 4)}
    for qtype, (accuracy, n) in expected.items():
        assert row.graded.per_type[qtype].value == pytest.approx(accuracy)
        assert row.graded.per_type[qtype].n == n
    assert row.graded.overall.value == pytest.approx(15 / 23)
    assert row.graded.task_averaged.value == pytest.approx(23 / 36)  # (3/4 + 1/3 + 1 + 1/2 + 1/2 + 3/4) / 6
    assert (row.graded.abstention.value, row.graded.abstention.n) == (pytest.approx(2 / 4), 4)
    # strict: the judge error on ssp2 counts wrong
    assert row.strict.per_type[SSP].value == pytest.approx(1 / 4)
    assert row.strict.overall.value == pytest.approx(15 / 24)
    assert row.strict.task_averaged.value == pytest.approx(15 / 24)
    # cost: 23 known questions at $0.01, one unpriced call; memory: tokens 1000 + 10 j, ratios 10 + j % 4
    assert row.cost_usd == pytest.approx(0.23)
    assert row.unknown_cost_calls == 1
    assert row.mean_observation_tokens == pytest.approx(1115.0)
    assert row.mean_compression_ratio == pytest.approx(11.5)
    assert row.cost_per_question == pytest.approx(0.23 / 24)
    for acc in (row.graded.overall, row.graded.task_averaged, row.strict.overall):
        assert acc.ci is not None and acc.ci[0] <= acc.value <= acc.ci[1]


def test_all_errors_type_is_missing_not_zero(table):
    row = table.run(run_id(CONDENSED))  # SSA all judge errors, one multi-session question not run
    assert row.graded.per_type[SSA].value is None and row.graded.per_type[SSA].n == 0
    assert row.graded.per_type[SSA].ci is None
    assert row.strict.per_type[SSA].value == 0.0
    assert (row.n_error, row.n_not_run) == (4, 1)
    assert row.graded.task_averaged.value == pytest.approx((3 / 4 + 2 / 4 + 1 / 3 + 2 / 4 + 2 / 4) / 5)


def test_official_and_house_runs_are_split_into_sections(table):
    assert table.mixed
    assert [s.key for s in table.sections] == ["official", "non-official:house"]
    assert [r.variant for r in table.sections[0].rows] == [LEGACY, CURRENT]  # ranked by task-averaged
    assert [r.variant for r in table.sections[1].rows] == [CONDENSED]
    assert table.sections[0].official and not table.sections[1].official
    text = to_markdown(table)
    warning = next(line for line in text.splitlines() if "WARNING" in line)
    assert text.index(warning) < text.index("## Official scoring")  # above the tables
    official_part, house_part = text.split("## Non-official scoring (house judge)")
    assert "## Official scoring" in official_part and CONDENSED not in official_part.split("## Official")[1]
    assert CONDENSED in house_part and CURRENT not in house_part and LEGACY not in house_part


def test_a_single_regime_has_no_warning():
    runs, items = make_runs_items((CURRENT, LEGACY))
    table = summary_table(runs, items, n_boot=50)
    assert not table.mixed
    text = to_markdown(table)
    assert "WARNING" not in text and text.count("\n## ") == 1 and "| strict task-avg |" in text


def test_official_templates_with_a_deviation_are_not_official():
    run = {**make_run(CURRENT), "official": False}
    table = summary_table([run, make_run(LEGACY)], make_items(CURRENT) + make_items(LEGACY), n_boot=20)
    assert [s.key for s in table.sections] == ["official", "non-official:official"]
    assert "deviation" in table.sections[1].title


def test_order_and_bootstrap_do_not_depend_on_input_order():
    runs, items = make_runs_items()
    first = to_csv(summary_table(runs, items, n_boot=200, seed=3))
    again = to_csv(summary_table(runs[::-1], items[::-1], n_boot=200, seed=3))
    other_seed = to_csv(summary_table(runs, items, n_boot=200, seed=4))
    assert first == again
    assert first != other_seed


def test_strict_columns_only_when_some_answer_is_unjudged():
    runs, items = make_runs_items((LEGACY,))
    assert "strict overall" not in to_markdown(summary_table(runs, items, n_boot=20), wide=True)
    assert "strict task-avg" not in to_markdown(summary_table(runs, items, n_boot=20))
    assert "strict_overall_acc" in to_csv(summary_table(runs, items, n_boot=20))  # CSV schema is fixed


def test_markdown_golden(table):
    assert_golden("report_summary.md", to_markdown(table))
    assert_golden("report_summary_wide.md", to_markdown(table, wide=True))


def test_csv_golden_and_file_output(table, tmp_path: Path):
    text = to_csv(table)
    assert_golden("report_summary.csv", text)
    path = tmp_path / "out" / "summary.csv"
    assert to_csv(table, path) == text
    assert path.read_text(encoding="utf-8") == text
    buffer = io.StringIO()
    to_csv(table, buffer)
    records = list(csv.DictReader(io.StringIO(buffer.getvalue())))
    assert [r["section"] for r in records] == ["official", "official", "non-official:house"]
    assert records[1]["run_id"] == run_id(CURRENT) and records[1]["task_averaged_acc"] == f"{23 / 36:.6f}"
    assert records[2]["single-session-assistant_acc"] == ""  # missing, not zero
    # the local-judge run: flagged and unranked, but its intervals are kept for analysis
    assert [r["judge_caveat"] for r in records] == ["", "", "local judge"]
    assert [r["rank"] for r in records] == ["1", "2", ""]
    assert records[2]["overall_ci_low"] != ""


def render(renderable, width: int = 1000) -> str:
    console = Console(record=True, width=width, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def table_width(text: str) -> int:
    """Width of the widest line of a rich table (box-drawing lines), not of the wrapped prose around it."""
    return max(len(line.rstrip()) for line in text.splitlines() if any(c in line for c in "│┃┏└"))


@pytest.mark.parametrize("wide", [False, True])
def test_rich_rendering_carries_the_warning_and_both_sections(table, wide):
    text = render(to_rich(table, wide=wide), 260)
    assert "WARNING" in text
    assert "Official scoring" in text and "Non-official scoring (house judge)" in text
    assert "⚠ local judge" in text


def hosted_sweep(long_label: bool = False) -> tuple[list[dict], list[dict]]:
    """The three variants in one section, all judged by a hosted model (so every cell has an interval)."""
    runs, items = make_runs_items()
    for run in runs:
        run.update(judge_mode="house", official=False, judge_model="openai/gpt-4o-mini")
        if long_label and run["label"] == CURRENT:
            run["label"] = "prompt=current om.observation.message_tokens=200"
    return runs, items


@pytest.mark.parametrize("long_label", [False, True])
def test_compact_report_of_three_runs_fits_a_terminal(long_label):
    table = summary_table(*hosted_sweep(long_label), n_boot=100)
    assert len(table.sections) == 1 and len(table.rows) == 3
    compact = render(to_rich(table))
    assert table_width(compact) <= 110, compact  # it was 328 (one row per run, 22 columns)
    assert table_width(render(to_rich(table, wide=True))) > 250
    markdown = to_markdown(table)
    assert max(len(line) for line in markdown.splitlines() if line.startswith("|")) <= 110
    # every run is a column; every type, overall and task-averaged a row, with accuracy, interval and n
    header = next(line for line in markdown.splitlines() if line.startswith("|  |"))
    assert all(label in header for label in ("#1 prompt=legacy", "#3 prompt=condensed"))
    rows = {line.split(" | ")[0].strip("| "): line for line in markdown.splitlines() if line.startswith("| ")}
    for name in (*fmt.TYPE_SHORT.values(), "overall", "task-avg", "abstention", "judged/n"):
        assert name in rows, name
    assert "100.0 [100–100] n=4" in rows["SS-user"]
    assert rows["overall"].count(" n=") == 3 and rows["overall"].count("–") == 3


def test_wide_report_keeps_every_column(table):
    wide, compact = to_markdown(table, wide=True), to_markdown(table)
    for header in ("| strict overall |", "| cost $ |", "| unpriced calls |", "| obs tokens |", "| compression |",
                   "| unjudged |"):
        assert header in wide, header
        assert header not in compact, header
    assert "| strict task-avg |" in wide and "| strict task-avg |" in compact  # a row of the compact table
    assert "| 0.4800 |" in wide and "| 2,115 |" in wide  # legacy's cost and mean observation tokens
    assert "om-eval report --wide" in compact
    assert set(csv.DictReader(io.StringIO(to_csv(table))).fieldnames) >= {  # type: ignore[arg-type]  # fieldnames is None only for an empty CSV
        "strict_overall_acc", "cost_usd", "mean_observation_tokens", "mean_compression_ratio", "judge_caveat"}


@pytest.mark.parametrize(("judge_model", "expected"), [
    (LOCAL_JUDGE, "local judge"),
    ("ollama/llama3", "local judge"),
    ("scripted/om-eval", "test judge"),
    (None, "judge unknown"),
    ("", "judge unknown"),
    ("gpt-4o-2024-08-06", None),
    ("openai/gpt-4o-2024-08-06", None),
    ("google/gemini-2.5-flash", None),
])
def test_judge_caveat(judge_model, expected):
    assert judge_caveat({"judge_model": judge_model}) == expected


def test_local_judge_runs_are_marked_unranked_and_without_intervals(table):
    row = table.run(run_id(CONDENSED))
    assert row.caveat == "local judge" and row.judge_model == LOCAL_JUDGE
    assert row.graded.overall.ci is not None  # computed, kept in the CSV, just not shown
    for text in (to_markdown(table), to_markdown(table, wide=True)):
        house = text.split("## Non-official scoring (house judge)")[1]
        table_lines = [line for line in house.splitlines() if line.startswith("|")]
        assert "⚠ local judge" in table_lines[0] or "⚠ local judge" in table_lines[2]  # heading or row
        assert not any("[" in line for line in table_lines[2:])  # no interval for this run
        footnote = next(line for line in house.splitlines() if line.startswith("> ⚠ local judge"))
        assert LOCAL_JUDGE in footnote and CONDENSED in footnote
    official = to_markdown(table).split("## Non-official")[0].split("## Official")[1]  # the legend names ⚠
    assert "⚠" not in official and "[0–100]" in official  # trusted runs keep their intervals


def test_a_caveat_run_is_listed_after_the_trusted_ones_whatever_its_score():
    runs, items = hosted_sweep()
    runs[1]["judge_model"] = "scripted/om-eval"  # prompt=legacy, the best task-averaged accuracy
    table = summary_table(runs, items, n_boot=20)
    assert [r.variant for r in table.rows] == [CURRENT, CONDENSED, LEGACY]
    text = to_markdown(table)
    assert "#1 prompt=current" in text and "#2 prompt=condensed" in text and "#3" not in text
    assert "⚠ test judge" in text and "> ⚠ test judge (prompt=legacy)" in text


def test_compact_cells():
    assert fmt.compact_cell(0.72, (0.61, 0.834), 25) == "72.0 [61–83] n=25"
    assert fmt.compact_cell(0.72, None, 25) == "72.0 n=25"
    assert fmt.compact_cell(None, None, 0) == "– n=0"
    assert fmt.compact_cell(0.5, (0.25, 0.75)) == "50.0 [25–75]"


def test_report_cli_has_a_wide_switch():
    import argparse

    from om_eval.cli.report import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    assert parser.parse_args(["report", "--wide"]).wide is True
    assert parser.parse_args(["report"]).wide is False


def test_empty_inputs_and_stray_items():
    _runs, items = make_runs_items((CURRENT,))
    empty = summary_table([make_run(LEGACY)], [], n_boot=10)
    assert empty.rows[0].graded.overall.value is None and empty.rows[0].n_items == 0
    assert "–" in to_markdown(empty)
    stray = summary_table([make_run(LEGACY)], items, n_boot=10)
    assert stray.notes and "24 items of runs not in this table were ignored" in stray.notes[0]
    assert to_csv(summary_table([], [])).startswith("section,rank,")


def test_invalid_inputs_are_refused():
    run = make_run(CURRENT)
    with pytest.raises(ValueError, match="twice"):
        summary_table([run, run], [])
    with pytest.raises(ValueError, match="no run_id"):
        summary_table([run], [{"question_id": "q"}])
    bad = {**make_items(CURRENT)[0], "is_abstention": True}
    with pytest.raises(ValueError, match="contradicts"):
        metric_rows([bad])


def test_shared_labels_are_disambiguated_by_run_id():
    runs = [make_run(CURRENT), {**make_run(LEGACY), "label": CURRENT}]
    table = summary_table(runs, [], n_boot=0)
    labels = sorted(r.label for r in table.rows)
    assert labels[0] != labels[1] and all(label.startswith(CURRENT + " (") for label in labels)


def test_an_unfinished_run_is_marked_as_such() -> None:
    from tests.report.data import make_items, make_run

    run = {**make_run("prompt=current"), "n_questions": 30}
    items = make_items("prompt=current")
    table = summary_table([run], items, n_boot=50)
    (row,) = table.rows
    assert not row.complete and row.n_expected == 30
    assert "of 30 (unfinished)" in to_markdown(table)
    assert "of 30 (unfinished)" in to_markdown(table, wide=True)


def test_runs_on_different_data_are_named_and_flagged():
    runs, items = hosted_sweep()
    assert not any("different data" in note for note in summary_table(runs, items, n_boot=10).notes)
    runs[0].update(dataset_name="longmemeval_s_cleaned", dataset_sha256="d6f21ea9abcdef", dataset_subset="first=5")
    table = summary_table(runs, items, n_boot=10)
    (note,) = [note for note in table.notes if "different data" in note]
    assert "longmemeval_s_cleaned[first=5] @d6f21ea9" in note
    assert "longmemeval_s_cleaned[first=5] @d6f21ea9" in render(to_rich(table))


def cells_line(text: str) -> str:
    return next(line for line in text.splitlines() if "Cells:" in line)


def test_the_legend_says_what_the_cells_hold(table):
    # mixed: trusted runs show intervals, the local-judge run none, and one run has unjudged answers
    for wide, interval in ((False, "[95% CI, whole points] n=judged questions"), (True, "[95% CI] (n judged)")):
        legend = cells_line(to_markdown(table, wide=wide))
        assert interval in legend and "no interval for runs marked ⚠" in legend and "+k unjudged" in legend
    # every run has a judge caveat: no cell holds an interval, so the legend names none
    runs, items = make_runs_items((CURRENT, LEGACY))
    for run in runs:
        run["judge_model"] = "scripted/om-eval"
    caveated = summary_table(runs, items, n_boot=20)
    for wide in (False, True):
        text = to_markdown(caveated, wide=wide)
        assert "CI" not in cells_line(text) and "no interval: every run here is marked ⚠" in cells_line(text)
        assert "[" not in "".join(line for line in text.splitlines() if line.startswith("| "))
        assert "Intervals (in the CSV; not printed for ⚠ runs)" in text
    # hosted judges only, nothing unjudged: intervals everywhere, no caveat or unjudged wording
    hosted = summary_table(*hosted_sweep(), n_boot=20)
    legend = cells_line(to_markdown(hosted))
    assert "[95% CI, whole points]" in legend and "⚠" not in legend


def table_words(renderable) -> set[str]:
    """Every word of every header and cell of the tables of a ``to_rich`` renderable."""
    from om_eval.report._fit import FittedTable

    return {word for part in renderable.renderables if isinstance(part, FittedTable)
            for column in (*part.keys, *part.data) for text in (column.header, *column.cells)
            for word in text.split()}


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("long_label", [False, True])
def test_piped_output_fits_80_columns_without_splitting_a_word(wide, long_label, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    runs, items = hosted_sweep(long_label)
    runs[2]["judge_model"] = "scripted/om-eval"  # a caveat header, and prompt=current keeps an unjudged answer
    renderable = to_rich(summary_table(runs, items, n_boot=50), wide=wide)
    buffer = io.StringIO()
    console = Console(file=buffer)  # not a terminal, as when piped: rich's default width
    assert console.width == 80
    console.print(renderable)
    text = buffer.getvalue()
    lines = [line for line in text.splitlines() if any(c in line for c in "│┃")]
    assert lines and max(len(line) for line in text.splitlines()) <= 80, text
    words = table_words(renderable)
    printed = {word for line in lines for word in re.split(r"[│┃\s]+", line) if word}
    assert printed <= words, sorted(printed - words)  # a piece of a split word is no word of the table
    for label in ("prompt=legacy", "prompt=condensed", "SS-user", "Multi-session", "task-avg"):
        assert label in printed, label


def test_a_wide_console_gets_one_table_per_section(table):
    text = render(to_rich(table), 200)
    assert "(continued)" not in text
    assert "(continued)" in render(to_rich(table, wide=True), 80)
