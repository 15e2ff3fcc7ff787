"""Threshold math: reference examples, edge cases and hypothesis properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from om_eval.om.thresholds import (
    dynamic_message_threshold,
    js_round,
    observation_due,
    reflection_due,
    resolve_activation_ratio,
    resolve_block_after,
    resolve_buffer_tokens,
    resolve_retention_floor,
    select_activation_boundary,
    should_trigger_async_buffer,
)

tokens = st.integers(min_value=0, max_value=500_000)
positive = st.integers(min_value=1, max_value=500_000)


def test_js_round_rounds_halves_up() -> None:
    assert [js_round(x) for x in (0.5, 1.5, 2.5, -0.5, -1.5, 2.4999)] == [1, 2, 3, 0, -1, 2]


# -- reference defaults (om-reference §1.6) -------------------------------------------------------------------


def test_reference_defaults() -> None:
    assert resolve_buffer_tokens(0.2, 30_000) == 6000
    assert resolve_block_after(1.2, 30_000) == 36_000
    assert resolve_block_after(1.2, 40_000) == 48_000
    assert resolve_retention_floor(0.8, 30_000) == pytest.approx(6000)
    assert resolve_activation_ratio(0.8, 30_000) == 0.8


def test_buffer_tokens_ratio_absolute_and_disabled() -> None:
    assert resolve_buffer_tokens(False, 30_000) is None
    assert resolve_buffer_tokens(5000, 30_000) == 5000
    assert resolve_buffer_tokens(1, 30_000) == 1  # 1 is not in (0, 1): absolute
    assert resolve_buffer_tokens(0.25, {"min": 30_000, "max": 70_000}) == 17_500  # ranges use their max
    assert resolve_buffer_tokens(0.00005, 30_000) == 2  # 1.5 rounds half up


def test_block_after_multiplier_bounds() -> None:
    assert resolve_block_after(1, 30_000) == 30_000
    assert resolve_block_after(99.5, 1000) == 99_500
    assert resolve_block_after(100, 30_000) == 100  # 100 and above are absolute
    assert resolve_block_after(50_000, 30_000) == 50_000


def test_retention_floor_and_ratio_absolute_mode() -> None:
    assert resolve_retention_floor(1000, 30_000) == 1000
    assert resolve_retention_floor(5000, 30_000) == 5000
    assert resolve_retention_floor(1.0, 30_000) == 0
    assert resolve_activation_ratio(6000, 30_000) == pytest.approx(0.8)
    assert resolve_activation_ratio(60_000, 30_000) == 0  # clamped
    assert resolve_activation_ratio(1.7, 30_000) == 1  # ratio mode clamps to [0, 1]


def test_dynamic_threshold_examples() -> None:
    assert dynamic_message_threshold(30_000, 40_000, 0) == 70_000
    assert dynamic_message_threshold(30_000, 40_000, 10_000) == 60_000
    assert dynamic_message_threshold(30_000, 40_000, 40_000) == 30_000
    assert dynamic_message_threshold(30_000, 40_000, 90_000) == 30_000


def test_trigger_comparisons() -> None:
    assert observation_due(30_000, 30_000) and not observation_due(29_999, 30_000)
    assert not reflection_due(40_000, 40_000) and reflection_due(40_001, 40_000)
    assert not observation_due(0, 0)


# -- activation boundary (§1.7) -------------------------------------------------------------------------------


def test_boundary_nothing_to_remove() -> None:
    assert select_activation_boundary([], 6000, 40_000) == 0
    assert select_activation_boundary([3000, 3000], 6000, 6000) == 0
    assert select_activation_boundary([3000, 3000], 6000, 5000) == 0


def test_boundary_prefers_over_within_overshoot() -> None:
    # target = 31k - 6k = 25k; prefix totals 10k, 20k, 30k -> over at 3 chunks (overshoot 5k <= 5.7k).
    assert select_activation_boundary([10_000, 10_000, 10_000], 6000, 31_000) == 3


def test_boundary_falls_back_to_under_when_overshoot_too_big() -> None:
    # target = 25k; totals 20k (under), 40k (over, overshoot 15k > 5.7k) -> under.
    assert select_activation_boundary([20_000, 20_000], 6000, 31_000) == 1


def test_boundary_force_max_takes_over() -> None:
    # floor 30k, target 31k: the over prefix (60k) overshoots by 29k > 28.5k but leaves 1k in context.
    assert select_activation_boundary([10_000, 50_000], 30_000, 61_000, force_max=True) == 2
    assert select_activation_boundary([10_000, 50_000], 30_000, 61_000, force_max=False) == 1


def test_boundary_keeps_minimum_remaining() -> None:
    # Over would leave 500 < 1000 tokens: under is taken instead.
    assert select_activation_boundary([5000, 25_000], 6000, 30_500) == 1


def test_boundary_over_anyway_and_single_chunk_fallback() -> None:
    # Only an over boundary that leaves too little: rule 4 takes it anyway.
    assert select_activation_boundary([30_000], 6000, 30_500) == 1
    # Zero floor: min remaining is 0, so everything may go.
    assert select_activation_boundary([10_000, 10_000], 0, 20_000) == 2


@given(st.lists(st.integers(0, 20_000), max_size=12), st.integers(0, 40_000), tokens, st.booleans())
def test_boundary_is_within_chunk_count(chunks: list[int], floor: int, pending: int, force: bool) -> None:
    count = select_activation_boundary(chunks, floor, pending, force)
    assert 0 <= count <= len(chunks)
    if chunks and pending - floor > 0:
        assert count >= 1


@given(st.lists(st.integers(1, 20_000), min_size=1, max_size=12), st.integers(0, 40_000), tokens)
def test_boundary_over_choice_reaches_target_or_under_choice_leaves_minimum(
    chunks: list[int], floor: int, pending: int
) -> None:
    count = select_activation_boundary(chunks, floor, pending)
    target = max(0, pending - floor)
    if count == 0:
        assert target == 0
        return
    removed = sum(chunks[:count])
    if removed < target and count < len(chunks):
        # An under choice is only taken when it leaves the minimum in context.
        assert pending - removed >= min(1000, floor) or count == 1


# -- async buffering trigger (§1.8 step 8) -------------------------------------------------------------------


def test_async_trigger_reference_example() -> None:
    # 30k/6k: ramp point 23,400; the interval halves to 3,000 there.
    assert should_trigger_async_buffer(6000, 0, 6000, 30_000)
    assert not should_trigger_async_buffer(5999, 0, 6000, 30_000)
    assert not should_trigger_async_buffer(11_999, 6000, 6000, 30_000)
    assert should_trigger_async_buffer(24_000, 23_000, 6000, 30_000)  # 8 > 7 at interval 3000
    assert not should_trigger_async_buffer(23_000, 19_000, 6000, 30_000)  # below ramp: 3 == 3


@given(tokens, tokens, positive, positive)
def test_async_trigger_never_fires_without_progress(pending: int, boundary: int, buffer: int, threshold: int) -> None:
    assume(pending <= boundary)
    assert not should_trigger_async_buffer(pending, boundary, buffer, threshold)


@given(positive, positive)
def test_async_trigger_never_fires_on_empty_input(buffer: int, threshold: int) -> None:
    assert not should_trigger_async_buffer(0, 0, buffer, threshold)


@given(tokens, positive, positive)
def test_async_trigger_fires_one_interval_past_boundary(boundary: int, buffer: int, threshold: int) -> None:
    assert should_trigger_async_buffer(boundary + buffer, boundary, buffer, threshold)


# -- properties of the resolvers ------------------------------------------------------------------------------


@given(st.floats(0.001, 0.999), st.integers(1000, 200_000), st.integers(1000, 200_000))
def test_buffer_tokens_monotone_in_threshold(ratio: float, low: int, high: int) -> None:
    assume(low <= high)
    assert resolve_buffer_tokens(ratio, low) <= resolve_buffer_tokens(ratio, high)


@given(st.floats(0.0, 1.0), st.integers(1, 200_000))
def test_floor_plus_activated_share_is_threshold(ratio: float, threshold: int) -> None:
    floor = resolve_retention_floor(ratio, threshold)
    assert math.isclose(floor + resolve_activation_ratio(ratio, threshold) * threshold, threshold, rel_tol=1e-9)


@given(positive, positive, tokens, tokens)
def test_dynamic_threshold_monotone_and_bounded(messages: int, observations: int, low: int, high: int) -> None:
    assume(low <= high)
    at_low = dynamic_message_threshold(messages, observations, low)
    at_high = dynamic_message_threshold(messages, observations, high)
    assert messages <= at_high <= at_low <= messages + observations


@given(tokens, positive)
def test_single_oversized_message_always_triggers(extra: int, threshold: int) -> None:
    # mastra#16523: a single message larger than the threshold must trigger observation.
    assert observation_due(threshold + extra, threshold)


@given(positive)
def test_empty_input_never_triggers(threshold: int) -> None:
    assert not observation_due(0, threshold)
    assert not reflection_due(0, threshold)
