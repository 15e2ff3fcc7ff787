"""The digest that tells whether context() left a memory as ingest built it: every reachable value counts, the
machinery around a memory (loops, locks, lent services, callbacks) does not."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from om_eval.memory.digest import state_digest
from om_eval.memory.services import TurnRecording


@dataclass
class _Memory:
    lines: list[str] = field(default_factory=list)
    index: dict[str, tuple[int, ...]] = field(default_factory=dict)
    vectors: object = None


class _Slotted:
    __slots__ = ("count", "name")

    def __init__(self) -> None:
        self.name, self.count = "a", 1


_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.floats(allow_nan=False),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                  max_size=3), max_leaves=12)


@given(value=_values)
def test_equal_values_have_equal_digests(value: object) -> None:
    import copy

    assert state_digest(value) == state_digest(copy.deepcopy(value))


@given(value=_values, other=_values)
def test_a_changed_value_changes_the_digest(value: object, other: object) -> None:
    if repr(value) != repr(other):
        assert state_digest([value]) != state_digest([other])


def test_changes_anywhere_inside_are_seen() -> None:
    memory = _Memory(["a"], {"k": (1, 2)}, np.zeros(3))
    before = state_digest(memory)
    memory.vectors[1] = 0.5  # type: ignore[index]
    assert state_digest(memory) != before
    slotted = _Slotted()
    first = state_digest(slotted)
    slotted.count += 1
    assert state_digest(slotted) != first
    assert state_digest(["ab", "c"]) != state_digest(["a", "bc"])  # lengths are part of it


def test_cycles_and_shared_parts_are_read_once() -> None:
    loop: list[object] = []
    loop.append(loop)
    assert state_digest(loop) == state_digest(loop)


class _Services(TurnRecording):
    def __init__(self) -> None:
        self.turns = None
        self.calls: list[str] = []


def test_the_machinery_around_a_memory_does_not_count() -> None:
    async def scenario() -> tuple[str, str]:
        services = _Services()
        memory = {"lines": ["a"], "lock": asyncio.Lock(), "loop": asyncio.get_running_loop(), "services": services,
                  "callback": lambda text: text}
        before = state_digest(memory)
        async with memory["lock"]:  # type: ignore[attr-defined]
            await asyncio.sleep(0)
        services.calls.append("the actor was asked")
        await asyncio.gather(*(asyncio.sleep(0) for _ in range(5)))
        return before, state_digest(memory)

    before, after = asyncio.run(scenario())
    assert before == after
