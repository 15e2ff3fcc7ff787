"""memory=simple_om: the haystack replayed into the simple layer, its observations shown on a fresh thread."""

from __future__ import annotations

import asyncio

import pytest

from om_eval.bench.seam import seam_actor_prompts
from om_eval.bench.turn_costs import PartRecorder, TurnTable
from om_eval.memory.view import history_view, question_view
from om_eval.om.config import ConfigError
from om_eval.simple_om.llm_observer import observation_lines
from om_eval.systems.simple import SimpleOMSystem
from tests.systems.helpers import FakeServices, question, session

HAYSTACK = question(
    session(0, "s0", ("user", "one two three four"), ("assistant", "five six"), day=0),
    session(1, "s1", ("user", "seven eight nine ten"), ("assistant", "eleven twelve"), day=2),
)


def build(options: dict, replies: list[str] | None = None):
    system = SimpleOMSystem({"buffer_threshold": 6, **options})
    services = FakeServices(replies=replies or [])
    memory = asyncio.run(system.ingest(history_view(HAYSTACK), services))
    return system, services, memory


def test_the_llm_observer_gets_the_whole_buffer_and_its_lines_become_observations() -> None:
    system, services, memory = build({}, replies=["- Likes counting.\n\n* Says five six.", "Counts on."])
    # 4 + 2 words reach 6 on the assistant turn of the first session; the second session again.
    assert len(services.completions) == 2
    assert services.completions[0][1]["content"].endswith("one two three four\n\nfive six")
    context = asyncio.run(system.context(memory, question_view(HAYSTACK), services))
    assert context.memory == "<observations>\n- Likes counting.\n- Says five six.\n- Counts on.\n</observations>"
    assert context.detail == {"observations": 3, "version": 2}


def test_the_fallback_observer_counts_items_and_calls_no_model() -> None:
    system, services, memory = build({"observer": "fallback"})
    context = asyncio.run(system.context(memory, question_view(HAYSTACK), services))
    assert services.completions == [] and not system.uses_observer_model
    assert context.memory == "<observations>\n- Processed 2 items\n- Processed 2 items\n</observations>"


def test_thread_scope_shows_a_fresh_thread_nothing() -> None:
    system, services, memory = build({"observer": "fallback", "scope": "thread"})
    assert asyncio.run(system.context(memory, question_view(HAYSTACK), services)).memory is None


def test_a_named_observer_is_loaded_from_its_module() -> None:
    system, services, memory = build({"observer": "tests.systems.test_simple:shout"})
    assert "- ONE TWO THREE FOUR" in asyncio.run(system.context(memory, question_view(HAYSTACK), services)).memory


def shout(buffer: list[str]) -> list[str]:
    return [entry.upper() for entry in buffer]


def test_observer_replies_lose_list_markers_and_blank_lines() -> None:
    assert observation_lines("- a\n\n * b \n• c\nd") == ["a", "b", "c", "d"]


@pytest.mark.parametrize(("options", "named"), [({"observer": "gpt"}, "memory.observer='gpt' is invalid"),
                                                ({"observer": "no.such.module:f"}, "cannot be loaded"),
                                                ({"threshold": 5}, "memory.threshold is not an option"),
                                                ({"buffer_threshold": 0}, "buffer_threshold")])
def test_bad_options_are_named(options: dict, named: str) -> None:
    with pytest.raises((ConfigError, ValueError), match=named):
        system = SimpleOMSystem(options)
        system._observer(FakeServices())


TALK = question(
    session(0, "s0", ("user", "one two three four"), ("assistant", "five six"), ("user", "a b"),
            ("assistant", "c d"), day=0),
    session(1, "s1", ("user", "seven eight nine ten"), ("assistant", "eleven twelve"), day=2),
)


class CountingWords:
    name = "words"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return len(text.split())


def recorded(options: dict, replies: list[str]) -> tuple[TurnTable, CountingWords]:
    counter = CountingWords()
    recorder = PartRecorder(counter)
    services = FakeServices(replies=replies, turns=recorder)
    asyncio.run(SimpleOMSystem({"buffer_threshold": 6, **options}).ingest(history_view(TALK), services))
    return recorder.finish(), counter


def test_each_user_turn_is_recorded_with_the_recalled_block_as_its_stable_head() -> None:
    table, _ = recorded({}, replies=["Counts to six.", "Counts to ten."])
    instructions = len(seam_actor_prompts()["instructions"].split())
    first_block = len("<observations>\n- Counts to six.\n</observations>".split())
    second_block = len("<observations>\n- Counts to six.\n- Counts to ten.\n</observations>".split())
    assert len(table) == 3
    # Turn 1: nothing observed yet, so only the instructions before the user's message.
    assert (table.prompt[0], table.head[0], table.shared[0], table.reply[0]) == (instructions + 4, instructions, 0, 2)
    # The first session's pair (6 words) was distilled after its reply: turn 2 shows the block, and shares only the
    # instructions with turn 1, whose next part was the user's message.
    assert table.head[1] == instructions + first_block
    assert table.prompt[1] == table.head[1] + 4 + 2 + 2
    assert table.shared[1] == instructions
    # The second session's first message reached the threshold again: the block grew at its end, so turn 3 shares
    # most of the old block, not the session's messages (a new thread).
    assert table.head[2] == instructions + second_block
    assert instructions + first_block // 2 < table.shared[2] < instructions + first_block
    # Each distillation is charged to the turn whose reply (turn 1) or message (turn 3) set it off, as OM's are.
    assert table.observer_prompt[0] > 0 and table.observer_prompt[1] == 0 and table.observer_prompt[2] > 0
    assert table.observer_completion == [3, 0, 3]


def test_each_message_and_block_is_counted_once() -> None:
    _, counter = recorded({}, replies=["Counts to six.", "Counts to ten."])
    said = sorted(t.content for s in TALK.sessions for t in s.turns)
    # Three turns show eleven messages and replies in all; each is counted once, as is each version of the block.
    assert sorted(text for text in counter.texts if text in said) == said
    assert len([text for text in counter.texts if text.startswith("<observations>")]) == 2


def test_thread_scope_shows_each_session_only_its_own_observations() -> None:
    table, _ = recorded({"scope": "thread", "buffer_threshold": 4},
                        replies=["Counts.", "Counts again.", "Ten is the last number."])
    instructions = len(seam_actor_prompts()["instructions"].split())
    # Each user message of the first conversation reaches 4 words and is distilled before its turn; so is the
    # second's, whose turn shows its own thread's block only.
    assert table.head[1] == instructions + len("<observations>\n- Counts.\n- Counts again.\n</observations>".split())
    assert table.head[2] == instructions + len("<observations>\n- Ten is the last number.\n</observations>".split())
