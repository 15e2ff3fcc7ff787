"""What a figure says about its runs: one panel per benchmark, the marks that tell runs apart, and the notes.

**One benchmark per axis.** Accuracies of different benchmarks are not on one scale, so every figure draws one
panel per benchmark (:func:`panels`), each with its own accuracy axis named after the benchmark.

**A mark only where it tells runs apart** (:class:`Marks`, decided once from every run of the table, so all
figures agree). A judge caveat (:func:`~om_eval.report.tables.judge_caveat`) is written after a run's legend
entry unless every run has the same one, and its bars are hatched ``//`` (its points hollow) only when other runs
have none; a baseline reader's bars are hatched ``||`` only beside runs with a memory. A run's memory system
(:func:`~om_eval.report.tables.memory_name`) follows its label in brackets when the runs answered through more than
one (``[RAG (Mastra recall, top 10)]``; a baseline reader always reads ``[oracle reader]``). What applies to every
run goes into the notes instead (:func:`marks_notes`).

**Scoring regimes.** A panel *mixes* regimes when its runs were scored under more than one (official and
non-official, or two judge modes); only then is the regime named in the legend and the "compare only within one"
note written. Runs of two benchmarks each scored by the house judge do not mix anything.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from om_eval.bench.benchmark import Benchmark
from om_eval.memory.registry import DEFAULT_SYSTEM
from om_eval.report import _format as fmt
from om_eval.report.plotting.canvas import safe_text
from om_eval.report.plotting.colours import variant_colors
from om_eval.report.tables import CAVEAT_MARK, Accuracy, ReportTable, RunSummary

__all__ = ["BASELINE_HATCH", "CAVEAT_HATCH", "Marks", "Panel", "legend_columns", "legend_name", "marks_notes",
           "panels", "percent_err", "regime_note", "run_colours", "wrap_label"]

#: The hatch of a run with a judge caveat, drawn beside trusted runs.
CAVEAT_HATCH = "//"
#: The hatch of a baseline reader (no memory), drawn beside OM runs.
BASELINE_HATCH = "||"
#: Legend entries are wrapped at spaces to this many characters.
LABEL_WIDTH = 44
_NBSP = "\u00a0"
#: Phrases a line break must not split: a judge caveat, "(+n calls unpriced)" and a short "[memory system]".
_KEEP_TOGETHER = re.compile(re.escape(CAVEAT_MARK) + r" \S+ \S+|\(\+[^)]*\)|\[[^\]]{1,34}\]")


@dataclass(frozen=True)
class Panel:
    """The runs of one benchmark in one figure, in the table's order."""

    benchmark: Benchmark
    rows: tuple[RunSummary, ...]

    @property
    def regimes(self) -> tuple[tuple[bool, str], ...]:
        """``(official, judge mode)`` of its runs, each once, official first."""
        found = {(r.official, r.judge_mode or "unrecorded") for r in self.rows}
        return tuple(sorted(found, key=lambda g: (not g[0], g[1])))

    @property
    def mixed(self) -> bool:
        return len(self.regimes) > 1

    @property
    def mixes_official(self) -> bool:
        return len({official for official, _ in self.regimes}) > 1


@dataclass(frozen=True)
class Marks:
    """Which marks tell the runs of a table apart (each ``False`` when it would mark every run, or none)."""

    caveat_suffix: bool
    """Write ``⚠ <caveat>`` after the legend entry of runs with a judge caveat."""
    caveat_hatch: bool
    """Hatch their bars ``//`` and draw their points hollow."""
    baseline_hatch: bool
    """Hatch a baseline reader's bars ``||``."""
    memory_suffix: bool = False
    """Write ``[<memory system>]`` after the legend entry of runs that are not baseline readers."""

    @classmethod
    def of(cls, table: ReportTable) -> Marks:
        rows = table.rows
        caveats = [r.caveat for r in rows]
        readers = [r.reader is not None for r in rows]
        return cls(caveat_suffix=len(set(caveats)) > 1, caveat_hatch=any(caveats) and not all(caveats),
                   baseline_hatch=any(readers) and not all(readers), memory_suffix=table.compares_memory)


def panels(table: ReportTable) -> tuple[Panel, ...]:
    """One panel per benchmark of the table, in the table's order (one empty LongMemEval panel without runs)."""
    return tuple(Panel(b, tuple(r for r in table.rows if r.benchmark == b.name)) for b in table.benchmarks)


def run_colours(table: ReportTable) -> dict[str, str]:
    """Run id -> colour, from the labels of every run of the table: see
    :func:`~om_eval.report.plotting.colours.variant_colors`. Labels are unique within a table (a shared one gets
    the short run id); should two still coincide, the run id tells them apart, so no two runs share a colour."""
    labels = [row.label for row in table.rows]
    keys = {row.run_id: row.label if labels.count(row.label) == 1 else f"{row.label} {row.run_id}"
            for row in table.rows}
    colours = variant_colors(keys.values())
    return {run_id: colours[key] for run_id, key in keys.items()}


def _regime_name(official: bool, mode: str) -> str:
    return "official" if official else f"non-official, {mode} judge"


def legend_name(row: RunSummary, panel: Panel, marks: Marks) -> str:
    """The legend text of a run (before wrapping): its label, its regime in a mixed panel, its reader, its caveat."""
    name = row.label
    if panel.mixes_official and len(panel.regimes) == 2:
        name += "" if row.official else " (non-official)"
    elif panel.mixed:
        name += f" ({_regime_name(row.official, row.judge_mode or 'unrecorded')})"
    if row.reader is not None:
        name += f" [{row.reader.replace('_', '-')} reader]"
    elif marks.memory_suffix:
        name += f" [{row.memory}]"
    if row.caveat and marks.caveat_suffix:
        name += f" {CAVEAT_MARK} {row.caveat}"
    return safe_text(name)


def wrap_label(text: str, width: int = LABEL_WIDTH) -> str:
    """Wrapped at spaces, never inside a word or a caveat (``⚠ local judge`` stays on one line), never cut."""
    glued = _KEEP_TOGETHER.sub(lambda m: m.group(0).replace(" ", _NBSP), text)
    lines = textwrap.wrap(glued, width, break_long_words=False, break_on_hyphens=False) or [glued]
    return "\n".join(line.replace(_NBSP, " ") for line in lines)


def legend_columns(names: Sequence[str], most: int = 3) -> int:
    longest = max((len(line) for name in names for line in name.split("\n")), default=0)
    return max(1, min(len(names), most if longest <= 28 else 2 if longest <= LABEL_WIDTH else 1))


def regime_note(panel: Panel) -> str:
    """How the panel's runs were scored; a warning when they mix regimes."""
    if not panel.rows:
        return ""
    if panel.mixes_official:
        return "mixes official and non-official scoring (named in the legend): compare runs only within one regime"
    if panel.mixed:
        modes = ", ".join(mode for _, mode in panel.regimes)
        return f"mixes judge modes ({modes}; named in the legend): compare runs only within one judge mode"
    official, mode = panel.regimes[0]
    return "official scoring" if official else f"non-official scoring ({mode} judge)"


def marks_notes(table: ReportTable, marks: Marks, *, bars: bool) -> list[str]:
    """What the marks of a figure mean, and the judge caveats that apply to every run (so carry no mark)."""
    rows = table.rows
    notes = []
    kinds = sorted({r.caveat for r in rows if r.caveat})
    for kind in kinds:
        members = [r.label for r in rows if r.caveat == kind]
        who = "every run" if len(members) == len(rows) else ", ".join(members)
        drawn = ""
        if marks.caveat_hatch:
            drawn = f"; bars hatched {CAVEAT_HATCH}" if bars else "; hollow points"
        notes.append(f"{CAVEAT_MARK} {kind} ({who}): scores unreliable, drawn without error bars{drawn}")
    if table.has_baselines:
        hatch = f" (bars hatched {BASELINE_HATCH})" if marks.baseline_hatch and bars else ""
        notes.append(f"[… reader] = a baseline answering from the raw sessions, no memory{hatch}")
    if marks.memory_suffix:
        notes.append("[…] after a label = the memory system the run answered through")
    elif table.shows_memory and not table.has_baselines:
        systems = sorted({r.memory for r in rows if r.system != DEFAULT_SYSTEM})
        notes.append(f"every run answered through {', '.join(systems)}")
    return notes


def percent_err(acc: Accuracy) -> tuple[float, float]:
    """The error bar of an accuracy, below and above it, in points (none without an interval)."""
    if acc.ci is None or fmt.missing(acc.value):
        return (0.0, 0.0)
    value = float(acc.value)  # type: ignore[arg-type]  # not None: fmt.missing(acc.value) was false
    return (max(0.0, value - acc.ci[0]) * 100.0, max(0.0, acc.ci[1] - value) * 100.0)
