"""The names a report gives its runs: what differs between the runs shown, short enough for a column head.

Why: a run's stored label is the command line that first made it (``memory=rag_lme memory.granularity=turn
memory.top_k=50 actor.prompt=cot``), kept when a later sweep reuses the run. Side by side, such labels repeat what
every run shares and widen each column to the longest. Here each label keeps only the words (``key=value``) not
shared by every run shown, is cut at :data:`MAX_LABEL` characters, and gets its short run id when two would read
alike; :func:`label_key` lists the full label of every run whose name was shortened, so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The longest name a run gets in a report's tables (a column head at 80 columns holds about this much).
MAX_LABEL = 24

#: Characters of a run id shown when ids alone name runs (more when two runs share them).
SHORT_ID = 8


def short_ids(run_ids: Sequence[str]) -> dict[str, str]:
    """Each run id cut to the fewest characters (from :data:`SHORT_ID`) that still tell the runs apart."""
    width = SHORT_ID
    while len({rid[:width] for rid in run_ids}) < len(run_ids):
        width += 2
    return {rid: rid[:width] for rid in run_ids}


def full_label(run: Mapping[str, Any]) -> str:
    """A run's stored label, else its short id."""
    return str(run.get("label") or str(run["run_id"])[:SHORT_ID])


def display_labels(runs: Sequence[Mapping[str, Any]], *, whole: bool = False) -> dict[str, str]:
    """Per run id, the name the report shows (see the module doc). Deterministic in the runs and their order.

    ``whole``: each stored label kept as it is (only the short id added where two coincide).
    """
    ids = [str(run["run_id"]) for run in runs]
    short = short_ids(ids)
    if whole:
        names = [full_label(run) for run in runs]
        return {rid: name if names.count(name) == 1 else f"{name} ({short[rid]})" for rid, name in zip(ids, names)}
    words = [full_label(run).split() for run in runs]
    shared = set.intersection(*(set(w) for w in words)) if len(runs) > 1 else set()
    names = []
    for run_words, rid in zip(words, ids):
        kept = " ".join(w for w in run_words if w not in shared) or " ".join(run_words) or short[rid]
        names.append(kept if len(kept) <= MAX_LABEL else kept[:MAX_LABEL - 1].rstrip() + "…")
    return {rid: name if names.count(name) == 1 else f"{name} ({short[rid]})" for rid, name in zip(ids, names)}


def label_key(runs: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> str:
    """The line giving the full label of each run whose shown name differs from it; empty when none does."""
    changed = [(labels[str(run["run_id"])], full_label(run)) for run in runs
               if labels.get(str(run["run_id"])) not in (None, full_label(run))]
    if not changed:
        return ""
    return "Run names shortened to what differs between these runs; full labels: " + "; ".join(
        f"{name} = {label}" for name, label in changed) + "."


def with_display_labels(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of ``runs`` whose ``label`` is the shown name (:func:`display_labels`), for sections that print it."""
    labels = display_labels(runs)
    return [{**run, "label": labels[str(run["run_id"])]} for run in runs]
