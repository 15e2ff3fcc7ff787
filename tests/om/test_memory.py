"""The engine end to end with the scripted model, plus one regression test per known Mastra failure."""

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
from om_eval.om.observer import ObserverOutputError
from om_eval.om.rules import rules_for
from om_eval.om.threads import obscure_thread_id
from om_eval.om.tokens import TOKENS_PER_CONVERSATION
from om_eval.testing.scripted.model import ScriptedModel, ScriptedModelError
from tests.om.identity_view import memory_view

MESSAGE_TOKENS = 6000
BATCH_TOKENS = 2500
REFLECT_TOKENS = 2500


def resource_config(**changes: object) -> OMConfig:
    config = OMConfig(
        scope="resource",
        obscure_thread_ids=True,
        observation=ObservationConfig(message_tokens=MESSAGE_TOKENS, max_tokens_per_batch=BATCH_TOKENS),
        reflection=ReflectionConfig(observation_tokens=REFLECT_TOKENS),
    )
    return replace(config, **changes)


def run(coro):
    return asyncio.run(coro)


class TestLongConversationInResourceScope:
    """24 sessions, ~34k tokens, fed pair by pair with a threshold-checked observe after each pair."""

    @pytest.fixture(scope="class")
    @classmethod
    def replay(cls) -> dict:
        model = ScriptedModel(history=None)  # the tests below read the very first call
        memory = ObservationalMemory(resource_config(), observer=model, resource_id="user-1")
        sessions = make_conversation(24, 6, seed=7)
        checks = []
        for session in sessions:
            for start in range(0, len(session.messages), 2):
                memory.add_messages(session.messages[start : start + 2])
                pending = memory.pending_tokens()
                outcome = run(memory.observe())
                checks.append((pending, outcome))
        return {"memory": memory, "model": model, "checks": checks, "sessions": sessions}

    def test_conversation_is_big_enough(self, replay: dict) -> None:
        total = sum(len(s.messages) for s in replay["sessions"])
        tokens = sum(replay["memory"]._message_tokens.values())
        assert len(replay["sessions"]) >= 20 and total == 288 and tokens > 30_000

    def test_observation_fires_exactly_at_the_threshold(self, replay: dict) -> None:
        fired = [pending for pending, outcome in replay["checks"] if outcome is not None]
        quiet = [pending for pending, outcome in replay["checks"] if outcome is None]
        assert len(fired) >= 4
        assert all(p >= MESSAGE_TOKENS for p in fired) and all(p < MESSAGE_TOKENS for p in quiet)

    def test_selected_threads_reach_the_threshold_and_batches_respect_the_limit(self, replay: dict) -> None:
        for pending, outcome in replay["checks"]:
            if outcome is None:
                continue
            assert sum(outcome.batch_tokens) >= MESSAGE_TOKENS
            for batch, tokens in zip(outcome.batches, outcome.batch_tokens):
                assert tokens <= BATCH_TOKENS or len(batch) == 1
            assert outcome.message_tokens <= pending

    def test_each_batch_is_one_multi_thread_observer_call_with_obscured_ids(self, replay: dict) -> None:
        observer_calls = replay["model"].calls_for("observer")
        batches = sum(len(o.batches) for _, o in replay["checks"] if o is not None)
        assert len(observer_calls) == batches
        history = observer_calls[0].messages[-1]["content"]
        assert "session-0" not in history and f'<thread id="{obscure_thread_id("session-000")}">' in history

    def test_reflection_fires_above_threshold_and_escalates(self, replay: dict) -> None:
        memory = replay["memory"]
        reflections = [e for e in memory.events if e.kind == "reflection"]
        assert reflections, "reflection never fired"
        assert all(e.observation_tokens_before > REFLECT_TOKENS for e in reflections)
        assert any(len(e.levels) > 1 and e.levels == tuple(range(e.levels[0], e.levels[-1] + 1)) for e in reflections)
        assert len(memory.generations()) == len(reflections) + 1
        assert [g.generation_count for g in memory.generations()] == list(range(len(reflections) + 1))
        # Below-threshold observation counts never trigger a reflection.
        for event in memory.events:
            if event.kind.startswith("reflection"):
                assert event.observation_tokens_before > REFLECT_TOKENS

    def test_snapshot_round_trips_exactly(self, replay: dict) -> None:
        memory = replay["memory"]
        snapshot = memory.snapshot()
        restored = ObservationalMemory.from_snapshot(json.loads(json.dumps(snapshot)), observer=ScriptedModel())
        assert restored.snapshot() == snapshot
        assert restored.pending_tokens() == memory.pending_tokens()

    def test_actor_context_has_annotated_optimised_observations_and_raw_tail(self, replay: dict) -> None:
        memory = replay["memory"]
        last = replay["sessions"][-1]
        now = last.started_at + timedelta(days=10)
        context = memory.build_context(now)
        text = "\n".join(m["content"] for m in context.memory_messages)
        assert "<observations>" in text
        assert "(10 days ago)" in text or "weeks ago)" in text  # dated headers relative to now
        assert "🟡" not in text and "🔴" in text  # optimised: low-priority markers removed
        assert "START_OTHER_CONVERSATIONS_BLOCK" in text
        unobserved = memory.unobserved_messages()
        assert unobserved and unobserved[-1].text()[:60] in text  # the raw, unobserved tail
        assert context.memory_messages[-1]["content"].startswith("<system-reminder>")


def test_restored_memory_continues_like_the_original() -> None:
    sessions = make_conversation(10, 6, seed=3)
    first, rest = sessions[:6], sessions[6:]

    def feed(memory: ObservationalMemory, part: list) -> None:
        for session in part:
            for start in range(0, len(session.messages), 2):
                memory.add_messages(session.messages[start : start + 2])
                run(memory.observe())

    original = ObservationalMemory(resource_config(), observer=ScriptedModel())
    feed(original, first)
    restored = ObservationalMemory.from_snapshot(json.loads(json.dumps(original.snapshot())), observer=ScriptedModel())
    feed(original, rest)
    feed(restored, rest)
    assert restored.snapshot() == original.snapshot()


def test_the_running_queue_totals_equal_the_queues_at_every_step_and_after_a_restore() -> None:
    """Resource scope keeps the unobserved tokens of all its threads as a running total, and the threads with
    unobserved messages apart (reading every thread's queue after each message, or at each observation, made a long
    conversation quadratic): both must equal what the queues hold at every step, in the queues' order."""
    memory = ObservationalMemory(resource_config(), observer=ScriptedModel())

    def summed() -> tuple[int, int]:
        queues = memory._queues.values()
        return sum(len(q.messages) for q in queues), sum(q.tokens for q in queues)

    observed = 0
    for session in make_conversation(12, 6, seed=5):
        for start in range(0, len(session.messages), 2):
            memory.add_messages(session.messages[start : start + 2])
            assert (memory._queued_messages, memory._queued_tokens) == summed()
            observed += run(memory.observe()) is not None
            count, tokens = summed()
            assert (memory._queued_messages, memory._queued_tokens) == (count, tokens)
            assert memory.queued_tokens() == tokens
            assert memory.pending_tokens() == (TOKENS_PER_CONVERSATION + tokens if count else 0)
            assert list(memory._observable_by_thread(None)) == [t for t, q in memory._queues.items() if q.messages]
    assert observed and memory._queued_messages  # both ways were taken, and the last messages still wait
    restored = ObservationalMemory.from_snapshot(json.loads(json.dumps(memory.snapshot())), observer=ScriptedModel())
    assert (restored._queued_messages, restored._queued_tokens) == summed()
    assert list(restored._observable_by_thread(None)) == list(memory._observable_by_thread(None))


def test_thread_scope_keeps_one_memory_per_thread() -> None:
    config = OMConfig(observation=ObservationConfig(message_tokens=600, buffer_tokens=False))
    memory = ObservationalMemory(config, observer=ScriptedModel())
    for session in make_conversation(3, 6, seed=1):
        for start in range(0, len(session.messages), 2):
            memory.add_messages(session.messages[start : start + 2])
            run(memory.observe(session.thread_id))
    for thread_id in memory.thread_ids:
        record = memory.record(thread_id)
        assert record.thread_id == thread_id and record.active_observations
        assert "--- message boundary (" in record.active_observations  # 1.10 delimiters between observations
        assert memory.pending_tokens(thread_id) < 600
    with pytest.raises(ValueError, match="thread scope needs a thread_id"):
        memory.pending_tokens()


def test_sequential_batches_see_the_previous_batch() -> None:
    model = ScriptedModel()
    config = resource_config(observation=replace(resource_config().observation, batch_mode="sequential"))
    memory = ObservationalMemory(config, observer=model)
    for session in make_conversation(5, 6, seed=2):
        memory.add_messages(session.messages)
    outcome = run(memory.observe(force=True))
    assert len(outcome.batches) >= 2
    calls = model.calls_for("observer")
    assert "## Previous Observations" not in calls[0].messages[1]["content"]
    assert "## Previous Observations" in calls[1].messages[1]["content"]


def test_parallel_batches_share_the_same_prior_observations() -> None:
    model = ScriptedModel()
    memory = ObservationalMemory(resource_config(), observer=model)
    for session in make_conversation(5, 6, seed=2):
        memory.add_messages(session.messages)
    run(memory.observe(force=True))
    tasks = {c.messages[1]["content"] for c in model.calls_for("observer")}
    assert len(tasks) == 1  # identical task message (same prior observations) for every batch


def test_force_flushes_everything_below_threshold() -> None:
    memory = ObservationalMemory(resource_config(), observer=ScriptedModel())
    memory.add_messages(make_conversation(2, 2, seed=5)[0].messages)
    assert run(memory.observe()) is None
    assert run(memory.observe(force=True)) is not None
    assert memory.pending_tokens() == 0 and run(memory.observe(force=True)) is None


def one_message(text: str, thread: str = "t1", minutes: int = 0, ident: str | None = None) -> Message:
    when = datetime(2025, 3, 1, 9) + timedelta(minutes=minutes)
    return Message(ident or f"{thread}-{minutes}", thread, "user", text, when)


# -- regression tests for known Mastra failures (lessons-from-peers §4) ----------------------------------------


def test_single_oversized_message_triggers_observation() -> None:
    # mastra#16523: one message larger than the threshold never triggered observation.
    memory = ObservationalMemory(resource_config(), observer=ScriptedModel())
    memory.add_message(one_message("I keep bees on my roof. " * 1500))
    assert memory.pending_tokens() > MESSAGE_TOKENS
    assert run(memory.observe()) is not None and memory.pending_tokens() == 0


@pytest.mark.parametrize("faults", [["error"], ["degenerate", "degenerate"], ["prose", "empty"]])
def test_failed_observer_marks_nothing_observed(faults: list[str]) -> None:
    # mastra PR#13356: a failed or empty observation still advanced the cursor.
    model = ScriptedModel(faults={"observer": faults})
    memory = ObservationalMemory(resource_config(), observer=model)
    memory.add_message(one_message("I keep bees on my roof. " * 1500))
    before = memory.snapshot()
    with pytest.raises((ObserverOutputError, ScriptedModelError)):
        run(memory.observe())
    after = memory.snapshot()
    assert after["generations"] == before["generations"] and after["threads"] == before["threads"]
    assert after["messages"] == before["messages"]
    assert memory.events[-1].kind == "observation_failed"
    assert run(memory.observe()) is not None  # the next call, now well-behaved, observes them


def test_degenerate_observer_output_is_retried_once() -> None:
    model = ScriptedModel(faults={"observer": ["degenerate"]})
    memory = ObservationalMemory(resource_config(), observer=model)
    memory.add_message(one_message("I keep bees on my roof. " * 1500))
    run(memory.observe())
    assert [c.fault for c in model.calls_for("observer")] == ["degenerate", None]
    assert memory.events[-1].calls == 2


def test_zero_observations_still_advance_the_watermark() -> None:
    # pi-observational-memory#23: an empty-but-valid answer never advanced the cursor, so it re-fired forever.
    class NothingToNote(ScriptedModel):
        def _observe(self, messages, fault):
            return "<observations>\n</observations>"

    memory = ObservationalMemory(resource_config(), observer=NothingToNote())
    memory.add_message(one_message("Hmm. " * 3000))
    run(memory.observe())
    assert memory.pending_tokens() == 0 and memory.record().active_observations == ""


def test_missing_tags_fall_back_to_list_lines() -> None:
    memory = ObservationalMemory(resource_config(), observer=ScriptedModel(faults={"observer": ["missing_tags"]}))
    memory.add_message(one_message("I keep bees on my roof. " * 1500))
    run(memory.observe())
    assert "User stated: I keep bees" in memory.record().active_observations


def feed_new_threads(memory: ObservationalMemory, count: int) -> None:
    """One long message in each of ``count`` new threads, each observed at once."""
    for minute in range(count):
        memory.add_message(one_message(f"Fact number {minute}: I collect vintage maps of Lisbon. " * 120,
                                       thread=f"t{minute}", minutes=minute))
        run(memory.observe(force=True))


def test_uncompressible_observations_do_not_loop() -> None:
    # mastra#14109: reflect -> new generation -> reflect forever when observations cannot shrink.
    model = ScriptedModel(faults={"reflector": ["no_compression"] * 100})
    config = resource_config(reflection=ReflectionConfig(observation_tokens=300, retry_after_growth=0.5))
    memory = ObservationalMemory(config, observer=model)
    feed_new_threads(memory, 6)
    kinds = [e.kind for e in memory.events]
    assert kinds.count("reflection_unproductive") >= 1 and "reflection" not in kinds
    assert "reflection_deferred" in kinds  # backed off instead of reflecting after every observation
    reflector_calls = len(model.calls_for("reflector"))
    assert reflector_calls == 4 * kinds.count("reflection_unproductive")  # each ladder is bounded (levels 0-3)
    assert len(memory.generations()) == 1  # memory never replaced by a no-smaller reflection


def test_as_mastra_uncompressible_observations_reflect_at_every_check() -> None:
    # reply_checks=mastra: 1.10 applies the last attempt even when no smaller, and never waits (mastra#14109).
    model = ScriptedModel(faults={"reflector": ["no_compression"] * 100})
    config = resource_config(reflection=ReflectionConfig(observation_tokens=300, retry_after_growth=0.5),
                             reply_checks="mastra")
    memory = ObservationalMemory(config, observer=model)
    feed_new_threads(memory, 6)
    kinds = [e.kind for e in memory.events]
    assert "reflection_unproductive" not in kinds and "reflection_deferred" not in kinds
    tokens = [e.observation_tokens_after for e in memory.events if e.kind == "observation"]
    above = sum(1 for t in tokens if t > 300)
    # Once above the threshold, every observation is followed by a reflection that is no smaller but applied.
    assert above >= 2 and kinds.count("reflection") == above and len(memory.generations()) == above + 1
    assert memory.snapshot()["reflection_hold"] == {}


@pytest.mark.parametrize("fault", ["degenerate", "error", "prose", "empty"])
def test_failed_reflection_keeps_memory_and_the_observation(fault: str) -> None:
    # "prose": a junk reply (no observation lines) once replaced a 4,001-token memory with 16 tokens.
    model = ScriptedModel(faults={"reflector": [fault] * 8})
    config = resource_config(reflection=ReflectionConfig(observation_tokens=300))
    memory = ObservationalMemory(config, observer=model)
    for minute in range(12):
        memory.add_message(one_message(f"I collect vintage maps of city number {minute}. They hang in my hall.",
                                       thread=f"t{minute}", minutes=minute))
    outcome = run(memory.observe(force=True))
    assert outcome is not None and outcome.reflection is None and outcome.reflection_error
    assert [e.kind for e in memory.events][-1] == "reflection_failed"
    record = memory.record()
    assert record.active_observations and len(memory.generations()) == 1
    assert memory.pending_tokens() == 0  # the observation itself was kept
    with pytest.raises(RuntimeError):  # an explicit reflect() reports the failure (ReflectionError, a model error)
        run(memory.reflect())


def test_forced_reflect_with_guidance_creates_a_generation() -> None:
    model = ScriptedModel()
    memory = ObservationalMemory(resource_config(), observer=model)
    memory.add_messages(make_conversation(2, 6, seed=4)[0].messages)
    run(memory.observe(force=True))
    outcome = run(memory.reflect(guidance="Keep every city name."))
    assert outcome.applied and memory.record().generation_count == 1
    assert "Keep every city name." in model.calls_for("reflector")[0].messages[1]["content"]
    assert memory.generations()[0].active_observations != memory.record().active_observations


def test_same_date_observations_merge_into_the_thread_section() -> None:
    memory = ObservationalMemory(resource_config(obscure_thread_ids=False), observer=ScriptedModel())
    memory.add_message(one_message("I keep bees on my roof.", thread="t1", minutes=0))
    run(memory.observe(force=True))
    memory.add_message(one_message("I also grow tomatoes.", thread="t1", minutes=5))
    run(memory.observe(force=True))
    text = memory.record().active_observations
    assert text.count('<thread id="t1">') == 1 and text.count("Date: Mar 1, 2025") == 1
    assert text.index("bees") < text.index("tomatoes")


def test_pending_tokens_are_counted_once_per_message() -> None:
    memory = ObservationalMemory(resource_config(), observer=ScriptedModel())
    message = one_message("I keep bees on my roof.")
    memory.add_message(message)
    memory.add_message(message)  # identical re-add is a no-op
    from om_eval.om.tokens import count_message

    assert memory.pending_tokens() == TOKENS_PER_CONVERSATION + count_message(message)
    with pytest.raises(ValueError, match="already added with different content"):
        memory.add_message(replace(message, content="something else"))


def test_messages_at_or_before_the_cursor_are_not_lost() -> None:
    # Same-timestamp and late messages wait for the next observation instead of vanishing (review finding).
    memory = ObservationalMemory(resource_config(), observer=ScriptedModel())
    memory.add_message(one_message("I keep bees.", minutes=10))
    run(memory.observe(force=True))
    memory.add_message(one_message("Same minute, different message.", minutes=10, ident="same"))
    memory.add_message(one_message("An old message replayed late.", minutes=5, ident="late"))
    assert [m.id for m in memory.unobserved_messages()] == ["same", "late"]
    run(memory.observe(force=True))
    assert memory.pending_tokens() == 0 and "replayed late" in memory.record().active_observations


def test_shared_token_budget_raises_the_observation_threshold() -> None:
    config = resource_config(share_token_budget=True)
    memory = ObservationalMemory(config, observer=ScriptedModel())
    assert memory.observation_threshold() == MESSAGE_TOKENS + REFLECT_TOKENS


def test_multi_thread_reply_naming_no_batch_thread_marks_nothing_observed() -> None:
    wrong = '<observations>\n<thread id="1">\n* 🔴 (09:00) User stated something.\n</thread>\n</observations>'

    class WrongIds(ScriptedModel):
        def _observe(self, messages, fault):
            return wrong

    memory = ObservationalMemory(resource_config(), observer=WrongIds())
    memory.add_message(one_message("I keep bees.", thread="a"))
    memory.add_message(one_message("I grow tomatoes.", thread="b", minutes=1))
    with pytest.raises(ObserverOutputError):
        run(memory.observe(force=True))
    assert memory.pending_tokens() > 0 and memory.record().active_observations == ""


def test_one_thread_batch_answered_in_single_thread_format_is_attributed() -> None:
    class SingleFormat(ScriptedModel):
        def _observe(self, messages, fault):
            return "<observations>\nDate: Mar 1, 2025\n* 🔴 (09:00) User stated they keep bees.\n</observations>"

    memory = ObservationalMemory(resource_config(obscure_thread_ids=False), observer=SingleFormat())
    memory.add_message(one_message("I keep bees.", thread="a"))
    run(memory.observe(force=True))
    assert '<thread id="a">' in memory.record().active_observations and memory.pending_tokens() == 0


def test_messages_arriving_during_an_observer_call_stay_pending() -> None:
    class Slow(ScriptedModel):
        async def complete(self, messages, *, stage, settings):
            memory.add_message(one_message("Arrived mid-call.", thread="a", minutes=30, ident="mid"))
            return await super().complete(messages, stage=stage, settings=settings)

    memory = ObservationalMemory(resource_config(), observer=Slow())
    memory.add_message(one_message("I keep bees.", thread="a"))
    run(memory.observe(force=True))
    assert [m.id for m in memory.unobserved_messages()] == ["mid"]


def test_sequential_failure_keeps_finished_batches_consistent() -> None:
    config = resource_config(observation=replace(resource_config().observation, batch_mode="sequential"))

    class FailSecond(ScriptedModel):
        def reply(self, messages, *, stage=None, model=None):
            if len(self.calls) == 1:
                self.calls.append(None)  # type: ignore[arg-type]  # a placeholder call: only the count matters
                raise ScriptedModelError("second batch fails")
            return super().reply(messages, stage=stage, model=model)

    memory = ObservationalMemory(config, observer=FailSecond())
    for session in make_conversation(5, 6, seed=2):
        memory.add_messages(session.messages)
    before = memory.pending_tokens()
    with pytest.raises(ScriptedModelError):
        run(memory.observe(force=True))
    record = memory.record()
    assert 0 < memory.pending_tokens() < before
    assert record.last_observed_at is not None and record.total_tokens_observed > 0
    assert record.pending_message_tokens == memory.pending_tokens()
    assert record.observation_token_count > 0


def test_restored_memory_keeps_thread_order() -> None:
    memory = ObservationalMemory(resource_config(obscure_thread_ids=False), observer=ScriptedModel())
    memory.add_message(one_message("Second thread first.", thread="b", minutes=5))
    memory.add_message(one_message("First thread later.", thread="a", minutes=1))
    restored = ObservationalMemory.from_snapshot(json.loads(json.dumps(memory.snapshot())), observer=ScriptedModel())
    now = datetime(2025, 3, 2)
    assert restored.build_context(now).messages == memory.build_context(now).messages


def test_reading_does_not_change_the_snapshot() -> None:
    memory = ObservationalMemory(OMConfig(observation=ObservationConfig(buffer_tokens=False)), observer=ScriptedModel())
    before = memory.snapshot()
    memory.record("t9")
    memory.generations("t9")
    memory.build_context(datetime(2025, 1, 1), "t9")
    memory.observation_threshold("t9")
    assert memory.snapshot() == before


def test_mixed_naive_and_aware_times_are_rejected_before_any_change() -> None:

    memory = ObservationalMemory(resource_config(), observer=ScriptedModel())
    memory.add_message(one_message("naive"))
    aware = Message("aware", "t1", "user", "aware", datetime(2025, 3, 2, tzinfo=UTC))
    before = memory.snapshot()
    with pytest.raises(TypeError, match="mixes timezone-aware and naive"):
        memory.add_message(aware)
    assert memory.snapshot() == before


def test_list_and_tuple_parts_are_the_same_message() -> None:
    memory = ObservationalMemory(resource_config(), observer=ScriptedModel())
    when = datetime(2025, 3, 1)
    memory.add_message(Message("m1", "t", "user", ({"type": "text", "text": "hi"},), when))
    memory.add_message(Message("m1", "t", "user", [{"type": "text", "text": "hi"}], when))  # type: ignore[arg-type]  # a list on purpose (same content)
    assert [m.id for m in memory.unobserved_messages("t")] == ["m1"], "the second add must be a no-op"
    with pytest.raises(ValueError, match="different content"):
        memory.add_message(Message("m1", "t", "user", [{"type": "text", "text": "bye"}], when))  # type: ignore[arg-type]  # a list on purpose


def test_restore_with_another_estimator_recounts_everything() -> None:
    from om_eval.om.tokens import CharRatioCounter

    memory = ObservationalMemory(resource_config(), observer=ScriptedModel())
    for session in make_conversation(4, 6, seed=2):
        memory.add_messages(session.messages)
    run(memory.observe(force=True))
    memory.add_messages(make_conversation(5, 6, seed=2)[4].messages)
    chars = CharRatioCounter()
    restored = ObservationalMemory.from_snapshot(memory.snapshot(), observer=ScriptedModel(), token_counter=chars)
    assert restored.record().observation_token_count == chars.count_text(memory.record().active_observations)
    assert restored.pending_tokens() != memory.pending_tokens()
    assert restored.snapshot()["token_counter"] == "chars/4"


def test_reflection_backoff_doubles_after_each_unproductive_ladder() -> None:
    model = ScriptedModel(faults={"reflector": ["no_compression"] * 400})
    config = resource_config(reflection=ReflectionConfig(observation_tokens=300, retry_after_growth=0.1))
    memory = ObservationalMemory(config, observer=model)
    for minute in range(30):
        memory.add_message(one_message(f"Fact {minute}: I collect vintage maps of Lisbon and old coins too.",
                                       thread=f"t{minute}", minutes=minute))
        run(memory.observe(force=True))
    ladders = [e for e in memory.events if e.kind == "reflection_unproductive"]
    deferred = [e for e in memory.events if e.kind == "reflection_deferred"]
    # The growth required doubles with each failed ladder: 30, 60, 120, ... tokens.
    hold = memory.snapshot()["reflection_hold"]["default"]
    assert hold == ladders[-1].observation_tokens_before + 30 * 2 ** (len(ladders) - 1)
    assert len(deferred) > 2 * len(ladders)  # most observations no longer pay for a ladder


@pytest.mark.parametrize(("release", "reflects"), [("v1_10", False), ("v1_31", True)])
def test_reflection_at_exactly_its_threshold_is_1_31s(release: str, reflects: bool) -> None:
    def observed(threshold: int, release: str) -> ObservationalMemory:
        memory = ObservationalMemory(resource_config(reflection=ReflectionConfig(observation_tokens=threshold),
                                                     mastra_release=release), observer=ScriptedModel())
        memory.add_message(one_message("I keep bees on my roof. " * 1500))
        run(memory.observe())
        return memory

    tokens = observed(10**6, release).record().observation_token_count
    memory = observed(tokens, release)
    assert ("reflection" in [e.kind for e in memory.events]) is reflects


class TestResourceScopeAs131:
    """``mastra_release=v1_31`` in resource scope: 1.31's turn history and its thread cursors."""

    @staticmethod
    def memory() -> tuple[ObservationalMemory, ScriptedModel]:
        model = ScriptedModel(history=None)
        config = resource_config(obscure_thread_ids=False, mastra_release="v1_31",
                                 observation=ObservationConfig(message_tokens=10**6, max_tokens_per_batch=10**6))
        return ObservationalMemory(config, observer=model), model

    def test_the_asked_thread_carries_every_unobserved_message_and_they_are_sent_twice(self) -> None:
        memory, model = self.memory()
        memory.add_message(one_message("I keep bees on my roof.", thread="a", minutes=0))
        memory.add_message(one_message("I play the cello on Sundays.", thread="b", minutes=5))
        assert [m.id for m in memory.turn_history("b")] == ["a-0", "b-5"]
        assert "I keep bees on my roof." in memory.other_conversations_text("b")
        context = memory.build_context(datetime(2025, 3, 2), "b")
        tail = [m["content"] for m in context.tail_messages]
        assert tail == ["I keep bees on my roof.", "I play the cello on Sundays."]
        run(memory.observe("b", force=True, select_all=False))
        history = model.calls_for("observer")[0].messages[-1]["content"]
        # b's block holds its own message and then a's; a's own block holds a's again.
        assert history.count("I keep bees on my roof.") == 2
        assert history.index('<thread id="b">') < history.index('<thread id="a">')
        assert memory.pending_tokens() == 0 and memory.turn_history("c") == []

    def test_a_thread_never_observed_starts_at_the_record_cursor(self) -> None:
        memory, _ = self.memory()
        memory.add_message(one_message("An early note about tea.", thread="a", minutes=0))
        memory.add_message(one_message("A later note about coffee.", thread="b", minutes=10))
        run(memory.observe("b", force=True, select_all=False))  # both observed: b's entry held a's note too
        memory.add_message(one_message("Another thread, written before the cursor.", thread="c", minutes=5))
        memory.add_message(one_message("And one after it.", thread="c", minutes=15))
        shown = memory.other_conversations("d")
        assert [m.id for m in shown["c"]] == ["c-15"]
        assert [m.id for m in memory.turn_history("d")] == ["c-15"]


@pytest.mark.parametrize("sections", ["om_eval", "mastra"])
def test_thread_sections_switch_chooses_the_merge(sections: str) -> None:
    # A thread the Observer wrote nothing for: Mastra appends an empty section, om-eval adds nothing.
    class Silent(ScriptedModel):
        async def complete(self, messages, *, stage, settings):
            reply = await super().complete(messages, stage=stage, settings=settings)
            text = reply.text.split('<thread id="b">')[0] + "</observations>" if stage == "observer" else reply.text
            return replace(reply, text=text)

    config = resource_config(obscure_thread_ids=False, thread_sections=sections,
                             observation=ObservationConfig(message_tokens=10**6, max_tokens_per_batch=10**6))
    memory = ObservationalMemory(config, observer=Silent())
    memory.add_message(one_message("I keep bees on my roof.", thread="a", minutes=0))
    memory.add_message(one_message("I play the cello on Sundays.", thread="b", minutes=5))
    run(memory.observe(force=True))
    assert ('<thread id="b">\n\n</thread>' in memory.record().active_observations) is (sections == "mastra")
    assert OMConfig.from_dict(config.to_dict()) == config
    assert ("thread_sections" in memory_view(config)) is (sections == "mastra")


class _ReflectorHints(ScriptedModel):
    """The scripted model; its Reflector also gives both hints, after its observations."""

    async def complete(self, messages, *, stage, settings):
        reply = await super().complete(messages, stage=stage, settings=settings)
        if stage != "reflector":
            return reply
        return replace(reply, text=reply.text + "\n<current-task>\nReflected task\n</current-task>"
                       "\n<suggested-response>\nReflected reply\n</suggested-response>")


@pytest.mark.parametrize(("release", "kept"), [("v1_10", False), ("v1_31", True)])
def test_the_hints_of_a_reflection_are_kept_for_the_thread_only_under_1_31(release: str, kept: bool) -> None:
    config = OMConfig(observation=ObservationConfig(buffer_tokens=False), mastra_release=release)
    memory = ObservationalMemory(config, observer=_ReflectorHints())
    memory.add_messages(make_conversation(1, 6, seed=3)[0].messages)
    thread = memory.thread_ids[0]
    run(memory.observe(thread, force=True))
    state = memory.thread_state(thread)
    before = (state.current_task, state.suggested_response)
    assert all(before)
    assert run(memory.reflect(thread)).applied
    after = (state.current_task, state.suggested_response)
    assert after == (("Reflected task", "Reflected reply") if kept else before)


def test_as_mastra_1_31_skips_reflecting_the_same_observations_again() -> None:
    # 1.31 as Mastra runs it: a failed reflection leaves the memory unreflected, the run goes on, and threshold
    # reflection waits until the observations change (1.10 would apply the empty result; om-eval's checks retry
    # the question).
    model = ScriptedModel(faults={"reflector": ["degenerate"] * 100})
    config = resource_config(reflection=ReflectionConfig(observation_tokens=300), reply_checks="mastra",
                             mastra_release="v1_31")
    memory = ObservationalMemory(config, observer=model)
    for minute in range(12):
        memory.add_message(one_message(f"I collect vintage maps of city number {minute}. They hang in my hall.",
                                       thread=f"t{minute}", minutes=minute))
    outcome = run(memory.observe(force=True))
    assert outcome is not None and outcome.reflection_error and len(memory.generations()) == 1
    calls = len(model.calls_for("reflector"))
    assert run(memory._maybe_reflect(None)) is None and len(model.calls_for("reflector")) == calls
    tokens = memory.record().observation_token_count
    assert memory.snapshot()["reflection_suppressed"] == {memory._key(None): tokens}
    assert rules_for(config).failed_reflection == "skip_while_unchanged"
    assert rules_for(replace(config, mastra_release="v1_10")).failed_reflection == "retry"
    assert rules_for(replace(config, reply_checks="om_eval")).failed_reflection == "wait_for_growth"
