"""Judge-free checks of an answer against its gold: exact, contains and number match.

Why: a judge can be lenient or strict, but an answer that holds the gold answer word for word needs no judge.
The share of such answers is a floor under the judged score that no judge protocol can move: when a judged
accuracy falls below it, the judge is rejecting answers that state the gold.

Both sides are normalised the usual reading-comprehension way (lower case, punctuation and the articles a, an,
the removed, whitespace collapsed), then:

* **exact**: the normalised answer equals the normalised gold;
* **contains**: the gold's normalised words appear in the answer's, in order and side by side (word boundaries:
  gold "10" is not found in "100");
* **number**: every number the gold holds (digits, or a number word up to twenty and the tens) appears among the
  answer's numbers; undefined (``None``) when the gold holds no number.

The floor is the contains share: exact implies contains, and a number match alone ("3 weeks" for "3 days") is
too loose to bound anything. Questions whose gold is not an answer (a rubric, an unanswerable question's note)
are left out; :func:`match_floor` counts how many.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MatchFloor", "Matches", "contains_match", "exact_match", "match_answer", "match_floor", "normalise",
           "number_match", "numbers_in"]

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_PUNCTUATION = re.compile(r"[^\w\s]")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_NUMBER_WORDS = {
    word: index for index, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split())
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
     "hundred": 100}


def normalise(text: Any) -> str:
    """Lower case, punctuation and articles removed, whitespace collapsed (``str()`` of a non-string first)."""
    lowered = _PUNCTUATION.sub(" ", str(text).lower().replace("'", ""))
    return " ".join(_ARTICLES.sub(" ", lowered).split())


def exact_match(answer: str, gold: Any) -> bool:
    """The normalised answer is the normalised gold (an empty gold matches nothing)."""
    target = normalise(gold)
    return bool(target) and normalise(answer) == target


def contains_match(answer: str, gold: Any) -> bool:
    """The gold's normalised words stand side by side, in order, in the answer's (an empty gold matches nothing)."""
    target = normalise(gold)
    if not target:
        return False
    return f" {target} " in f" {normalise(answer)} "


def numbers_in(text: Any) -> set[float]:
    """The numbers ``text`` holds: digit strings (``1,200`` read as 1200) and number words up to twenty, the tens."""
    plain = str(text).lower()
    found = {float(n) for n in _NUMBER.findall(re.sub(r"(?<=\d),(?=\d{3}\b)", "", plain))}
    found |= {float(_NUMBER_WORDS[w]) for w in re.findall(r"[a-z]+", plain) if w in _NUMBER_WORDS}
    return found


def number_match(answer: str, gold: Any) -> bool | None:
    """Every number of the gold is among the answer's; ``None`` when the gold holds no number."""
    wanted = numbers_in(gold)
    if not wanted:
        return None
    return wanted <= numbers_in(answer)


@dataclass(frozen=True)
class Matches:
    """The three checks of one answer."""

    exact: bool
    contains: bool
    number: bool | None


def match_answer(answer: str | None, gold: Any) -> Matches:
    """All three checks; no answer matches nothing."""
    if answer is None:
        return Matches(False, False, None if number_match("", gold) is None else False)
    return Matches(exact_match(answer, gold), contains_match(answer, gold), number_match(answer, gold))


@dataclass(frozen=True)
class MatchFloor:
    """Judge-free shares over the questions whose gold is an answer."""

    n: int
    """Questions checked."""
    exact: float | None
    contains: float | None
    """The floor."""
    number: float | None
    """Over the ``numbered`` questions whose gold holds a number."""
    numbered: int
    skipped: int
    """Questions left out: no gold answer to match (a rubric, an unanswerable question)."""


def match_floor(rows: Iterable[Mapping[str, Any]], *, skip: Sequence[str] = ()) -> MatchFloor:
    """The floor over item rows (``hypothesis``, ``gold_answer``, ``question_type``, ``is_abstention``).

    Rows of the ``skip`` types and abstention rows are counted as skipped; a row without an answer (a failed
    question) counts as no match.
    """
    checked: list[Matches] = []
    skipped = 0
    for row in rows:
        if row.get("is_abstention") or row.get("question_type") in skip or row.get("gold_answer") is None:
            skipped += 1
            continue
        checked.append(match_answer(row.get("hypothesis"), row["gold_answer"]))
    numbered = [m.number for m in checked if m.number is not None]
    n = len(checked)
    return MatchFloor(
        n=n,
        exact=sum(m.exact for m in checked) / n if n else None,
        contains=sum(m.contains for m in checked) / n if n else None,
        number=sum(numbered) / len(numbered) if numbered else None,
        numbered=len(numbered),
        skipped=skipped,
    )
