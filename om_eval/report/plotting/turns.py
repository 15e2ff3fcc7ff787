"""Figures of the turn-by-turn cost replay: what an agent on each run's memory would send and pay at every user turn.

A run holds one turn table per memory it built (:class:`~om_eval.bench.turn_costs.TurnTable`: one per LongMemEval
question, one per LoCoMo conversation). Its tables are folded into one line per run, by turn index
(:func:`turn_series`):

- **context tokens**: the mean prompt at turn *i* over the run's tables that reach turn *i*;
- **cached share**: of those prompts' tokens, the share a provider's cache would serve under one price profile
  (pooled: the cached tokens of all of them over all their prompt tokens, so a long prompt weighs more);
- **cumulative cost**: the run's tables summed at each turn index, with and without the cache, divided by the run's
  questions (a table whose conversation has ended counts its final total), so a line ends at the run's cost per
  question. A LoCoMo conversation's memory is shared by its questions, and its cost is spread over them.

Late turn indices are reached by fewer tables than early ones, so the ends of the first two lines are means over
fewer memories (the notes give each run's longest and shortest table).

Runs without turn tables (stored before they were recorded, or run with ``run.turn_costs=false``) have no line; a
figure is drawn only when some run has one. One panel per benchmark, as in every figure of a report, with the run
colours of the other figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from om_eval.bench.turn_costs import TurnTable, turn_costs
from om_eval.llm.cache_profiles import PROFILES, CacheProfile
from om_eval.report.plotting.canvas import new_figure, safe_text
from om_eval.report.plotting.panels import Panel, legend_columns, panels, run_colours, wrap_label
from om_eval.report.tables import ReportTable, RunSummary

__all__ = ["DEFAULT_PROFILE", "TURN_KINDS", "TurnSeries", "profile_named", "turn_figure", "turn_notes",
           "turn_series"]

#: The price profile the figures use unless told otherwise (a 90 % cache discount, no write premium).
DEFAULT_PROFILE = "gpt-5-mini"
#: The turn figures, by kind: context tokens, cached share, cumulative cost.
TURN_KINDS = ("context", "cached", "cost")
#: The colour of the legend's key to the line styles: darker than any run's colour.
_KEY = "#222222"


def profile_named(name: str | CacheProfile) -> CacheProfile:
    """The price profile called ``name`` (one of :data:`~om_eval.llm.cache_profiles.PROFILES`).

    Raises:
        ValueError: for any other name, listing the names there are.
    """
    if isinstance(name, CacheProfile):
        return name
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"no price profile {name!r}: use one of {', '.join(PROFILES)}") from None


@dataclass(frozen=True)
class TurnSeries:
    """One run's turn tables folded by turn index, under one profile (index 0 is the first user turn)."""

    tables: int
    """Turn tables with at least one turn."""
    questions: int
    """What the cumulative cost is divided by."""
    context: tuple[float, ...]
    """Mean prompt tokens at each turn, over the tables that reach it."""
    cached: tuple[float, ...]
    """Share (0 to 1) of those prompt tokens the profile's cache serves."""
    cost: tuple[float, ...]
    """Cumulative dollars with the cache, per question."""
    uncached_cost: tuple[float, ...]
    """Cumulative dollars without it, per question."""
    shortest: int
    longest: int


def turn_series(tables: Sequence[TurnTable], profile: CacheProfile, questions: int | None = None) -> TurnSeries | None:
    """``tables`` folded by turn index under ``profile``; the cumulative cost divided by ``questions`` (by default
    the number of tables). ``None`` when no table has a turn."""
    kept = [table for table in tables if len(table)]
    if not kept:
        return None
    length = max(len(table) for table in kept)
    prompts, counts, reads = [0] * length, [0] * length, [0] * length
    cost, uncached = [0.0] * length, [0.0] * length
    for table in kept:
        priced = turn_costs(table, profile, cumulative=True)
        for index, read in enumerate(priced.reads):
            prompts[index] += table.prompt[index]
            counts[index] += 1
            reads[index] += read
        for index in range(length):
            last = min(index, len(table) - 1)  # an ended conversation keeps its total
            cost[index] += priced.cumulative_usd[last]
            uncached[index] += priced.cumulative_uncached_usd[last]
    divisor = questions if questions else len(kept)
    return TurnSeries(
        tables=len(kept), questions=divisor,
        context=tuple(p / n for p, n in zip(prompts, counts)),
        cached=tuple(r / p if p else 0.0 for r, p in zip(reads, prompts)),
        cost=tuple(c / divisor for c in cost), uncached_cost=tuple(c / divisor for c in uncached),
        shortest=min(len(table) for table in kept), longest=length,
    )


@dataclass(frozen=True)
class _Kind:
    title: str
    """The end of a panel's title: ``<benchmark>: <title>``."""
    ylabel: str
    caption: str


def _kinds(profile: CacheProfile) -> dict[str, _Kind]:
    return {
        "context": _Kind(
            "prompt tokens per turn", "Prompt tokens sent at the turn\n(mean over each run's memories)",
            "The prompt an agent on each run's memory would send at every user turn while the memory was built "
            "(instructions, memory, unobserved messages, the user's message; no model was called for it): the "
            "mean over a run's memories at each turn index, one line per run."),
        "cached": _Kind(
            f"cached share per turn ({profile.name})",
            "Prompt tokens served from the cache (%)\n(all of a run's memories pooled per turn)",
            f"The share of each turn's prompt tokens a provider's prompt cache would serve under the {profile.name} "
            f"profile's rules ({_rules(profile)}), pooled over a run's memories at each turn index: their cached "
            "tokens over their prompt tokens."),
        "cost": _Kind(
            f"cumulative cost ({profile.name})", "Cumulative cost per question (USD)",
            f"What an agent on each run's memory would have paid after each user turn at {profile.name} prices "
            f"(litellm's price list, model {profile.model}): the actor's calls plus the Observer's and Reflector's, "
            "with the provider's prompt cache (solid) and without it (dashed). A run's memories are summed at each "
            "turn index (one whose conversation has ended keeps its total) and divided by the run's questions, "
            "so a line ends at the run's cost per question."),
    }


def _rules(profile: CacheProfile) -> str:
    if profile.rule == "openai":
        how = (f"automatic, a shared prefix of at least {profile.min_tokens:,} tokens read in steps of "
               f"{profile.step}")
    else:
        how = "breakpoints after the system messages and the last message, writes at the cache-write price"
    return f"{how}; a prefix unused for {profile.idle_s:g} s is forgotten"


def _legend(row: RunSummary, table: ReportTable) -> str:
    return wrap_label(safe_text(row.label + (f" [{row.memory}]" if table.compares_memory else "")))


def _shown(table: ReportTable, series: Mapping[str, TurnSeries]) -> list[Panel]:
    return [Panel(p.benchmark, tuple(r for r in p.rows if r.run_id in series)) for p in panels(table)
            if any(r.run_id in series for r in p.rows)]


def turn_figure(table: ReportTable, series: Mapping[str, TurnSeries], kind: str, profile: CacheProfile) -> Any:
    """One turn figure (``kind`` in :data:`TURN_KINDS`) of the runs of ``table`` that have a series: one panel per
    benchmark, side by side, one legend below them."""
    spec = _kinds(profile)[kind]
    shown = _shown(table, series)
    colours = run_colours(table)
    width = 8.0 if len(shown) == 1 else 6.0

    def draw(figure: Any) -> None:
        from matplotlib.lines import Line2D
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        legend: dict[str, Any] = {}
        for index, panel in enumerate(shown):
            axes = figure.add_subplot(1, len(shown), index + 1)
            axes.set_title(f"{panel.benchmark.title}: {spec.title}")
            axes.set_xlabel("User turn (index within the conversation)")
            axes.set_ylabel(spec.ylabel)
            axes.grid(True, color="#dddddd", linewidth=0.6)
            axes.set_axisbelow(True)
            for row in panel.rows:
                line = series[row.run_id]
                name = _legend(row, table)
                turns = list(range(1, line.longest + 1))
                colour = colours[row.run_id]
                if kind == "context":
                    (handle,) = axes.plot(turns, line.context, color=colour, linewidth=1.4, label=name)
                    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))
                elif kind == "cached":
                    (handle,) = axes.plot(turns, [100.0 * v for v in line.cached], color=colour, linewidth=1.4,
                                          label=name)
                else:
                    (handle,) = axes.plot(turns, line.cost, color=colour, linewidth=1.4, label=name)
                    axes.plot(turns, line.uncached_cost, color=colour, linewidth=1.4, linestyle="--",
                              label="_uncached", gid="uncached")
                legend.setdefault(name, handle)
            axes.set_xlim(left=0.5)
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            if kind == "cached":
                axes.set_ylim(-2.0, 102.0)
            else:
                axes.set_ylim(bottom=0.0)
        if kind == "cost" and legend:
            legend["with the prompt cache"] = Line2D([], [], color=_KEY, linewidth=1.4)
            legend["without it"] = Line2D([], [], color=_KEY, linewidth=1.4, linestyle="--")
        if legend:
            figure.legend(list(legend.values()), list(legend), loc="outside lower center",
                          ncols=legend_columns(list(legend), most=2), frameon=False)

    return new_figure(draw, (width * max(1, len(shown)), 5.2))


def turn_notes(table: ReportTable, series: Mapping[str, TurnSeries], kind: str,
               profile: CacheProfile) -> tuple[str, list[str]]:
    """The caption of :func:`turn_figure` and its notes, one per line."""
    notes = []
    for panel in _shown(table, series):
        for row in panel.rows:
            line = series[row.run_id]
            span = (f"{line.longest} turns" if line.shortest == line.longest
                    else f"{line.shortest} to {line.longest} turns")
            what = f"{line.tables} {'memory' if line.tables == 1 else 'memories'} of {span}"
            if kind == "cost":
                what += f", cost divided by {line.questions} {'question' if line.questions == 1 else 'questions'}"
                if math.isclose(line.cost[-1], line.uncached_cost[-1], rel_tol=1e-9, abs_tol=0.0):
                    what += "; the cache saves nothing, so its dashed line lies under the solid one"
            notes.append(f"{panel.benchmark.title}: {row.label}: {what}")
    if kind != "cost":
        notes.append("a turn index past a memory's last turn is averaged over the memories that reach it")
    missing = [row.label for row in table.rows if row.run_id not in series]
    if missing:
        notes.append("no turn table recorded, not shown: " + ", ".join(missing))
    return _kinds(profile)[kind].caption, notes
