"""BEAM's judge: one scoring call per rubric item, and equivalence calls that align an event-ordering answer.

Two template sets, as for LongMemEval:

* ``house``: our own wording of the rules (a score of 1, 0.5 or 0 per criterion, meaning over wording, format only
  when the criterion asks; a yes/no equivalence question), for offline and house runs.
* ``official`` (``judge=official`` on a BEAM run): upstream's rubric prompt (``unified_llm_judge_base_prompt`` of
  ``src/prompts.py``) and its equivalence messages (``llm_equivalence`` in ``src/evaluation/compute_metrics.py``),
  read at run time from the pinned commit (:mod:`om_eval.bench.judging.beam_templates`), never shipped here, and
  filled as upstream fills them: its ``<question>`` slot is left as it is, as upstream's code never fills it.

Why errors are states here too: a rubric reply without a readable score of 0, 0.5 or 1 (or an equivalence reply
without a verdict, under the house parse) leaves the question unjudged (``status="error"``), is never cached, and
is asked again on resume; upstream would have crashed (``int("0.5")``) or counted it.

What a verdict holds: ``score`` is the question's BEAM score (:func:`om_eval.bench.beam.question_score`: the rubric
score under ``beam.rounding``, or ``tau_norm`` for event ordering, NaN where tau-b is undefined); ``label`` is true
when every rubric item got full marks (a strict pass, shown beside the score, never instead of it); ``reply`` is
JSON of every item's score and reason and, for event ordering, the aligned list and its metrics.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from om_eval.bench.beam import EVENT_ORDERING, ROUNDINGS, alignment, ordering_metrics, question_score
from om_eval.bench.judging.beam_templates import PINNED_RUBRIC_SHA256, BeamTemplates, load_beam_templates
from om_eval.bench.judging.judge import JudgeClient, JudgeResult, judge_model_settings, parse_verdict
from om_eval.data.records import Question
from om_eval.llm.client import LLMCallError, build_request
from om_eval.om.config import ConfigError, ModelSettings

__all__ = ["BEAM_JUDGE_SETTINGS", "HOUSE_EQUIVALENCE", "HOUSE_RUBRIC", "HOUSE_RUBRIC_ID", "RUBRIC_MIN_TOKENS",
           "RubricJudge", "house_templates", "is_beam_judge_model", "parse_item_score"]

HOUSE_RUBRIC_ID = "beam-house-v1"
#: Our rubric prompt; ``{question}``, ``{criterion}`` and ``{response}`` are filled in one pass.
HOUSE_RUBRIC = (
    "You are scoring one reply of a chat assistant against one criterion of a rubric.\n\n"
    "Give 1 when the reply fully meets the criterion, 0.5 when it meets it only in part (something missing or "
    "slightly off), and 0 when it does not meet it, or when the reply does not take up the user's question at all. "
    "A criterion that forbids something is met only by a reply that takes up the question and leaves that thing "
    "out. Judge meaning, not wording: a paraphrase counts, and so do numbers, dates and amounts written another way. "
    "Tone, length and politeness do not count unless the criterion asks for a form.\n\n"
    "### Question\n{question}\n\n### Criterion\n{criterion}\n\n### Reply to score\n{response}\n\n"
    "### Your answer\nOne JSON object and nothing else, for example {\"score\": 0.5, \"reason\": \"...\"}."
)
#: Our equivalence messages: a system message with the rule, a user message with the two snippets.
HOUSE_EQUIVALENCE = (
    "You compare two short snippets from a conversation's history. Reply yes when both describe the same event "
    "or fact, and no when they do not. Reply with that one word.",
    "### Snippet A\n{reference}\n\n### Snippet B\n{system}",
)
RUBRIC_MIN_TOKENS = 1024
"""A rubric reply carries its reasoning: a judge model capped lower (LongMemEval's judge has 10 tokens) is given this
many for rubric calls."""
BEAM_JUDGE_SETTINGS = ModelSettings(model="openai/gpt-4.1-mini", temperature=0.0, max_output_tokens=None,
                                    provider_options={})
"""Upstream's judge: ``gpt-4.1-mini`` at temperature 0, no output cap (``src/llm.py``)."""
def is_beam_judge_model(model: str) -> bool:
    """Upstream's judge model, whichever provider routes it (``openai/gpt-4.1-mini``, ``azure/gpt-4.1-mini``)."""
    return model.split("/")[-1] == BEAM_JUDGE_SETTINGS.model.split("/")[-1]


_FENCE = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.DOTALL)
_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)
_SCORES = (0.0, 0.5, 1.0)


def house_templates() -> BeamTemplates:
    digest = hashlib.sha256(json.dumps({"id": HOUSE_RUBRIC_ID, "rubric": HOUSE_RUBRIC,
                                        "equivalence": HOUSE_EQUIVALENCE}, sort_keys=True).encode()).hexdigest()
    return BeamTemplates(HOUSE_RUBRIC, HOUSE_EQUIVALENCE, digest)


def parse_item_score(reply: str) -> tuple[float, str] | None:
    """``(score, reason)`` from a rubric reply (a JSON object, fenced or not, or the first object in the text), or
    ``None`` when it holds no score of 0, 0.5 or 1 (numbers or their text)."""
    text = reply.strip()
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text] + _OBJECT.findall(text)
    for candidate in candidates:
        try:
            found = json.loads(candidate)
        except (json.JSONDecodeError, ValueError):
            continue
        if not isinstance(found, Mapping) or "score" not in found or isinstance(found["score"], bool):
            continue
        try:
            score = float(found["score"])
        except (TypeError, ValueError):
            return None
        if score not in _SCORES:
            return None
        reason = found.get("reason")
        return score, reason if isinstance(reason, str) else ""
    return None


def _no_score(reply: str) -> str | None:
    return None if parse_item_score(reply) is not None else "no score of 0, 0.5 or 1 in a JSON object"


def _no_equivalence(reply: str) -> str | None:
    return None if parse_verdict(reply, "mastra") is not None else "does not open with yes or no"


class _Unscored(Exception):
    """A judge reply that holds no score or verdict: the question stays unjudged."""


@dataclass(frozen=True)
class RubricJudge:
    """BEAM's judge: which templates, model and rounding score answers.

    Attributes:
        mode: ``house`` (ours) or ``official`` (upstream's, :func:`om_eval.bench.judging.beam_templates.load`).
        model: the judge model's settings (rubric calls get at least :data:`RUBRIC_MIN_TOKENS` of output).
        rounding: ``upstream`` (item scores truncated for nine abilities) or ``exact``.
    """

    mode: str = "house"
    model: ModelSettings = BEAM_JUDGE_SETTINGS
    rounding: str = "upstream"
    templates: BeamTemplates = field(default_factory=house_templates)

    def __post_init__(self) -> None:
        if self.mode not in ("house", "official"):
            raise ConfigError(f"judge.mode={self.mode!r} cannot grade BEAM: use house or official")
        if self.rounding not in ROUNDINGS:
            raise ConfigError(f"beam.rounding={self.rounding!r} is invalid: use upstream (int() per item, as "
                              "published numbers were scored) or exact (halves kept)")
        if (self.mode == "official") != self.templates.upstream:
            raise ValueError("official mode reads upstream's templates; house mode uses ours")
        self.model.validate("judge.model")

    @classmethod
    def house(cls, *, model: ModelSettings | str = BEAM_JUDGE_SETTINGS, rounding: str = "upstream") -> RubricJudge:
        return cls("house", judge_model_settings(model), rounding)

    @classmethod
    def official(cls, source: str | None = None, *, model: ModelSettings | str = BEAM_JUDGE_SETTINGS,
                 rounding: str = "upstream") -> RubricJudge:
        return cls("official", judge_model_settings(model), rounding, load_beam_templates(source))

    @property
    def call_scope(self) -> dict[str, str]:
        """What makes two judges' replies differ (the cache scope of its calls; rounding is applied after)."""
        return {"mode": f"beam-{self.mode}", "template_sha256": self.templates.sha256, "model": self.model.model}

    @property
    def identity(self) -> dict[str, str]:
        """Everything that makes two judges' scores differ."""
        return {**self.call_scope, "rounding": self.rounding}

    @property
    def is_official(self) -> bool:
        """Upstream's pinned templates, its judge model at temperature 0, and its rounding."""
        return (self.templates.upstream and self.templates.sha256 == PINNED_RUBRIC_SHA256
                and is_beam_judge_model(self.model.model) and self.model.temperature == 0.0
                and self.rounding == "upstream")

    def _rubric_request(self, question: Question, criterion: str, response: str) -> Any:
        cap = self.model.max_output_tokens
        params = {"max_tokens": RUBRIC_MIN_TOKENS} if cap is not None and cap < RUBRIC_MIN_TOKENS else None
        prompt = self.templates.rubric_prompt(question.question, criterion, response)
        return build_request([{"role": "user", "content": prompt}], self.model, params=params)

    async def _item(self, client: JudgeClient, question: Question, criterion: str,
                    response: str) -> tuple[float, str]:
        reply = await client.call(self._rubric_request(question, criterion, response), stage="judge",
                                  scope=self.call_scope, check=_no_score)
        parsed = parse_item_score(reply.text)
        if parsed is None:  # refused by the check: returned, never cached
            raise _Unscored(f"the judge ({self.model.model}) gave no score of 0, 0.5 or 1 for criterion "
                            f"{criterion[:80]!r}: {reply.text[:200]!r}; not scored, and not cached")
        return parsed

    async def _same(self, client: JudgeClient, reference: str, system: str) -> bool:
        request = build_request(self.templates.equivalence_messages(reference, system), self.model)
        if self.templates.upstream:  # upstream's parse: 'yes' anywhere in the reply
            reply = await client.call(request, stage="judge", scope=self.call_scope)
            return "yes" in reply.text.lower()
        reply = await client.call(request, stage="judge", scope=self.call_scope, check=_no_equivalence)
        same = parse_verdict(reply.text, "mastra")
        if same is None:
            raise _Unscored(f"the equivalence judge ({self.model.model}) gave no yes or no: {reply.text[:200]!r}; "
                            "not cached")
        return same

    async def _align(self, client: JudgeClient, reference: Sequence[str], system: Sequence[str]) -> list[str]:
        """:func:`om_eval.bench.beam.alignment` with the equivalence judge, one call at a time (each depends on
        which reference items are already used)."""
        steps = alignment(reference, system)
        try:
            pair = next(steps)
            while True:
                pair = steps.send(await self._same(client, *pair))
        except StopIteration as done:
            return list(done.value)

    async def grade(self, client: JudgeClient, question: Question, hypothesis: str) -> JudgeResult:
        """Score ``hypothesis``: every rubric item, and the ordering for event ordering (see the module docstring).
        A call that fails for good, or a reply without a score, leaves the question unjudged."""
        rubric = question.rubric
        if not rubric:
            raise ValueError(f"question {question.question_id} has no rubric: BEAM's judge scores against one")
        prompts = "\n\u241e\n".join(self.templates.rubric_prompt(question.question, c, hypothesis) for c in rubric)
        prompt_hash = hashlib.sha256(prompts.encode("utf-8")).hexdigest()
        try:
            # Every item's call runs to its end (and is recorded with the question) before a failure is reported.
            outcomes = await asyncio.gather(*(self._item(client, question, c, hypothesis) for c in rubric),
                                            return_exceptions=True)
            if failed := next((o for o in outcomes if isinstance(o, BaseException)), None):
                raise failed
            items = [o for o in outcomes if not isinstance(o, BaseException)]
            ordering: dict[str, float] | None = None
            canonical: list[str] = []
            if question.question_type == EVENT_ORDERING:
                lines = hypothesis.split("\n")  # blank lines included, as upstream splits
                canonical = await self._align(client, rubric, lines)
                ordering = ordering_metrics(rubric, canonical)
        except (LLMCallError, _Unscored) as error:
            return JudgeResult(None, "error", "", str(error), prompt_hash, question.question_id)
        scores = [s for s, _ in items]
        score = question_score(question.question_type, scores, ordering, self.rounding)
        detail: dict[str, Any] = {
            "items": [{"criterion": c, "score": s, "reason": r} for c, (s, r) in zip(rubric, items, strict=True)],
            "rounding": self.rounding, "score": None if math.isnan(score) else score}
        if ordering is not None:  # JSON has no NaN: an undefined tau is null
            detail["ordering"] = {**{k: None if math.isnan(v) else v for k, v in ordering.items()},
                                  "aligned": canonical}
        return JudgeResult(all(s == 1.0 for s in scores), "ok", json.dumps(detail, ensure_ascii=False), None,
                           prompt_hash, question.question_id, score=score)
