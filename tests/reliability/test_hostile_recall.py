"""Hostile recall calls (fault drill "No silent wrong result", third pass, item 2): every one is a tool error the
model reads, and the question completes, on the first run and on a resume that is served the cached reply.

Before, on the mini set in retrieval mode (``om.retrieval=resource``), with the scripted actor's hostile faults
(:mod:`om_eval.testing.scripted.recall`):

* ``{"page": 10**400}`` raised ``OverflowError`` in the schema check, ``mode`` nested 900 deep a ``RecursionError``
  in printing the arguments back, a 100,000-deep array a ``RecursionError`` in ``json.loads``. None reached the model
  (the actor caught only ``ValueError``/``RecallError``), the question failed, and since the actor reply that asked
  was cached, a resume with a healthy model failed it again;
* a 20,000-character range cursor came back four times (three in the range hint, once as ``cursor``): the follow-up
  request grew from about 2,200 to 15,300 tokens here (90k to 196k tokens on a real prompt);
* a reply of 10,000 calls got 9,992 budget errors, one per call. The follow-up was 2.8 million characters (912,000
  tokens here, 2.5 million on a real prompt), because the budget counted calls, not size.

After: arguments past :mod:`om_eval.om.recall.limits` are refused before the tool runs, any exception on a call is
that call's error, and a reply's calls past the budget are answered by one error. Each question completes with the
clean run's answer, and no request grows past twice the largest one of a clean run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from om_eval.bench.pipeline import unpack_messages
from om_eval.llm.providers import register_scripted
from om_eval.om.js.tokenx import estimate_tokens
from om_eval.om.model import ModelReply
from om_eval.testing.scripted.model import ScriptedModel
from om_eval.testing.scripted.recall import FLOOD_CALLS
from tests.reliability.harness import (
    Outcome,
    assert_calls_accounted,
    assert_consistent,
    assert_errors_listed,
    assert_matches,
    invoke,
    outcome,
    query,
)

RETRIEVAL = ("om.retrieval=resource",)

#: fault -> (the error of the question's last recall step, a phrase of the result the model read for it, its steps)
HOSTILE = {
    "tool_huge_page": ("bad_arguments", "page must be a whole number between -50 and 50", 1),
    "tool_deep_mode": ("bad_arguments", "nest more than 32 levels deep", 1),
    "tool_deep_array": ("bad_arguments", "200,000 characters long; at most 4,000 are read", 1),
    "tool_long_cursor": ("bad_arguments", "20,013 characters long; at most 4,000 are read", 1),
    "tool_flood": ("budget", f"({FLOOD_CALLS - 9:,} more calls in this reply were not run)", 9),
}
#: The faults that raised before the fix (and so failed the question on every resume).
RAISED = ("tool_huge_page", "tool_deep_mode", "tool_deep_array")


@dataclass
class MeasuredModel(ScriptedModel):
    """The scripted model, noting the size (tokenx tokens of its JSON) of every request that offers a tool."""

    sizes: list[int] = field(default_factory=list, init=False, repr=False, compare=False)

    def reply(self, messages: Sequence[Any], *, stage: str | None = None, model: str | None = None,
              tools: Sequence[Mapping[str, Any]] | None = None) -> ModelReply:
        if tools:
            self.sizes.append(estimate_tokens(json.dumps(list(messages), ensure_ascii=False)))
        return super().reply(messages, stage=stage, model=model, tools=tools)


@pytest.fixture(scope="module")
def clean_largest_request(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The largest actor request of a clean retrieval run, in tokens."""
    model = MeasuredModel(history=0)
    done = invoke(tmp_path_factory.mktemp("clean"), *RETRIEVAL,
                  f"models.actor.model={register_scripted('hostile-clean', model)}")
    assert done.code == 0, done.output[-2000:]
    return max(model.sizes)


def refused_steps(results: Path) -> list[dict[str, Any]]:
    """The recall steps of the one question that met the hostile reply (the only one with a refused call), each
    with the result the model read for it."""
    found = []
    for row in query(results, "SELECT recall_steps, actor_prompt FROM items WHERE status = 'done'"):
        steps = json.loads(row["recall_steps"] or "[]")
        if any(step["error"] for step in steps):
            messages = unpack_messages(row["actor_prompt"]) or []
            results_by_id = {m.get("tool_call_id"): m.get("content") for m in messages if m["role"] == "tool"}
            found.append([{**step, "result": results_by_id.get(step["call_id"])} for step in steps])
    assert len(found) == 1, f"one question should have met the hostile reply, found {len(found)}"
    return found[0]


@pytest.mark.parametrize("fault", list(HOSTILE))
def test_a_hostile_call_is_a_tool_error_and_the_question_completes(
    tmp_path: Path, reference: Callable[..., Outcome], clean_largest_request: int, fault: str
) -> None:
    error, phrase, count = HOSTILE[fault]
    model = MeasuredModel(faults={"actor": [fault]}, history=0)
    name = f"hostile-{fault}"
    done = invoke(tmp_path, *RETRIEVAL, f"models.actor.model={register_scripted(name, model)}")

    assert done.code == 0, done.output[-3000:]
    assert_consistent(tmp_path)
    assert_matches(outcome(tmp_path), reference(*RETRIEVAL))
    steps = refused_steps(tmp_path)
    assert len(steps) == count and [s["error"] for s in steps] == [None] * (count - 1) + [error], steps
    assert phrase in steps[-1]["result"], steps[-1]["result"]
    assert all(len(step["arguments"]) <= 4_100 for step in steps) and len(steps[-1]["result"]) <= 1_000, steps[-1]
    assert max(model.sizes) <= 2 * clean_largest_request, (max(model.sizes), clean_largest_request)
    assert_calls_accounted(tmp_path, name, [model])


@pytest.mark.parametrize("fault", RAISED)
def test_a_cached_hostile_reply_does_not_fail_the_question_on_resume(
    tmp_path: Path, reference: Callable[..., Outcome], fault: str
) -> None:
    """The hostile reply is cached; the round after it fails (a 400), so the question is retried on resume. The
    resumed run is served the cached hostile reply, reads the same tool error, and completes the question."""
    name = f"hostile-resume-{fault}"
    broken = ScriptedModel(faults={"actor": [fault], "recall": ["bad_request"]}, history=None)
    command = (*RETRIEVAL, f"models.actor.model={register_scripted(name, broken)}")
    first = invoke(tmp_path, *command)
    failed = {q for q, (status, _, _) in outcome(tmp_path).items() if status != "done"}
    assert len(failed) == 1, f"one question should fail, found {failed}"
    assert_errors_listed(tmp_path, first, failed)
    (row,) = query(tmp_path, "SELECT error FROM items WHERE status = 'error'")
    assert "400" in row["error"] or "bad_request" in row["error"], row["error"]

    healthy = ScriptedModel(history=None)
    register_scripted(name, healthy)
    second = invoke(tmp_path, *command)
    assert second.code == 0 and "6 already done, 1 answered, 0 errors" in second.flat, second.output[-2000:]
    assert_consistent(tmp_path)
    assert_matches(outcome(tmp_path), reference(*RETRIEVAL))
    (question,) = failed
    served = query(tmp_path, "SELECT cached FROM llm_calls WHERE question_id = ? AND stage = 'actor' AND error IS NULL "
                             "ORDER BY seq", [question])
    assert served and served[-1]["cached"], "the resumed question should be served the cached hostile reply"
    assert refused_steps(tmp_path)[0]["error"] == "bad_arguments"
    assert_calls_accounted(tmp_path, name, [broken, healthy])
