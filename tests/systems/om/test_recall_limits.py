"""The recall loop's bounds: whatever one call asks for, it is answered as a tool error of bounded size and the loop
goes on; a reply's calls past the budget are answered once; the budget counts tokens as well as calls."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

import om_eval.systems.om.recall as recall_module
from om_eval.bench.answer import answer_problem
from om_eval.bench.tool_loop import DEFAULT_BUDGET, DEFAULT_TOKEN_BUDGET, LoopResult, RecallLoopError
from om_eval.llm.client import LLMCallError
from om_eval.om.config import ModelSettings
from om_eval.om.js.tokenx import estimate_tokens
from om_eval.om.model import ModelReply, ToolCall
from om_eval.om.recall.limits import MAX_ARGUMENTS_CHARS, MAX_ECHO_CHARS, RESULT_TOKEN_CAP
from om_eval.om.recall.tool import result_json
from om_eval.om.tokens import make_counter
from om_eval.systems.om.answer import actor_messages
from om_eval.systems.om.recall import _prepare_search, run_recall_loop
from om_eval.testing.scripted.model import ScriptedModel
from tests.om.recall.test_tool import ask, history
from tests.systems.om.test_recall import SCRIPTED, haystack, setup

Plan = Callable[[int], Sequence[ToolCall]]


class PlannedActor:
    """An actor whose round ``n`` asks for ``plan(n)`` (no calls: it answers "Pebble")."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.requests: list[list[dict[str, Any]]] = []

    async def complete(self, messages: Sequence[Mapping[str, Any]], *, stage: str, settings: ModelSettings,
                       tools: Any = None) -> ModelReply:
        self.requests.append([dict(m) for m in messages])
        calls = tuple(self.plan(len(self.requests) - 1))
        return ModelReply("" if calls else "Pebble", settings.model, 10, 1, "tool_calls" if calls else "stop",
                          tool_calls=calls)


def call(arguments: str, index: int = 0, call_id: str | None = None) -> ToolCall:
    return ToolCall(call_id or f"c{index}", "recall", arguments)


def loop(tmp_path, plan: Plan, **limits: int) -> tuple[LoopResult, PlannedActor]:
    _, _, memory = setup(tmp_path, "recall-limits", ScriptedModel())
    actor = PlannedActor(plan)
    result = asyncio.run(run_recall_loop(actor, SCRIPTED, memory, haystack(), actor_messages(memory, haystack()),
                                         check=answer_problem, counter=memory.counter, **limits))
    return result, actor


def results(result: LoopResult) -> list[str]:
    return [m["content"] for m in result.messages if m["role"] == "tool"]


@pytest.mark.parametrize("failure", [RecursionError("maximum recursion depth exceeded"), OverflowError("x" * 9_000),
                                     MemoryError(), KeyError("threadId"), TypeError("unhashable type: 'list'")])
def test_any_exception_of_the_tool_is_the_calls_error_and_the_loop_goes_on(tmp_path, monkeypatch, failure) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise failure

    monkeypatch.setattr(recall_module, "recall", broken)
    result, _ = loop(tmp_path, lambda n: [call('{"mode":"threads"}')] if n == 0 else [])
    (step,) = result.steps
    assert step.error == f"tool_failure: {type(failure).__name__}"
    (text,) = results(result)
    assert f"the recall tool failed on these arguments ({type(failure).__name__}" in json.loads(text)["error"]
    assert len(text) < 1_000 and result.reply.text == "Pebble"


def test_hostile_arguments_are_refused_before_the_tool_and_echoed_bounded(tmp_path) -> None:
    long_cursor = json.dumps({"cursor": "a" * 10_000 + ":" + "z" * 10_000})
    plan = [call('{"page":1' + "0" * 400 + "}", 0), call(long_cursor, 1, "id" * 500),
            call('{"mode":' + "[" * 900 + "]" * 900 + "}", 2)]
    result, actor = loop(tmp_path, lambda n: plan if n == 0 else [])
    assert [s.error for s in result.steps] == ["bad_arguments"] * 3
    page, cursor, deep = (json.loads(text)["error"] for text in results(result))
    assert page == "page must be a whole number between -50 and 50"
    assert cursor.startswith("the arguments are 20,015 characters long") and "nest more than 32" in deep
    echoed = actor.requests[1][-4]["tool_calls"]
    assert json.loads(echoed[1]["function"]["arguments"]) == {
        "omitted": f"20,015 characters of arguments, over the {MAX_ARGUMENTS_CHARS:,}-character limit"}
    assert echoed[1]["id"] == "call_0_1" and result.steps[1].call_id == "call_0_1"
    assert len(result.steps[1].arguments) < MAX_ARGUMENTS_CHARS + 50
    assert echoed[0]["function"]["arguments"] == plan[0].arguments  # short arguments go back as sent


def test_a_long_range_cursor_within_the_limit_comes_back_cut(tmp_path) -> None:
    cursor = "a" * 1_900 + ":" + "z" * 1_900
    result, _ = loop(tmp_path, lambda n: [call(json.dumps({"cursor": cursor}))] if n == 0 else [])
    (step,) = result.steps
    assert step.error is None and "looks like a range" in results(result)[0]
    assert step.result_chars < 4 * MAX_ECHO_CHARS + 600  # before: the cursor four times, over 15,000 characters


def test_a_reply_with_more_calls_than_the_budget_runs_the_budget_and_answers_the_rest_once(tmp_path) -> None:
    flood = [call('{"mode":"threads"}', i) for i in range(10_000)]
    result, actor = loop(tmp_path, lambda n: flood if n == 0 else [])
    assert [s.error for s in result.steps] == [None] * DEFAULT_BUDGET + ["budget"]
    assert "(9,991 more calls in this reply were not run)" in results(result)[-1]
    follow_up = actor.requests[1]
    assert len(follow_up[-DEFAULT_BUDGET - 2]["tool_calls"]) == DEFAULT_BUDGET + 1
    assert len(json.dumps(follow_up)) < len(json.dumps(actor.requests[0])) + 20_000


def test_the_budget_counts_tokens_and_a_model_told_to_answer_must_answer(tmp_path) -> None:
    reads = [call('{"mode":"threads"}', i) for i in range(3)]
    result, _ = loop(tmp_path, lambda n: reads if n == 0 else [], token_budget=300)
    errors = [s.error for s in result.steps]
    assert errors[0] is None and errors[-1] == "budget" and len(errors) == 3, errors
    assert "budget of 300 tokens for this question is used up" in results(result)[-1]
    assert sum(s.result_tokens for s in result.steps if s.error is None) <= 300  # refusals are a line each
    with pytest.raises(RecallLoopError, match="budget of 300 tokens"):
        loop(tmp_path / "again", lambda n: reads, token_budget=300)


@pytest.mark.parametrize("counter", ["tokenx", "tiktoken", "chars/4"])
def test_the_largest_results_the_tool_gives_fit_the_caps_eight_times_over(counter: str) -> None:
    """What keeps normal runs unchanged: a full page (2,000 tokens of the tool's estimate) in English, CJK and emoji,
    and a full part chunk, counted by any shipped counter with their JSON, are under the result cap, and eight of
    the largest (the call budget) under the token budget."""
    count = make_counter(counter).count_text
    largest = 0
    for words in ("the quick brown fox jumps over the lazy dog", "日本語の文章を書きます", "🙂 🎉 ✅ 🔴 🟡"):
        store = history(20, f"{words} {{i}} " * 400)
        for arguments in ({"threadId": "t1", "detail": "high"}, {"threadId": "t1"}, {"cursor": "m3", "partIndex": 0},
                          {"cursor": "m3", "partIndex": 0, "charOffset": 5}):
            text = result_json(ask(arguments, store=store))
            assert estimate_tokens(text) > 1_500, "the page should be full"
            largest = max(largest, count(text))
    assert largest < RESULT_TOKEN_CAP / 2, largest
    assert DEFAULT_BUDGET * largest < DEFAULT_TOKEN_BUDGET, largest


def test_preparing_a_search_ignores_arguments_the_call_will_refuse() -> None:
    class Index:
        async def prepare(self, query: str) -> None:
            raise AssertionError("nothing to embed")

    for text in ("[" * 100_000 + "]" * 100_000, '{"mode":"search","query":' + "[" * 900 + "]" * 900 + "}",
                 '{"mode":"search","query":"' + "q" * 5_000 + '"}', '{"mode":"search","query":""}'):
        assert asyncio.run(_prepare_search(Index(), call(text))) is None


class RefusingProvider(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


@pytest.mark.parametrize(("failure", "the_calls_fault"), [
    (UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"), True),
    (LLMCallError("recall", "openai/text-embedding-3-small", RefusingProvider(400), 0), True),
    (LLMCallError("recall", "openai/text-embedding-3-small", RefusingProvider(429), 5), False),
    (LLMCallError("recall", "openai/text-embedding-3-small", TimeoutError(), 5), False),
])
def test_an_unembeddable_query_is_the_calls_error_and_an_outage_the_questions(failure, the_calls_fault) -> None:
    class Index:
        async def prepare(self, query: str) -> None:
            raise failure

    search = call(json.dumps({"mode": "search", "query": "\ud800 grey cat"}))
    if not the_calls_fault:
        with pytest.raises(LLMCallError):
            asyncio.run(_prepare_search(Index(), search))
        return
    found = asyncio.run(_prepare_search(Index(), search))
    assert found is not None
    text, error = found
    assert error == f"tool_failure: {type(failure).__name__}" and "could not be embedded" in text
