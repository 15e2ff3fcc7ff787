"""How far two judges agree on the same answers: raw agreement and Cohen's kappa.

Kappa corrects raw agreement for the agreement two judges would reach by chance given how often each says
"correct": ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the share of answers both grade alike and ``p_e =
p1 * p2 + (1 - p1) * (1 - p2)`` (``p1``, ``p2``: each judge's share of "correct"). When ``p_e == 1`` (both judges
give one and the same grade to everything) kappa is undefined and reported as ``None``, never as 1 or 0.

Only verdicts on the answer the run holds now count (a verdict on an earlier answer to a retried question is
about other text), and only verdicts with status ``ok`` on both sides. A pair is therefore compared on fewer answers
than the run holds when a judge failed on some (a provider error, a reply with no verdict) or has no verdict on
them; the pair then says so (:attr:`JudgePair.note`), and keeps each judge's accuracy on every answer it graded
beside the accuracy on the shared ones, so a judge that failed on half the answers cannot silently move the
other's score.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from om_eval.bench.judging.protocols import protocol_name
from om_eval.report._format import plural

__all__ = ["JudgePair", "RunVerdicts", "clip", "cohen_kappa", "current_verdicts", "judge_name", "narrowing",
           "run_agreement"]


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
    answers: int = 0
    """Answers the run holds now (``n`` is fewer when a judge has no verdict on some)."""
    graded_first: int = 0
    """Answers the first judge graded (its own base, at least ``n``)."""
    graded_second: int = 0
    graded_accuracy_first: float | None = None
    """The first judge's accuracy on every answer it graded, not only the shared ones."""
    graded_accuracy_second: float | None = None
    note: str = ""
    """Why ``n`` is smaller than ``answers`` (which judge failed or has no verdict, on how many); empty when the
    pair is compared on every answer."""


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
    failed: dict[str, dict[str, str]] = field(default_factory=dict)
    """Judge key -> question -> error message: the current answers the judge tried and failed to grade (and
    holds no verdict on)."""
    answers: int = 0
    """Answers the run holds now."""

    def graded(self, key: str) -> int:
        return len(self.verdicts.get(key, {}))

    def failures(self, key: str) -> int:
        return len(self.failed.get(key, {}))

    def graded_accuracy(self, key: str) -> float | None:
        """The judge's accuracy on every current answer it graded."""
        labels = [label for label, _ in self.verdicts.get(key, {}).values()]
        return sum(labels) / len(labels) if labels else None

    def first_error(self, key: str) -> str | None:
        """The error of the judge's first failed answer (by question id), or ``None``."""
        errors = self.failed.get(key, {})
        return errors[min(errors)] if errors else None


def current_verdicts(catalog: Any, run_id: str) -> RunVerdicts:
    """The verdicts of every judge of ``run_id`` on its current answers (status ok), and which it failed on.

    A judge that failed on every answer is still named (in :attr:`RunVerdicts.names`, with no verdicts)."""
    from om_eval.bench.pipeline import hypothesis_hash
    from om_eval.store.rows import judge_key

    run = catalog.query("SELECT judge_identity FROM runs WHERE run_id = ?", [run_id])
    items = catalog.query("SELECT question_id, question_type, hypothesis, label, judge_status, judge_reply, error "
                          "FROM items WHERE run_id = ? AND status = 'done'", [run_id])
    current = {i["question_id"]: hypothesis_hash(i["hypothesis"]) for i in items}
    verdicts: dict[str, dict[str, tuple[bool, str]]] = {}
    errors: dict[str, dict[str, str]] = {}
    names: dict[str, str] = {}
    own = None
    if run and run[0]["judge_identity"]:
        own = judge_key(run[0]["judge_identity"])
        names[own] = judge_name(run[0]["judge_identity"])
        # The item's verdict is the run judge's (stores made before ``judgments`` existed have only this).
        verdicts[own] = {i["question_id"]: (bool(i["label"]), i["judge_reply"] or "") for i in items
                         if i["judge_status"] == "ok" and i["label"] is not None}
        errors[own] = {i["question_id"]: i["error"] or "judge error" for i in items if i["judge_status"] == "error"}
    rows = catalog.query("SELECT question_id, judge_key, judge_identity, hypothesis_hash, label, status, reply, "
                         "error FROM judgments WHERE run_id = ?", [run_id])
    for row in rows:
        key, qid = row["judge_key"], row["question_id"]
        names.setdefault(key, judge_name(row["judge_identity"]))
        if current.get(qid) != row["hypothesis_hash"]:
            continue
        if row["status"] == "ok":
            verdicts.setdefault(key, {})[qid] = (bool(row["label"]), row["reply"] or "")
        else:
            errors.setdefault(key, {})[qid] = row["error"] or f"judge status {row['status']}"
    failed = {key: {q: e for q, e in sorted(errs.items()) if q not in verdicts.get(key, {})}
              for key, errs in errors.items()}
    return RunVerdicts(verdicts, names, {i["question_id"]: i["question_type"] for i in items}, own,
                       {key: errs for key, errs in failed.items() if errs}, len(current))


def clip(text: str, limit: int = 160) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis (a provider's error can be pages long)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def narrowing(found: RunVerdicts, keys: Sequence[str], shared: int, who: str = "every judge") -> str:
    """Why judges ``keys`` are compared on ``shared`` answers rather than every answer the run holds: each judge
    that failed on some or has no verdict on them, with how many. Empty when nothing was left out."""
    if shared >= found.answers:
        return ""
    reasons = []
    for key in keys:
        failed, graded = found.failures(key), found.graded(key)
        missing = found.answers - graded - failed
        said = [f"failed on {failed}"] if failed else []
        if missing > 0:
            said.append(f"has no verdict on {missing}")
        if said:
            reasons.append(f"{found.names[key]} {' and '.join(said)}")
    why = "; ".join(reasons) or "no judge graded the others"
    return f"compared on {shared} of {plural(found.answers, 'answer')}, those {who} graded: {why}"


def run_agreement(catalog: Any, run_id: str) -> list[JudgePair]:
    """Every pair of judges that graded answers of ``run_id``, the run's own judge first in its pairs."""
    found = current_verdicts(catalog, run_id)
    labels = {key: {q: label for q, (label, _) in graded.items()} for key, graded in found.verdicts.items()}
    names, own = found.names, found.own
    # Every judge that graded or tried to grade counts: one that failed on every answer is paired at n=0 with the
    # reason, not left out.
    keys = sorted(names, key=lambda k: (k != own, names[k], k))
    pairs = []
    for a, b in combinations(keys, 2):
        shared = sorted(set(labels.get(a, {})) & set(labels.get(b, {})))
        first = [labels[a][q] for q in shared]
        second = [labels[b][q] for q in shared]
        n = len(shared)
        pairs.append(JudgePair(
            run_id, names[a], names[b], n,
            sum(x == y for x, y in zip(first, second)) / n if n else None,
            cohen_kappa(first, second),
            sum(first) / n if n else None, sum(second) / n if n else None, a, b,
            found.answers, found.graded(a), found.graded(b), found.graded_accuracy(a), found.graded_accuracy(b),
            narrowing(found, (a, b), n, "both judges"),
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
        line = (f"{pair.run_id[:8]}{' ' + name if name else ''}: {pair.first} vs {pair.second} · n={pair.n} · "
                f"agreement {pct(pair.agreement)} · kappa {kappa} · accuracy {pct(pair.accuracy_first)} vs "
                f"{pct(pair.accuracy_second)}")
        if pair.note:
            line += (f" · {pair.note} · on every answer each graded: {pct(pair.graded_accuracy_first)} of "
                     f"{pair.graded_first} vs {pct(pair.graded_accuracy_second)} of {pair.graded_second}")
        lines.append(line)
    return lines
