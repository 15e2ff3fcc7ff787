"""The report's cost sections for a terminal: the tables of :mod:`om_eval.report.turns` fitted to the console's
width (:mod:`om_eval.report._fit`), with short column names and a legend under each table.

Why: printed as markdown, a row of ten cells wrapped mid-row at 80 columns and the headers named nothing a reader
could look up. The markdown (``--markdown``) keeps the long headers; the numbers are the same cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from om_eval.report._fit import Column, FittedTable
from om_eval.report.turns import (
    REFERENCE_PROFILE,
    PromptCacheRow,
    TurnRow,
    short_note,
    unrecorded_note,
)

#: Short column names of the per-turn table and what each means (the legend printed under it).
TURN_LEGEND = (
    ("turns", "user turns replayed"),
    ("prompt", "mean prompt tokens per turn"),
    ("cached", "share of prompt tokens the profile's provider cache would serve"),
    ("$/1k", "dollars per 1,000 turns with that cache (the actor's calls plus the Observer's and Reflector's)"),
    ("no cache", "the same without a cache"),
    ("ratio", "no cache / $/1k"),
    ("actor", "that ratio for the actor's calls alone (the Observer and Reflector are priced without a cache)"),
)


def _legend(pairs: Sequence[tuple[str, str]]) -> str:
    return "; ".join(f"{name} = {meaning}" for name, meaning in pairs) + "."


def turn_renderables(rows: Sequence[TurnRow], missing: Sequence[str] = ()) -> list[Any]:
    """The per-turn section for a console: title, the fitted table and its legend and notes; nothing without
    rows."""
    from rich.text import Text

    if not rows:
        return []
    cells = [row.cells() for row in rows]

    def column(header: str, key: str, right: bool = True) -> Column:
        return Column(header, tuple(c[key] for c in cells), right=right)

    # A run's name heads its group of profile rows only.
    names = tuple("" if index and rows[index - 1].run_id == row.run_id else row.label for index, row in enumerate(rows))
    table = FittedTable(
        "Cost per 1,000 turns, with and without a provider's prompt cache",
        (Column("run", names), column("profile", "profile", right=False)),
        (column("turns", "turns"), column("prompt", "mean_prompt"), column("cached", "cached"),
         column("$/1k", "cached_usd"), column("no cache", "uncached_usd"), column("ratio", "ratio"),
         column("actor", "actor_ratio")),
        ends=tuple(index + 1 < len(rows) and rows[index + 1].run_id != row.run_id for index, row in enumerate(rows)),
    )
    memories = "; ".join(dict.fromkeys(f"{row.label} = {row.memory}" for row in rows if row.label != row.memory))
    notes = [
        "What an agent on each memory would send at every user turn while the memory was built (no model was called "
        "for this), priced under each profile's prices and caching rules; a cache forgets a prefix after 5 idle "
        "minutes, so each session's first turn pays in full.",
        _legend(TURN_LEGEND),
        *([f"Memories: {memories}."] if memories else []),
        *(note for note in (short_note(rows), unrecorded_note(missing)) if note),
    ]
    return [table, *(Text(note) for note in notes)]


def prompt_cache_renderables(rows: Sequence[PromptCacheRow]) -> list[Any]:
    """The provider-cache section for a console; nothing when no call reported a cache."""
    from rich.text import Text

    if not rows:
        return []
    reference = REFERENCE_PROFILE.name
    table = FittedTable(
        "Provider prompt caches in these runs",
        (Column("run", tuple(r.label for r in rows)), Column("stage", tuple(r.stage for r in rows))),
        (Column("calls", tuple(f"{r.calls:,}" for r in rows), right=True),
         Column("prompt", tuple(f"{r.prompt_tokens:,}" for r in rows), right=True),
         Column("cached", tuple(f"{r.cached_share:.1%}" for r in rows), right=True),
         Column("saved", tuple("unknown" if r.saved_usd is None else f"${r.saved_usd:,.4f}" for r in rows),
                right=True),
         Column("saved at ref.", tuple(f"${r.saved_at(REFERENCE_PROFILE):,.4f}" for r in rows), right=True)),
    )
    legend = _legend((
        ("calls", "calls whose provider said how many prompt tokens it served from its own cache (a call answered "
                  "from om-eval's response cache carries the figures of the call that paid for it)"),
        ("prompt", "their prompt tokens"), ("cached", "the share served from the provider's cache"),
        ("saved", "each call priced without that share, less its price with it (litellm's list)"),
        ("saved at ref.", f"the same cached tokens at {reference}'s rates, for free and unpriced models"),
    ))
    return [table, Text(legend)]
