"""LoCoMo's own QA score (Maharana et al., ACL 2024), computed as its ``task_eval/evaluation.py`` computes it.

Why our own code: LoCoMo numbers are only comparable when scored with the benchmark's arithmetic, and its
script is not a library. The rules (``../shared/data/README.md``), implemented here in our words:

* an answer is normalised: commas dropped, lower-cased, ASCII punctuation removed, the words a/an/the/and
  removed, whitespace collapsed; then each word is Porter-stemmed (NLTK's stemmer, the one upstream uses);
* token F1 is the harmonic mean of precision and recall over the multiset overlap (0 when nothing overlaps);
* category 2 (temporal), 3 (open-domain) and 4 (single-hop) score the F1 of prediction and answer, category 3
  against the answer's part before its first ``;``;
* category 1 (multi-hop) splits both on ``,``; each answer part takes its best F1 over the prediction parts, and
  the score is their mean;
* category 5 (adversarial) scores 1 when the prediction says "no information available" or "not mentioned".

Per category the score is the mean over its questions; overall it is the mean over all questions (micro).

:data:`BENCHMARK` puts LoCoMo behind the benchmark seam (:mod:`om_eval.bench.benchmark`): its categories with their
numbers, this score as its own, the house judge's routes, Wilson intervals, and how a run loads the file.
"""

from __future__ import annotations

import os
import re
import string
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from om_eval.bench.benchmark import Benchmark, Category
from om_eval.data.locomo import CATEGORY_NAMES
from om_eval.data.locomo_audit import ENV_AUDIT_PATH
from om_eval.data.locomo_questions import locomo_dataset
from om_eval.data.records import Dataset, Question
from om_eval.data.subsets import select

__all__ = ["BENCHMARK", "CATEGORY_NAMES", "CATEGORY_NUMBERS", "HOUSE_ROUTES", "corrections_notice", "locomo_f1",
           "locomo_scores", "multi_answer_f1", "normalize_answer", "token_f1"]

#: A category's number from its stored name (``items.question_type``).
CATEGORY_NUMBERS = {name: number for number, name in CATEGORY_NAMES.items()}
#: Which house judge template grades each category (unanswerable questions are routed by their flag). Every answerable
#: category asks for the gold's content, so they share the plain template; LoCoMo's dates are absolute, so the
#: temporal template's leniency for counted days does not apply.
HOUSE_ROUTES = {"multi-hop": "answer", "temporal": "answer", "open-domain": "answer", "single-hop": "answer",
                "adversarial": "abstention"}
#: ``dataset.subset.types`` accepts a category's number (and ``cat<number>``) besides its name.
TYPE_ALIASES = {**{str(n): name for n, name in CATEGORY_NAMES.items()},
                **{f"cat{n}": name for n, name in CATEGORY_NAMES.items()}}
UNANSWERABLE_PHRASES = ("no information available", "not mentioned")

_DROPPED_WORDS = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem import PorterStemmer

    return PorterStemmer()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


def normalize_answer(text: str) -> str:
    """The normalised form both sides are compared in (see the module docstring)."""
    text = text.replace(",", "").lower().translate(_PUNCTUATION)
    return " ".join(_DROPPED_WORDS.sub(" ", text).split())


def _tokens(text: str) -> list[str]:
    return [_stem(word) for word in normalize_answer(text).split()]


def token_f1(prediction: str, answer: str) -> float:
    """Token F1 of two texts after normalising and stemming; 0.0 when they share no token."""
    predicted, gold = _tokens(prediction), _tokens(answer)
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, answer: str) -> float:
    """Category 1: the mean over the answer's comma parts of each part's best F1 over the prediction's parts."""
    predictions = [part.strip() for part in prediction.split(",")]
    answers = [part.strip() for part in answer.split(",")]
    return sum(max(token_f1(p, a) for p in predictions) for a in answers) / len(answers)


def locomo_f1(prediction: str, answer: str | int | float, category: int) -> float:
    """LoCoMo's score of one prediction (0.0 to 1.0), by the rule of the question's ``category`` (1-5).

    ``answer`` may be a number in the data file (a year); it is compared as its text, as upstream does. For
    category 5 the answer is not used (the record's ``adversarial_answer`` is what a fooled model would say).

    Raises:
        ValueError: for a category outside 1-5.
    """
    gold = str(answer)
    if category in (2, 4):
        return token_f1(prediction, gold)
    if category == 3:
        return token_f1(prediction, gold.split(";")[0].strip())
    if category == 1:
        return multi_answer_f1(prediction, gold)
    if category == 5:
        said = prediction.lower()
        return 1.0 if any(phrase in said for phrase in UNANSWERABLE_PHRASES) else 0.0
    raise ValueError(f"LoCoMo category {category!r} is unknown: categories are 1-5 ({CATEGORY_NAMES})")


def locomo_scores(scored: Iterable[Mapping[str, float | int]]) -> dict[str, float | dict[int, float]]:
    """Per-category and overall means of rows ``{"category": c, "score": s}`` (upstream's aggregation).

    Returns ``{"overall": mean over all rows, "per_category": {c: mean of its rows}, "counts": {c: n}}``;
    categories without rows are left out.
    """
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for row in scored:
        category = int(row["category"])
        sums[category] = sums.get(category, 0.0) + float(row["score"])
        counts[category] = counts.get(category, 0) + 1
    total = sum(counts.values())
    return {
        "overall": sum(sums.values()) / total if total else float("nan"),
        "per_category": {c: sums[c] / counts[c] for c in sorted(counts)},
        "counts": dict(sorted(counts.items())),
    }


def _score(question: Question, prediction: str, gold: str | int) -> float:
    return locomo_f1(prediction, gold, CATEGORY_NUMBERS[question.question_type])


def corrections_notice(dataset: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> str | None:
    """The line a run prints when an audit path is given (``dataset.audit_path`` or ``$LOCOMO_AUDIT_PATH``) but
    ``dataset.corrections`` is off; ``None`` otherwise.

    Why corrections stay opt-in: the run id hashes ``dataset.corrections`` but not the environment, so turning them
    on from ``$LOCOMO_AUDIT_PATH`` would give one run id two sets of results (and the oracle reads the audit's
    evidence, so even the raw scores move). The run id must say whether the audit applies.
    """
    given = dataset.get("audit_path") or (os.environ if environ is None else environ).get(ENV_AUDIT_PATH)
    if not given or dataset.get("corrections") is not None:
        return None
    return (f"LoCoMo: audit corrections are OFF although an audit file is given ({given}); add "
            "dataset.corrections=locomo_audit to score against its corrected gold too")


def load_locomo_run(dataset: Mapping[str, Any]) -> Dataset:
    """The LoCoMo dataset a run names (``dataset.path``/``$LOCOMO_PATH``/the pinned download), then its subset.
    Prints :func:`corrections_notice` to stderr when it applies."""
    if (notice := corrections_notice(dataset)) is not None:
        print(notice, file=sys.stderr)
    loaded = locomo_dataset(dataset.get("path"), verify=dataset.get("verify", True),
                            speaker_roles=dataset.get("speaker_roles") or "a_user",
                            corrections=dataset.get("corrections"), audit_path=dataset.get("audit_path"))
    subset = {k: v for k, v in dict(dataset.get("subset") or {}).items() if v is not None and k != "seed"}
    if subset:
        loaded = select(loaded, seed=(dataset.get("subset") or {}).get("seed", 0), type_order=tuple(CATEGORY_NUMBERS),
                        type_aliases=TYPE_ALIASES, **subset)
    return loaded


BENCHMARK = Benchmark(
    name="locomo",
    title="LoCoMo",
    categories=tuple(Category(name, f"{number} {name}", f"{number}\n{name}", number)
                     for number, name in sorted(CATEGORY_NAMES.items())),
    load=load_locomo_run,
    abstention_row=False,
    own_score="F1",
    scorer=_score,
    judge_modes=("house", "lenient"),
    intervals="wilson",
    house_routes=HOUSE_ROUTES,
    identity={"scoring": "locomo-f1-v1", "house_routes": HOUSE_ROUTES},
)
