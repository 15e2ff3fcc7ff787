"""Cache profiles: what each turn reads from and writes to a provider's prompt cache, and what that costs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om_eval.llm.cache_profiles import PROFILES, CacheProfile, TurnPrompt, cache_use, profile_rates, tier_warning

OPENAI, ANTHROPIC = PROFILES["gpt-4o"], PROFILES["claude-sonnet-4"]


@st.composite
def turn_pairs(draw: st.DrawFn) -> tuple[TurnPrompt, TurnPrompt]:
    previous_tokens = draw(st.integers(1, 200_000))
    tokens = draw(st.integers(1, 200_000))
    shared = draw(st.integers(0, min(tokens, previous_tokens)))
    head = draw(st.integers(0, tokens))
    previous = TurnPrompt(previous_tokens, 0, draw(st.integers(0, previous_tokens)), None)
    return previous, TurnPrompt(tokens, shared, head, draw(st.floats(0, 3 * 86_400)))


@settings(max_examples=500, deadline=None)
@given(pair=turn_pairs(), profile=st.sampled_from(list(PROFILES.values())))
def test_a_turn_never_reads_more_than_it_shares_nor_more_than_it_sends(
        pair: tuple[TurnPrompt, TurnPrompt], profile: CacheProfile) -> None:
    previous, turn = pair
    read, written = cache_use(profile, turn, previous)
    assert 0 <= read <= turn.shared and read + written <= turn.tokens and written >= 0
    if turn.gap_s is not None and turn.gap_s > profile.idle_s:
        assert read == 0  # the cache forgot it
    if profile.rule == "openai":
        assert written == 0 and (read == 0 or (read >= profile.min_tokens and read % profile.step == 0))
        assert turn.shared - read < profile.step or read == 0


@settings(max_examples=300, deadline=None)
@given(pair=turn_pairs(), more=st.integers(0, 50_000), profile=st.sampled_from(list(PROFILES.values())))
def test_sharing_more_never_reads_less(pair: tuple[TurnPrompt, TurnPrompt], more: int,
                                       profile: CacheProfile) -> None:
    previous, turn = pair
    wider = TurnPrompt(turn.tokens, min(turn.shared + more, turn.tokens, previous.tokens), turn.head, turn.gap_s)
    assert cache_use(profile, wider, previous)[0] >= cache_use(profile, turn, previous)[0]


def test_the_first_turn_reads_nothing_and_anthropic_writes_its_prompt() -> None:
    first = TurnPrompt(5000, 0, 3000, None)
    assert cache_use(OPENAI, first, None) == (0, 0)
    assert cache_use(ANTHROPIC, first, None) == (0, 5000)


def test_an_appended_turn_reads_the_previous_prompt() -> None:
    previous = TurnPrompt(5000, 0, 3000, None)
    turn = TurnPrompt(5300, 5000, 3000, 5.0)
    assert cache_use(OPENAI, turn, previous) == (4992, 0)  # 39 steps of 128
    assert cache_use(ANTHROPIC, turn, previous) == (5000, 300)
    # The memory changed after the head: Anthropic falls back on the head's breakpoint, OpenAI on the shared prefix.
    changed = TurnPrompt(5300, 3500, 3000, 5.0)
    assert cache_use(OPENAI, changed, previous) == (3456, 0)
    assert cache_use(ANTHROPIC, changed, previous) == (3000, 2300)


def test_the_profiles_rates_are_litellms_cache_discounts() -> None:
    gpt4o, mini, flash, sonnet = (profile_rates(PROFILES[name]) for name in
                                  ("gpt-4o", "gpt-5-mini", "gemini-2.5-flash", "claude-sonnet-4"))
    assert gpt4o.input == pytest.approx(2.5e-6) and gpt4o.cache_read == pytest.approx(gpt4o.input / 2)
    for rates in (mini, flash, sonnet):
        assert rates.cache_read == pytest.approx(rates.input / 10)
    assert sonnet.cache_write == pytest.approx(sonnet.input * 1.25) and gpt4o.cache_write == pytest.approx(gpt4o.input)
    # 30k prompt, 28k of it cached: 1.9x cheaper at 50 % off, 6.25x at 90 % off (input only).
    assert gpt4o.cost(30_000, 0) / gpt4o.cost(30_000, 0, read=28_000) == pytest.approx(30 / 16)
    assert mini.cost(30_000, 0) / mini.cost(30_000, 0, read=28_000) == pytest.approx(6.25)


def test_a_profile_without_a_price_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="no-such-model"):
        profile_rates(CacheProfile("made-up", "openai/no-such-model", "openai"))


def test_prompts_above_the_tier_threshold_are_flagged() -> None:
    assert tier_warning(120_000) is None and "200,000" in (tier_warning(250_000) or "")
