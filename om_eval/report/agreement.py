"""How far two judges agree on the same answers: raw agreement and Cohen's kappa.

Kappa corrects raw agreement for the agreement two judges would reach by chance given how often each says
"correct": ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the share of answers both grade alike and ``p_e =
p1 * p2 + (1 - p1) * (1 - p2)`` (``p1``, ``p2``: each judge's share of "correct"). When ``p_e == 1`` (both judges
give one and the same grade to everything) kappa is undefined and reported as ``None``, never as 1 or 0.

Only verdicts on the answer the run holds now count (a verdict on an earlier answer to a retried question is
about other text), and only verdicts with status ``ok`` on both sides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from om_eval.bench.judging.protocols import protocol_name

__all__ = ["JudgePair", "RunVerdicts", "cohen_kappa", "current_verdicts", "judge_name", "run_agreement"]


def cohen_kappa(first: Sequence[bool], second: Sequence[bool]) -> float | None:
    """Cohen's kappa of two judges' binary labels on the same items (``None`` when undefined).

    Raises:
        ValueError: the sequences differ in length.
    """
    if len(first) != len(second):
        raise ValueError(f"kappa needs paired labels; got {len(first)} and {len(second)}")
    n = len(first)
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(first, second)) / n
    p1 = sum(bool(a) for a in first) / n
    p2 = sum(bool(b) for b in second) / n
    expected = p1 * p2 + (1 - p1) * (1 - p2)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


@dataclass(frozen=True)
class JudgePair:
    """Two judges of one run compared on the answers both graded."""

    run_id: str
    first: str
    """:func:`judge_name` of the first judge (the run's own judge when it is one of the two)."""
    second: str
    n: int
    agreement: float | None
    kappa: float | None
    accuracy_first: float | None
    accuracy_second: float | None
    first_key: str = ""
    second_key: str = ""


def judge_name(identity: str | Mapping[str, Any]) -> str:
    """``<protocol>:<model>`` of a stored judge identity (:func:`om_eval.bench.judging.protocols.protocol_name`:
    ``house``, ``mastra``, ``lenient``..., or ``mode/parse`` for a combination no protocol names)."""
    data = json.loads(identity) if isinstance(identity, str) else dict(identity)
    return f"{protocol_name(data)}:{data.get('model')}"


@dataclass(frozen=True)
class RunVerdicts:
    """Every judge's verdicts on the answers a run holds now."""

    verdicts: dict[str, dict[str, tuple[bool, str]]]
    """Judge key -> question -> (label, reply)."""
    names: dict[str, str]
    """Judge key -> :func:`judge_name`."""
    types: dict[str, str]
    """Question -> its category."""
    own: str | None
    """The key of the run's own judge (its items were graded with it)."""


def current_verdicts(catalog: Any, run_id: str) -> RunVerdicts:
    """The verdicts of every judge of ``run_id`` on its current answers (status ok only)."""
    from om_eval.bench.pipeline import hypothesis_hash
    from om_eval.store.rows import judge_key

    run = catalog.query("SELECT judge_identity FROM runs WHERE run_id = ?", [run_id])
    items = catalog.query("SELECT question_id, question_type, hypothesis, label, judge_status, judge_reply "
                          "FROM items WHERE run_id = ? AND status = 'done'", [run_id])
    current = {i["question_id"]: hypothesis_hash(i["hypothesis"]) for i in items}
    verdicts: dict[str, dict[str, tuple[bool, str]]] = {}
    names: dict[str, str] = {}
    own = None
    if run and run[0]["judge_identity"]:
        own = judge_key(run[0]["judge_identity"])
        names[own] = judge_name(run[0]["judge_identity"])
        # The item's verdict is the run judge's (stores made before ``judgments`` existed have only this).
        verdicts[own] = {i["question_id"]: (bool(i["label"]), i["judge_reply"] or "") for i in items
                         if i["judge_status"] == "ok" and i["label"] is not None}
    rows = catalog.query("SELECT question_id, judge_key, judge_identity, hypothesis_hash, label, status, reply "
                         "FROM judgments WHERE run_id = ?", [run_id])
    for row in rows:
        names.setdefault(row["judge_key"], judge_name(row["judge_identity"]))
        if row["status"] == "ok" and current.get(row["question_id"]) == row["hypothesis_hash"]:
            verdicts.setdefault(row["judge_key"], {})[row["question_id"]] = (bool(row["label"]), row["reply"] or "")
    return RunVerdicts(verdicts, names, {i["question_id"]: i["question_type"] for i in items}, own)


def run_agreement(catalog: Any, run_id: str) -> list[JudgePair]:
    """Every pair of judges that graded answers of ``run_id``, the run's own judge first in its pairs."""
    found = current_verdicts(catalog, run_id)
    labels = {key: {q: label for q, (label, _) in graded.items()} for key, graded in found.verdicts.items()}
    names, own = found.names, found.own
    keys = sorted(labels, key=lambda k: (k != own, names[k], k))
    pairs = []
    for a, b in combinations(keys, 2):
        shared = sorted(set(labels[a]) & set(labels[b]))
        first = [labels[a][q] for q in shared]
        second = [labels[b][q] for q in shared]
        n = len(shared)
        pairs.append(JudgePair(
            run_id, names[a], names[b], n,
            sum(x == y for x, y in zip(first, second)) / n if n else None,
            cohen_kappa(first, second),
            sum(first) / n if n else None, sum(second) / n if n else None, a, b,
        ))
    return pairs


def agreement_rows(catalog: Any, runs: Sequence[Mapping[str, Any]]) -> list[JudgePair]:
    """:func:`run_agreement` of every run that has more than one judge."""
    return [pair for run in runs for pair in run_agreement(catalog, run["run_id"])]


def agreement_lines(pairs: Sequence[JudgePair], labels: Mapping[str, str] | None = None) -> list[str]:
    """Plain text lines, one per judge pair (for the report and ``rejudge``)."""
    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{100 * value:.1f}%"

    lines = []
    for pair in pairs:
        kappa = "undefined" if pair.kappa is None else f"{pair.kappa:.3f}"
        name = (labels or {}).get(pair.run_id, "")
        lines.append(f"{pair.run_id[:8]}{' ' + name if name else ''}: {pair.first} vs {pair.second} · n={pair.n} · "
                     f"agreement {pct(pair.agreement)} · kappa {kappa} · accuracy {pct(pair.accuracy_first)} vs "
                     f"{pct(pair.accuracy_second)}")
    return lines
