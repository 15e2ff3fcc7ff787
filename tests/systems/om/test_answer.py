"""The actor's answer: an empty or looping reply is a model failure, raised and never cached, not a wrong answer."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pytest

from om_eval.bench.answer import AnswerError, answer_problem
from om_eval.data import load_dataset, mini_fixture_path
from om_eval.data.records import Question
from om_eval.llm.cache import ResponseCache
from om_eval.llm.client import LLMClient
from om_eval.llm.providers import register_scripted
from om_eval.om import ModelSettings, ObservationalMemory, OMConfig
from om_eval.om.records import Message
from om_eval.systems.om.answer import actor_messages, answer_question, raw_tail_tokens
from om_eval.testing.scripted.model import ScriptedModel
from tests.om.fakes import QueueModel

#: A loop Mastra's window sampler misses (its period shares no factor with the sampling step).
LOOP = "You told me about your trip to Lisbon and the tram ride up the hill. " * 60
#: A loop Mastra's detector catches.
LINE_LOOP = "* (09:00) You said the same thing again and again.\n" * 120
CITIES = ("Lisbon", "Porto", "Ghent", "Leeds", "Madrid", "Oslo", "Rome")
#: A long, templated but genuine answer.
TABLE = "\n".join(f"- Day {i}: you visited {CITIES[i * 5 % 7]} and paid {(i * 37) % 90 + 3} euros." for i in range(300))


@lru_cache(maxsize=1)
def question() -> Question:
    return load_dataset(path=mini_fixture_path()).questions[0]


def empty_memory() -> ObservationalMemory:
    return ObservationalMemory(OMConfig(scope="resource"), observer=ScriptedModel())


def answer(actor, settings: ModelSettings):
    return asyncio.run(answer_question(actor, settings, empty_memory(), question()))


SETTINGS = ModelSettings(model="test/actor", temperature=0)


@pytest.mark.parametrize(("reply", "problem"), [("", "an empty reply"), ("  \n\t", "an empty reply"),
                                                 (LOOP, "a degenerate reply"), (LINE_LOOP, "a degenerate reply")])
def test_an_unusable_answer_raises_naming_the_question_and_the_problem(reply: str, problem: str) -> None:
    with pytest.raises(AnswerError) as raised:
        answer(QueueModel([reply]), SETTINGS)
    error = raised.value
    assert error.question_id == question().question_id and error.problem.startswith(problem)
    assert question().question_id in str(error) and "test/actor" in str(error) and problem in str(error)


def test_a_short_or_repetitive_but_real_answer_is_returned() -> None:
    assert answer(QueueModel(["  I don't know.  "]), SETTINGS).hypothesis == "I don't know."
    assert answer(QueueModel(["yes " * 100]), SETTINGS).hypothesis.startswith("yes yes")  # under the detector's floor
    assert answer_problem("Lisbon") is None and answer_problem("") == "an empty reply"
    assert len(TABLE) > 10_000 and answer(QueueModel([TABLE]), SETTINGS).hypothesis == TABLE


def test_an_empty_answer_is_not_cached_and_a_rerun_asks_the_actor_again(tmp_path: Path) -> None:
    model = register_scripted("actor-mute", ScriptedModel(faults={"actor": ["empty"]}))
    settings = ModelSettings(model=model, temperature=0, max_output_tokens=None)
    llm = LLMClient(cache=ResponseCache(tmp_path / "cache"))
    with pytest.raises(AnswerError):
        answer(llm, settings)
    rerun = answer(llm, settings)
    assert rerun.hypothesis and not rerun.cached  # a real call, not the cached empty reply
    assert answer(llm, settings).cached
    assert [r.cached for r in llm.ledger.records] == [False, False, True]
    assert (llm.ledger.records[0].error or "").startswith("unusable reply: an empty reply")


@pytest.mark.parametrize("release", ["v1_10", "v1_31"])
def test_1_31_shows_the_unobserved_haystack_as_chat_history(release: str) -> None:
    memory = ObservationalMemory(OMConfig(scope="resource", mastra_release=release),  # type: ignore[arg-type]  # a MastraRelease name
                                 observer=ScriptedModel())
    q = question()
    memory.add_message(Message("m1", "s1", "user", "I keep bees on my roof.", q.question_date.replace(year=2020)))
    messages = actor_messages(memory, q)
    shown = [m["content"] for m in messages if m["content"] == "I keep bees on my roof."]
    assert shown == (["I keep bees on my roof."] if release == "v1_31" else [])
    assert (raw_tail_tokens(memory, q) > 0) is (release == "v1_31")


def test_questions_sharing_a_memory_render_it_once_per_date(monkeypatch: pytest.MonkeyPatch) -> None:
    import om_eval.systems.om.answer as answer_module

    memory = ObservationalMemory(OMConfig(scope="resource"), observer=ScriptedModel())
    said = question().question_date.replace(year=2020)
    memory.add_message(Message("m1", "s1", "user", "I keep bees on my roof.", said))
    rendered: list[object] = []
    real = answer_module.memory_messages
    monkeypatch.setattr(answer_module, "memory_messages", lambda m, q: rendered.append(q) or real(m, q))
    first = question()
    later = replace(first, question="Where are the bees?")
    next_day = replace(first, question_date=first.question_date.replace(day=2))
    renders: dict = {}
    shared = [actor_messages(memory, q, renders) for q in (first, later, next_day, first)]
    assert len(rendered) == 2  # once for the question date, once for the next day
    assert shared == [actor_messages(memory, q) for q in (first, later, next_day, first)]
    assert shared[1][-1]["content"] != shared[0][-1]["content"]  # each keeps its own question
