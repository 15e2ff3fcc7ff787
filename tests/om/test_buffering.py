"""Async buffering, activation and buffered reflection (om-reference §1.7-§1.11), with the scripted model."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from om_eval.data.conversation import make_conversation
from om_eval.om import (
    Message,
    ObservationalMemory,
    ObservationConfig,
    OMConfig,
    ReflectionConfig,
)
from om_eval.om.config import ConfigError
from om_eval.om.prompts import load_prompts
from om_eval.om.thresholds import REMINDER_TOKENS_1_10
from om_eval.om.tokens import TOKENS_PER_CONVERSATION, CharRatioCounter
from om_eval.testing.scripted.model import ScriptedModel
from tests.om.identity_view import memory_view

START = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
SENTENCES = (
    "I adopted a grey cat named Pixel from the shelter last spring.",
    "My sister Ana is moving to Lisbon in October for a new design job.",
    "I started training for a half marathon and run three times a week.",
    "We repainted the kitchen a pale green colour over the long weekend.",
    "My manager asked me to lead the data migration project next quarter.",
)


def run(coro):
    return asyncio.run(coro)


def thread_config(message_tokens: int = 2000, observation_tokens: int = 100_000, **observation: object) -> OMConfig:
    return OMConfig(
        observation=ObservationConfig(message_tokens=message_tokens, **observation),
        reflection=ReflectionConfig(observation_tokens=observation_tokens),
    )


def message(index: int, thread: str = "t1", words: int = 1, role: str | None = None) -> Message:
    text = " ".join(SENTENCES[(index + k) % len(SENTENCES)] for k in range(words))
    return Message(
        id=f"{thread}-m{index:04d}", thread_id=thread, role=role or ("user" if index % 2 == 0 else "assistant"),
        content=text, created_at=START + timedelta(minutes=index),
    )


def feed(memory: ObservationalMemory, count: int, *, thread: str = "t1", words: int = 3, start: int = 0) -> list:
    """Add ``count`` messages one at a time with a threshold check after each; returns (pending, outcome)."""
    steps = []
    for index in range(start, start + count):
        memory.add_message(message(index, thread, words))
        pending = memory.pending_tokens(thread)
        steps.append((pending, run(memory.observe(thread))))
    return steps


def kinds(memory: ObservationalMemory) -> list[str]:
    return [e.kind for e in memory.events]


# -- buffering -------------------------------------------------------------------------------------------------


def test_first_buffer_fires_when_pending_crosses_the_interval() -> None:
    model = ScriptedModel(history=None)
    memory = ObservationalMemory(thread_config(), observer=model, token_counter=CharRatioCounter())
    steps = []
    for index in range(40):
        memory.add_message(message(index, words=3))
        steps.append((memory.pending_tokens("t1"), len(memory.events)))
        run(memory.observe("t1"))
        if memory.events:
            break
    # buffer_tokens = 0.2 x 2000 = 400: the first pass runs at the first check at or past 400 pending tokens.
    assert memory.config.buffer_tokens == 400
    assert [p >= 400 for p, _ in steps] == [False] * (len(steps) - 1) + [True]
    event = memory.events[0]
    assert event.kind == "observation_buffered"
    assert json.loads(event.detail)["pending_tokens"] == steps[-1][0]
    assert memory.record("t1").last_buffered_at_tokens == steps[-1][0]
    # The buffered call asks for observations only, and nothing was observed.
    hint = load_prompts("observer_request")["hints_skipped"].strip()
    assert hint in model.calls_for("observer")[0].messages[1]["content"]
    assert memory.unobserved_messages("t1") and memory.record("t1").active_observations == ""


def test_chunk_records_its_messages_tokens_and_cursor() -> None:
    memory = ObservationalMemory(thread_config(), observer=ScriptedModel(), token_counter=CharRatioCounter())
    steps = feed(memory, 12)
    record = memory.record("t1")
    assert record.buffered_observation_chunks and all(outcome is None for _, outcome in steps)
    chunk = record.buffered_observation_chunks[0]
    messages = [memory._messages[i] for i in chunk.message_ids]
    # Counted as one list, the per-conversation overhead included, as 1.10 counts a chunk's messages.
    assert chunk.message_tokens == TOKENS_PER_CONVERSATION + sum(memory.message_tokens(i) for i in chunk.message_ids)
    assert chunk.token_count == memory.counter.count_text(chunk.observations)
    assert chunk.last_observed_at == max(m.created_at for m in messages) + timedelta(milliseconds=1)
    assert record.last_buffered_at_time == record.buffered_observation_chunks[-1].last_observed_at
    # Buffered messages stay pending (and visible to the actor) until activation.
    assert memory.pending_tokens("t1") == TOKENS_PER_CONVERSATION + sum(
        memory.message_tokens(m.id) for m in memory.unobserved_messages("t1")
    )
    assert set(chunk.message_ids) <= {m.id for m in memory.unobserved_messages("t1")}
    assert record.active_observations == ""


def test_chunks_never_overlap_and_later_passes_see_earlier_chunks() -> None:
    model = ScriptedModel(history=None)
    memory = ObservationalMemory(thread_config(), observer=model, token_counter=CharRatioCounter())
    feed(memory, 20)
    chunks = memory.record("t1").buffered_observation_chunks
    assert len(chunks) >= 2
    ids = [i for c in chunks for i in c.message_ids]
    assert len(ids) == len(set(ids))
    second_call = model.calls_for("observer")[1].messages[1]["content"]
    assert chunks[0].observations.splitlines()[1] in second_call


def test_small_candidate_sets_are_not_buffered() -> None:
    # One big message crosses the first interval and is buffered; a small one then crosses the next interval,
    # but its candidates (< buffer_tokens / 2) are too few for an Observer call.
    memory = ObservationalMemory(thread_config(), observer=ScriptedModel(), token_counter=CharRatioCounter())
    big = replace(message(0, words=1), content=" ".join(SENTENCES * 12)[: 4 * 760])
    memory.add_message(big)
    run(memory.observe("t1"))
    assert kinds(memory) == ["observation_buffered"]
    small = replace(message(1, words=1), content=SENTENCES[1][: 4 * 40])
    memory.add_message(small)
    assert memory.pending_tokens("t1") >= 800  # a second interval crossed
    run(memory.observe("t1"))
    assert kinds(memory) == ["observation_buffered"]
    # The boundary still moved, to the unbuffered part of the pending tokens (what 1.10 stores).
    covered = sum(c.message_tokens for c in memory.record("t1").buffered_observation_chunks)
    assert memory.record("t1").last_buffered_at_tokens == memory.pending_tokens("t1") - covered


# -- activation -------------------------------------------------------------------------------------------------


def test_activation_at_the_threshold_keeps_the_retention_floor() -> None:
    memory = ObservationalMemory(thread_config(), observer=ScriptedModel(), token_counter=CharRatioCounter())
    steps = feed(memory, 60)
    activated = [e for e in memory.events if e.kind == "observation_activated"]
    assert activated
    first = json.loads(activated[0].detail)
    assert first["pending_before"] >= 2000  # never before the threshold
    assert first["chunks"] >= 1
    floor = memory.config.retention_floor  # 400
    assert first["pending_after"] >= min(1000, floor)
    assert first["pending_after"] <= floor + memory.config.buffer_tokens  # the gate's promise
    # The outcome reports the observation; the observations are appended with a boundary line.
    assert any(outcome is not None for _, outcome in steps)
    record = memory.record("t1")
    if len(activated) > 1:
        assert "--- message boundary (" in record.active_observations
    assert all(e.kind != "observation" for e in memory.events)


def test_activation_moves_counters_and_cursor() -> None:
    seen: list = []

    def on_event(event) -> None:
        record = memory.record("t1")
        seen.append((event, list(record.buffered_observation_chunks), memory.pending_tokens("t1"),
                     list(record.observed_message_ids)))

    memory = ObservationalMemory(thread_config(), observer=ScriptedModel(), token_counter=CharRatioCounter(),
                                 on_event=on_event)
    feed(memory, 60)
    index = next(i for i, (e, *_rest) in enumerate(seen) if e.kind == "observation_activated")
    event, left, pending_after, observed = seen[index]
    chunks = seen[index - 1][1]  # the chunks just before activation (the previous event was a buffering pass)
    count = json.loads(event.detail)["chunks"]
    assert event.observation_tokens_after == event.observation_tokens_before + sum(
        c.token_count for c in chunks[:count]
    )
    # The messages' own tokens: each chunk also counted its list overhead.
    assert event.message_tokens == sum(c.message_tokens - TOKENS_PER_CONVERSATION for c in chunks[:count])
    assert [c.id for c in left] == [c.id for c in chunks[count:]]
    assert set(observed) == {i for c in chunks[:count] for i in c.message_ids}
    assert pending_after == json.loads(event.detail)["pending_before"] - event.message_tokens
    first_record = memory.generations("t1")[0]
    assert first_record.last_observed_at is not None
    assert first_record.last_observed_at >= chunks[count - 1].last_observed_at


class _FailingBufferModel(ScriptedModel):
    """Fails every buffered Observer call (those asking for observations only); sync calls work."""

    async def complete(self, messages, *, stage, settings):
        hint = load_prompts("observer_request")["hints_skipped"].strip()
        if stage == "observer" and any(hint in str(m["content"]) for m in messages):
            raise RuntimeError("buffered call failed")
        return await super().complete(messages, stage=stage, settings=settings)


def test_failed_buffering_falls_through_to_sync_observation_at_block_after() -> None:
    # Every buffered call fails: no chunk exists at the threshold, so activation waits, and at block_after
    # (1.2 x 2000) the step observes synchronously. Failures never raise.
    memory = ObservationalMemory(thread_config(), observer=_FailingBufferModel(), token_counter=CharRatioCounter())
    steps = feed(memory, 80)
    assert kinds(memory).count("observation_buffer_failed") >= 3
    assert "observation" in kinds(memory)
    first = next(i for i, (_, outcome) in enumerate(steps) if outcome is not None)
    assert steps[first][0] >= 2400  # block_after = 1.2 x 2000
    assert steps[first - 1][0] < 2400  # ... and not a step later
    assert any(p >= 2000 for p, _ in steps[:first])  # the threshold alone did not observe


def test_sync_observation_voids_buffered_chunks() -> None:
    memory = ObservationalMemory(thread_config(), observer=ScriptedModel(), token_counter=CharRatioCounter())
    feed(memory, 12)
    assert memory.record("t1").buffered_observation_chunks
    run(memory.observe("t1", force=True))
    record = memory.record("t1")
    assert record.buffered_observation_chunks == [] and memory.pending_tokens("t1") == 0
    assert record.last_buffered_at_tokens == 0


# -- buffered reflection ---------------------------------------------------------------------------------------


def test_buffered_reflection_starts_at_half_and_activates_above_the_threshold() -> None:
    model = ScriptedModel(history=None)
    memory = ObservationalMemory(thread_config(observation_tokens=2500), observer=model,
                                 token_counter=CharRatioCounter())
    feed(memory, 150)
    events = memory.events
    buffered = [e for e in events if e.kind == "reflection_buffered"]
    activated = [e for e in events if e.kind == "reflection_activated"]
    assert buffered and activated
    first = buffered[0]
    assert json.loads(first.detail)["observation_tokens"] >= 1250  # 0.5 x 2500
    assert activated[0].observation_tokens_before > 2500  # activation only above the threshold
    assert activated[0].generation == 1
    # The async reflector call was told to leave out hints and starts at level 2 (the default gemini-2.5-flash).
    hint = load_prompts("reflector")["hints_skipped"].strip()
    first_reflector = model.calls_for("reflector")[0]
    assert hint in first_reflector.messages[-1]["content"]
    assert first.levels[0] == 2


def test_reflection_activation_keeps_the_unreflected_lines() -> None:
    at_activation: list[tuple[str, int]] = []

    def on_event(event) -> None:
        if event.kind == "reflection_activated":
            record = memory.record("t1")
            at_activation.append((record.active_observations, record.observation_token_count))

    memory = ObservationalMemory(thread_config(observation_tokens=2500), observer=ScriptedModel(),
                                 token_counter=CharRatioCounter(), on_event=on_event)
    feed(memory, 150)
    assert at_activation
    old, new = memory.generations("t1")[:2]
    new = replace(new, active_observations=at_activation[0][0], observation_token_count=at_activation[0][1])
    assert old.buffered_reflection is not None and old.reflected_observation_line_count
    rest = "\n".join(old.active_observations.split("\n")[old.reflected_observation_line_count:]).strip()
    expected = old.buffered_reflection + ("\n\n" + rest if rest else "")
    assert new.active_observations == expected
    assert new.observation_token_count == memory.counter.count_text(expected)
    assert new.origin_type == "reflection" and new.generation_count == 1


# -- snapshots, scopes, config ---------------------------------------------------------------------------------


def test_snapshot_round_trips_buffered_state_and_continues_identically() -> None:
    config = thread_config(observation_tokens=2500)
    memory = ObservationalMemory(config, observer=ScriptedModel(), token_counter=CharRatioCounter())
    for index in range(200):
        memory.add_message(message(index, words=3))
        run(memory.observe("t1"))
        record = memory.record("t1")
        if record.buffered_observation_chunks and record.buffered_reflection:
            break
    else:
        pytest.fail("never had chunks and a buffered reflection at once")
    data = json.loads(json.dumps(memory.snapshot()))
    restored = ObservationalMemory.from_snapshot(data, observer=ScriptedModel(), token_counter=CharRatioCounter())
    assert restored.snapshot() == data
    restored_record = restored.record("t1")
    assert restored_record.buffered_observation_chunks == memory.record("t1").buffered_observation_chunks
    assert restored_record.last_buffered_at_tokens == memory.record("t1").last_buffered_at_tokens
    # Both continue the same way.
    start = index + 1
    seen = len(memory.events)
    feed(memory, 30, start=start)
    feed(restored, 30, start=start)
    assert memory.snapshot() == restored.snapshot()
    assert [(e.kind, e.detail) for e in memory.events[seen:]] == [(e.kind, e.detail) for e in restored.events]


def test_threads_buffer_independently() -> None:
    memory = ObservationalMemory(thread_config(), observer=ScriptedModel(), token_counter=CharRatioCounter())
    feed(memory, 12, thread="a")
    feed(memory, 3, thread="b")
    assert memory.record("a").buffered_observation_chunks
    assert not memory.record("b").buffered_observation_chunks
    assert all(e.record_id.startswith("om-a-") for e in memory.events)


def test_resource_scope_has_no_async_buffering_in_1_10() -> None:
    config = OMConfig(scope="resource", observation=ObservationConfig(message_tokens=2000))
    assert not config.async_observation_enabled and config.buffer_tokens is None
    memory = ObservationalMemory(config, observer=ScriptedModel(), token_counter=CharRatioCounter())
    for index in range(60):
        memory.add_message(message(index, thread=f"s{index // 10}", words=3))
        run(memory.observe())
    assert "observation" in kinds(memory)
    assert not [k for k in kinds(memory) if k.endswith(("_buffered", "_activated"))]
    with pytest.raises(ConfigError, match="resource scope"):
        OMConfig(scope="resource", observation=ObservationConfig(buffer_tokens=0.2))


def test_buffering_off_observes_synchronously_without_warning(recwarn: pytest.WarningsRecorder) -> None:
    memory = ObservationalMemory(thread_config(buffer_tokens=False), observer=ScriptedModel(),
                                 token_counter=CharRatioCounter())
    feed(memory, 60)
    assert "observation" in kinds(memory)
    assert not [k for k in kinds(memory) if k.endswith(("_buffered", "_activated"))]
    assert not [w for w in recwarn.list if "async" in str(w.message)]


def test_buffering_events_fit_the_store_row() -> None:
    from om_eval.store.rows import event_row

    memory = ObservationalMemory(thread_config(observation_tokens=2500), observer=ScriptedModel(),
                                 token_counter=CharRatioCounter())
    feed(memory, 120)
    new_kinds = {"observation_buffered", "observation_activated", "reflection_buffered", "reflection_activated"}
    assert new_kinds <= set(kinds(memory))
    for seq, event in enumerate(e for e in memory.events if e.kind in new_kinds):
        row = event_row(event, "mem", "q1", seq)
        assert row["kind"] == event.kind and row["thread_count"] == len(event.thread_ids)
        json.loads(row["detail"])


def test_long_conversation_in_one_thread_stays_bounded() -> None:
    sessions = make_conversation(12, 6, seed=3)
    memory = ObservationalMemory(thread_config(message_tokens=3000, observation_tokens=2500),
                                 observer=ScriptedModel())
    block_after = memory.config.observation_block_after
    for session in sessions:
        for start in range(0, len(session.messages), 2):
            memory.add_messages([replace(m, thread_id="t") for m in session.messages[start : start + 2]])
            run(memory.observe("t"))
            assert memory.pending_tokens("t") < block_after + 400
    assert "observation_activated" in kinds(memory)


def test_restore_with_another_estimator_recounts_buffered_state() -> None:
    memory = ObservationalMemory(thread_config(), observer=ScriptedModel(), token_counter=CharRatioCounter())
    feed(memory, 12)
    assert memory.record("t1").buffered_observation_chunks
    other = CharRatioCounter(2.0)
    restored = ObservationalMemory.from_snapshot(memory.snapshot(), observer=ScriptedModel(), token_counter=other)
    record = restored.record("t1")
    for chunk in record.buffered_observation_chunks:
        assert chunk.token_count == other.count_text(chunk.observations)
        assert chunk.message_tokens == sum(restored.message_tokens(i) for i in chunk.message_ids)
    assert record.last_buffered_at_tokens == 0


# -- the first step of an agent turn (start_turn) ----------------------------------------------------------------


def test_the_first_step_never_observes_synchronously() -> None:
    # Far past block_after with nothing buffered: 1.x's step 0 only buffers; the later step observes.
    memory = ObservationalMemory(thread_config(), observer=ScriptedModel(), token_counter=CharRatioCounter())
    memory.add_messages(message(i, words=3) for i in range(60))
    assert memory.pending_tokens("t1") > 1.2 * 2000
    assert run(memory.start_turn("t1")) is None
    assert kinds(memory) == ["observation_buffered"]
    assert memory.record("t1").active_observations == ""
    outcome = run(memory.observe("t1"))
    assert outcome is not None and memory.record("t1").active_observations


def test_the_first_step_activates_before_it_buffers_the_new_messages() -> None:
    memory = ObservationalMemory(thread_config(), observer=ScriptedModel(), token_counter=CharRatioCounter())
    index = 0
    while memory.pending_tokens("t1") + 150 < 2000:  # chunks build up below the threshold
        memory.add_message(message(index, words=2))
        run(memory.start_turn("t1"))
        run(memory.observe("t1"))
        index += 1
    assert memory.record("t1").buffered_observation_chunks and not memory.record("t1").active_observations
    while memory.pending_tokens("t1") < 2000:  # the new turn's message takes pending past the threshold
        memory.add_message(message(index, words=2))
        index += 1
    before = len(memory.events)
    newest = message(index - 1, words=2).id
    outcome = run(memory.start_turn("t1"))
    assert outcome is not None
    new = [e.kind for e in memory.events[before:]]
    assert new[0] == "observation_activated"
    # The newest message was in no chunk when activation ran, so it is still unobserved.
    assert newest in {m.id for m in memory.unobserved_messages("t1")}


def test_the_first_step_is_a_no_op_without_buffering() -> None:
    memory = ObservationalMemory(thread_config(buffer_tokens=False), observer=ScriptedModel(),
                                 token_counter=CharRatioCounter())
    memory.add_messages(message(i, words=3) for i in range(40))
    assert run(memory.start_turn("t1")) is None
    assert memory.events == [] and memory.record("t1").active_observations == ""


# -- which messages a buffering pass takes (observation.buffer_candidates) -----------------------------------------


def _with_dropped_chunk(candidates: str) -> ObservationalMemory:
    """A memory whose pending chunk was dropped by a reflection generation, as 1.10's storage drops it."""
    memory = ObservationalMemory(thread_config(buffer_candidates=candidates), observer=ScriptedModel(),
                                 token_counter=CharRatioCounter())
    index = 0
    while not memory.record("t1").buffered_observation_chunks:
        memory.add_message(message(index, words=3))
        run(memory.start_turn("t1"))
        run(memory.observe("t1"))
        index += 1
    record = memory.record("t1")
    assert not record.active_observations  # nothing activated yet: the chunk is all there is
    memory._generations["t1"].append(record.next_generation("Date: Mar 1, 2024\n* kept", 5, START))
    return memory


def test_unbuffered_candidates_rebuffer_what_a_generation_dropped() -> None:
    memory = _with_dropped_chunk("unbuffered")
    dropped = {m.id for m in memory.unobserved_messages("t1")}
    index = len(dropped)
    while not memory.record("t1").buffered_observation_chunks:
        memory.add_message(message(index, words=3))
        run(memory.start_turn("t1"))
        run(memory.observe("t1"))
        index += 1
    chunk = memory.record("t1").buffered_observation_chunks[0]
    assert dropped <= set(chunk.message_ids)  # the dropped chunk's messages are observed again


def test_after_cursor_candidates_skip_them_and_activation_drops_them_visibly() -> None:
    memory = _with_dropped_chunk("after_cursor")
    dropped = {m.id for m in memory.unobserved_messages("t1")}
    index = len(dropped)
    while not any(e.kind == "observation_activated" for e in memory.events):
        memory.add_message(message(index, words=3))
        run(memory.start_turn("t1"))
        run(memory.observe("t1"))
        index += 1
    chunks = [c for e in memory.events if e.kind == "observation_buffered" and '"stored": true' in e.detail
              for c in [json.loads(e.detail)]]
    assert chunks
    assert not dropped & {i for c in memory.record("t1").buffered_observation_chunks for i in c.message_ids}
    event = next(e for e in memory.events if e.kind == "messages_dropped")
    assert set(json.loads(event.detail)["messages"]) == dropped  # 1.10 loses them silently; om-eval says so
    assert not dropped & {m.id for m in memory.unobserved_messages("t1")}
    assert "buffer_candidates" not in memory_view(OMConfig())["observation"]  # the default keeps config hashes


# -- 1.10's quirks at later steps and across generations ---------------------------------------------------------


def _step_activations(counts_reminder: bool) -> list[tuple[bool, int, int]]:
    """Pairs replayed as two-step turns; per activation at a later step: (observations shown at the first step,
    pending tokens, the pending tokens activation counted)."""
    # Small thresholds, as in the engine differential, where the reminder is large next to the pending tokens.
    config = thread_config(400, 300, activation_counts_reminder=counts_reminder)
    memory = ObservationalMemory(config, observer=ScriptedModel(), token_counter=CharRatioCounter())
    seen = []
    for index in range(0, 240, 2):
        memory.add_messages([message(index, words=6), message(index + 1, words=6)])
        run(memory.start_turn("t1"))
        shown, pending, before = bool(memory.record("t1").active_observations), memory.pending_tokens("t1"), len(
            memory.events)
        run(memory.observe("t1"))
        seen += [(shown, pending, json.loads(e.detail)["pending_before"]) for e in memory.events[before:]
                 if e.kind == "observation_activated"]
    return seen


def test_activation_at_later_steps_counts_the_reminder_only_when_asked() -> None:
    plain, reminded = _step_activations(False), _step_activations(True)
    assert plain and all(counted == pending for _, pending, counted in plain)
    assert len(reminded) > 10 * len(plain)  # 281 more tokens pass the gate (or force it) at many more steps
    assert all(counted == pending + (REMINDER_TOKENS_1_10 if shown else 0) for shown, pending, counted in reminded)
    assert "activation_counts_reminder" not in memory_view(OMConfig())["observation"]
    with pytest.raises(ConfigError, match="observation.activation_counts_reminder"):
        thread_config(activation_counts_reminder="yes")


def test_a_reflection_generation_keeps_the_buffering_boundary() -> None:
    # 1.10 resets the stored boundary of a new generation but decides with its in-process copy, which survives.
    memory = ObservationalMemory(thread_config(), observer=ScriptedModel(), token_counter=CharRatioCounter())
    index = 0
    while not (memory.record("t1").active_observations and memory.record("t1").last_buffered_at_tokens):
        memory.add_message(message(index, words=3))
        run(memory.start_turn("t1"))
        run(memory.observe("t1"))
        index += 1
    boundary = memory.record("t1").last_buffered_at_tokens
    run(memory.reflect("t1"))
    assert len(memory.generations("t1")) == 2 and memory.record("t1").last_buffered_at_tokens == boundary


# -- 1.31's buffering (mastra_release=v1_31); the engine differential compares it with 1.31.0 -------------------


def v1_31(config: OMConfig) -> OMConfig:
    return replace(config, mastra_release="v1_31")


def test_1_31_observes_at_once_when_nothing_can_be_activated() -> None:
    # Every buffered call fails, so no chunk exists: 1.10 waits for block_after (2400); 1.31 observes at 2000.
    memory = ObservationalMemory(v1_31(thread_config()), observer=_FailingBufferModel(),
                                 token_counter=CharRatioCounter())
    steps = feed(memory, 80)
    first = next(i for i, (_, outcome) in enumerate(steps) if outcome is not None)
    assert 2000 <= steps[first][0] < 2400 and steps[first - 1][0] < 2000


def test_1_31_buffers_only_below_the_threshold_and_keeps_chunks_a_sync_observation_passed() -> None:
    memory = ObservationalMemory(v1_31(thread_config()), observer=ScriptedModel(), token_counter=CharRatioCounter())
    started = []
    for index in range(80):
        before = kinds(memory).count("observation_buffered")
        steps = feed(memory, 1, start=index)
        if kinds(memory).count("observation_buffered") > before:
            started.append(steps[0][0])
    assert len(started) >= 5 and all(pending < 2000 for pending in started)
    feed(memory, 6, start=80)
    chunks = len(memory.record("t1").buffered_observation_chunks)
    run(memory.observe("t1", force=True))
    assert len(memory.record("t1").buffered_observation_chunks) == chunks  # 1.31 leaves them in place


def test_1_31_boundary_is_what_a_stored_pass_covered_from_the_next_turn_on() -> None:
    memory = ObservationalMemory(v1_31(thread_config()), observer=ScriptedModel(), token_counter=CharRatioCounter())
    for index in range(0, 60, 2):
        memory.add_messages([message(index), message(index + 1)])
        run(memory.start_turn("t1"))
        chunks = memory.record("t1").buffered_observation_chunks
        if len(chunks) == 2:
            break
    record = memory.record("t1")
    assert record.last_buffered_at_tokens == chunks[-1].message_tokens < memory.pending_tokens("t1")
    # ... while the turn's later step still decides from where the pass started: no second pass at once.
    run(memory.observe("t1"))
    assert len(memory.record("t1").buffered_observation_chunks) == len(chunks)


def test_1_31_marks_where_the_chunks_not_yet_activated_begin() -> None:
    model = ScriptedModel(history=None)
    memory = ObservationalMemory(v1_31(thread_config()), observer=model, token_counter=CharRatioCounter())
    feed(memory, 80)
    requests = [str(c.messages[-2]["content"]) for c in model.calls_for("observer")]
    marked = [r for r in requests if "--- BUFFERED (pending activation) ---" in r]
    assert marked and len(marked) < len(requests)  # only once observations are active and a chunk waits


@pytest.mark.parametrize(("release", "after"), [("v1_10", "reflection_buffered"), ("v1_31", "reflection")])
def test_an_activation_at_a_later_step_reflects_synchronously_only_under_1_31(release: str, after: str) -> None:
    # The first activation lifts the observations far past reflection.block_after (1.2 x 200) with nothing
    # buffered: 1.10's check after it (maybeAsyncReflect) only starts a buffered reflection; 1.31 reflects at once.
    config = replace(thread_config(observation_tokens=200), mastra_release=release)
    memory = ObservationalMemory(config, observer=ScriptedModel(), token_counter=CharRatioCounter())
    feed(memory, 40)
    found = kinds(memory)
    first = found.index("observation_activated")
    assert memory.events[first].observation_tokens_after > 240
    assert found[first + 1] == after
    assert "reflection" not in found[:first]


class _HintingModel(ScriptedModel):
    """The scripted model with fixed hints after every answer; buffered answers get their own."""

    async def complete(self, messages, *, stage, settings):
        reply = await super().complete(messages, stage=stage, settings=settings)
        buffered = any(load_prompts("observer_request")["hints_skipped"] in str(m["content"]) for m in messages)
        observations = reply.text[: reply.text.index("</observations>") + len("</observations>")]
        task = "" if buffered else "<current-task>\nSync task\n</current-task>\n"
        return replace(reply, text=observations + "\n" + task + "<suggested-response>\nFrom " + stage
                       + (" (buffered)" if buffered else "") + "\n</suggested-response>")


def test_activation_replaces_the_thread_hints_and_clears_an_absent_one() -> None:
    memory = ObservationalMemory(thread_config(), observer=_HintingModel(), token_counter=CharRatioCounter())
    feed(memory, 4)
    run(memory.observe("t1", force=True))  # a synchronous observation leaves both hints
    hints = memory.thread_state("t1")
    assert (hints.current_task, hints.suggested_response) == ("Sync task", "From observer")
    feed(memory, 60, start=4)
    assert "observation_activated" in kinds(memory)
    assert hints.current_task is None  # the last activated chunk had none
    assert hints.suggested_response == "From observer (buffered)"
