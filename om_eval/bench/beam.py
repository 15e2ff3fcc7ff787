"""BEAM's scores, computed as its ``src/evaluation/compute_metrics.py`` and ``report_results.py`` compute them.

Why our own code: BEAM numbers are only comparable when scored with the benchmark's arithmetic, and its script is
not a library (it imports a sentence-transformer, NLTK data and an OpenAI client at import time). The rules
(``../shared/docs/beam-reference.md``), in our words:

* **Rubric score.** Each rubric item gets a judge score of 0, 0.5 or 1; a question's score is their sum over the
  number of items. Upstream adds ``int(score)`` for nine abilities, so a half counts as nothing; only event
  ordering adds ``float(score)``. :func:`rubric_score` keeps that rule (``rounding="upstream"``, the default for
  comparison with published numbers) or keeps halves (``rounding="exact"``).
* **Event ordering.** The answer split on newlines (blank lines included) is the system list, the rubric the
  reference. Each system item takes the first unused reference item the equivalence judge calls the same event
  and is replaced by its text. Then precision and recall over the canonical lists, ranks over their union (the
  last position for repeats, ``len(union) + 1`` for an item a list lacks), Kendall's tau-b of the two rank vectors,
  ``tau_norm = (tau_b + 1) / 2`` and ``final_score = tau_norm * F1``. Tau-b is NaN when a rank vector is constant
  (a one-event rubric answered with that one event, say), and so are ``tau_norm`` and ``final_score``, as upstream
  reports them.
* **What the tables report** per ability is the mean of question scores, event ordering's being ``tau_norm``;
  means are taken per chat, then over chats (:func:`beam_means`).

:data:`BENCHMARK` puts BEAM behind the benchmark seam (:mod:`om_eval.bench.benchmark`); its judge (the rubric and
equivalence calls) is :mod:`om_eval.bench.judging.rubric`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import Any

from om_eval.bench.benchmark import Benchmark, Category
from om_eval.data.beam import ABILITIES
from om_eval.data.records import Dataset
from om_eval.data.subsets import select

__all__ = ["ABILITIES", "BENCHMARK", "ROUNDINGS", "align_events", "alignment", "beam_means", "event_ordering_score",
           "kendall_tau_b", "ordering_metrics", "question_score", "rubric_score", "score_of_reply"]

#: ``beam.rounding``: ``upstream`` truncates item scores with ``int()`` for nine abilities; ``exact`` keeps halves.
ROUNDINGS = ("upstream", "exact")
#: The ability whose items upstream adds as floats, and whose table score is ``tau_norm``.
EVENT_ORDERING = "event_ordering"
#: Short column headers for the ten abilities.
ABILITY_SHORT = {
    "abstention": "ABS", "contradiction_resolution": "CR", "event_ordering": "EO", "information_extraction": "IE",
    "instruction_following": "IF", "knowledge_update": "KU", "multi_session_reasoning": "MR",
    "preference_following": "PF", "summarization": "SUM", "temporal_reasoning": "TR",
}


def rubric_score(item_scores: Sequence[float], ability: str, rounding: str = "upstream") -> float:
    """A question's rubric score: the sum of its item scores over their number, each item truncated with ``int()``
    under ``upstream`` rounding unless ``ability`` is event ordering.

    Raises:
        ValueError: no item scores, an unknown ability or rounding.
    """
    if ability not in ABILITIES:
        raise ValueError(f"{ability!r} is not a BEAM ability ({', '.join(ABILITIES)})")
    if rounding not in ROUNDINGS:
        raise ValueError(f"beam.rounding={rounding!r} is invalid: use upstream or exact")
    if not item_scores:
        raise ValueError("a rubric score needs at least one item score")
    truncate = rounding == "upstream" and ability != EVENT_ORDERING
    total = 0.0
    for score in item_scores:  # summed in order, as upstream's loop does: the float result is the same bits
        total += int(score) if truncate else float(score)
    return total / len(item_scores)


def alignment(reference: Sequence[str], system: Sequence[str]) -> Generator[tuple[str, str], bool, list[str]]:
    """The alignment as a conversation: yields each ``(reference_item, system_item)`` pair to judge, in upstream's
    order, is sent back whether they are the same event, and returns the system list with each matched item
    replaced by its reference item. :func:`align_events` drives it with a function, the judge with model calls."""
    used: set[int] = set()
    canonical = []
    for item in system:
        for index, candidate in enumerate(reference):
            if index not in used and (yield candidate, item):
                used.add(index)
                canonical.append(candidate)
                break
        else:
            canonical.append(item)
    return canonical


def align_events(reference: Sequence[str], system: Sequence[str], same: Callable[[str, str], bool]) -> list[str]:
    """The system list with each item replaced by the first unused reference item ``same(reference_item,
    system_item)`` accepts (asked in that order, reference first), or kept as it is."""
    steps = alignment(reference, system)
    try:
        pair = next(steps)
        while True:
            pair = steps.send(same(*pair))
    except StopIteration as done:
        return list(done.value)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two equally long vectors, as ``scipy.stats.kendalltau(variant="b")`` computes it: NaN
    when either vector is constant (or shorter than two), clipped to [-1, 1]."""
    if len(x) != len(y):
        raise ValueError(f"tau-b needs vectors of one length, got {len(x)} and {len(y)}")
    n = len(x)
    pairs = n * (n - 1) // 2
    x_ties = y_ties = both = 0
    concordant_minus_discordant = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = _sign(x[i] - x[j]), _sign(y[i] - y[j])
            x_ties += dx == 0
            y_ties += dy == 0
            both += dx == 0 and dy == 0
            concordant_minus_discordant += dx * dy
    if x_ties == pairs or y_ties == pairs:
        return math.nan
    # scipy divides by the two square roots in turn; doing the same keeps the last bit equal.
    tau = concordant_minus_discordant / math.sqrt(pairs - x_ties) / math.sqrt(pairs - y_ties)
    return min(1.0, max(-1.0, tau))


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def ordering_metrics(reference: Sequence[str], canonical: Sequence[str]) -> dict[str, float]:
    """``precision``, ``recall``, ``f1``, ``tau_norm`` and ``final_score`` of an aligned system list
    (:func:`align_events`) against the reference list."""
    references = set(reference)
    true_positives = len(references & set(canonical))
    false_positives = sum(item not in references for item in canonical)
    present = set(canonical)
    false_negatives = sum(item not in present for item in reference)
    precision = true_positives / (true_positives + false_positives) if true_positives + false_positives else 0.0
    recall = true_positives / (true_positives + false_negatives) if true_positives + false_negatives else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    union = list(dict.fromkeys([*reference, *canonical]))
    absent = len(union) + 1

    def ranks(sequence: Sequence[str]) -> list[int]:
        position = {item: i + 1 for i, item in enumerate(sequence)}  # a repeated item keeps its last position
        return [position.get(item, absent) for item in union]

    tau_norm = (kendall_tau_b(ranks(reference), ranks(canonical)) + 1) / 2
    return {"precision": precision, "recall": recall, "f1": f1, "tau_norm": tau_norm, "final_score": tau_norm * f1}


def event_ordering_score(reference: Sequence[str], system: Sequence[str],
                         same: Callable[[str, str], bool]) -> dict[str, float]:
    """Upstream's event-ordering score of ``system`` (the answer's lines) against ``reference`` (the rubric), with
    ``same(reference_item, system_item)`` the equivalence judgement: ``precision``, ``recall``, ``f1``,
    ``tau_norm`` and ``final_score`` (the last two NaN when tau-b is)."""
    return ordering_metrics(reference, align_events(reference, system, same))


def question_score(ability: str, item_scores: Sequence[float], ordering: Mapping[str, float] | None,
                   rounding: str = "upstream") -> float:
    """The score upstream's tables count for one question: ``tau_norm`` for event ordering, else the rubric score."""
    if ability == EVENT_ORDERING:
        if ordering is None:
            raise ValueError("an event-ordering question is scored by its ordering metrics")
        return float(ordering["tau_norm"])
    return rubric_score(item_scores, ability, rounding)


def beam_means(rows: Iterable[Mapping[str, Any]], abilities: Sequence[str] = ABILITIES) -> dict[str, Any]:
    """Means of question scores per ability as upstream's report takes them (per chat, then over chats) and over
    all questions (micro), from rows with ``question_type``, ``haystack_id`` and ``score``.

    A NaN score (an event-ordering answer whose tau-b is undefined) is counted under ``nan`` and left out of both
    means: upstream's would be NaN for the whole chat and ability. Rows without a score (unjudged) are left out.

    Returns:
        ``{"per_type": {ability: {"mean", "micro", "n", "nan", "chats"}}, "overall": mean of the ability means,
        "micro": mean over all questions, "n": questions counted, "nan": NaN scores}``.
    """
    by_ability: dict[str, dict[str, list[float]]] = {a: {} for a in abilities}
    nans = dict.fromkeys(abilities, 0)
    for row in rows:
        ability, score = row.get("question_type"), row.get("score")
        if ability not in by_ability:
            raise ValueError(f"question {row.get('question_id')}: {ability!r} is not a BEAM ability")
        if score is None:
            continue
        if math.isnan(float(score)):
            nans[ability] += 1
            continue
        by_ability[ability].setdefault(str(row.get("haystack_id")), []).append(float(score))
    per_type: dict[str, dict[str, Any]] = {}
    for ability, chats in by_ability.items():
        scores = [s for values in chats.values() for s in values]
        per_chat = [math.fsum(values) / len(values) for values in chats.values()]
        per_type[ability] = {"mean": math.fsum(per_chat) / len(per_chat) if per_chat else None,
                             "micro": math.fsum(scores) / len(scores) if scores else None,
                             "n": len(scores), "nan": nans[ability], "chats": len(chats)}
    means = [v["mean"] for v in per_type.values() if v["mean"] is not None]
    every = [s for chats in by_ability.values() for values in chats.values() for s in values]
    return {"per_type": per_type, "overall": math.fsum(means) / len(means) if means else None,
            "micro": math.fsum(every) / len(every) if every else None, "n": len(every), "nan": sum(nans.values())}


def score_of_reply(ability: str, reply: str | None) -> float | None:
    """A question's score recomputed from its judge reply (the item scores and the rounding; for event ordering,
    the metrics of the aligned lines it stores against the rubric): what an archive's scores are checked against.
    ``None`` when the reply is not a rubric judge's."""
    try:
        detail = json.loads(reply or "")
        items = [float(item["score"]) for item in detail["items"]]
        ordering = None
        if ability == EVENT_ORDERING:  # recomputed from the rubric and the aligned lines, not read back
            reference = [str(item["criterion"]) for item in detail["items"]]
            ordering = ordering_metrics(reference, [str(line) for line in detail["ordering"]["aligned"]])
        return question_score(ability, items, ordering, str(detail.get("rounding", "upstream")))
    except (ValueError, KeyError, TypeError):
        return None


def _own_means(rows: Iterable[Mapping[str, Any]], abilities: Sequence[str]) -> dict[str, Any]:
    return beam_means(rows, abilities)


def load_beam_run(dataset: Mapping[str, Any]) -> Dataset:
    """The BEAM tier a run names (``dataset.path``/``$BEAM_DIR``/the pinned download), then its subset."""
    from om_eval.data.beam_questions import beam_dataset

    loaded = beam_dataset(dataset.get("path"), tier=str(dataset.get("tier") or "100K"),
                          verify=dataset.get("verify", True))
    subset = {k: v for k, v in dict(dataset.get("subset") or {}).items() if v is not None and k != "seed"}
    if subset:
        loaded = select(loaded, seed=(dataset.get("subset") or {}).get("seed", 0), type_order=ABILITIES,
                        type_aliases={short.lower(): name for name, short in ABILITY_SHORT.items()}, **subset)
    return loaded


BENCHMARK = Benchmark(
    name="beam",
    title="BEAM",
    categories=tuple(Category(a, ABILITY_SHORT[a], a.replace("multi_session", "multi-session").replace("_", "\n"))
                     for a in ABILITIES),
    load=load_beam_run,
    abstention_row=False,
    own_score="BEAM",
    judge_modes=("house", "official"),
    intervals="wilson",
    identity={"scoring": "beam-v1"},
    own_means=_own_means,
    reply_score=score_of_reply,
    verdict_name="full marks",
)
