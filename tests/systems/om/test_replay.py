"""Replay protocol, answering and evidence tracing on hand-built questions."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from unittest.mock import patch

import pytest

from om_eval.bench.history import thread_id_for
from om_eval.common.run_identity import MEMORY_KEY_RULE
from om_eval.data.records import HaystackSession, Question, Turn, parse_lme_date
from om_eval.memory.identity import haystack_hash
from om_eval.memory.services import HarnessServices
from om_eval.memory.view import history_view
from om_eval.om import ObservationConfig, OMConfig, ReflectionConfig
from om_eval.om.config import ConfigError, ModelSettings
from om_eval.systems.om.answer import actor_messages, answer_question
from om_eval.systems.om.identity import memory_hash
from om_eval.systems.om.replay import ReplayConfig, replay_question, session_messages
from om_eval.systems.om.system import ObservationalMemorySystem
from om_eval.systems.om.trace import render_question_report, trace_evidence
from om_eval.testing.scripted.model import ScriptedModel

FILLER = "Could you explain how sourdough starters work and how often they need feeding in a warm kitchen?"
REPLY = "A starter is a culture of wild yeast and bacteria; feed it daily with equal weights of flour and water."


def session(qid: str, index: int, session_id: str, date: str, turns: list[tuple[str, str, bool | None]]) -> (
    HaystackSession
):
    return HaystackSession(
        question_id=qid, index=index, session_id=session_id, date=parse_lme_date(date), date_text=date,
        turns=tuple(Turn(role, content, flag) for role, content, flag in turns), is_evidence="answer" in session_id,
    )


def question(answer: str | int = "Toby", qid: str = "q1") -> Question:
    filler = [("user", FILLER, None), ("assistant", REPLY, None)] * 3
    sessions = (
        session(qid, 0, "sharegpt_x_0", "2023/05/20 (Sat) 10:00", filler),
        session(qid, 1, "answer_abc_1", "2023/05/02 (Tue) 09:00", [
            ("user", "My new beagle puppy is called Toby and he loves chewing slippers.", True),
            ("assistant", "Toby sounds adorable! Puppy-proof the hallway.", False),
            ("user", "", None),
            ("assistant", "Anything else about Toby?", False),
        ]),
        session(qid, 2, "sharegpt_x_0", "2023/05/25 (Thu) 18:30", filler),  # duplicated filler id (issue #54)
    )
    return Question(
        question_id=qid, question_type="single-session-user", question="What is my dog's name?", answer=answer,
        question_date=parse_lme_date("2023/06/01 (Thu) 12:00"), question_date_text="2023/06/01 (Thu) 12:00",
        sessions=sessions, answer_session_ids=("answer_abc_1",),
    )


def om_config(message_tokens: int = 200, observation_tokens: int = 5000) -> OMConfig:
    model = ModelSettings(model="scripted/om-eval", temperature=0, max_output_tokens=None)
    return OMConfig(
        scope="resource",
        observation=ObservationConfig(message_tokens=message_tokens, model=model),
        reflection=ReflectionConfig(observation_tokens=observation_tokens, model=model),
    )


def run(coro):
    return asyncio.run(coro)


def test_messages_follow_the_published_protocol() -> None:
    q = question()
    evidence = q.sessions[1]
    messages = session_messages(evidence, ReplayConfig())
    assert [m.role for m in messages] == ["user", "assistant", "assistant"]  # the empty turn is skipped
    assert [(m.created_at - evidence.date).seconds for m in messages] == [0, 5, 15]  # its index still counts
    assert thread_id_for(q.sessions[0]) != thread_id_for(q.sessions[2])  # duplicate session ids stay apart
    assert all("has_answer" not in json.dumps(m.to_dict()) for m in messages)


def test_sessions_in_date_order_pairs_and_checks() -> None:
    model = ScriptedModel()
    _memory, stats = run(replay_question(question(), om_config(), observer=model))
    assert stats.sessions == 3 and stats.messages == 15 and stats.observe_checks == 8  # 3 + 2 + 3 pairs
    first_history = model.calls_for("observer")[0].messages[-1]["content"]
    assert "Toby" in first_history  # the May 2 session comes first, though it is second in the file
    assert stats.observer_calls >= 1 and stats.history_tokens > stats.observation_tokens > 0
    assert stats.compression_ratio == pytest.approx(stats.history_tokens / stats.observation_tokens)


def test_no_session_id_or_answer_flag_reaches_any_prompt() -> None:
    model = ScriptedModel()
    memory, _ = run(replay_question(question(answer="SENTINEL-ANSWER"), om_config(), observer=model))
    run(answer_question(model, ModelSettings(model="scripted/om-eval", temperature=0), memory,
                        question(answer="SENTINEL-ANSWER")))
    for call in model.calls:
        text = json.dumps(call.messages)
        for leak in ("sharegpt_x_0", "answer_abc_1", "has_answer", "SENTINEL-ANSWER", "q1:"):
            assert leak not in text, f"{leak!r} leaked into a {call.stage} prompt"


def test_question_date_never_enters_memory() -> None:
    q = question()
    memory, _ = run(replay_question(q, om_config(), observer=ScriptedModel()))
    before = json.dumps(memory.snapshot())
    messages = actor_messages(memory, q)
    assert json.dumps(memory.snapshot()) == before  # answering only reads
    assert "2023/06/01" not in before and q.question not in before
    assert messages[-1] == {"role": "user", "content": "Current Date: 2023/06/01 (Thu) 12:00\nQuestion: What is my "
                                                       "dog's name?"}
    assert messages[0]["role"] == "system" and "memory" in messages[0]["content"]
    assert any("(4 weeks ago)" in m["content"] or "(30 days ago)" in m["content"] or "weeks ago" in m["content"]
               for m in messages)  # relative dates computed from the question date


def test_final_flush_and_unit_options() -> None:
    q = question()
    _no_flush, stats = run(replay_question(q, om_config(message_tokens=100_000), observer=ScriptedModel()))
    assert stats.observer_calls == 0 and stats.pending_tokens > 0  # Mastra: no final flush
    _flushed, flush_stats = run(replay_question(q, om_config(message_tokens=100_000), observer=ScriptedModel(),
                                               replay=ReplayConfig(final_flush=True)))
    assert flush_stats.pending_tokens == 0 and flush_stats.observer_calls >= 1
    _, per_session = run(replay_question(q, om_config(), observer=ScriptedModel(), replay=ReplayConfig(unit="session")))
    assert per_session.observe_checks == 3
    with pytest.raises(ValueError, match="replay.unit='turns' is invalid"):
        ReplayConfig(unit="turns")  # type: ignore[arg-type]  # an unknown unit on purpose


def test_thread_scope_answers_from_every_session() -> None:
    q = question()
    memory, stats = run(replay_question(q, om_config(message_tokens=120), observer=ScriptedModel(),
                                        replay=ReplayConfig(scope="thread", final_flush=True)))
    assert not memory.resource_scope and stats.pending_tokens == 0
    text = "\n".join(m["content"] for m in actor_messages(memory, q))
    assert "Toby" in text and "sourdough" in text


def test_a_memory_restored_from_its_snapshot_calls_no_model_and_keys_name_the_build() -> None:
    model = ScriptedModel()
    system = ObservationalMemorySystem({"config": om_config()})
    services = HarnessServices(model, None, system.counter, system="om", declares_observer=False)
    first = run(system.ingest(history_view(question()), services))
    calls = len(model.calls)
    second = run(system.restore(json.loads(json.dumps(system.snapshot(first))), services))
    assert len(model.calls) == calls
    assert second.memory.snapshot() == first.memory.snapshot() and second.stats == first.stats
    base = memory_hash(om_config(), ReplayConfig(), "tiktoken/o200k_base")
    assert system.pinned_identity().memory_key == base
    assert memory_hash(om_config(observation_tokens=4000), ReplayConfig(), "tiktoken/o200k_base") != base
    assert memory_hash(om_config(), replace(ReplayConfig(), final_flush=True), "tiktoken/o200k_base") != base
    # Every key carries the engine's revision, so a memory built by an earlier engine is not reused.
    buffered = replace(ReplayConfig(), buffering=True, scope="thread")
    with patch("om_eval.systems.om.identity.ENGINE_REVISION", 0):
        earlier = memory_hash(om_config(), buffered, "tiktoken/o200k_base")
        assert memory_hash(om_config(), ReplayConfig(), "tiktoken/o200k_base") != base
    assert memory_hash(om_config(), buffered, "tiktoken/o200k_base") not in (earlier, base)
    single = replace(om_config(), context_layout="single")  # only changes what the actor sees
    assert memory_hash(single, ReplayConfig(), "tiktoken/o200k_base") == base
    # The same question id with another haystack (oracle vs S) never shares a memory: items add its hash.
    other_haystack = replace(question(), sessions=question().sessions[:2])
    assert haystack_hash(other_haystack) != haystack_hash(question())


def test_evidence_trace_statuses() -> None:
    q = question()
    observed, _ = run(replay_question(q, om_config(), observer=ScriptedModel()))
    assert [(t.status, t.answer_in_lines) for t in trace_evidence(q, observed)] == [("in_memory", True)]
    assert "Toby" in trace_evidence(q, observed)[0].lines[0]
    raw, _ = run(replay_question(q, om_config(message_tokens=100_000), observer=ScriptedModel()))
    assert [t.status for t in trace_evidence(q, raw)] == ["in_raw_tail"]

    class Forgetful(ScriptedModel):
        def _observe(self, messages, fault):
            return "<observations>\n</observations>"

    missed, _ = run(replay_question(q, om_config(), observer=Forgetful()))
    assert [t.status for t in trace_evidence(q, missed)] == ["not_captured"]
    report = render_question_report(q, observed, actor_messages(observed, q), "Toby", True)
    assert "| 1 | 0 | user | in_memory | yes |" in report and "## What the actor saw" in report


def test_buffering_is_off_by_default_and_on_when_asked() -> None:
    config = om_config(message_tokens=120)
    memory, stats = run(replay_question(question(), config, observer=ScriptedModel(),
                                        replay=ReplayConfig(scope="thread")))
    assert not memory.config.async_observation_enabled
    assert {e.kind for e in memory.events} == {"observation"} and stats.buffered_chunks == 0
    memory, stats = run(replay_question(question(), config, observer=ScriptedModel(),
                                        replay=ReplayConfig(scope="thread", buffering=True)))
    assert memory.config.buffer_tokens == 24  # 1.10 default: 0.2 x 120
    kinds = {e.kind for e in memory.events}
    assert {"observation_buffered", "observation_activated"} <= kinds and "observation" not in kinds
    assert stats.activations == stats.observations >= 1 and stats.buffered_chunks >= stats.activations
    assert stats.observer_calls == sum(e.kind.startswith("observation") and e.calls for e in memory.events)


def test_buffering_in_resource_scope_turns_on_the_om_eval_extension() -> None:
    config = om_config(message_tokens=120)
    assert not config.resource_buffering
    memory, stats = run(replay_question(question(), config, observer=ScriptedModel(),
                                        replay=ReplayConfig(buffering=True)))
    assert memory.resource_scope and memory.config.resource_buffering and memory.config.buffer_tokens == 24
    kinds = {e.kind for e in memory.events}
    assert {"observation_buffered", "observation_activated"} <= kinds
    assert stats.activations >= 1 and stats.buffered_chunks >= stats.activations
    # Off, the published protocol is untouched: no switch, no buffering, and memory hashes as before.
    plain, _ = run(replay_question(question(), config, observer=ScriptedModel()))
    assert not plain.config.resource_buffering and not plain.config.async_observation_enabled
    assert "resource_buffering" not in MEMORY_KEY_RULE.view({"om": plain.config.to_dict()})["om"]
    assert memory_hash(config, ReplayConfig(buffering=True), "t") != memory_hash(config, ReplayConfig(), "t")


def test_replay_buffering_errors_say_which_options_clash() -> None:
    with pytest.raises(ValueError, match="buffering"):
        ReplayConfig(scope="thread", buffering="yes")  # type: ignore[arg-type]  # a non-bool on purpose
    shared = replace(om_config(), share_token_budget=True)
    with pytest.raises(ConfigError, match="replay.scope=resource replay.buffering=true .*share_token_budget"):
        run(replay_question(question(), shared, observer=ScriptedModel(), replay=ReplayConfig(buffering=True)))


@pytest.mark.parametrize("obscure", [True, False])
def test_obscure_thread_ids_decides_what_the_observer_sees_and_nothing_leaks_either_way(obscure: bool) -> None:
    # Regression: the replay forced obscuring on, so om.obscure_thread_ids=false changed the run id and nothing else.
    model = ScriptedModel()
    config = replace(om_config(message_tokens=100), obscure_thread_ids=obscure)
    memory, _ = run(replay_question(question(qid="q7_abs"), config, observer=model))
    observer_input = "\n".join(m["content"] for call in model.calls_for("observer") for m in call.messages)
    assert ('<thread id="session-0001">' in observer_input) is not obscure
    for leak in ("q7_abs", "_abs", "answer_abc", "sharegpt"):  # neither the question id nor session ids, either way
        assert leak not in observer_input, leak
    assert all((memory.shown_thread_id(t) == t) is not obscure for t in memory.thread_ids)
