"""Retrieval mode in the engine: cycles kept as observation groups over the ids models see, the Reflector shown no
tags and its reflection grouped again, and the actor shown the groups with their ranges and the recall
instructions."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from om_eval.data.conversation import make_conversation
from om_eval.om import ObservationalMemory, ObservationConfig, OMConfig, ReflectionConfig
from om_eval.om.context import actor_memory_messages
from om_eval.om.groups import parse_groups, strip_groups
from om_eval.testing.scripted.model import ScriptedModel


def replay(config: OMConfig) -> tuple[ObservationalMemory, ScriptedModel]:
    model = ScriptedModel(history=None)
    memory = ObservationalMemory(config, observer=model, resource_id="user-1")
    for session in make_conversation(12, 6, seed=3):
        for start in range(0, len(session.messages), 2):
            memory.add_messages(session.messages[start:start + 2])
            asyncio.run(memory.observe())
    return memory, model


def config(**changes: object) -> OMConfig:
    base = OMConfig(scope="resource", obscure_thread_ids=True, retrieval="resource",
                    observation=ObservationConfig(message_tokens=1500, max_tokens_per_batch=1000),
                    reflection=ReflectionConfig(observation_tokens=1200))
    return replace(base, **changes)


def test_each_cycle_is_a_group_over_the_ids_models_see_and_the_reflector_never_sees_tags() -> None:
    memory, model = replay(config())
    record = memory.record()
    assert record.generation_count >= 1, "the replay should reflect at least once"
    groups = parse_groups(record.active_observations)
    assert groups and groups[0].kind == "reflection"
    shown_ids = {memory.shown_message_id(m.id) for s in make_conversation(12, 6, seed=3) for m in s.messages}
    for group in groups:
        start, end = group.range.split(":")
        assert start in shown_ids and end in shown_ids and ":" not in start + end
    for call in model.calls_for("reflector"):
        assert "<observation-group" not in "".join(m["content"] for m in call.messages)
    assert strip_groups(record.active_observations).count("<observation-group") == 0


def test_shown_message_ids_hide_the_stored_id() -> None:
    memory, _ = replay(config())
    stored = make_conversation(12, 6, seed=3)[0].messages[0].id
    assert memory.shown_message_id(stored) != stored and len(memory.shown_message_id(stored)) == 16
    raw = ObservationalMemory(config(obscure_thread_ids=False), observer=ScriptedModel(), resource_id="u")
    assert raw.shown_message_id("q1:0003:0001") == "q1-0003-0001"


def test_the_actor_reads_headed_groups_and_the_recall_instructions() -> None:
    memory, _ = replay(config())
    messages = actor_memory_messages(memory.context_inputs(memory.record().last_observed_at, "fresh-thread"))
    text = "\n".join(m["content"] for m in messages)
    assert "## Group `" in text and "_range: `" in text and "<observation-group" not in text
    assert "## Looking things up with recall" in messages[0]["content"]


def test_retrieval_off_keeps_memory_as_it_was() -> None:
    with_groups, _ = replay(config())
    without, _ = replay(config(retrieval="off"))
    assert "<observation-group" not in without.record().active_observations
    assert strip_groups(with_groups.record().active_observations) != ""


def test_without_observations_the_resource_scope_actor_still_learns_about_recall() -> None:
    memory = ObservationalMemory(config(), observer=ScriptedModel(), resource_id="u")
    messages = actor_memory_messages(memory.context_inputs(None, "t"))  # type: ignore[arg-type]  # no question date on purpose
    assert len(messages) == 1 and "recall" in messages[0]["content"]


def test_the_search_index_holds_every_current_group_with_its_conversation_and_time() -> None:
    memory, _ = replay(config(retrieval_search="bm25"))
    index = memory.recall_search_index()
    groups = parse_groups(memory.record().active_observations)
    assert [g.group_id for g in index.groups] == [g.id for g in groups]
    shown_threads = {memory.shown_thread_id(s.thread_id) for s in make_conversation(12, 6, seed=3)}
    assert {g.thread_id for g in index.groups} <= shown_threads
    word = next(w for w in groups[0].content.split() if len(w) > 6 and w.isalpha())
    assert index.search(word, top_k=5), f"{word!r} is in the first group"


def test_search_needs_retrieval_mode() -> None:
    import pytest

    from om_eval.om.config import ConfigError

    with pytest.raises(ConfigError, match="retrieval_search"):
        config(retrieval="off", retrieval_search="bm25")
