"""memory=simple_om: the haystack replayed into the simple layer, its observations shown on a fresh thread."""

from __future__ import annotations

import asyncio

import pytest

from om_eval.memory.simple import SimpleOMSystem
from om_eval.om.config import ConfigError
from om_eval.simple_om.llm_observer import observation_lines
from tests.memory.helpers import FakeServices, question, session

HAYSTACK = question(
    session(0, "s0", ("user", "one two three four"), ("assistant", "five six"), day=0),
    session(1, "s1", ("user", "seven eight nine ten"), ("assistant", "eleven twelve"), day=2),
)


def build(options: dict, replies: list[str] | None = None):
    system = SimpleOMSystem({"buffer_threshold": 6, **options})
    services = FakeServices(replies=replies or [])
    memory = asyncio.run(system.ingest(HAYSTACK, services))
    return system, services, memory


def test_the_llm_observer_gets_the_whole_buffer_and_its_lines_become_observations() -> None:
    system, services, memory = build({}, replies=["- Likes counting.\n\n* Says five six.", "Counts on."])
    # 4 + 2 words reach 6 on the assistant turn of the first session; the second session again.
    assert len(services.completions) == 2
    assert services.completions[0][1]["content"].endswith("one two three four\n\nfive six")
    context = asyncio.run(system.context(memory, HAYSTACK, services))
    assert context.memory == "<observations>\n- Likes counting.\n- Says five six.\n- Counts on.\n</observations>"
    assert context.detail == {"observations": 3, "version": 2}


def test_the_fallback_observer_counts_items_and_calls_no_model() -> None:
    system, services, memory = build({"observer": "fallback"})
    context = asyncio.run(system.context(memory, HAYSTACK, services))
    assert services.completions == [] and not system.uses_observer_model
    assert context.memory == "<observations>\n- Processed 2 items\n- Processed 2 items\n</observations>"


def test_thread_scope_shows_a_fresh_thread_nothing() -> None:
    system, services, memory = build({"observer": "fallback", "scope": "thread"})
    assert asyncio.run(system.context(memory, HAYSTACK, services)).memory is None


def test_a_named_observer_is_loaded_from_its_module() -> None:
    system, services, memory = build({"observer": "tests.memory.test_simple:shout"})
    assert "- ONE TWO THREE FOUR" in asyncio.run(system.context(memory, HAYSTACK, services)).memory


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
