"""BEAM's judge: one call per rubric item, equivalence calls for event ordering, a reply without a score left
unjudged and uncached, upstream's templates read from a clone and filled as upstream fills them."""

from __future__ import annotations

import asyncio
import json
import math
import os
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from om_eval.bench.judging.beam_templates import BeamTemplateError, BeamTemplates, load_beam_templates
from om_eval.bench.judging.judge import judge_answer
from om_eval.bench.judging.rubric import (
    HOUSE_RUBRIC,
    RUBRIC_MIN_TOKENS,
    RubricJudge,
    parse_item_score,
)
from om_eval.data.records import Question
from om_eval.om.config import ConfigError
from om_eval.om.model import ModelReply
from om_eval.testing.scripted.model import ScriptedModel

UPSTREAM = os.environ.get("BEAM_UPSTREAM_DIR")


def _question(ability: str, rubric: tuple[str, ...]) -> Question:
    moment = datetime(2024, 5, 3)
    return Question(f"beam_100K_1_{ability}_0", ability, "What did I say?", "ideal", moment, "2024/05/03 (Fri) 00:00",
                    (), (), haystack_id="beam_100K_1", rubric=rubric)


class Client:
    """Answers rubric calls from a table (criterion -> reply) and equivalence calls by first letters; records
    every request and whether its reply passed the check."""

    def __init__(self, scores: dict[str, str]) -> None:
        self.scores = scores
        self.requests: list[Any] = []
        self.refused: list[str] = []

    async def call(self, request: Any, *, stage: str, scope: Any = None, check: Any = None) -> ModelReply:
        assert stage == "judge" and scope["mode"].startswith("beam-") and "rounding" not in scope
        self.requests.append(request)
        messages = request.messages
        if len(messages) == 2:  # equivalence: snippet A (reference) and B (system)
            text = messages[1]["content"]
            first, second = text.split("### Snippet B\n")
            reply = "yes" if first.split("\n")[1][:1].lower() == second[:1].lower() else "no"
        else:
            prompt = messages[0]["content"]
            criterion = prompt.split("### Criterion\n")[1].split("\n")[0]
            reply = self.scores[criterion]
        if check is not None and check(reply) is not None:
            self.refused.append(reply)
        return ModelReply(reply, "judge")


def test_each_item_is_one_call_and_halves_truncate_under_upstream_rounding() -> None:
    question = _question("knowledge_update", ("states 250ms", "mentions caching"))
    client = Client({"states 250ms": '{"score": 1.0, "reason": "ok"}',
                     "mentions caching": '```json\n{"score": 0.5, "reason": "partly"}\n```'})
    upstream = asyncio.run(judge_answer(RubricJudge.house(model="scripted/x"), client, question, "250ms"))
    assert upstream.status == "ok" and upstream.score == 0.5 and upstream.label is False
    assert len(client.requests) == 2
    detail = json.loads(upstream.reply)
    assert [i["score"] for i in detail["items"]] == [1.0, 0.5] and detail["rounding"] == "upstream"
    exact = asyncio.run(judge_answer(RubricJudge.house(model="scripted/x", rounding="exact"), client, question,
                                     "250ms"))
    assert exact.score == 0.75


def test_a_reply_without_a_score_leaves_the_question_unjudged_and_is_refused_by_the_check() -> None:
    question = _question("abstention", ("declines",))
    client = Client({"declines": "I think it is fine."})
    result = asyncio.run(judge_answer(RubricJudge.house(model="scripted/x"), client, question, "no idea"))
    assert result.status == "error" and result.label is None and result.score is None
    assert "no score of 0, 0.5 or 1" in str(result.error) and client.refused == ["I think it is fine."]


@pytest.mark.parametrize(("reply", "parsed"), [
    ('{"score": 1, "reason": "r"}', (1.0, "r")), ('{"score": "0.5"}', (0.5, "")),
    ('Here: {"score": 0.0, "reason": "x"} done', (0.0, "x")), ('{"score": 0.7}', None), ('{"score": true}', None),
    ("score: 1", None),
])
def test_item_scores_are_0_half_or_1(reply: str, parsed: tuple[float, str] | None) -> None:
    assert parse_item_score(reply) == parsed


def test_event_ordering_aligns_the_answers_lines_and_scores_tau_norm() -> None:
    question = _question("event_ordering", ("alpha step", "beta step", "gamma step"))
    client = Client({c: '{"score": 1, "reason": "r"}' for c in question.rubric or ()})
    result = asyncio.run(judge_answer(RubricJudge.house(model="scripted/x"), client, question,
                                      "gamma first\n\nalpha next\nbeta last"))
    ordering = json.loads(result.reply)["ordering"]
    assert ordering["aligned"] == ["gamma step", "", "alpha step", "beta step"]
    assert result.score == ordering["tau_norm"] and 0 < result.score < 1 and result.label is True
    equivalence = [r for r in client.requests if len(r.messages) == 2]
    assert len(equivalence) == 3 + 2 + 1 + 1  # each line tries the unused reference items in order


def test_an_ordering_whose_ranks_are_constant_scores_nan_as_upstream_does() -> None:
    question = _question("event_ordering", ("alpha step",))  # one event, named: both rank vectors are [1]
    client = Client({c: '{"score": 0, "reason": "r"}' for c in question.rubric or ()})
    result = asyncio.run(judge_answer(RubricJudge.house(model="scripted/x"), client, question, "alpha"))
    assert result.status == "ok" and result.score is not None and math.isnan(result.score)
    assert json.loads(result.reply)["score"] is None


def test_a_judge_capped_for_yes_or_no_gets_room_for_its_reasoning() -> None:
    question = _question("summarization", ("covers the sprint",))
    client = Client({"covers the sprint": '{"score": 1}'})
    capped = RubricJudge.house(model="gpt-4o-judge")  # LongMemEval's judge: 10 tokens
    asyncio.run(judge_answer(capped, client, question, "sprint"))
    assert client.requests[0].params["max_tokens"] == RUBRIC_MIN_TOKENS


def test_rounding_and_mode_are_checked() -> None:
    with pytest.raises(ConfigError, match="beam.rounding='floor' is invalid"):
        RubricJudge.house(model="scripted/x", rounding="floor")
    with pytest.raises(ConfigError, match="cannot grade BEAM"):
        RubricJudge("lenient")


def test_the_scripted_model_answers_both_house_judges() -> None:
    model = ScriptedModel()
    prompt = HOUSE_RUBRIC.replace("{question}", "When?").replace("{criterion}", "LLM response should state: March 29")
    def score(response: str) -> float:
        return json.loads(model.reply([{"role": "user", "content": prompt.replace("{response}", response)}]).text)[
            "score"]

    assert (score("It ends March 29."), score("I do not know.")) == (1, 0)
    templates = RubricJudge.house(model="scripted/x").templates
    same = model.reply(templates.equivalence_messages("added the notes column", "I added a notes column")).text
    other = model.reply(templates.equivalence_messages("added the notes column", "the API got faster")).text
    assert (same, other) == ("yes", "no")


def test_upstream_templates_fill_two_slots_in_turn_and_leave_the_question_slot() -> None:
    templates = BeamTemplates("Q: <question>\nC: <rubric_item>\nR: <llm_response>",
                              ("sys", "A {reference} B {system}"), "sha", upstream=True)
    assert templates.rubric_prompt("When?", "has <llm_response>", "it") == "Q: <question>\nC: has it\nR: it"
    assert templates.equivalence_messages("x", "{system}")[1]["content"] == "A x B {system}"


def test_a_clone_without_the_files_is_refused_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(BeamTemplateError, match=r"without src/prompts.py: pass a clone of mohammadtavakoli78/BEAM"):
        load_beam_templates(str(tmp_path))
    (tmp_path / "src" / "evaluation").mkdir(parents=True)
    (tmp_path / "src" / "prompts.py").write_text("unified_llm_judge_base_prompt = 'x'\n")
    (tmp_path / "src" / "evaluation" / "compute_metrics.py").write_text("")
    with pytest.raises(BeamTemplateError, match=r"prompts.py: sha256 [0-9a-f]+ differs from the pinned"):
        load_beam_templates(str(tmp_path))


@pytest.mark.skipif(not UPSTREAM, reason="set BEAM_UPSTREAM_DIR to a clone of mohammadtavakoli78/BEAM (b2a3ee8)")
def test_upstream_templates_load_from_a_clone_and_make_the_judge_official() -> None:
    judge = RubricJudge.official(UPSTREAM, model="openai/gpt-4.1-mini")
    assert judge.is_official and not replace(judge, rounding="exact").is_official
    prompt = judge.templates.rubric_prompt("When?", "CRITERION-X", "RESPONSE-Y")
    assert "CRITERION-X" in prompt and "RESPONSE-Y" in prompt and "<question>" in prompt
    _, user = judge.templates.equivalence_messages("REF-A", "SYS-B")
    assert user["content"].index("REF-A") < user["content"].index("SYS-B")
