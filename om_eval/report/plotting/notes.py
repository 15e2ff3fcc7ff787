"""The notes file written beside the figures: a caption for each figure, and what its marks and caveats mean.

Figures carry a short title (what they show), axis labels and a legend; everything a reader needs to trust or
discount them (scoring regimes, judge caveats, intervals, runs left out, unpriced calls) is written here, once, as
Markdown a paper's captions can be taken from. Its text follows from the table and the options alone, so it is as
deterministic as the figures.
"""

from __future__ import annotations

from collections.abc import Sequence

from om_eval.report.tables import ReportTable, caveat_notes

__all__ = ["HEADING", "NOTES_FILE", "render_notes"]

NOTES_FILE = "NOTES.md"
#: The first line of a notes file om-eval wrote (and so may replace or remove).
HEADING = "# Figures: captions and notes"


def _code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


def _run_line(table: ReportTable, number: int, run_id: str) -> str:
    row = table.run(run_id)
    benchmark = next(b.title for b in table.benchmarks if b.name == row.benchmark)
    judge = f"{row.judge_mode or 'unrecorded'} judge" + (" (official scoring)" if row.official else "")
    return (f"{number}. {_code(row.label)}: run {_code(row.short_id)}, {benchmark}, {judge}, judge model "
            f"{_code(str(row.judge_model or '?'))}, data {_code(row.dataset)}, {row.n_items} questions")


def render_notes(table: ReportTable, figures: Sequence[tuple[str, str, Sequence[str]]]) -> str:
    """The notes file: the runs (numbered as in the scatter legends), then ``(file name, caption, notes)`` of
    each figure."""
    lines = [HEADING, "",
             "Written by `om-eval plot` beside the figures of this folder. The figures carry a short title, axis "
             "labels and a legend; their captions and caveats are here.", "", "## Runs", ""]
    lines += [_run_line(table, n, row.run_id) for n, row in enumerate(table.rows, 1)] or ["No runs."]
    extra = [*table.notes, *caveat_notes(table.rows)]
    if table.rows:
        extra.append(f"Intervals: {table.n_boot} bootstrap resamples, seed {table.seed}.")
    lines += ["", *(f"- {note}" for note in extra)] if extra else []
    for name, caption, notes in figures:
        lines += ["", f"## {name}", "", caption]
        if notes:
            lines += ["", *(f"- {note[0].upper()}{note[1:]}." if not note.endswith(".") else f"- {note}"
                            for note in notes)]
    return "\n".join(lines) + "\n"
