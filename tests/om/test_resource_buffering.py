"""Async buffering and buffered reflection in resource scope: an om-eval extension (``resource_buffering``).

1.10 refuses async options in resource scope; these tests pin the switch that allows them, and how a resource
chunk keeps a part per thread that activation merges into that thread's section. Scripted model throughout.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as note_path
from hypothesis import strategies as st

from om_eval.om import Message, ObservationalMemory, ObservationConfig, OMConfig, ReflectionConfig
from om_eval.om.config import ConfigError
from om_eval.om.prompts import load_prompts
from om_eval.om.records import BufferedChunk, ThreadChunk
from om_eval.om.tokens import CharRatioCounter
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
THREADS = ("a", "b", "c")


def run(coro):
    return asyncio.run(coro)


def resource_config(
    message_tokens: int = 2000, observation_tokens: int = 100_000, max_tokens_per_batch: int = 10_000,
    **observation: object,
) -> OMConfig:
    return OMConfig(
        scope="resource",
        resource_buffering=True,
        obscure_thread_ids=True,
        observation=ObservationConfig(
            message_tokens=message_tokens, max_tokens_per_batch=max_tokens_per_batch, **observation
        ),
        reflection=ReflectionConfig(observation_tokens=observation_tokens),
    )


def message(index: int, thread: str, words: int = 3) -> Message:
    text = " ".join(SENTENCES[(index + k) % len(SENTENCES)] for k in range(words))
    return Message(
        id=f"{thread}-m{index:04d}", thread_id=thread, role="user" if index % 2 == 0 else "assistant",
        content=text, created_at=START + timedelta(minutes=index),
    )


def memory_for(config: OMConfig, model: ScriptedModel | None = None, **kwargs: object) -> ObservationalMemory:
    return ObservationalMemory(config, observer=model or ScriptedModel(), token_counter=CharRatioCounter(),
                               resource_id="user1", **kwargs)


def feed(memory: ObservationalMemory, count: int, *, start: int = 0, threads=THREADS, words: int = 3) -> None:
    """Add ``count`` messages round-robin over ``threads``, two per thread in a row, checking after each."""
    for index in range(start, start + count):
        thread = threads[(index // 2) % len(threads)]
        memory.add_message(message(index, thread, words))
        run(memory.observe(thread))


def feed_until(memory: ObservationalMemory, done, limit: int = 400) -> int:
    for index in range(limit):
        thread = THREADS[(index // 2) % len(THREADS)]
        memory.add_message(message(index, thread))
        run(memory.observe(thread))
        if done(memory):
            return index + 1
    pytest.fail("the condition never held")


def kinds(memory: ObservationalMemory) -> list[str]:
    return [e.kind for e in memory.events]


def section_bodies(text: str, shown: str) -> str:
    """Everything inside ``shown``'s sections."""
    return "\n".join(re.findall(rf'<thread id="{shown}">\n(.*?)\n</thread>', text, re.DOTALL))


class _FailingBufferModel(ScriptedModel):
    """Fails every buffered Observer call (those asking for observations only); sync calls work."""

    async def complete(self, messages, *, stage, settings):
        hint = load_prompts("observer_request")["hints_skipped"].strip()
        if stage == "observer" and any(hint in str(m["content"]) for m in messages):
            raise RuntimeError("buffered call failed")
        return await super().complete(messages, stage=stage, settings=settings)


class _FlakyBufferModel(ScriptedModel):
    """Fails the buffered Observer calls that ``pattern`` marks (cycling through it); sync calls work."""

    def __init__(self, pattern: list[bool]) -> None:
        super().__init__()
        self.pattern, self.buffered = pattern, 0

    async def complete(self, messages, *, stage, settings):
        hint = load_prompts("observer_request")["hints_skipped"].strip()
        if stage == "observer" and any(hint in str(m["content"]) for m in messages):
            self.buffered += 1
            if self.pattern[(self.buffered - 1) % len(self.pattern)]:
                raise RuntimeError("buffered call failed")
        return await super().complete(messages, stage=stage, settings=settings)


# -- the switch ------------------------------------------------------------------------------------------------


def test_without_the_switch_resource_scope_keeps_the_1_10_rule() -> None:
    assert not OMConfig(scope="resource").async_observation_enabled
    with pytest.raises(ConfigError, match="resource_buffering=true") as error:
        OMConfig(scope="resource", observation=ObservationConfig(buffer_tokens=0.2))
    assert "not available in resource scope" in str(error.value)
    OMConfig(scope="resource", observation=ObservationConfig(buffer_tokens=False))  # explicit off is fine


def test_with_the_switch_the_usual_defaults_and_checks_apply() -> None:
    config = OMConfig(scope="resource", resource_buffering=True)
    assert config.async_observation_enabled and config.async_reflection_enabled
    assert (config.buffer_tokens, config.observation_block_after) == (6000, 36_000)
    assert config.retention_floor == pytest.approx(6000)
    explicit = OMConfig(scope="resource", resource_buffering=True,
                        observation=ObservationConfig(buffer_tokens=0.1, block_after=1.5))
    assert (explicit.buffer_tokens, explicit.observation_block_after) == (3000, 45_000)
    with pytest.raises(ConfigError, match="must be less than observation.message_tokens"):
        OMConfig(scope="resource", resource_buffering=True, observation=ObservationConfig(buffer_tokens=40_000))
    with pytest.raises(ConfigError, match="share_token_budget"):
        OMConfig(scope="resource", resource_buffering=True, share_token_budget=True)
    off = OMConfig(scope="resource", resource_buffering=True, observation=ObservationConfig(buffer_tokens=False))
    assert not off.async_observation_enabled


def test_the_switch_is_refused_where_it_means_nothing() -> None:
    with pytest.raises(ConfigError, match="resource_buffering=True is invalid: only applies to scope=resource"):
        OMConfig(resource_buffering=True)
    with pytest.raises(ConfigError, match="must be true or false"):
        OMConfig(scope="resource", resource_buffering="yes")  # type: ignore[arg-type]  # a non-bool on purpose


def test_the_switch_leaves_old_config_dicts_and_hashes_alone() -> None:
    assert "resource_buffering" not in memory_view(OMConfig())
    assert "resource_buffering" not in memory_view(OMConfig(scope="resource"))
    on = OMConfig(scope="resource", resource_buffering=True)
    assert on.to_dict()["resource_buffering"] is True
    assert OMConfig.from_dict(on.to_dict()) == on
    assert OMConfig.from_dict(OMConfig(scope="resource").to_dict()) == OMConfig(scope="resource")


# -- buffering passes ------------------------------------------------------------------------------------------


def test_a_pass_stores_one_chunk_with_a_part_per_thread() -> None:
    model = ScriptedModel(history=None)
    memory = memory_for(resource_config(), model)
    feed_until(memory, lambda m: m.record().buffered_observation_chunks)
    record = memory.record()
    assert record.id == "om-user1-gen0"
    (chunk,) = record.buffered_observation_chunks
    assert chunk.threads is not None and set(chunk.threads) == set(THREADS)
    for thread_id, part in chunk.threads.items():
        assert part.message_ids and all(i.startswith(f"{thread_id}-") for i in part.message_ids)
        assert f'<thread id="{memory.shown_thread_id(thread_id)}">' in chunk.observations
        assert part.observations and "<thread" not in part.observations
    assert chunk.message_ids == [i for p in chunk.threads.values() for i in p.message_ids]
    assert chunk.message_tokens == sum(memory.message_tokens(i) for i in chunk.message_ids)
    assert chunk.token_count == memory.counter.count_text(chunk.observations)
    event = memory.events[-1]
    assert event.kind == "observation_buffered" and set(event.thread_ids) == set(THREADS)
    assert event.calls == 1 and json.loads(event.detail)["stored"] is True
    # One multi-thread call, told to leave out continuation hints, with every thread's messages.
    (call,) = model.calls_for("observer")
    text = "\n".join(m["content"] for m in call.messages)
    assert load_prompts("observer_request")["hints_skipped"].strip() in text
    assert all(f'<thread id="{memory.shown_thread_id(t)}">' in text for t in THREADS)
    assert memory.pending_tokens() > 0  # buffering observes nothing yet


def test_passes_batch_by_max_tokens_per_batch_and_never_overlap() -> None:
    memory = memory_for(resource_config(max_tokens_per_batch=150), ScriptedModel())
    feed_until(memory, lambda m: len(m.record().buffered_observation_chunks) >= 2)
    stored = [e for e in memory.events if e.kind == "observation_buffered"]
    assert any(json.loads(e.detail)["batches"] > 1 and e.calls == json.loads(e.detail)["batches"] for e in stored)
    ids = [i for c in memory.record().buffered_observation_chunks for i in c.message_ids]
    assert len(ids) == len(set(ids))


def test_a_failed_buffer_call_is_recorded_and_never_raised() -> None:
    memory = memory_for(resource_config(), ScriptedModel(faults={"observer": ["server_error"]}))
    feed_until(memory, lambda m: "observation_buffer_failed" in kinds(m))
    event = next(e for e in memory.events if e.kind == "observation_buffer_failed")
    assert set(event.thread_ids) == set(THREADS) and "ScriptedModelError" in event.detail
    assert memory.record().buffered_observation_chunks == []
    # The next interval buffers the same messages again.
    feed_until(memory, lambda m: m.record().buffered_observation_chunks)
    assert memory.record().buffered_observation_chunks[0].message_ids[0] == "a-m0000"


# -- activation ------------------------------------------------------------------------------------------------


def test_activation_merges_each_part_into_its_threads_section() -> None:
    seen: list[tuple[list[BufferedChunk], str, str]] = []

    def on_event(event) -> None:
        if event.kind == "observation_buffered":
            chunks_before.append(copy.deepcopy(memory.record().buffered_observation_chunks))
        if event.kind == "observation_activated":
            seen.append((chunks_before[-1], memory.record().active_observations, event.detail))

    chunks_before: list[list[BufferedChunk]] = []
    memory = memory_for(resource_config(), on_event=on_event)
    feed_until(memory, lambda m: bool(seen))
    chunks, active, detail = seen[0]
    activated = chunks[: json.loads(detail)["chunks"]]
    for chunk in activated:
        for thread_id, part in chunk.threads.items():
            body = section_bodies(active, memory.shown_thread_id(thread_id))
            for line in part.observations.splitlines():
                assert line in body, (thread_id, line)
            assert not set(part.message_ids) & {m.id for m in memory.unobserved_messages()}
    # Another thread's lines never land in this thread's section: sections hold only their own times.
    assert active.count('<thread id="') >= len(THREADS)
    record = memory.record()
    assert record.observation_token_count == memory.counter.count_text(record.active_observations)
    assert record.last_buffered_at_tokens == 0
    event = next(e for e in memory.events if e.kind == "observation_activated")
    assert set(event.thread_ids) == {t for c in activated for t in c.threads}


def test_activation_keeps_the_retention_floor() -> None:
    memory = memory_for(resource_config())
    feed_until(memory, lambda m: "observation_activated" in kinds(m))
    detail = json.loads(next(e.detail for e in memory.events if e.kind == "observation_activated"))
    config = memory.config
    assert not detail["forced"]
    assert 0 < detail["pending_after"] <= config.retention_floor + config.buffer_tokens
    assert detail["pending_after"] == memory.pending_tokens()


def test_activated_hints_are_written_per_thread_and_absent_ones_keep_the_old() -> None:
    memory = memory_for(resource_config())
    memory.thread_state("b").current_task = "planning the move"
    memory._write_buffered_hints("b", ThreadChunk("* 🔴 (09:00) User stated: hi", []))
    assert memory.thread_state("b").current_task == "planning the move"  # buffered calls are asked for none
    part = ThreadChunk("Date: Mar 1, 2024\n* 🔴 (09:00) User stated: hi", [], current_task="pack boxes",
                       suggested_continuation="Ask about the boxes.", thread_title="Moving house")
    memory._write_buffered_hints("b", part)
    state = memory.thread_state("b")
    assert (state.current_task, state.suggested_response, state.thread_title) == (
        "pack boxes", "Ask about the boxes.", "Moving house")


def test_blocking_falls_back_to_synchronous_resource_observation() -> None:
    memory = memory_for(resource_config(), _FailingBufferModel())
    pendings = []
    for index in range(200):
        thread = THREADS[(index // 2) % 3]
        memory.add_message(message(index, thread))
        pendings.append(memory.pending_tokens())
        if run(memory.observe(thread)) is not None:
            break
    assert kinds(memory).count("observation_buffer_failed") >= 3
    assert kinds(memory)[-1] == "observation"
    assert pendings[-1] >= 2400 > pendings[-2]  # block_after = 1.2 x 2000, and not a step later
    assert memory.record().last_buffered_at_tokens == 0


def test_sync_observation_drops_the_parts_of_the_threads_it_observed() -> None:
    memory = memory_for(resource_config())
    feed_until(memory, lambda m: m.record().buffered_observation_chunks)
    # A big thread alone reaches the threshold, so a synchronous pass observes it and leaves the others.
    for index in range(500, 540):
        memory.add_message(message(index, "big", words=5))
    run(memory._observe_resource_sync(False))
    (chunk,) = memory.record().buffered_observation_chunks
    assert "big" not in chunk.threads and set(chunk.threads) == set(THREADS)
    observed = {m.id for m in memory._messages.values()} - {m.id for m in memory.unobserved_messages()}
    assert not observed & set(chunk.message_ids)
    # Once a part's thread is observed too, the part goes; an empty chunk goes with it.
    run(memory.observe(force=True))
    assert memory.record().buffered_observation_chunks == [] and memory.pending_tokens() == 0


# -- buffered reflection ---------------------------------------------------------------------------------------


def test_buffered_reflection_activates_and_keeps_every_section() -> None:
    model = ScriptedModel(history=None)
    memory = memory_for(resource_config(observation_tokens=1500), model)
    feed_until(memory, lambda m: "reflection_activated" in kinds(m))
    old, new = memory.generations()[:2]
    assert new.id == "om-user1-gen1" and new.origin_type == "reflection"
    lines = old.active_observations.split("\n")
    count = old.reflected_observation_line_count
    assert count and lines[count - 1].strip() == "</thread>"  # the slice ends on a section boundary
    shown = {memory.shown_thread_id(t) for t in THREADS}
    had = {s for s in shown if f'<thread id="{s}">' in old.active_observations}
    assert had and all(f'<thread id="{s}">' in new.active_observations for s in had)
    assert new.active_observations.count("<thread id=") == new.active_observations.count("</thread>")
    buffered = next(e for e in memory.events if e.kind == "reflection_buffered")
    assert buffered.record_id == "om-user1-gen0"
    assert load_prompts("reflector")["hints_skipped"].strip() in model.calls_for("reflector")[0].messages[-1]["content"]


def test_a_buffered_reflection_whose_lines_changed_is_discarded_not_activated() -> None:
    memory = memory_for(resource_config(observation_tokens=1500))
    feed_until(memory, lambda m: m.record().buffered_reflection is not None)
    record = memory.record()
    count = record.reflected_observation_line_count
    lines = record.active_observations.split("\n")
    # As a synchronous observation would: a line added inside a section the reflection condensed.
    lines.insert(count - 1, "* 🔴 (23:59) User stated: a late fact that must not be lost")
    record.active_observations = "\n".join(lines)
    run(memory._maybe_reflect_async("user1"))
    assert "reflection_buffer_discarded" in kinds(memory)
    record = memory.record()
    assert record.generation_count == 0 and "a late fact" in record.active_observations
    if record.buffered_reflection is not None:  # buffered again from the current lines
        assert not memory._reflected_prefix_changed(record)


def test_activation_never_edits_the_lines_a_buffered_reflection_condensed() -> None:
    memory = memory_for(resource_config())
    record = memory._ensure_record(None)
    head = '<thread id="x">\nDate: Mar 1, 2024\n* 🔴 (09:00) User stated: one\n</thread>'
    record.active_observations = head
    record.buffered_reflection, record.reflected_observation_line_count = "* condensed", 4
    merged = memory._merge_part(record, "x", "Date: Mar 1, 2024\n* 🔴 (10:00) User stated: two", "\n\n")
    assert merged.startswith(head + "\n\n") and merged.count('<thread id="x">') == 2
    record.buffered_reflection = None
    merged = memory._merge_part(record, "x", "Date: Mar 1, 2024\n* 🔴 (10:00) User stated: two", "\n\n")
    assert merged.count('<thread id="x">') == 1 and "two" in merged


# -- snapshots -------------------------------------------------------------------------------------------------


def test_snapshot_round_trips_mid_buffer_and_continues_identically() -> None:
    memory = memory_for(resource_config(observation_tokens=2500))
    index = feed_until(
        memory, lambda m: len(m.record().buffered_observation_chunks) >= 2 and m.record().active_observations
    )
    data = json.loads(json.dumps(memory.snapshot()))
    chunk_data = data["generations"]["user1"][-1]["buffered_observation_chunks"][0]
    assert chunk_data["threads"] and set(chunk_data["threads"]) <= set(THREADS)
    restored = ObservationalMemory.from_snapshot(data, observer=ScriptedModel(), token_counter=CharRatioCounter())
    assert restored.snapshot() == data
    assert restored.record().buffered_observation_chunks == memory.record().buffered_observation_chunks
    seen = len(memory.events)
    feed(memory, 60, start=index)
    feed(restored, 60, start=index)
    assert memory.snapshot() == restored.snapshot()
    assert [(e.kind, e.detail) for e in memory.events[seen:]] == [(e.kind, e.detail) for e in restored.events]


def test_chunks_from_before_the_field_still_load() -> None:
    chunk = BufferedChunk("ombuf-1", "buffer-1", "x", 1, ["m1"], 10, START, START)
    data = chunk.to_dict()
    assert "threads" not in data  # thread-scope chunks keep their old shape
    assert BufferedChunk.from_dict(data) == chunk
    with_parts = BufferedChunk("ombuf-2", "buffer-2", "y", 1, ["m2"], 10, START, START,
                               threads={"a": ThreadChunk("* y", ["m2"], current_task="t")})
    assert BufferedChunk.from_dict(json.loads(json.dumps(with_parts.to_dict()))) == with_parts


# -- properties ------------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stream=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4)), min_size=20, max_size=160),
    message_tokens=st.sampled_from([300, 600, 1000]),
    per_batch=st.sampled_from([100, 400, 10_000]),
    reflect_at=st.sampled_from([400, 900, 100_000]),
    batch_mode=st.sampled_from(["parallel", "sequential"]),
    failures=st.lists(st.booleans(), min_size=1, max_size=4),
)
def test_resource_buffering_invariants(
    stream, message_tokens, per_batch, reflect_at, batch_mode, failures
) -> None:
    config = resource_config(message_tokens, reflect_at, per_batch, batch_mode=batch_mode)
    buffered_ids: set[str] = set()

    def on_event(event) -> None:
        if event.kind == "observation_buffered":
            buffered_ids.update(i for c in memory.record().buffered_observation_chunks for i in c.message_ids)

    memory = memory_for(config, _FlakyBufferModel(failures), on_event=on_event)
    sections: set[str] = set()
    for index, (thread_number, words) in enumerate(stream):
        thread = f"t{thread_number}"
        memory.add_message(message(index, thread, words))
        unobserved_before = {m.id for m in memory.unobserved_messages()}
        buffered_ids.clear()
        buffered_ids.update(i for c in memory.record().buffered_observation_chunks for i in c.message_ids)
        start = len(memory.events)
        run(memory.observe(thread))
        step = memory.events[start:]
        step_kinds = {e.kind for e in step}
        for kind in step_kinds & {"observation", "observation_activated", "reflection_activated", "reflection",
                                  "observation_buffer_failed", "reflection_buffer_discarded"}:
            note_path(kind)  # shown by --hypothesis-show-statistics: which paths the examples reached
        record = memory.record()
        unobserved = {m.id for m in memory.unobserved_messages()}
        chunk_ids = [i for c in record.buffered_observation_chunks for i in c.message_ids]
        # No message is both observed and still in a chunk; chunks never overlap and stay consistent.
        assert set(chunk_ids) <= unobserved and len(chunk_ids) == len(set(chunk_ids))
        for chunk in record.buffered_observation_chunks:
            assert chunk.message_tokens == sum(memory.message_tokens(i) for i in chunk.message_ids)
            assert chunk.message_ids == [i for p in chunk.threads.values() for i in p.message_ids]
        # Every newly observed message came from an activated chunk, unless a synchronous observation ran.
        newly_observed = unobserved_before - unobserved
        if "observation" not in step_kinds:
            assert newly_observed <= buffered_ids
        # Pending tokens never go negative; a gated (unforced) activation leaves at most the retention rule's share.
        assert memory.pending_tokens() >= 0
        for event in step:
            if event.kind == "observation_activated":
                detail = json.loads(event.detail)
                assert detail["pending_after"] >= 0
                if not detail["forced"]:
                    assert detail["pending_after"] <= config.retention_floor + config.buffer_tokens
        # A thread's section, once in memory, stays (reflections included).
        text = record.active_observations
        sections |= set(re.findall(r'<thread id="([^"]+)">', text))
        assert all(f'<thread id="{s}">' in text for s in sections)
        assert text.count("<thread id=") == text.count("</thread>")
