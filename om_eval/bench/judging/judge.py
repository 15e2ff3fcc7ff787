"""Judge answers the way LongMemEval does: per-type yes/no prompts, one user message, a yes-parse.

Two template sets:

* ``official``: the upstream ``get_anscheck_prompt`` of ``src/evaluation/evaluate_qa.py`` at the pinned commit,
  loaded at run time (our repository ships no copy of its text; :mod:`om_eval.bench.judging.official_templates`).
* ``house``: our own wording of the same per-type rules (longmemeval-reference §2.1), for offline work. Scores
  made with it are not official scores.

Why the judge identity is the cache scope: a cached grade is only valid for the judge that gave it. Re-judging
with another template set, model or parse rule must miss the cache (hyperdx PR#2710 served the old judge's
grades), so :attr:`Judge.identity` goes into every judge call's cache key next to the request itself.

Why errors are states: a judge call that fails for good yields ``status="error"`` and ``label=None``, never
"wrong"; the metrics report both the graded accuracy (errors left out, as upstream never writes them) and the
strict one (errors counted wrong). So does a reply that holds no verdict at all (empty, cut off, or neither yes
nor no; see :func:`parse_verdict`): upstream's ``'yes' in reply`` would have scored it "wrong". Such a reply is
never cached, so re-judging asks the model again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from om_eval.bench.benchmark import house_route
from om_eval.bench.judging.official_templates import (
    PINNED_COMMIT,
    PINNED_SHA256,
    OfficialTemplateError,
    OfficialTemplates,
    TemplateHashMismatch,
    load_official_prompt_builder,
    load_official_templates,
)
from om_eval.data.records import QUESTION_TYPES, Question
from om_eval.llm.client import LLMCallError, build_request
from om_eval.llm.request import LLMRequest
from om_eval.om.config import ConfigError, ModelSettings
from om_eval.om.model import ChatModel, ModelReply, ReplyCheck

__all__ = [
    "HOUSE_TEMPLATES",
    "HOUSE_TEMPLATES_ID",
    "HOUSE_TEMPLATES_SHA256",
    "LENIENT_TEMPLATES",
    "LENIENT_TEMPLATES_SHA256",
    "OFFICIAL_JUDGE_MODEL",
    "OFFICIAL_JUDGE_SETTINGS",
    "PINNED_COMMIT",
    "PINNED_SHA256",
    "AnswerAndJudgeClient",
    "Judge",
    "JudgeClient",
    "JudgeResult",
    "OfficialTemplateError",
    "OfficialTemplates",
    "TemplateHashMismatch",
    "house_prompt",
    "judge_answer",
    "judge_many",
    "load_official_prompt_builder",
    "load_official_templates",
    "parse_label",
    "parse_verdict",
    "template_set_sha256",
]

Mode = Literal["official", "house", "lenient"]
ParseRule = Literal["official", "mastra"]
NoVerdict = Literal["error", "wrong"]

# -------------------------------------------------------------------------------------------- house templates

HOUSE_TEMPLATES_ID = "house-v1"
_SLOTS = "\n\nQuestion: {question}\n\n{label}: {answer}\n\nResponse: {response}\n\n"
_SAME = "Does the response agree with the reference answer? Reply with yes or no and nothing else."
_GRADING = (
    "You are grading a chat assistant's reply. You get a question, the reference answer and the assistant's "
    "response. Reply yes when the response states the reference answer, says something equivalent, or works "
    "through every step that leads to it. Reply no when it is wrong, or when it gives only part of what the "
    "reference answer requires."
)
#: Our own wording of the per-type rules; each is filled with ``str.format`` semantics like upstream's.
HOUSE_TEMPLATES: Mapping[str, str] = {
    "answer": _GRADING + _SLOTS.replace("{label}", "Reference answer") + _SAME,
    "temporal": _GRADING + " Counts of days, weeks, months and similar units may be off by one without penalty: "
    "answering 31 days when the reference says 30 still counts as correct."
    + _SLOTS.replace("{label}", "Reference answer") + _SAME,
    "update": (
        "You are grading a chat assistant's reply. You get a question, the reference answer and the assistant's "
        "response. The reference is the latest value of something that changed over time. Reply yes when the "
        "response gives the reference answer as the current one; mentioning older values as well is fine. "
        "Otherwise reply no."
    ) + _SLOTS.replace("{label}", "Reference answer") + _SAME,
    "preference": (
        "You are grading a personalised reply from a chat assistant. You get a question, a rubric describing a "
        "good personalised reply and the assistant's response. Reply yes when the response meets the rubric's "
        "intent: it need not cover every point, but it must remember the user's own details and put them to "
        "correct use. Otherwise reply no."
    ) + _SLOTS.replace("{label}", "Rubric")
    + "Does the response meet the rubric? Reply with yes or no and nothing else.",
    "abstention": (
        "You are grading a chat assistant on a question that cannot be answered from what it was told. You get "
        "the question, a note on why it cannot be answered and the assistant's response. Reply yes when the "
        "response recognises that it cannot answer, for example by saying it lacks the information or that it "
        "knows related details but not the one asked about. Reply no when it answers as if it knew."
    ) + _SLOTS.replace("{label}", "Why it cannot be answered")
    + "Does the response recognise that the question cannot be answered? Reply with yes or no and nothing else.",
}
#: Which house template each question type uses (abstention questions use ``abstention`` whatever the type).
HOUSE_ROUTES: Mapping[str, str] = {
    "single-session-user": "answer",
    "single-session-assistant": "answer",
    "multi-session": "answer",
    "temporal-reasoning": "temporal",
    "knowledge-update": "update",
    "single-session-preference": "preference",
}
HOUSE_TEMPLATES_SHA256 = hashlib.sha256(
    json.dumps({"id": HOUSE_TEMPLATES_ID, "templates": HOUSE_TEMPLATES, "routes": HOUSE_ROUTES},
               sort_keys=True, ensure_ascii=False).encode("utf-8")
).hexdigest()
"""Identity of the whole house template set (texts and routing)."""

LENIENT_TEMPLATES_ID = "lenient-v1"
_LENIENT = (
    "You are checking a chat assistant's reply against a reference answer. Give the benefit of the doubt: reply "
    "yes when the response is about the same thing as the reference answer and does not plainly contradict it, "
    "even if it is partial, approximate or loosely worded. Reply no only when the response is clearly wrong or "
    "does not address the question."
) + _SLOTS.replace("{label}", "Reference answer") + _SAME
#: A deliberately forgiving judge in our words, for the judge panel: how far a score moves when the judge
#: accepts near misses. It routes like the house set, so every house route name has a template.
LENIENT_TEMPLATES: Mapping[str, str] = {
    "answer": _LENIENT,
    "temporal": _LENIENT,
    "update": _LENIENT,
    "preference": (
        "You are checking a personalised reply from a chat assistant against a rubric. Give the benefit of the "
        "doubt: reply yes when the response is on the rubric's topic and fits the user in a general way. Reply "
        "no only when it ignores the user or goes against the rubric."
    ) + _SLOTS.replace("{label}", "Rubric")
    + "Does the response meet the rubric? Reply with yes or no and nothing else.",
    "abstention": (
        "You are checking a chat assistant's reply to a question that cannot be answered from what it was told. "
        "You get the question, a note on why it cannot be answered and the response. Reply yes when the response "
        "shows any doubt, hedges, or says it lacks some of the details; reply no only when it answers with full "
        "confidence as if it knew."
    ) + _SLOTS.replace("{label}", "Why it cannot be answered")
    + "Does the response recognise that the question cannot be answered? Reply with yes or no and nothing else.",
}
LENIENT_TEMPLATES_SHA256 = hashlib.sha256(
    json.dumps({"id": LENIENT_TEMPLATES_ID, "templates": LENIENT_TEMPLATES, "routes": HOUSE_ROUTES},
               sort_keys=True, ensure_ascii=False).encode("utf-8")
).hexdigest()
"""Identity of the lenient template set."""
#: Our own template sets by ``judge.mode``, with their identities.
OWN_TEMPLATE_SETS: Mapping[str, tuple[Mapping[str, str], str]] = {
    "house": (HOUSE_TEMPLATES, HOUSE_TEMPLATES_SHA256),
    "lenient": (LENIENT_TEMPLATES, LENIENT_TEMPLATES_SHA256),
}


def template_set_sha256(mode: str) -> str:
    """The identity of the template set ``judge.mode`` names (the pinned upstream file's for ``official``)."""
    return PINNED_SHA256 if mode == "official" else OWN_TEMPLATE_SETS[mode][1]


def house_template_name(task: str, abstention: bool = False) -> str:
    """The house template a (type, abstention) pair uses."""
    if abstention:
        return "abstention"
    route = HOUSE_ROUTES.get(task) or house_route(task)  # another benchmark's categories route themselves
    if route is None:
        raise ValueError(f"unknown question type {task!r}; known: {', '.join(QUESTION_TYPES)}, or a category of a "
                         "benchmark defined in om_eval/bench/")
    return route


def house_prompt(task: str, question: str, answer: Any, response: str, abstention: bool = False, *,
                 templates: Mapping[str, str] = HOUSE_TEMPLATES) -> str:
    """The house judge prompt (or another of our template sets'); same signature and routing as the upstream
    builder."""
    template = templates[house_template_name(task, abstention)]
    return template.format(question=question, answer=answer, response=response)


# ---------------------------------------------------------------------------------------------------- judge

OFFICIAL_JUDGE_MODEL = "gpt-4o-2024-08-06"
OFFICIAL_JUDGE_SETTINGS = ModelSettings(
    model=f"openai/{OFFICIAL_JUDGE_MODEL}", temperature=0.0, max_output_tokens=10, provider_options={}
)
"""As ``om_eval/configs/model/gpt-4o-judge.yaml``: the official judge, temperature 0, at most 10 tokens."""


_FIRST_WORD = re.compile(r"^[^a-z0-9]*([a-z0-9]+)")
_LAST_WORD = re.compile(r"([a-z0-9]+)[^a-z0-9]*$")
_VERDICTS = ("yes", "no")


def parse_verdict(reply: str, rule: ParseRule = "official") -> bool | None:
    """The label of a judge reply, or ``None`` when the reply holds no verdict for ``rule`` to read.

    Replies that do hold one get exactly :func:`parse_label`'s (upstream's) answer, quirks included. No verdict:

    * ``official`` reads ``yes`` anywhere in the reply, so the reply must open or close with ``yes`` or ``no``:
      empty, cut-off or off-format replies ("Correct.", "Yesterday...") have none, and upstream would have
      scored them "wrong". A "no" inside a sentence ("there is no date in the response") is not a verdict
      either: counting it would score a reply that never answered as a wrong answer.
    * ``mastra`` reads only the opening of the reply, so its first word must be ``yes`` or ``no``.
    """
    text = reply.strip().lower()
    first = _FIRST_WORD.match(text)
    opens = first is not None and first.group(1) in _VERDICTS
    if rule == "official":
        last = _LAST_WORD.search(text)
        present = opens or (last is not None and last.group(1) in _VERDICTS)
    elif rule == "mastra":
        present = opens
    else:
        raise ValueError(f"unknown parse rule {rule!r}; use 'official' or 'mastra'")
    return parse_label(reply, rule) if present else None


def _no_verdict(reply: str, rule: ParseRule) -> str | None:
    """Why ``reply`` holds no verdict for ``rule``, or ``None`` when it holds one."""
    if parse_verdict(reply, rule) is not None:
        return None
    if not reply.strip():
        return "empty reply"
    return "does not open or close with 'yes' or 'no'" if rule == "official" else "does not open with 'yes' or 'no'"


def parse_label(reply: str, rule: ParseRule = "official") -> bool:
    """Turn a judge reply into a label (upstream's rules; use :func:`parse_verdict` to tell "no verdict" apart).

    ``official``: ``'yes' in reply.strip().lower()`` (a substring test: "no, but yes" is yes).
    ``mastra``: the trimmed, lower-cased reply is exactly ``yes`` or starts with ``yes.`` (Mastra's port).
    """
    text = reply.strip().lower()
    if rule == "official":
        return "yes" in text
    if rule == "mastra":
        return text == "yes" or text.startswith("yes.")
    raise ValueError(f"unknown parse rule {rule!r}; use 'official' or 'mastra'")


def judge_model_settings(model: ModelSettings | str) -> ModelSettings:
    """Settings for a judge: a model config name (:mod:`om_eval.llm.models`) or a litellm id (temperature 0, at
    most 10 tokens)."""
    if isinstance(model, ModelSettings):
        return model
    from om_eval.llm.models import model_file, model_settings

    if model_file(model) is not None:
        return model_settings(model)
    return ModelSettings(model=model, temperature=0.0, max_output_tokens=10, provider_options={})


@dataclass(frozen=True)
class Judge:
    """Which templates, model and parse rule grade answers. Build with :meth:`official` or :meth:`house`.

    Attributes:
        mode: ``official`` (upstream templates) or ``house`` (ours).
        model: the judge model's settings (default: the official ``gpt-4o-2024-08-06``, temperature 0, 10 tokens).
        parse: ``official`` (``'yes' in reply``) or ``mastra`` (exactly ``yes`` or ``yes.``...).
        templates: the loaded upstream templates; required in ``official`` mode, absent in ``house`` mode.
        no_verdict: what a reply without a verdict is: ``error`` (om-eval: unjudged, retried on resume, never
            counted wrong) or ``wrong`` (Mastra's harness: anything but a yes is a wrong answer).
    """

    mode: Mode = "house"
    model: ModelSettings = OFFICIAL_JUDGE_SETTINGS
    parse: ParseRule = "official"
    templates: OfficialTemplates | None = None
    no_verdict: NoVerdict = "error"

    def __post_init__(self) -> None:
        if self.mode not in ("official", *OWN_TEMPLATE_SETS):
            raise ConfigError(f"judge.mode={self.mode!r} is invalid: use 'official', 'house' or 'lenient'")
        if self.parse not in ("official", "mastra"):
            raise ConfigError(f"judge.parse={self.parse!r} is invalid: use 'official' or 'mastra'")
        if self.no_verdict not in ("error", "wrong"):
            raise ConfigError(f"judge.no_verdict={self.no_verdict!r} is invalid: use 'error' or 'wrong'")
        if (self.mode == "official") != (self.templates is not None):
            raise ValueError("official mode needs loaded templates (Judge.official(...)); our own template sets "
                             "(house, lenient) take none")
        self.model.validate("judge.model")

    @classmethod
    def official(
        cls,
        source: str | os.PathLike[str] | OfficialTemplates | None = None,
        *,
        model: ModelSettings | str = OFFICIAL_JUDGE_SETTINGS,
        parse: ParseRule = "official",
        no_verdict: NoVerdict = "error",
        **load_options: Any,
    ) -> Judge:
        """A judge with the upstream templates (loaded as :func:`load_official_templates` does)."""
        templates = source if isinstance(source, OfficialTemplates) else load_official_templates(source, **load_options)
        return cls("official", judge_model_settings(model), parse, templates, no_verdict)

    @classmethod
    def house(cls, *, model: ModelSettings | str = OFFICIAL_JUDGE_SETTINGS, parse: ParseRule = "official",
              no_verdict: NoVerdict = "error") -> Judge:
        """A judge with our own templates (offline tests pass ``scripted/...`` or ``local/...``)."""
        return cls("house", judge_model_settings(model), parse, None, no_verdict)

    @classmethod
    def lenient(cls, *, model: ModelSettings | str = OFFICIAL_JUDGE_SETTINGS, parse: ParseRule = "official",
                no_verdict: NoVerdict = "error") -> Judge:
        """A deliberately forgiving judge in our words (:data:`LENIENT_TEMPLATES`), for the judge panel."""
        return cls("lenient", judge_model_settings(model), parse, None, no_verdict)

    @property
    def template_sha256(self) -> str:
        return self.templates.sha256 if self.templates is not None else template_set_sha256(self.mode)

    @property
    def identity(self) -> dict[str, str]:
        """Everything that makes two judges' grades differ; the cache scope of every judge call."""
        identity = {"mode": self.mode, "template_sha256": self.template_sha256, "model": self.model.model,
                    "parse": self.parse}
        if self.no_verdict != "error":  # only when set: judges made before it keep their identity and cache
            identity["no_verdict"] = self.no_verdict
        return identity

    @property
    def is_official(self) -> bool:
        """Pinned upstream templates, official parse and the official model at temperature 0, 10 tokens."""
        return (self.templates is not None and self.templates.pinned and self.parse == "official"
                and self.model == OFFICIAL_JUDGE_SETTINGS and self.no_verdict == "error")

    def prompt(self, task: str, question: str, answer: Any, response: str, abstention: bool = False) -> str:
        if self.templates is not None:
            return self.templates.builder(task, question, answer, response, abstention)
        return house_prompt(task, question, answer, response, abstention, templates=OWN_TEMPLATE_SETS[self.mode][0])

    def prompt_for(self, question: Question, hypothesis: str) -> str:
        """The prompt for one question (abstention routed by the question's flag, LongMemEval's ``_abs``; the
        answer as given, or the note the benchmark shows a judge instead, ``Question.judge_answer``)."""
        answer = question.answer if question.judge_answer is None else question.judge_answer
        return self.prompt(question.question_type, question.question, answer, hypothesis, question.is_abstention)


@dataclass(frozen=True)
class JudgeResult:
    """One grade. ``label`` is ``None`` exactly when ``status`` is ``error``."""

    label: bool | None
    status: Literal["ok", "error"]
    reply: str
    error: str | None
    prompt_hash: str
    """sha256 of the exact prompt sent."""
    question_id: str = ""
    cached: bool = False
    score: float | None = None
    """The question's score where a judge scores rather than labels (BEAM's rubric judge); NaN where undefined."""

    def as_row(self, question: Question, hypothesis: str) -> dict[str, Any]:
        """A row for :mod:`om_eval.bench.metrics` and the exports."""
        return {"question_id": question.question_id, "question_type": question.question_type,
                "hypothesis": hypothesis, "label": self.label, "status": self.status}


class JudgeClient(Protocol):
    """What judging needs of a client: a built request sent and its reply checked
    (:class:`~om_eval.llm.client.LLMClient` does)."""

    async def call(self, request: LLMRequest, *, stage: str, scope: Any = None,
                   check: ReplyCheck | None = None) -> ModelReply: ...


class AnswerAndJudgeClient(ChatModel, JudgeClient, Protocol):
    """A chat model that also sends built requests: one client to answer a question and judge the answer
    (:class:`~om_eval.llm.client.LLMClient` is one)."""


async def judge_answer(judge: Judge, client: JudgeClient, question: Question, hypothesis: str) -> JudgeResult:
    """Grade ``hypothesis`` for ``question``.

    A call that fails for good, or a reply with no verdict (:func:`parse_verdict`), gives ``status="error"`` and
    ``label=None``; such a reply is not cached. With ``judge.no_verdict == "wrong"`` a reply without a verdict is
    a wrong answer instead (Mastra's harness), and like any graded reply it is cached.
    """
    grade = getattr(judge, "grade", None)
    if grade is not None:  # a benchmark's own judge (BEAM's rubric judge) scores in its own way
        result: JudgeResult = await grade(client, question, hypothesis)
        return result
    prompt = judge.prompt_for(question, hypothesis)
    prompt_hash = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    request = build_request([{"role": "user", "content": prompt}], judge.model)

    def no_verdict(text: str) -> str | None:
        return _no_verdict(text, judge.parse)

    counted_wrong = judge.no_verdict == "wrong"
    try:
        reply = await client.call(request, stage="judge", scope=judge.identity,
                                  check=None if counted_wrong else no_verdict)
    except LLMCallError as error:
        return JudgeResult(None, "error", "", str(error), prompt_hash, question.question_id)
    label = parse_verdict(reply.text, judge.parse)
    if label is None and counted_wrong:
        return JudgeResult(False, "ok", reply.text, None, prompt_hash, question.question_id, reply.cached)
    if label is None:
        problem = (f"the judge ({judge.model.model}) gave no verdict ({no_verdict(reply.text)}) for question "
                   f"{question.question_id}: {reply.text[:200]!r}; not scored, and not cached")
        return JudgeResult(None, "error", reply.text, problem, prompt_hash, question.question_id, reply.cached)
    return JudgeResult(label, "ok", reply.text, None, prompt_hash, question.question_id, reply.cached)


async def judge_many(
    judge: Judge, client: JudgeClient, items: Iterable[tuple[Question, str]], *, concurrency: int = 8
) -> list[JudgeResult]:
    """Grade many ``(question, hypothesis)`` pairs, at most ``concurrency`` at a time; results in input order."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    gate = asyncio.Semaphore(concurrency)

    async def one(question: Question, hypothesis: str) -> JudgeResult:
        async with gate:
            return await judge_answer(judge, client, question, hypothesis)

    return list(await asyncio.gather(*(one(q, h) for q, h in items)))
