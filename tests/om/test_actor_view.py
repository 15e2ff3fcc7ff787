"""What the actor sees of other threads in resource scope, as 1.x builds it (newest first, one page of threads,
nothing before the first observation), and thread ids shown obscured or raw as configured."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest

from om_eval.om import Message, ObservationalMemory, ObservationConfig, OMConfig
from om_eval.om.config import ConfigError
from om_eval.om.threads import obscure_thread_id
from om_eval.testing.scripted.model import ScriptedModel

START = datetime(2025, 3, 1, 9, 0)


def memory_with_threads(count: int, **config: object) -> ObservationalMemory:
    """``count`` threads t00, t01, ... created in that order, each with one unobserved message, plus one
    observed thread (so the memory has observations and the context is built)."""
    om = OMConfig(scope="resource", observation=ObservationConfig(message_tokens=100_000), **config)
    memory = ObservationalMemory(om, observer=ScriptedModel(), resource_id="r")
    memory.add_message(Message("seen", "observed", "user", "I moved to Ghent and I keep bees on my roof.", START))
    asyncio.run(memory.observe(None, force=True))
    for index in range(count):
        when = START + timedelta(days=index + 1)
        memory.add_message(Message(f"m{index}", f"t{index:02d}", "user", f"note number {index}", when))
    return memory


def shown_threads(memory: ObservationalMemory, asked_on: str = "question") -> list[str]:
    context = memory.build_context(START + timedelta(days=400), asked_on)
    text = "\n".join(m["content"] for m in context.messages)
    return [line.split('"')[1] for line in text.splitlines() if line.startswith("<other-conversation id=")]


def test_other_threads_are_listed_newest_first() -> None:
    memory = memory_with_threads(4)
    assert shown_threads(memory) == [memory.shown_thread_id(f"t{i:02d}") for i in (3, 2, 1, 0)]


def test_the_old_order_is_a_switch() -> None:
    memory = memory_with_threads(4, other_threads_order="oldest_first")
    assert shown_threads(memory) == [memory.shown_thread_id(f"t{i:02d}") for i in (0, 1, 2, 3)]


def test_one_page_of_threads_counting_the_new_thread_asked_on() -> None:
    memory = memory_with_threads(120)
    shown = shown_threads(memory)
    # 100 listed: the new question thread, then the 99 newest; the observed thread and t00..t20 fall off the page.
    assert len(shown) == 99
    assert shown[0] == memory.shown_thread_id("t119") and shown[-1] == memory.shown_thread_id("t21")
    assert len(shown_threads(memory_with_threads(120, other_threads_limit=None))) == 120
    assert len(shown_threads(memory_with_threads(120, other_threads_limit=10))) == 9


def test_asking_on_an_existing_thread_leaves_it_out_of_the_block() -> None:
    memory = memory_with_threads(3)
    assert shown_threads(memory, asked_on="t02") == [memory.shown_thread_id(t) for t in ("t01", "t00")]


def test_no_observations_no_memory_messages() -> None:
    om = OMConfig(scope="resource", observation=ObservationConfig(message_tokens=100_000))
    memory = ObservationalMemory(om, observer=ScriptedModel(), resource_id="r")
    memory.add_message(Message("m1", "t1", "user", "unobserved and waiting", START))
    assert memory.build_context(START, "question").messages == []


@pytest.mark.parametrize("obscure", [True, False])
def test_thread_ids_are_shown_obscured_or_raw_as_configured(obscure: bool) -> None:
    memory = memory_with_threads(1, obscure_thread_ids=obscure)
    assert shown_threads(memory) == [obscure_thread_id("t00") if obscure else "t00"]


@pytest.mark.parametrize(("option", "value"), [("other_threads_limit", 0), ("other_threads_order", "random")])
def test_bad_values_are_refused_by_name(option: str, value: object) -> None:
    with pytest.raises(ConfigError, match=option):
        OMConfig(scope="resource", **{option: value})
