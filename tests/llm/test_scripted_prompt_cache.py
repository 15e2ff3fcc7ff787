"""The scripted provider's emulated prompt cache follows the rules providers document, and reports them through
litellm in the provider's own usage shape."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.llm.client import LLMClient
from om_eval.llm.prompt_cache import PromptCacheEmulator, PromptCacheRules, message_tokens
from om_eval.llm.providers import reset_prompt_caches
from om_eval.om.config import ModelSettings


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def chat(*texts: str, system: str | None = None) -> list[dict[str, str]]:
    roles = ["user", "assistant"]
    turns = [{"role": roles[i % 2], "content": text} for i, text in enumerate(texts)]
    return ([{"role": "system", "content": system}] if system is not None else []) + turns


def tokens(messages: list[dict[str, str]]) -> int:
    return sum(message_tokens(m["content"]) for m in messages)


# Texts of whole 4-character tokens, so a message's token count is exact.
words = st.lists(st.sampled_from(["abcd", "efgh", "ijkl", "mnop"]), min_size=1, max_size=800).map("".join)


def shared_tokens(a: list[dict[str, str]], b: list[dict[str, str]]) -> int:
    """The two prompts' common prefix, counted in 4-character tokens, message by message."""
    shared = 0
    for mine, theirs in zip(a, b, strict=False):
        if mine["role"] != theirs["role"]:
            break
        chunks = [mine["content"][k:k + 4] for k in range(0, len(mine["content"]), 4)]
        others = [theirs["content"][k:k + 4] for k in range(0, len(theirs["content"]), 4)]
        same = next((k for k, (x, y) in enumerate(zip(chunks, others, strict=False)) if x != y),
                    min(len(chunks), len(others)))
        shared += same
        if mine != theirs:
            break
    return shared


@settings(max_examples=200, deadline=None)
@given(first=st.lists(words, min_size=1, max_size=6), second=st.lists(words, min_size=1, max_size=6),
       shared=st.integers(0, 6))
def test_openai_reads_the_shared_prefix_in_128_token_steps_from_1024(first: list[str], second: list[str],
                                                                      shared: int) -> None:
    cache = PromptCacheEmulator(PromptCacheRules("openai"), clock=Clock())
    earlier, later = chat(*first), chat(*(first[:shared] + second))
    assert cache.serve(earlier).read == 0  # an empty cache
    use = cache.serve(later)
    common = shared_tokens(later, earlier)
    assert use.prompt_tokens == tokens(later) and use.written == 0
    if tokens(later) < 1024 or common < 1024:
        assert use.read == 0
    else:
        assert use.read == common // 128 * 128
        assert use.read % 128 == 0 and 1024 <= use.read <= min(common, use.prompt_tokens)


@settings(max_examples=100, deadline=None)
@given(text=words, idle=st.integers(1, 3600), wait=st.integers(0, 7200))  # whole seconds: no rounding at the edge
def test_an_entry_expires_after_its_idle_time_and_a_hit_keeps_it_alive(text: str, idle: int, wait: int) -> None:
    clock = Clock()
    cache = PromptCacheEmulator(PromptCacheRules("openai", idle_s=idle), clock=clock)
    prompt = chat(text * 4, system="s" * 4100)  # over 1,024 tokens
    cache.serve(prompt)
    clock.now += wait
    expected = tokens(prompt) // 128 * 128 if wait <= idle else 0
    assert cache.serve(prompt).read == expected
    clock.now += idle  # the second call stored or refreshed the entry: it lives exactly idle_s more
    assert cache.serve(prompt).read == tokens(prompt) // 128 * 128


def test_a_prompt_under_the_minimum_is_never_cached() -> None:
    cache = PromptCacheEmulator(PromptCacheRules("openai"), clock=Clock())
    prompt = chat("abcd" * 1000)  # 1,000 tokens
    assert [cache.serve(prompt).read for _ in range(3)] == [0, 0, 0]


def test_anthropic_writes_at_breakpoints_and_reads_the_longest_written_prefix() -> None:
    cache = PromptCacheEmulator(PromptCacheRules("anthropic"), clock=Clock())
    system = "s" * 8000  # 2,000 tokens
    first = chat("abcd" * 100, system=system)  # breakpoints after the system message and after the last message
    use = cache.serve(first)
    assert (use.read, use.written) == (0, tokens(first))
    again = cache.serve(first)
    assert (again.read, again.written) == (tokens(first), 0)
    # The next turn: the previous end-of-conversation prefix is found by looking back from the new breakpoint.
    later = chat("abcd" * 100, "efgh" * 50, "ijkl" * 70, system=system)
    use = cache.serve(later)
    assert (use.read, use.written) == (tokens(first), tokens(later) - tokens(first))
    # Another conversation on the same system prompt reads only the system prefix.
    other = chat("mnop" * 300, system=system)
    use = cache.serve(other)
    assert (use.read, use.written) == (2000, tokens(other) - 2000)


def test_anthropic_caches_only_marked_prefixes_when_messages_are_marked() -> None:
    cache = PromptCacheEmulator(PromptCacheRules("anthropic"), clock=Clock())
    block = {"type": "text", "text": "s" * 6000, "cache_control": {"type": "ephemeral"}}
    marked = [{"role": "system", "content": [block]},
              {"role": "user", "content": "abcd" * 600}]
    assert (cache.serve(marked).read, cache.serve(marked).read) == (0, 1500)


@pytest.mark.parametrize("option", ["gemini", {"rule": "openai", "size": 3}, {"rule": "openai", "step": 0}, 5])
def test_rules_that_name_nothing_are_refused(option: object) -> None:
    with pytest.raises(ValueError, match="prompt_cache"):
        PromptCacheRules.parse(option)


@pytest.fixture()
def fresh_caches() -> Iterator[None]:
    reset_prompt_caches()
    yield
    reset_prompt_caches()


@pytest.mark.usefixtures("fresh_caches")
@pytest.mark.parametrize(("rule", "written"), [("openai", None), ("anthropic", 0)])
def test_the_scripted_provider_reports_its_cache_through_the_client(rule: str, written: int | None) -> None:
    client = LLMClient(cache=None)
    settings = ModelSettings(model="scripted/om-eval", temperature=0,
                             provider_options={"litellm": {"prompt_cache": rule}})
    messages = chat("Which city did I move to?", system="You answer from memory. " + "Lisbon. " * 700)
    for _ in range(2):
        asyncio.run(client.complete(messages, stage="actor", settings=settings))
    first, second = client.ledger.records
    assert first.cached_prompt_tokens == 0 and second.cached_prompt_tokens and second.cached_prompt_tokens >= 1024
    assert second.cache_write_tokens == written
    assert second.cost_usd == 0.0  # the scripted model is free; the counts are what a priced provider would bill
    plain = ModelSettings(model="scripted/om-eval", temperature=0)
    asyncio.run(client.complete(messages, stage="actor", settings=plain))
    assert client.ledger.records[-1].cached_prompt_tokens is None  # no emulated cache: the usage says nothing
