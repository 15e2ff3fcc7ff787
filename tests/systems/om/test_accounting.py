"""The three readings of pending tokens, on hand-built histories whose token counts are worked out here.

Counts use ``chars/4``: a user message of 396 characters is 1 (role) + 99 + 3.8 -> 104 tokens, an assistant one
3 + 99 + 3.8 -> 106, so a pair is 210, and a list of messages carries 24 more.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest

from om_eval.om import Message, ObservationalMemory, ObservationConfig, OMConfig
from om_eval.om.config import ConfigError
from om_eval.om.tokens import CharRatioCounter, count_messages
from om_eval.systems.om.accounting import PendingCounter
from om_eval.systems.om.replay import ReplayConfig, check_question_turn, replay_question
from om_eval.testing.scripted.model import ScriptedModel
from tests.systems.om.test_replay import om_config, question

START = datetime(2025, 5, 1, 9, 0)
WORDS = " ".join(f"w{i:03d}" for i in range(80))  # distinct words, so no reply looks like a repetition loop


def text(tag: str) -> str:
    """396 characters, different for every tag."""
    return (f"{tag} " + WORDS)[:396]


def memory(threshold: int, release: str = "v1_10") -> ObservationalMemory:
    config = OMConfig(scope="resource", observation=ObservationConfig(message_tokens=threshold),
                      mastra_release=release)  # type: ignore[arg-type]  # a MastraRelease name
    return ObservationalMemory(config, observer=ScriptedModel(), token_counter=CharRatioCounter(4))


def add_pair(mem: ObservationalMemory, thread: str, index: int) -> None:
    when = START + timedelta(minutes=index)
    mem.add_messages([Message(f"{thread}u{index}", thread, "user", text(f"u{thread}{index:03d}"), when),
                      Message(f"{thread}a{index}", thread, "assistant", text(f"a{thread}{index:03d}"), when)])


def first_due(reading: str, threshold: int, pairs: int = 6) -> int | None:
    """The pair after which ``reading`` first asks for an observation (1-based), or None."""
    mem, counter = memory(threshold), PendingCounter(reading)  # type: ignore[arg-type]  # a PendingAccounting name
    for index in range(1, pairs + 1):
        add_pair(mem, "t", index)
        if counter.after_unit(mem, "t").due:
            return index
    return None


def test_the_pair_arithmetic_of_this_module() -> None:
    mem = memory(10_000)
    add_pair(mem, "t", 1)
    assert mem.pending_tokens("t") == 24 + 210


@pytest.mark.parametrize(("reading", "pair"), [("exact", 3), ("mastra_step", 3), ("mastra_dev", 2)])
def test_one_thread_at_600(reading: str, pair: int) -> None:
    # exact and step: 24 + 210k >= 600 at k = 3. dev re-counts the session: 234 kept, then 234 + 444 > 600 at k = 2.
    assert first_due(reading, 600) == pair


def test_the_dev_reading_fires_only_above_the_threshold() -> None:
    assert first_due("mastra_dev", 677) == 2  # 234 + 444 = 678 > 677
    assert first_due("mastra_dev", 678) == 3  # 678 is not above 678; then 678 + 654
    assert first_due("exact", 654) == 3  # 24 + 630 = 654 reaches 654: exact fires at equality


def test_the_step_reading_counts_other_sessions_by_their_shortened_text() -> None:
    mem = memory(700)
    mem.add_message(Message("long", "older", "user", "word " * 400, START))  # 2,000 characters: 505 tokens
    add_pair(mem, "t", 1)
    assert PendingCounter("exact").after_unit(mem, "t").due  # 24 + 505 + 210 = 739 >= 700
    step = PendingCounter("mastra_step").after_unit(mem, "t")
    assert not step.due  # 234 + the older thread cut to 500 characters (~150) stays under 700


def test_under_1_31_the_step_reading_counts_other_sessions_twice() -> None:
    # 1.31 loads every unobserved message of the resource into the turn: the older session counts in full as
    # history and again, cut, in the other-conversations block.
    old, new = memory(10_000), memory(10_000, "v1_31")
    for mem in (old, new):
        mem.add_message(Message("long", "older", "user", "word " * 400, START))
        add_pair(mem, "t", 1)
    block = new.counter.count_text(new.other_conversations_text("t"))
    assert [m.id for m in new.turn_history("t")] == ["long", "tu1", "ta1"]
    assert [m.id for m in old.turn_history("t")] == ["tu1", "ta1"]
    history = 24 + 505 + 210
    assert new.counter.count_text(old.other_conversations_text("t")) != block, "1.15+ writes the block as lines"
    mem, counter = memory(history + block, "v1_31"), PendingCounter("mastra_step")
    mem.add_message(Message("long", "older", "user", "word " * 400, START))
    add_pair(mem, "t", 1)
    assert counter.after_unit(mem, "t").due
    mem = memory(history + block + 1, "v1_31")
    mem.add_message(Message("long", "older", "user", "word " * 400, START))
    add_pair(mem, "t", 1)
    assert not counter.after_unit(mem, "t").due


def test_a_dev_observation_takes_every_thread_and_restarts_the_total() -> None:
    mem, counter = memory(300), PendingCounter("mastra_dev")
    mem.add_message(Message("tiny", "older", "user", "hello there", START))
    add_pair(mem, "t", 1)
    assert not counter.after_unit(mem, "t").due and counter.dev_total == 234
    add_pair(mem, "t", 2)
    decision = counter.after_unit(mem, "t")
    assert decision.due and decision.select_all and counter.dev_total == 0
    asyncio.run(mem.observe("t", force=True, select_all=decision.select_all))
    assert mem.pending_tokens() == 0, "every thread, the tiny one too, was observed"


@pytest.mark.parametrize("reading", ["exact", "mastra_dev", "mastra_step"])
def test_each_reading_replays_and_records_observer_input(reading: str) -> None:
    replay = ReplayConfig(pending_accounting=reading)  # type: ignore[arg-type]  # a PendingAccounting name
    _mem, stats = asyncio.run(replay_question(question(), om_config(message_tokens=150), observer=ScriptedModel(),
                                             replay=replay))
    assert stats.observations >= 1 and stats.observer_calls >= 1
    assert stats.observed_message_tokens > 0


def test_the_readings_differ_on_the_same_haystack() -> None:
    counts = {}
    for reading in ("exact", "mastra_dev", "mastra_step"):
        replay = ReplayConfig(pending_accounting=reading)  # type: ignore[arg-type]  # a PendingAccounting name
        _, stats = asyncio.run(replay_question(question(), om_config(message_tokens=150), observer=ScriptedModel(),
                                               replay=replay))
        counts[reading] = stats.observations
    assert counts["mastra_dev"] > counts["exact"], counts  # re-counting a session's earlier pairs fires sooner


def test_buffering_needs_the_exact_reading() -> None:
    with pytest.raises(ConfigError, match="pending_accounting=mastra_dev needs replay.buffering=false"):
        ReplayConfig(buffering=True, pending_accounting="mastra_dev")
    with pytest.raises(ConfigError, match="replay.pending_accounting='sometimes' is invalid"):
        ReplayConfig(pending_accounting="sometimes")  # type: ignore[arg-type]  # an invalid reading on purpose


@pytest.mark.parametrize("release", ["v1_10", "v1_31"])
def test_only_1_31_observes_in_the_questions_own_turn(release: str) -> None:
    # The question's fresh thread sees every session in its other-conversations block, the last one included,
    # so under 1.31 its step 0 counts more than the last pair's check did.
    probe = memory(10**6, release)
    add_pair(probe, "t", 1)
    add_pair(probe, "u", 2)
    counter = PendingCounter("mastra_step")
    last = count_messages(probe.turn_history("u"), probe.counter) + probe.counter.count_text(
        probe.other_conversations_text("u"))
    mem = memory(last + 1, release)
    add_pair(mem, "t", 1)
    add_pair(mem, "u", 2)
    assert not counter.after_unit(mem, "u").due
    outcomes = asyncio.run(check_question_turn(mem, "eval:q", buffering=False, accounting=counter))
    assert bool(outcomes) is (release == "v1_31")
    if outcomes:
        assert mem.pending_tokens() == 0 and "eval:q" in outcomes[0].thread_ids
