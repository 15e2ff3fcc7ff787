"""Judge probes: answers whose verdict is known in advance, built from the question and its gold without a model.

Why: a judge's score says nothing about the judge. Graded on answers whose correct verdict is known, it shows how
often it accepts a wrong answer (false accept) and rejects a right one (false reject), per question category.
Three probes per question:

* ``gold``: the gold answer itself (for an unanswerable question, a plain refusal); should be accepted.
* ``vague``: an on-topic answer that commits to nothing ("It was the one to do with <the question's words> that
  you told me about."); it claims to know, so it is wrong for answerable and unanswerable questions alike.
* ``wrong``: a specific wrong answer. Every number in the gold is moved by at least 3 (outside LongMemEval's
  off-by-one allowance for counts), a month or weekday name is moved to another; a gold with neither is replaced
  by another question's gold (same category first), chosen by a hash of the question id and sharing no word with
  the gold; so is a rubric (LongMemEval's preference questions). An unanswerable question gets another question's
  gold, stated as if known. When no such gold exists there is no ``wrong`` probe for that question.

The probes are deterministic (same question, same pool: same text), so re-grading them with the same judge hits
the response cache. For rubric categories (LongMemEval's preference questions) the ``gold`` probe is the rubric
itself, which a careful judge may reasonably reject: read that row's false rejects with care.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from om_eval.bench.judging.matching import contains_match, normalise
from om_eval.data.records import Question

__all__ = ["EXPECTED", "PROBE_KINDS", "REFUSAL", "Probe", "probes_for"]

PROBE_KINDS = ("gold", "vague", "wrong")
#: The verdict a sound judge gives each probe.
EXPECTED = {"gold": True, "vague": False, "wrong": False}
REFUSAL = "I don't know: nothing you told me in our conversations covers that."

_MONTHS = ("January February March April May June July August September October November December").split()
_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_NUMBER = re.compile(r"\d+")
_NAMES = re.compile(r"\b(" + "|".join(_MONTHS + _DAYS) + r")\b")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_FILLER = frozenset(
    "what which who whom when where why how did does do was were is are the a an and or of in on at to for from "
    "with about into my me i you your our we us they them their it its this that these those have has had can "
    "could would should will any some many much more most first last time times ever recently tell remind "
    "again before after during since ago long i'm i've i'd let's".split()
)


@dataclass(frozen=True)
class Probe:
    """One probe answer and the verdict a sound judge gives it."""

    kind: str
    text: str

    @property
    def expected(self) -> bool:
        return EXPECTED[self.kind]


def _topic(question: str, gold: str) -> str:
    gold_words = set(normalise(gold).split())
    words: list[str] = []
    for word in _WORD.findall(question):
        lowered = word.lower()
        if lowered in _FILLER or lowered in gold_words or lowered in words:
            continue
        words.append(lowered)
    return " ".join(words[:4]) or "what you asked about"


def _moved_number(match: re.Match[str]) -> str:
    value = int(match.group())
    return str(value + max(3, round(value * 0.5)))


def _moved_name(match: re.Match[str]) -> str:
    name = match.group()
    names = _MONTHS if name in _MONTHS else _DAYS
    return names[(names.index(name) + (5 if names is _MONTHS else 3)) % len(names)]


def _altered(gold: str) -> str | None:
    """The gold with its numbers and month or weekday names moved, or ``None`` when it has neither."""
    moved = _NAMES.sub(_moved_name, _NUMBER.sub(_moved_number, gold))
    return moved if moved != gold else None


def _seed(question_id: str) -> int:
    return int.from_bytes(hashlib.sha256(question_id.encode("utf-8")).digest()[:8], "big")


def _other_gold(question: Question, gold: str, pool: Sequence[tuple[str, str]]) -> str | None:
    """Another question's gold sharing no word with ``gold``, same category first, picked by the question id."""
    own = set(normalise(gold).split())
    candidates = [(category, text) for category, text in pool
                  if normalise(text) and not own & set(normalise(text).split()) and not contains_match(text, gold)]
    same = [text for category, text in candidates if category == question.question_type]
    chosen = same or [text for _, text in candidates]
    if not chosen:
        return None
    return chosen[_seed(question.question_id) % len(chosen)]


def probes_for(question: Question, pool: Sequence[tuple[str, str]], *, rubric: bool = False) -> list[Probe]:
    """The probes of ``question``; ``pool`` is ``(category, gold text)`` of the other answerable questions.

    The gold is the one the judge is shown (:attr:`Question.judge_answer` where a benchmark gives one). With
    ``rubric`` (the gold describes a good answer rather than being one) the wrong probe is always another
    question's gold: a rubric with one number moved is hardly a wrong answer to it.
    """
    gold = str(question.answer if question.judge_answer is None else question.judge_answer)
    vague = Probe("vague", f"It was the one to do with {_topic(question.question, gold)} that you told me about.")
    if question.is_abstention:
        other = _other_gold(question, gold, pool)
        probes = [Probe("gold", REFUSAL), vague]
        return probes + ([Probe("wrong", f"It was {other}.")] if other is not None else [])
    wrong = (None if rubric else _altered(gold)) or _other_gold(question, gold, pool)
    return [Probe("gold", gold), vague] + ([Probe("wrong", wrong)] if wrong is not None else [])
