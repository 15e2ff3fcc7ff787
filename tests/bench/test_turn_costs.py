"""The turn-by-turn cost replay: what an agent would send at each user turn, counted incrementally, and priced."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.bench.answer import actor_prompts
from om_eval.bench.turn_costs import PartRecorder, PromptPart, TurnRecorder, TurnTable, turn_costs
from om_eval.llm.cache_profiles import PROFILES, profile_rates
from om_eval.om.dates import annotate_observations
from om_eval.systems.om.replay import ReplayConfig, replay_question, session_messages
from om_eval.testing.scripted.model import ScriptedModel
from tests.systems.om.test_replay import om_config, question


class CountingCounter:
    """A token counter that remembers how many characters it was asked to count."""

    name = "words"

    def __init__(self) -> None:
        self.characters = 0

    def count_text(self, text: str) -> int:
        self.characters += len(text)
        return len(text.split()) or 1


def replayed(message_tokens: int, counter: CountingCounter | None = None) -> tuple[TurnTable, int]:
    counter = counter or CountingCounter()
    recorder = TurnRecorder(counter, actor_prompts()["instructions"])
    model = ScriptedModel()
    asyncio.run(replay_question(question(), om_config(message_tokens=message_tokens), observer=model,
                                reflector=model, token_counter=counter, turns=recorder))
    history = sum(len(m.content) for s in question().sessions for m in s.turns)
    return recorder.table, history


def test_without_observations_each_turn_shares_the_previous_prompt_within_its_session() -> None:
    table, _ = replayed(message_tokens=100_000)
    # Sessions in date order: 1 (two user turns, the empty one skipped), then 0 and 2 (three each).
    assert len(table) == 7
    starts = {0, 1, 4}  # the first turn of each session: a new thread, and no memory yet to carry anything over
    for turn in range(len(table)):
        if turn in starts:
            assert table.shared[turn] == (0 if turn == 0 else table.head[turn])
        else:
            assert table.shared[turn] == table.prompt[turn - 1]
    assert all(table.head[0] == head for head in table.head)  # only the instructions are system messages
    assert sum(table.observer_prompt) == 0


def test_observations_are_charged_to_the_turn_after_which_they_ran_and_then_shown() -> None:
    table, _ = replayed(message_tokens=40)
    assert sum(table.observer_prompt) > 0 and sum(table.observer_completion) > 0
    first = next(i for i, tokens in enumerate(table.observer_prompt) if tokens)
    # From the next turn on the memory's system messages are part of the stable head.
    assert table.head[first + 1] > table.head[first]


def test_the_history_is_counted_once_not_once_per_turn() -> None:
    alone = CountingCounter()
    model = ScriptedModel()
    asyncio.run(replay_question(question(), om_config(message_tokens=100_000), observer=model, reflector=model,
                                token_counter=alone))
    recorded = CountingCounter()
    table, history = replayed(message_tokens=100_000, counter=recorded)
    instructions = len(actor_prompts()["instructions"])
    # Seven turns over a 1,330-character history: counting each prompt whole would count it several times over.
    assert recorded.characters - alone.characters <= instructions + history
    assert len(table) == 7


def test_a_table_is_priced_turn_by_turn_under_a_profile() -> None:
    table = TurnTable()
    table.append(0.0, 5000, 0, 3000, 100)
    table.append(5.0, 5400, 5100, 3000, 100)
    table.append(5.0 + 86_400, 5800, 5500, 3000, 100)  # a day later: the cache has forgotten everything
    table.observer_prompt[1], table.observer_completion[1] = 2000, 300
    profile = PROFILES["gpt-4o"]
    rates = profile_rates(profile)
    costs = turn_costs(table, profile, cumulative=True)
    read = 5100 // 128 * 128
    assert (costs.turns, costs.prompt_tokens, costs.cached_tokens, costs.written_tokens) == (3, 16_200, read, 0)
    assert costs.actor_uncached_usd == pytest.approx(rates.cost(16_200, 300))
    assert costs.actor_usd == pytest.approx(rates.cost(16_200, 300, read=read))
    assert costs.memory_usd == pytest.approx(rates.cost(2000, 300))
    assert costs.cumulative_usd[-1] == pytest.approx(costs.total_usd)
    assert costs.saving_ratio == pytest.approx(costs.total_uncached_usd / costs.total_usd)
    assert costs.cached_share == pytest.approx(read / 16_200)


def test_a_table_survives_json() -> None:
    table, _ = replayed(message_tokens=40)
    assert TurnTable.from_json(table.to_json()) == table


def test_a_retrieving_agent_shares_only_its_instructions() -> None:
    from om_eval.bench.turn_costs import retrieval_turns

    messages = [m for s in question().sessions_by_date() for m in session_messages(s, ReplayConfig())]
    counter = CountingCounter()
    table = retrieval_turns(messages, counter, actor_prompts()["instructions"], 3000)
    instructions = counter.count_text(actor_prompts()["instructions"])
    users = [m for m in messages if m.role == "user"]
    assert len(table) == len(users)
    assert table.shared == [0] + [instructions] * (len(users) - 1)
    assert table.prompt == [instructions + 3000 + counter.count_text(m.text()) for m in users]
    assert set(table.head) == {instructions + 3000}


def _part(key: int, head: bool = False) -> PromptPart:
    # Texts of distinct keys start with distinct letters, so a differing part shares nothing of its text.
    return PromptPart(key, " ".join([chr(ord("a") + key)] * (key + 1)), head=head)


@settings(max_examples=300, deadline=None)
@given(turns=st.lists(st.lists(st.integers(0, 6), max_size=8), min_size=1, max_size=12),
       heads=st.lists(st.integers(0, 3), min_size=12, max_size=12))
def test_described_turns_share_their_longest_common_run_of_parts(turns: list[list[int]], heads: list[int]) -> None:
    counter = CountingCounter()
    recorder = PartRecorder(counter)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    previous: list[int] = []
    for number, (keys, head) in enumerate(zip(turns, heads, strict=False)):
        recorder.record([_part(k, head=i < head) for i, k in enumerate(keys)], start + timedelta(seconds=number))
        common = 0
        while common < min(len(keys), len(previous)) and keys[common] == previous[common]:
            common += 1
        assert recorder.table.shared[-1] == sum(k + 1 for k in keys[:common])
        assert recorder.table.prompt[-1] == sum(k + 1 for k in keys)
        assert recorder.table.head[-1] == sum(k + 1 for k in keys[:head])
        previous = keys
    # Each distinct part was counted once, however many turns sent it.
    assert counter.characters == sum(len(_part(k).text) for k in {k for keys in turns for k in keys})


def test_a_differing_part_shares_its_common_start_in_proportion() -> None:
    recorder = PartRecorder(CountingCounter())
    at = datetime(2024, 1, 1, tzinfo=UTC)
    recorder.record([PromptPart("i", "one two"), PromptPart(1, "a b c d")], at)
    recorder.record([PromptPart("i", "one two"), PromptPart(2, "a b c d e f g h")], at)
    # The new part's first 7 characters of 15 are the old part's whole text: that share of its 8 tokens.
    assert recorder.table.shared[-1] == 2 + 8 * 7 // 15


def test_memory_calls_are_charged_to_the_next_turn_and_the_last_ones_to_the_last() -> None:
    recorder = PartRecorder(CountingCounter())
    at = datetime(2024, 1, 1, tzinfo=UTC)
    recorder.charge("observer", 100, 10)
    recorder.record([PromptPart("i", "x")], at)
    recorder.charge("reflector", 50, 5)
    recorder.record([PromptPart("i", "x")], at)
    recorder.charge("observer", 7, 1)
    table = recorder.finish()
    assert table.observer_prompt == [100, 7] and table.observer_completion == [10, 1]
    assert table.reflector_prompt == [0, 50] and table.reflector_completion == [0, 5]


class ShownRecorder(TurnRecorder):
    """Keeps each turn's observations block, and the observations and time it was made from."""

    def __init__(self, counter: CountingCounter) -> None:
        super().__init__(counter, actor_prompts()["instructions"])
        self.shown: list[tuple[str, datetime, Any]] = []

    def _memory(self, memory, thread_id, now):  # type: ignore[no-untyped-def]
        blocks = super()._memory(memory, thread_id, now)
        if blocks:
            self.shown.append((memory.record(thread_id).active_observations, now, blocks[-1]))
        return blocks


def test_a_turns_observations_are_counted_with_the_dates_they_are_shown_with_that_day() -> None:
    recorder = ShownRecorder(CountingCounter())
    model = ScriptedModel()
    asyncio.run(replay_question(question(), om_config(message_tokens=40), observer=model, reflector=model,
                                token_counter=recorder.counter, turns=recorder))
    assert len(recorder.shown) == 6
    for observations, now, block in recorder.shown:
        annotated = annotate_observations(observations, now)
        assert annotated != observations  # "(18 days ago)", "[5 days later]", ...
        assert block.tokens == len(annotated.split())
    # The same observations on another day are another block (their relative dates moved), which shares the
    # previous day's only up to its first date.
    assert len({block.key for _, _, block in recorder.shown}) == len(recorder.shown)
    observations, _, first = recorder.shown[0]
    assert first.dated_from == observations.index("\n", observations.index("Date:"))  # after the first header


def test_date_notes_read_again_a_clause_left_open_by_the_old_text() -> None:
    from om_eval.bench.turn_costs import _DateNotes

    old = "Date: Jan 2, 2024\n* User said the plan (meaning the trip to Porto\n"
    new = old + "Date: Jan 5, 2024\n* User will fly out (meaning Jan 9, 2024)\n"
    now = datetime(2024, 2, 1, 12)
    growing = _DateNotes(CountingCounter())
    growing.tokens(old, now)
    fresh = _DateNotes(CountingCounter())
    assert growing.tokens(new, now) == fresh.tokens(new, now)
    assert fresh.tokens(new, now) == len(annotate_observations(new, now).split()) - len(new.split())


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(st.sampled_from([
    "Date: Jan 2, 2024\n", "Date: Mar 9, 2024\n", "* User will go (meaning Feb 3, 2024)\n", "* trip (meaning the\n",
    "end of Apr 4, 2024)\n", "* plain line\n", "(estimated ", "June 1, 2024)\n"]), min_size=1, max_size=12),
    days=st.lists(st.integers(0, 400), min_size=12, max_size=12))
def test_date_notes_of_a_growing_text_equal_those_of_the_whole_text(pieces: list[str], days: list[int]) -> None:
    from om_eval.bench.turn_costs import _DateNotes

    growing = _DateNotes(CountingCounter())
    text = ""
    for piece, day in zip(pieces, days, strict=False):
        text += piece
        now = datetime(2024, 1, 1, 12) + timedelta(days=day)
        assert growing.tokens(text, now) == _DateNotes(CountingCounter()).tokens(text, now)
