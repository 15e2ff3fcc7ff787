"""The report's cost-over-a-conversation sections: what an agent on each memory would pay per turn with and without
a provider's prompt cache (from ``items.turns``), and what the run's own calls read from providers' caches (from
``llm_calls.cached_prompt_tokens``).

**Per turn** (:func:`turn_rows`): each run's turn tables (:mod:`om_eval.bench.turn_costs`) priced under every
:data:`~om_eval.llm.cache_profiles.PROFILES` profile: the mean prompt per turn, the share of prompt tokens read from
the cache, dollars per 1,000 turns with the cache and without it (the actor's calls plus the Observer's and
Reflector's), and their ratio. The claim it tests: a memory whose prompt prefix is stable from turn to turn is
cheaper once providers cache that prefix; the ratio says by how much, under each provider's discount.

**Provider caches in the run** (:func:`prompt_cache_rows`): per run and stage, the run's own calls: how many
prompt tokens providers said they served from their caches, and the dollars that saved (each call priced with and
without its cached share from litellm's list; unknown prices stay unknown).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from om_eval.bench.turn_costs import TurnCosts, TurnTable, turn_costs
from om_eval.llm.cache_profiles import PROFILES, CacheProfile, profile_rates
from om_eval.memory.registry import system_trait
from om_eval.report.systems import memory_name_of, memory_system_of

#: The columns of the cost-per-turn table, in report and view alike.
TURN_HEAD = ("run", "memory", "profile", "turns", "mean prompt", "cached", "$/1k turns cached",
             "$/1k turns uncached", "ratio", "actor's ratio")

#: The mark of a row most of whose turns are under the profile's caching minimum (defined under the table).
SHORT_MARK = "†"


def _times(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.2f}x"


@dataclass(frozen=True)
class TurnRow:
    """One run under one profile."""

    run_id: str
    label: str
    memory: str
    profile: str
    questions: int
    turns: int
    prompt_tokens: int
    cached_tokens: int
    usd: float
    uncached_usd: float
    memory_usd: float
    """Of ``usd`` (and of ``uncached_usd``), the Observer's and Reflector's calls: priced without a cache."""
    short_turns: int = 0
    """Turns whose prompt is under the profile's caching minimum (nothing of them is cached)."""
    min_tokens: int = 1024

    @property
    def mostly_short(self) -> bool:
        """Half the turns or more are too short to cache: a ratio near 1.00x says so, not that caching fails."""
        return self.turns > 0 and 2 * self.short_turns >= self.turns

    @property
    def mean_prompt(self) -> float:
        return self.prompt_tokens / self.turns if self.turns else 0.0

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def per_thousand(self) -> float:
        return 1000 * self.usd / self.turns if self.turns else 0.0

    @property
    def uncached_per_thousand(self) -> float:
        return 1000 * self.uncached_usd / self.turns if self.turns else 0.0

    @property
    def ratio(self) -> float | None:
        """Dollars without the cache per dollar with it, memory calls included."""
        return self.uncached_usd / self.usd if self.usd else None

    @property
    def actor_ratio(self) -> float | None:
        """The same for the actor's calls alone: what caching does to the prompt the memory shapes."""
        actor = self.usd - self.memory_usd
        return (self.uncached_usd - self.memory_usd) / actor if actor > 0 else None

    def cells(self) -> dict[str, str]:
        """The row's cells as report and view write them, in :data:`TURN_HEAD`'s order."""
        return {"label": self.label, "memory": self.memory, "profile": self.profile, "turns": f"{self.turns:,}",
                "mean_prompt": f"{self.mean_prompt:,.0f}",
                "cached": f"{self.cached_share:.1%}" + (f" {SHORT_MARK}" if self.mostly_short else ""),
                "cached_usd": f"{self.per_thousand:,.3f}", "uncached_usd": f"{self.uncached_per_thousand:,.3f}",
                "ratio": _times(self.ratio), "actor_ratio": _times(self.actor_ratio)}


def run_tables(items: Iterable[Mapping[str, Any]]) -> list[TurnTable]:
    """The turn tables a run's items hold: one per memory (questions sharing a haystack share one table, whichever
    of their items holds it)."""
    tables, seen = [], set()
    for item in items:
        if not item.get("turns"):
            continue
        owner = item.get("haystack_id") or item["question_id"]
        if owner in seen:
            continue
        seen.add(owner)
        tables.append(TurnTable.from_json(item["turns"]))
    return tables


def turn_rows(runs: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]],
              profiles: Iterable[CacheProfile] = PROFILES.values()) -> list[TurnRow]:
    """Every run with turn tables, priced under each profile (runs in the given order, then profiles)."""
    rows = []
    chosen = list(profiles)
    for run in runs:
        tables = run_tables(i for i in items if i["run_id"] == run["run_id"])
        if not tables:
            continue
        for profile in chosen:
            costs: list[TurnCosts] = [turn_costs(table, profile) for table in tables]
            rows.append(TurnRow(
                run_id=str(run["run_id"]), label=str(run.get("label") or run["run_id"][:8]),
                memory=memory_name_of(run), profile=profile.name,
                questions=len(tables), turns=sum(c.turns for c in costs),
                prompt_tokens=sum(c.prompt_tokens for c in costs), cached_tokens=sum(c.cached_tokens for c in costs),
                usd=sum(c.total_usd for c in costs), uncached_usd=sum(c.total_uncached_usd for c in costs),
                memory_usd=sum(c.memory_usd for c in costs), short_turns=sum(c.short_turns for c in costs),
                min_tokens=profile.min_tokens,
            ))
    return rows


def unrecorded_runs(runs: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]]) -> list[str]:
    """The runs of ``runs`` with no turn table, as ``label (memory): why``: a comparison must say they are left
    out rather than show them as if cheaper (a system that records no turns, a reader whose turns are the
    history)."""
    recorded = {i["run_id"] for i in items if i.get("turns")}
    return [f"{run.get('label') or str(run['run_id'])[:8]} ({memory_name_of(run)}): {_unrecorded_reason(run)}"
            for run in runs if run["run_id"] not in recorded]


def _unrecorded_reason(run: Mapping[str, Any]) -> str:
    system = memory_system_of(run)
    if reason := system_trait(system, "no_turns_reason"):
        return str(reason)
    try:
        config = json.loads(run.get("config_json") or "{}")
    except (TypeError, ValueError):
        config = {}
    if isinstance(config, dict) and (config.get("run") or {}).get("turn_costs") is False:
        return "made with run.turn_costs=false"
    if system_trait(system, "records_turns"):
        return "made before turns were recorded, or with run.turn_costs=false"
    return "its memory system records no turns (a plugin is counted when it calls services.record_turn)"


def unrecorded_note(missing: Sequence[str]) -> str:
    """The line naming the runs a per-turn table leaves out, each with why; empty when it leaves none out."""
    if not missing:
        return ""
    return (f"Not in this table: {'; '.join(missing)}. No per-turn figure is shown for them, which is not a cost "
            "of zero.")


def short_note(rows: Sequence[TurnRow]) -> str:
    """The line that explains :data:`SHORT_MARK`; empty when no row carries it."""
    marked = [row for row in rows if row.mostly_short]
    if not marked:
        return ""
    minimum = min(row.min_tokens for row in marked)
    return (f"{SHORT_MARK} Most turns' prompts are under the providers' {minimum:,}-token caching minimum, so "
            "nothing of them is cached and a ratio near 1.00x says only that (small sets have short prompts; "
            "LongMemEval_S haystacks do not).")


def turn_section(rows: Sequence[TurnRow], missing: Sequence[str] = ()) -> str:
    """Markdown: the per-turn table and the runs it leaves out (:func:`unrecorded_runs`), or nothing when no run
    recorded turns."""
    if not rows:
        return ""
    lines = [
        "## Cost per turn, with and without a provider's prompt cache",
        "",
        "What an agent on each memory would send at every user turn while the memory was built (no model was "
        "called for this): its mean prompt, the share a provider's cache would serve, and dollars per 1,000 turns "
        "(the actor's calls plus the Observer's and Reflector's) with the cache and without it, under each price "
        "profile's prices and caching rules (a cache forgets a prefix after 5 idle minutes, so each session's "
        "first turn pays in full). The ratio is dollars without the cache per dollar with it; the actor's ratio "
        "leaves out the Observer's and Reflector's calls, which are priced without a cache.",
        "",
        "| " + " | ".join(TURN_HEAD) + " |",
        "|---|---|---|" + "---:|" * (len(TURN_HEAD) - 3),
    ]
    lines += ["| " + " | ".join(row.cells().values()) + " |" for row in rows]
    lines += [line for note in (short_note(rows), unrecorded_note(missing)) if note for line in ("", note)]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PromptCacheRow:
    """One run's calls of one stage that said how much of their prompt a provider's cache served."""

    label: str
    stage: str
    calls: int
    prompt_tokens: int
    cached_tokens: int
    saved_usd: float | None

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def saved_at(self, profile: CacheProfile) -> float:
        """What the cached tokens would have saved at ``profile``'s prices (for a free or unpriced model)."""
        rates = profile_rates(profile)
        return self.cached_tokens * (rates.input - rates.cache_read)


def prompt_cache_rows(runs: Sequence[Mapping[str, Any]], calls: Sequence[Mapping[str, Any]]) -> list[PromptCacheRow]:
    """Per run and stage, from ``llm_calls`` rows (paid calls whose provider reported its cache)."""
    from om_eval.llm.pricing import call_cost

    labels = {run["run_id"]: str(run.get("label") or run["run_id"][:8]) for run in runs}
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for call in calls:
        if call.get("cached_prompt_tokens") is None or call["run_id"] not in labels:
            continue
        grouped.setdefault((call["run_id"], call["stage"]), []).append(call)
    rows = []
    for (run_id, stage), group in sorted(grouped.items(), key=lambda kv: (list(labels).index(kv[0][0]), kv[0][1])):
        saved: float | None = 0.0
        for call in group:
            full = call_cost(call["model"], call["prompt_tokens"], call["completion_tokens"])
            paid = call_cost(call["model"], call["prompt_tokens"], call["completion_tokens"],
                             cached_prompt_tokens=call["cached_prompt_tokens"])
            if full is None or paid is None or saved is None:
                saved = None
                continue
            saved += max(0.0, full - paid)
        rows.append(PromptCacheRow(labels[run_id], stage, len(group), sum(c["prompt_tokens"] or 0 for c in group),
                                   sum(c["cached_prompt_tokens"] for c in group), saved))
    return rows


#: The profile whose prices say what a free model's cached tokens would have saved.
REFERENCE_PROFILE = PROFILES["gpt-5-mini"]


def prompt_cache_section(rows: Sequence[PromptCacheRow]) -> str:
    """Markdown: the provider-cache table, or nothing when no call reported a cache."""
    if not rows:
        return ""
    reference = REFERENCE_PROFILE.name
    lines = ["## Provider prompt caches in these runs", "",
             "Calls whose provider said how many prompt tokens it served from its own cache (a call answered from "
             "om-eval's response cache carries the figures of the call that paid for it); saved is each call priced "
             "without that share, less its price with it (litellm's list); the last column prices the same cached "
             f"tokens at {reference}'s rates, for free and unpriced models.", "",
             f"| run | stage | calls | prompt tokens | cached | saved | saved at {reference} prices |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        saved = "unknown" if row.saved_usd is None else f"${row.saved_usd:,.4f}"
        lines.append(f"| {row.label} | {row.stage} | {row.calls:,} | {row.prompt_tokens:,} | {row.cached_share:.1%} | "
                     f"{saved} | ${row.saved_at(REFERENCE_PROFILE):,.4f} |")
    return "\n".join(lines) + "\n"
