"""The scripted model as BEAM's house judge: a rubric item scored by the words it shares with the reply, and two
snippets called the same event when they share most of their words.

Rules, so a test can predict the verdict: a criterion's words are those after its last colon (``LLM response should
state: March 29`` asks for ``March 29``); the item scores 1 when the reply holds at least 60 % of those content
words, 0.5 from 30 %, else 0. Two snippets are the same when the smaller one's content words are at least half
shared. Only our own templates (:mod:`om_eval.bench.judging.rubric`) are recognised; anything else is left to the
model's other behaviours.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from om_eval.bench.judging.rubric import HOUSE_EQUIVALENCE, HOUSE_RUBRIC

__all__ = ["is_rubric_judging", "rubric_judge_reply"]

_HEADINGS = ("### Criterion\n", "### Reply to score\n", "### Your answer\n")
_SNIPPETS = ("### Snippet A\n", "### Snippet B\n")
assert all(h in HOUSE_RUBRIC for h in _HEADINGS) and all(h in HOUSE_EQUIVALENCE[1] for h in _SNIPPETS)


def _between(text: str, start: str, end: str | None) -> str:
    head = text.index(start) + len(start)
    return text[head:text.rindex(end)] if end is not None else text[head:]


def is_rubric_judging(messages: Sequence[Mapping[str, str]]) -> bool:
    last = messages[-1]["content"] if messages else ""
    return all(h in last for h in _HEADINGS) or all(h in last for h in _SNIPPETS)


def rubric_judge_reply(messages: Sequence[Mapping[str, str]], words: Callable[[str], set[str]]) -> str | None:
    """The reply to one of our rubric or equivalence requests, or ``None`` for anything else (``words``: the
    content words of a text, as the model reads them)."""
    last = messages[-1]["content"] if messages else ""
    if all(h in last for h in _HEADINGS):
        criterion = _between(last, _HEADINGS[0], _HEADINGS[1]).strip()
        reply = _between(last, _HEADINGS[1], _HEADINGS[2])
        wanted = words(criterion.rsplit(":", 1)[-1]) or words(criterion)
        share = len(wanted & words(reply)) / len(wanted) if wanted else 0.0
        score = 1 if share >= 0.6 else 0.5 if share >= 0.3 else 0
        return json.dumps({"score": score, "reason": f"the reply holds {share:.0%} of the criterion's words"})
    if all(h in last for h in _SNIPPETS):
        first = words(_between(last, _SNIPPETS[0], _SNIPPETS[1]))
        second = words(last[last.rindex(_SNIPPETS[1]) + len(_SNIPPETS[1]):])
        smaller = min(len(first), len(second))
        return "yes" if smaller and len(first & second) >= smaller / 2 else "no"
    return None
