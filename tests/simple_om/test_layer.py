"""The layer's rules 1-7, the hook timeout, concurrency and snapshots, with a word-counting stub."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.om.tokens import default_counter
from om_eval.simple_om import SimpleObservationalMemory, SimpleOMState, SimpleOMTimeout, count_o200k
from tests.simple_om.helpers import IDS, assistant, make, tool, user, words


class Recorder:
    """An observer that remembers each buffer it was given and answers ``o<call>``."""

    def __init__(self, per_call: int = 1) -> None:
        self.calls: list[list[str]] = []
        self.per_call = per_call

    def __call__(self, buffer: list[str]) -> list[str]:
        self.calls.append(list(buffer))
        return [f"o{len(self.calls)}" + ("" if self.per_call == 1 else f".{i}") for i in range(self.per_call)]


def append(memory: SimpleObservationalMemory, *items: dict[str, Any], **ids: str) -> list[bool]:
    async def go() -> list[bool]:
        return [await memory.on_item_append(item, **(ids or IDS)) for item in items]
    return asyncio.run(go())


def store(memory: SimpleObservationalMemory, items: Sequence[dict[str, Any]], **ids: str) -> bool:
    return asyncio.run(memory.store(items, **(ids or IDS)))


def with_observations(observations: list[str], **options: Any) -> SimpleObservationalMemory:
    memory = make(buffer_threshold=1, observer=lambda buffer: observations, **options)
    append(memory, user("x"))
    return memory


# -- rule 1 and 2: what is buffered -------------------------------------------------------------------------


def test_appended_items_are_buffered_with_their_token_counts() -> None:
    memory = make(buffer_threshold=100)
    append(memory, user("hello there"), tool("three word output"), assistant("not on append"))
    assert memory.state(**IDS) == SimpleOMState(buffer=("hello there", "three word output"), buffer_tokens=5)


def test_store_buffers_message_text_only() -> None:
    memory = make(buffer_threshold=100)
    store(memory, [{"type": "function_call", "name": "search", "arguments": "{}"},
                   {"type": "reasoning", "summary": []}, tool("ignored here"),
                   assistant(""), assistant("  "), assistant("the answer"),
                   {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "two"},
                                                                        {"type": "text", "text": "parts"}]}])
    assert memory.state(**IDS) == SimpleOMState(buffer=("the answer", "two\nparts"), buffer_tokens=4)


def test_store_takes_a_list_of_items() -> None:
    with pytest.raises(ValueError, match=r"items=.* is invalid: store\(\) takes the list .* wrap a single item"):
        store(make(), assistant("one item"))  # type: ignore[arg-type]


def test_a_bad_item_in_store_changes_nothing() -> None:
    memory = make(buffer_threshold=100)
    with pytest.raises(ValueError, match="has no string 'role'"):
        store(memory, [assistant("fine"), {"type": "message", "content": "no role"}])
    assert memory.state(**IDS) == SimpleOMState()


# -- rule 3: distillation -----------------------------------------------------------------------------------


def test_the_threshold_is_reached_at_equal_tokens() -> None:
    below, at = make(buffer_threshold=5), make(buffer_threshold=5)
    assert append(below, user("one two"), user("three four")) == [False, False]
    assert below.state(**IDS).version == 0 and below.state(**IDS).buffer_tokens == 4
    assert append(at, user("one two"), user("three four five")) == [False, True]
    assert at.state(**IDS) == SimpleOMState(observations=("Processed 2 items",), version=1)


def test_the_observer_gets_a_copy_of_the_whole_buffer_oldest_first() -> None:
    def greedy(buffer: list[str]) -> list[str]:
        seen.append(list(buffer))
        buffer.clear()  # the layer must not depend on the list it handed out
        return ["fact"]

    seen: list[list[str]] = []
    memory = make(buffer_threshold=3, observer=greedy)
    append(memory, user("a"), tool("b"))
    store(memory, [assistant("c")])
    assert seen == [["a", "b", "c"]]
    assert memory.state(**IDS) == SimpleOMState(observations=("fact",), version=1)


def test_an_observer_that_empties_its_argument_and_fails_loses_nothing() -> None:
    def clumsy(buffer: list[str]) -> list[str]:
        buffer.clear()
        raise RuntimeError("model unavailable")

    memory = make(buffer_threshold=2, observer=clumsy)
    with pytest.raises(RuntimeError, match="model unavailable"):
        append(memory, user("a b"))
    assert memory.state(**IDS) == SimpleOMState(buffer=("a b",), buffer_tokens=2)


def test_a_hook_distils_at_most_once_after_buffering_all_its_items() -> None:
    observer = Recorder()
    memory = make(buffer_threshold=2, observer=observer)
    assert store(memory, [assistant("one two"), assistant("three four"), assistant("five six seven")]) is True
    assert observer.calls == [["one two", "three four", "five six seven"]]
    assert memory.state(**IDS) == SimpleOMState(observations=("o1",), version=1)


def test_each_distillation_empties_the_buffer_and_counts_a_version() -> None:
    memory = make(buffer_threshold=2, observer=lambda buffer: [])
    for version in (1, 2, 3):
        append(memory, user("two words"))
        assert memory.state(**IDS) == SimpleOMState(version=version)  # an empty answer still distils


def test_the_oldest_observations_are_evicted_first() -> None:
    memory = make(buffer_threshold=1, max_observations=3, observer=Recorder(per_call=2))
    append(memory, user("a"), user("b"))
    assert memory.state(**IDS).observations == ("o1.1", "o2.0", "o2.1")
    assert memory.state(**IDS).version == 2


# -- rule 4: the fallback observer ---------------------------------------------------------------------------


def test_the_fallback_records_how_many_entries_were_distilled() -> None:
    memory = make(buffer_threshold=4)
    append(memory, user("a"), tool("b"), user("c d"))
    store(memory, [assistant("e f g h i")])
    assert memory.state(**IDS).observations == ("Processed 3 items", "Processed 1 items")


# -- observers: sync, async, returning an awaitable, misbehaving ---------------------------------------------


async def _async_observer(buffer: list[str]) -> list[str]:
    await asyncio.sleep(0)
    return [f"async {len(buffer)}"]


def _returns_awaitable(buffer: list[str]) -> Awaitable[list[str]]:
    return _async_observer(buffer)


def _sync_tuple(buffer: list[str]) -> tuple[str, ...]:
    return (f"async {len(buffer)}",)


@pytest.mark.parametrize("observer", [_async_observer, _returns_awaitable, _sync_tuple])
def test_sync_and_async_observers_are_equivalent(observer: Callable[[list[str]], Any]) -> None:
    memory = make(buffer_threshold=2, observer=observer)
    append(memory, user("a"), user("b"))
    assert memory.state(**IDS) == SimpleOMState(observations=("async 2",), version=1)


@pytest.mark.parametrize("answer", ["a string", [1, 2], None])
def test_an_observer_answer_that_is_not_a_list_of_strings_keeps_the_buffer(answer: Any) -> None:
    memory = make(buffer_threshold=1, observer=lambda buffer: answer)
    with pytest.raises(TypeError, match="it must return a list of strings .* the buffer is kept"):
        append(memory, user("a"))
    assert memory.state(**IDS) == SimpleOMState(buffer=("a",), buffer_tokens=1)


def test_a_timeout_raises_and_keeps_the_buffer_for_the_next_call() -> None:
    async def stuck(buffer: list[str]) -> list[str]:
        await asyncio.sleep(30)
        return ["never"]

    memory = make(buffer_threshold=3, observer=stuck, timeout_s=0.05)
    append(memory, user("one two"))
    with pytest.raises(SimpleOMTimeout, match=r"within timeout_s=0.05 s for key 'u1'.*2 entries, 4 tokens.* kept"):
        append(memory, tool("three four"))
    assert isinstance(SimpleOMTimeout(), TimeoutError)
    assert memory.state(**IDS) == SimpleOMState(buffer=("one two", "three four"), buffer_tokens=4)
    memory.observer = Recorder()
    assert store(memory, [{"type": "reasoning"}]) is True  # buffers nothing, yet distils the kept buffer
    assert memory.state(**IDS) == SimpleOMState(observations=("o1",), version=1)


def test_an_observers_own_timeout_error_is_not_relabelled() -> None:
    async def failing(buffer: list[str]) -> list[str]:
        raise TimeoutError("the model endpoint timed out")

    memory = make(buffer_threshold=1, observer=failing)
    with pytest.raises(TimeoutError, match="the model endpoint timed out") as caught:
        append(memory, user("a"))
    assert not isinstance(caught.value, SimpleOMTimeout)
    assert memory.state(**IDS).buffer == ("a",)


def test_a_counter_must_return_a_count() -> None:
    memory = make(count_tokens=lambda text: -1)
    with pytest.raises(ValueError, match=r"count_tokens returned -1 for 'a': it must return an int >= 0"):
        append(memory, user("a"))


def test_no_counter_means_o200k() -> None:
    memory = SimpleObservationalMemory(buffer_threshold=10_000)
    assert memory.count_tokens is count_o200k
    append(memory, user("Observational memory, distilled."))
    assert memory.state(**IDS).buffer_tokens == default_counter().count_text("Observational memory, distilled.")
    assert memory.snapshot()["token_counter"] == "tiktoken/o200k_base"


# -- concurrency: one lock per key ---------------------------------------------------------------------------


def test_concurrent_hooks_on_one_key_neither_distil_twice_nor_lose_items() -> None:
    calls: list[list[str]] = []

    async def slow(buffer: list[str]) -> list[str]:
        calls.append(list(buffer))
        await asyncio.sleep(0.01)
        return [f"o{len(calls)}"]

    async def go(memory: SimpleObservationalMemory) -> None:
        await asyncio.gather(memory.on_item_append(user("a b c"), **IDS), memory.on_item_append(user("d"), **IDS),
                             memory.store([assistant("e f g")], **IDS))

    memory = make(buffer_threshold=3, observer=slow)
    asyncio.run(go(memory))
    assert calls == [["a b c"], ["d", "e f g"]]
    assert memory.state(**IDS) == SimpleOMState(observations=("o1", "o2"), version=2)
    asyncio.run(go(memory))  # a second event loop: the key's lock is renewed, not reused across loops
    assert memory.state(**IDS).version == 4


# -- rule 5: recall -------------------------------------------------------------------------------------------


def test_recall_is_none_without_observations() -> None:
    memory = make(buffer_threshold=100)
    append(memory, user("buffered, not observed"))
    assert memory.recall(**IDS) is None
    assert memory.recall_message(**IDS) is None
    assert memory.recall(thread_id="t9", resource_id="nobody") is None


def test_recall_renders_the_exact_block_as_a_developer_or_system_message() -> None:
    memory = with_observations(["likes tea", "lives in Oslo"])
    block = "<observations>\n- likes tea\n- lives in Oslo\n</observations>"
    assert memory.recall(**IDS) == block
    assert memory.recall_message(**IDS) == {"role": "developer", "content": block}
    assert memory.recall_message(**IDS, developer_role=False) == {"role": "system", "content": block}


def test_the_budget_leaves_the_oldest_out_of_the_block_not_the_state() -> None:
    memory = with_observations(["o1", "o2", "o3"], budget=(0, 7))
    assert memory.recall(**IDS) == "<observations>\n- o2\n- o3\n</observations>"
    assert memory.state(**IDS).observations == ("o1", "o2", "o3")
    assert memory.config.budget == (0, 7)  # min is recorded only


# -- rule 6: spawn --------------------------------------------------------------------------------------------


def test_spawn_deep_copies_every_state_both_ways() -> None:
    parent = make(buffer_threshold=3)
    append(parent, user("a b c"), user("d"))
    append(parent, user("other"), resource_id="u2")
    child = parent.spawn()
    assert child.state(**IDS) == parent.state(**IDS) and child.config == parent.config
    assert child.state(resource_id="u2").buffer == ("other",)

    append(child, user("e f"))
    append(parent, user("g"))
    store(child, [assistant("child only")], resource_id="u2")
    assert parent.state(**IDS) == SimpleOMState(("Processed 1 items",), ("d", "g"), 2, 1)
    assert child.state(**IDS) == SimpleOMState(("Processed 1 items", "Processed 2 items"), (), 0, 2)
    assert parent.state(resource_id="u2").buffer == ("other",)


# -- rule 7: scope --------------------------------------------------------------------------------------------


def test_resource_scope_shares_one_state_across_threads() -> None:
    memory = make(buffer_threshold=3)
    append(memory, user("a b"), thread_id="t1", resource_id="u1")
    append(memory, user("c"), thread_id="t2", resource_id="u1")
    append(memory, user("x"), thread_id="t1", resource_id="u2")
    assert memory.state(thread_id="t3", resource_id="u1").version == 1
    assert memory.recall(thread_id="new", resource_id="u1") == "<observations>\n- Processed 2 items\n</observations>"
    assert memory.state(thread_id="t1", resource_id="u2").buffer == ("x",)


def test_thread_scope_gives_each_thread_its_own_state() -> None:
    memory = make(buffer_threshold=3, scope="thread")
    append(memory, user("a b"), thread_id="t1", resource_id="u1")
    append(memory, user("c"), thread_id="t2", resource_id="u1")
    append(memory, user("d"), thread_id="t1")  # no resource id is needed in thread scope
    assert memory.state(thread_id="t1").version == 1
    assert memory.state(thread_id="t2", resource_id="u1") == SimpleOMState(buffer=("c",), buffer_tokens=1)


@pytest.mark.parametrize(("scope", "ids", "name"), [
    ("resource", {"thread_id": "t1"}, "resource_id=None"),
    ("resource", {"thread_id": "t1", "resource_id": ""}, "resource_id=''"),
    ("thread", {"resource_id": "u1"}, "thread_id=None"),
])
def test_the_id_the_scope_needs_is_required(scope: str, ids: dict[str, Any], name: str) -> None:
    memory = make(scope=scope)
    pattern = f"{name} is invalid: scope='{scope}' keys its state by .* as a non-empty string"
    with pytest.raises(ValueError, match=pattern):
        append(memory, user("a"), **ids)
    with pytest.raises(ValueError, match=pattern):
        memory.recall(**ids)


# -- snapshots ------------------------------------------------------------------------------------------------


def test_a_snapshot_round_trips_through_json() -> None:
    memory = make(buffer_threshold=3, max_observations=2, scope="thread", budget=(1, 9), timeout_s=5)
    append(memory, user("a b c"), user("d"), thread_id="t1")
    append(memory, tool("e f"), thread_id="t2")
    data = json.loads(json.dumps(memory.snapshot()))
    assert data["token_counter"] == "tests.simple_om.helpers.words"
    restored = SimpleObservationalMemory.from_snapshot(data, count_tokens=words)
    assert restored.config == memory.config
    for thread in ("t1", "t2"):
        assert restored.state(thread_id=thread) == memory.state(thread_id=thread)
    assert restored.snapshot() == memory.snapshot()
    append(restored, user("g h"), thread_id="t1")  # the fallback observer carries on
    assert restored.state(thread_id="t1").observations == ("Processed 1 items", "Processed 2 items")


def test_a_snapshot_restored_with_another_counter_is_recounted() -> None:
    memory = make(buffer_threshold=100)
    append(memory, user("four words in here"))
    restored = SimpleObservationalMemory.from_snapshot(memory.snapshot(), count_tokens=len)
    assert restored.state(**IDS).buffer_tokens == len("four words in here")


def test_what_is_not_a_snapshot_is_refused() -> None:
    with pytest.raises(ValueError, match=r"not a simple OM snapshot \(format 'om-eval/memory@1'"):
        SimpleObservationalMemory.from_snapshot({"format": "om-eval/memory@1"})
    data = make().snapshot()
    data["states"] = {"u1": {"observations": [1], "buffer": [], "buffer_tokens": 0, "version": 0}}
    with pytest.raises(ValueError, match="snapshot state 'u1' is malformed"):
        SimpleObservationalMemory.from_snapshot(data, count_tokens=words)


# -- a property over any sequence of hook calls ---------------------------------------------------------------

hook_call = st.tuples(st.sampled_from(["user", "tool", "store"]),
                      st.lists(st.sampled_from(["w", "w w", "", "w w w w"]), min_size=1, max_size=3))


@settings(max_examples=60, deadline=None)
@given(threshold=st.integers(1, 8), keep=st.integers(1, 4), answers=st.lists(st.integers(0, 3), max_size=4),
       calls=st.lists(hook_call, max_size=15))
def test_any_hook_sequence_keeps_the_invariants(threshold: int, keep: int, answers: list[int],
                                                calls: list[tuple[str, list[str]]]) -> None:
    produced: list[str] = []

    def observer(buffer: list[str]) -> list[str]:
        count = answers[len(produced) % len(answers)] if answers else 1
        new = [f"obs{len(produced) + i}" for i in range(count)]
        produced.extend(new)
        distillations.append(len(buffer))
        return new

    distillations: list[int] = []
    memory = make(buffer_threshold=threshold, max_observations=keep, observer=observer)

    async def go() -> None:
        for kind, texts in calls:
            if kind == "store":
                await memory.store([assistant(t) for t in texts], **IDS)
            else:
                for text in texts:
                    await memory.on_item_append(user(text) if kind == "user" else tool(text), **IDS)
            state = memory.state(**IDS)
            assert len(state.observations) <= keep
            assert state.observations == tuple(produced[-keep:])
            assert state.buffer_tokens == sum(words(entry) for entry in state.buffer) < threshold
            assert state.version == len(distillations)
            assert "" not in state.buffer

    asyncio.run(go())
