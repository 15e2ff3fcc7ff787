"""The tool-using actor of retrieval mode, through litellm with the scripted model: the loop, its accounting and
caching, its budget, bad calls, and that nothing the benchmark knows about the answer reaches the model."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from om_eval.bench.tool_loop import RecallLoopError
from om_eval.data.records import HaystackSession, Question, Turn
from om_eval.llm.cache import ResponseCache
from om_eval.llm.client import LLMClient
from om_eval.llm.ledger import Ledger
from om_eval.llm.providers import register_scripted
from om_eval.om import ModelSettings, ObservationConfig, OMConfig, ReflectionConfig
from om_eval.om.recall.tool import RecallError, recall, result_json
from om_eval.systems.om.answer import answer_question
from om_eval.systems.om.replay import ReplayConfig, eval_thread_id, replay_question
from om_eval.testing.scripted.model import ScriptedModel

GOLD = "Zanzibarquux"
EVIDENCE_SESSION = "answer_e47becba_2"
QUESTION_ID = "leaky01_abs"
START = datetime(2024, 3, 1, 9, 0)


def haystack() -> Question:
    """A question whose labels are all recognisable strings: its id (with ``_abs``), the evidence session's id, a
    gold answer that no message contains, and ``has_answer`` flags on the evidence turns."""
    topics = ["my sourdough starter finally bubbled", "the dentist moved my appointment to Friday",
              "I adopted a grey cat called Pebble", "we repainted the hallway a pale green"]
    sessions = []
    for index, topic in enumerate(topics):
        evidence = index == 2
        turns = (Turn("user", f"Quick update: {topic}.", has_answer=evidence or None),
                 Turn("assistant", f"Thanks for telling me that {topic}.", has_answer=False))
        sessions.append(HaystackSession(QUESTION_ID, index, EVIDENCE_SESSION if evidence else f"sharegpt_{index}",
                                        START + timedelta(days=index), "", turns, evidence))
    return Question(QUESTION_ID, "single-session-user", "What is the name of the cat I adopted?", GOLD,
                    START + timedelta(days=10), "2024/03/11 (Mon) 09:00", tuple(sessions), (EVIDENCE_SESSION,))


SCRIPTED = ModelSettings(model="scripted/om-eval", temperature=0)


def config(retrieval: str = "resource") -> OMConfig:
    return OMConfig(scope="resource", obscure_thread_ids=True, retrieval=retrieval,  # type: ignore[arg-type]  # a RetrievalMode name
                    observation=ObservationConfig(message_tokens=60, max_tokens_per_batch=2000, model=SCRIPTED,
                                                  buffer_tokens=False),
                    reflection=ReflectionConfig(observation_tokens=4000, model=SCRIPTED))


def setup(tmp_path, name: str, model: ScriptedModel):
    actor = ModelSettings(model=register_scripted(name, model), temperature=0)
    client = LLMClient(cache=ResponseCache(tmp_path / "cache"), ledger=Ledger())
    memory, _ = asyncio.run(replay_question(haystack(), config(), observer=client,
                                            replay=ReplayConfig(final_flush=True)))
    return client, actor, memory


def test_the_actor_reads_the_evidence_with_recall_and_every_call_is_accounted(tmp_path) -> None:
    client, actor, memory = setup(tmp_path, "recall-loop", ScriptedModel())
    answer = asyncio.run(answer_question(client, actor, memory, haystack()))
    assert "Pebble" in answer.hypothesis
    assert answer.tool_steps and all(step.error is None for step in answer.tool_steps)
    stages = [record.stage for record in client.ledger.records if record.model == actor.model]
    assert stages == ["actor", "recall"]
    tool_messages = [m for m in answer.messages if m["role"] == "tool"]
    assert len(tool_messages) == len(answer.tool_steps)
    assert answer.prompt_tokens == sum(r.prompt_tokens for r in client.ledger.records if r.model == actor.model)
    again = asyncio.run(answer_question(client, actor, memory, haystack()))
    assert again.hypothesis == answer.hypothesis and again.cached
    assert [r.cached for r in client.ledger.records if r.model == actor.model][-2:] == [True, True]


def test_calls_past_the_budget_are_refused_and_a_model_that_keeps_calling_fails(tmp_path) -> None:
    model = ScriptedModel(faults={"actor": ["tool_forever"], "recall": ["tool_forever"] * 20})
    client, actor, memory = setup(tmp_path, "recall-forever", model)
    with pytest.raises(RecallLoopError, match="budget of 8"):
        asyncio.run(answer_question(client, actor, memory, haystack()))


def test_arguments_that_are_not_json_get_an_error_result_and_the_actor_goes_on(tmp_path) -> None:
    client, actor, memory = setup(tmp_path, "recall-junk", ScriptedModel(faults={"actor": ["tool_junk"]}))
    answer = asyncio.run(answer_question(client, actor, memory, haystack()))
    assert answer.tool_steps[0].error == "bad_arguments"
    assert "not valid JSON" in next(m for m in answer.messages if m["role"] == "tool")["content"]


def every_tool_output(memory, question: Question) -> list[str]:
    """Everything the tool can show for ``question``: each thread listing, every page of every thread at both
    detail levels and from both ends, and every part of every message whole."""
    history = memory.recall_history(eval_thread_id(question), question.question_date)
    current = memory.shown_thread_id(eval_thread_id(question))

    def ask(arguments: dict) -> str:
        try:
            return result_json(recall(history, arguments, thread_id=current, resource_id=memory.resource_id))
        except RecallError as error:
            return str(error)

    outputs = [ask({"mode": "threads", "limit": 20}), ask({"mode": "threads", "threadId": "current"}), ask({})]
    listing = json.loads(outputs[0])["threads"]
    thread_ids = [line.split("id: ", 1)[1] for line in listing.splitlines() if line.startswith("  id: ")]
    for thread_id in thread_ids:
        for detail in ("low", "high"):
            for anchor in ("start", "end"):
                outputs.append(ask({"threadId": thread_id, "detail": detail, "anchor": anchor}))
        page = json.loads(ask({"threadId": thread_id}))
        for line in page["messages"].splitlines():
            if line.startswith("**"):
                message_id = line.rsplit("[", 1)[1].rstrip("]:")
                outputs += [ask({"cursor": message_id, "partIndex": 0}), ask({"cursor": message_id, "page": -1}),
                            ask({"cursor": message_id})]
    return outputs


def test_no_label_of_the_benchmark_reaches_the_actor_through_the_tool(tmp_path) -> None:
    client, actor, memory = setup(tmp_path, "recall-leak", ScriptedModel())
    question = haystack()
    outputs = every_tool_output(memory, question)
    assert len(outputs) > 20 and any("adopted a grey cat" in text for text in outputs), "the tool must show the talk"
    answer = asyncio.run(answer_question(client, actor, memory, question))
    seen = outputs + [json.dumps(m, ensure_ascii=False) for m in answer.messages]
    for secret in (GOLD, "has_answer", EVIDENCE_SESSION, "answer_", QUESTION_ID, "_abs", "leaky01", "sharegpt",
                   "is_evidence", "evidence"):
        leaks = [text[:200] for text in seen if secret.lower() in text.lower()]
        assert not leaks, f"{secret!r} reached the actor: {leaks[:2]}"


def test_retrieval_off_offers_no_tool(tmp_path) -> None:
    model = ScriptedModel()
    actor = ModelSettings(model=register_scripted("recall-off", model), temperature=0)
    client = LLMClient(ledger=Ledger())
    memory, _ = asyncio.run(replay_question(haystack(), config("off"), observer=client,
                                            replay=ReplayConfig(final_flush=True)))
    answer = asyncio.run(answer_question(client, actor, memory, haystack()))
    assert answer.tool_steps is None
    assert [r.stage for r in client.ledger.records if r.model == actor.model] == ["actor"]
    assert replace(config("off"), retrieval="off").to_dict() == OMConfig.from_dict(config("off").to_dict()).to_dict()


@pytest.mark.parametrize("search", ["bm25", "embedding"])
def test_a_search_call_returns_groups_of_the_conversation_that_holds_the_answer(tmp_path, search: str) -> None:
    from om_eval.om.model import ToolCall
    from om_eval.systems.om.recall import _prepare_search, _run_call, _search_index

    settings = {"retrieval_search": search, "retrieval_embedding_model": "scripted/om-eval"}
    client = LLMClient(cache=ResponseCache(tmp_path / "cache"), ledger=Ledger())
    memory, _ = asyncio.run(replay_question(haystack(), replace(config(), **settings), observer=client,
                                            replay=ReplayConfig(final_flush=True)))
    index = asyncio.run(_search_index(memory, client))
    call = ToolCall("c1", "recall", json.dumps({"mode": "search", "query": "adopted grey cat", "limit": 1}))
    asyncio.run(_prepare_search(index, call))
    history = memory.recall_history(eval_thread_id(haystack()), haystack().question_date)
    text, error = _run_call(call, memory, haystack(), history, index)
    result = json.loads(text)
    assert error is None and result["count"] == 1 and "grey cat" in result["results"], result
    if search == "embedding":  # the groups and the query were embedded through the client, cached
        embeds = [r for r in client.ledger.records if r.stage == "recall"]
        assert len(embeds) == 2 and not any(r.cached for r in embeds)
