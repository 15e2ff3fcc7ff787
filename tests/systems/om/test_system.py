"""memory=om: Observational Memory as a system like the others, driven through the seam alone."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from om_eval.bench.history import history_thread_id
from om_eval.bench.turn_costs import PartRecorder
from om_eval.memory import MemoryContext, MemorySystemBase
from om_eval.memory.registry import make_system
from om_eval.memory.view import history_view, question_view, turn_id_of
from om_eval.om.config import ConfigError, ModelSettings, OMConfig
from om_eval.om.records import Message
from om_eval.om.tokens import make_counter
from om_eval.systems.om.identity import memory_hash
from om_eval.systems.om.system import ObservationalMemorySystem, OMBuild
from om_eval.testing.scripted.model import ScriptedModel
from tests.systems.helpers import FakeServices, question, session

SCRIPTED = ModelSettings(model="scripted/om-eval")
#: Thresholds small enough for two short sessions to be observed.
CONFIG = replace(OMConfig(), observation=replace(OMConfig().observation, message_tokens=30, model=SCRIPTED),
                 reflection=replace(OMConfig().reflection, model=SCRIPTED))

HAYSTACK = question(
    session(0, "s0", ("user", "I moved to Lisbon last spring and I love the tiled streets there."),
            ("assistant", "Lisbon is a lovely city with many tiled facades."), day=0),
    session(1, "answer_s1", ("user", "My sourdough starter finally bubbled after a week of feeding.", True),
            ("assistant", "Great news about the sourdough starter."), day=2),
    session(2, "s2", ("user", "Tell me about the weather tomorrow."), day=4),
)


class ChatServices(FakeServices):
    """The stand-in services with the engine's model port: the scripted model, as the harness lends the client."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.model = ScriptedModel(history=None)

    @property
    def chat(self) -> ScriptedModel:
        return self.model


def built(system: ObservationalMemorySystem, services: ChatServices | None = None) -> OMBuild:
    return asyncio.run(system.ingest(history_view(HAYSTACK), services or ChatServices()))


def test_the_registry_builds_om_like_any_system() -> None:
    system = make_system("om", {"config": CONFIG})
    assert isinstance(system, ObservationalMemorySystem) and isinstance(system, MemorySystemBase)
    assert set(system.own_models()) == {"models.observer", "models.reflector"} and not system.uses_observer_model
    assert system.budget() == {"observation_tokens": CONFIG.reflection.observation_tokens, "message_tokens": 30}
    with pytest.raises(ConfigError, match=r"memory\.threshold is not an option of memory=om"):
        make_system("om", {"threshold": 3})


def test_its_memory_key_is_the_engine_memory_hash_runs_have_always_stored() -> None:
    system = ObservationalMemorySystem({"config": CONFIG, "token_estimator": "chars"})
    pinned = system.pinned_identity()
    assert pinned.memory_key == memory_hash(CONFIG, system.replay, make_counter("chars").name)
    assert pinned.per_history and set(pinned.prompts) == {"om", "actor"}
    recall = ObservationalMemorySystem({"config": replace(CONFIG, retrieval="resource")}).pinned_identity()
    assert "recall" in recall.prompts  # the recall tool's words enter only in retrieval mode


def test_ingest_observes_through_the_model_port_and_context_reads_the_observations() -> None:
    services = ChatServices()
    system = ObservationalMemorySystem({"config": CONFIG})
    build = built(system, services)
    assert services.model.call_counts["observer"] >= 1 and services.completions == []  # the port, not complete()
    figures = system.build_figures(build)
    assert figures["observer_calls"] == services.model.call_counts["observer"] and figures["observations"] >= 1
    assert next(e["kind"] for e in system.build_events(build)).startswith("observation")
    context = asyncio.run(system.context(build, question_view(HAYSTACK), services))
    assert isinstance(context, MemoryContext) and context.tools is None
    assert context.messages[-1]["content"].endswith("Which city did I move to?")
    assert "Lisbon" in context.injected and context.injected == "".join(m["content"] for m in context.messages[1:-1])
    assert isinstance(context.detail["raw_tail_tokens"], int)


def test_a_snapshot_restores_the_same_memory_and_context() -> None:
    system = ObservationalMemorySystem({"config": CONFIG})
    build = built(system)
    data = json.loads(json.dumps(system.snapshot(build)))  # what the store keeps is JSON
    restored = asyncio.run(system.restore(data, ChatServices()))
    assert system.memory_digest(restored) == system.memory_digest(build)
    assert restored.stats == build.stats
    asked = question_view(HAYSTACK)
    first = asyncio.run(system.context(build, asked, ChatServices()))
    again = asyncio.run(system.context(restored, asked, ChatServices()))
    assert first.messages == again.messages
    with pytest.raises(ValueError, match="replay_stats"):  # the engine's snapshot alone (stored before the seam)
        asyncio.run(system.restore({k: v for k, v in data.items() if k != "replay_stats"}, ChatServices()))


def test_answering_leaves_the_digest_alone_and_new_messages_move_it() -> None:
    system = ObservationalMemorySystem({"config": CONFIG})
    build = built(system)
    before = system.memory_digest(build)
    asyncio.run(system.context(build, question_view(HAYSTACK), ChatServices()))
    assert system.memory_digest(build) == before and build.renders  # renders are kept beside the memory
    thread = history_thread_id(HAYSTACK.memory_owner, 2)
    build.memory.add_messages([Message(id=f"{thread}:0009", thread_id=thread, role="user", content="one more thing",
                                       created_at=HAYSTACK.sessions[2].date)])
    assert system.memory_digest(build) != before


def test_turns_are_traced_by_view_id_and_the_unobserved_tail_is_named() -> None:
    system = ObservationalMemorySystem({"config": CONFIG})
    build = built(system)
    history = history_view(HAYSTACK)
    last = turn_id_of(HAYSTACK.sessions[2], 0)
    evidence = turn_id_of(HAYSTACK.sessions[1], 0)
    traces = system.trace_turns(build, history, [evidence, last])
    assert set(traces) == {evidence, last}
    unobserved = {m.content for m in build.memory.unobserved_messages()}
    expected = "in_raw_tail" if HAYSTACK.sessions[2].turns[0].content in unobserved else "in_memory"
    assert traces[last].status in (expected, "not_captured")
    assert traces[evidence].status in ("in_memory", "not_captured", "lost_at_reflection", "in_raw_tail")


def test_recording_turns_hands_over_the_engine_table() -> None:
    recorder = PartRecorder(make_counter("chars"))
    services = ChatServices(turns=recorder)
    built(ObservationalMemorySystem({"config": CONFIG}), services)
    table = recorder.finish()
    assert len(table) == 3  # one per user turn
    assert table.observer_prompt[-1] >= 0 and sum(table.observer_prompt) > 0


def test_retrieval_mode_offers_the_recall_tool() -> None:
    system = ObservationalMemorySystem({"config": replace(CONFIG, retrieval="resource")})
    build = built(system)
    context = asyncio.run(system.context(build, question_view(HAYSTACK), ChatServices()))
    assert context.tools is not None and context.tools.definitions[0]["function"]["name"] == "recall"
    text, error = asyncio.run(context.tools.call(_call("nope", "{}")))
    assert error == "unknown_tool" and "recall" in text


def _call(name: str, arguments: str):
    from om_eval.om.model import ToolCall

    return ToolCall("call_1", name, arguments)


def test_the_forecast_observes_every_threshold_and_shows_the_unobserved_rest() -> None:
    forecast = ObservationalMemorySystem({"config": CONFIG}).forecast(100)  # message_tokens=30
    calls, prompt, completion = forecast.stages["observer"]
    assert calls == 3 and completion == int(90 / 6) and prompt > 90
    assert forecast.stages["reflector"][0] == 0  # 15 observation tokens never reach the reflection threshold
    assert forecast.shown_tokens == 15 + 10  # the observations and the unobserved 10 tokens
    assert ObservationalMemorySystem({"config": CONFIG}).forecast(20).stages["observer"][0] == 0
