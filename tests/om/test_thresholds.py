"""Threshold math: reference examples, edge cases and hypothesis properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from om_eval.om.thresholds import (
    MIN_REMAINING_TOKENS,
    buffer_has_enough,
    dynamic_message_threshold,
    js_round,
    observation_due,
    plan_activation,
    projected_removal,
    reflection_buffer_due,
    reflection_due,
    reflection_slice,
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
    assert reflection_due(40_000, 40_000, at_threshold=True) and not reflection_due(39_999, 40_000, at_threshold=True)
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


# -- activation planning, buffering and buffered reflection (§1.7, §1.10, §1.11) ------------------------------

chunk_lists = st.lists(st.integers(1, 20_000), min_size=1, max_size=12)


@given(chunk_lists, st.integers(0, 40_000), tokens, st.booleans())
def test_activation_leaves_the_minimum_unless_nothing_smaller_is_possible(
    chunks: list[int], floor: int, pending: int, force: bool
) -> None:
    count = select_activation_boundary(chunks, floor, pending, force)
    if count == 0:
        return
    if pending - sum(chunks[:count]) < min(MIN_REMAINING_TOKENS, floor):
        # Only when the very first chunk already reaches the target: no smaller activation exists.
        assert count == 1 and chunks[0] >= pending - floor


@given(chunk_lists, st.integers(1, 100_000), st.floats(0.05, 1.0), st.integers(0, 150_000))
def test_plan_activates_at_least_one_chunk_at_block_after(
    chunks: list[int], threshold: int, ratio: float, extra: int
) -> None:
    block_after = round(threshold * 1.2)
    pending = block_after + extra
    count = plan_activation(
        chunks, pending_tokens=pending, threshold=threshold, retention_floor=threshold * (1 - ratio),
        buffer_tokens=threshold * 0.2, block_after=block_after,
    )
    assert 1 <= count <= len(chunks)


@given(st.lists(st.integers(0, 20_000), max_size=12), st.integers(1, 100_000), tokens, st.floats(0.05, 1.0))
def test_plan_never_activates_below_the_threshold_or_without_chunks(
    chunks: list[int], threshold: int, pending: int, ratio: float
) -> None:
    count = plan_activation(
        chunks, pending_tokens=pending, threshold=threshold, retention_floor=threshold * (1 - ratio),
        buffer_tokens=threshold * 0.2, block_after=threshold * 1.2,
    )
    if pending < threshold or not chunks:
        assert count == 0
    assert 0 <= count <= len(chunks)


@given(chunk_lists, st.integers(1, 100_000), tokens, st.floats(0.05, 1.0))
def test_plan_below_block_after_lands_near_the_floor(
    chunks: list[int], threshold: int, pending: int, ratio: float
) -> None:
    floor, buffer = threshold * (1 - ratio), threshold * 0.2
    count = plan_activation(
        chunks, pending_tokens=pending, threshold=threshold, retention_floor=floor, buffer_tokens=buffer,
        block_after=threshold * 1.2,
    )
    if count and pending < threshold * 1.2:
        assert pending - sum(chunks[:count]) <= floor + buffer


def test_plan_activation_reference_case() -> None:
    # 30k threshold, 6k floor: chunks of 6k each; pending 31k -> target 25k; 4 chunks (24k, under) vs 5 (30k,
    # over by 5k <= 5.7k) -> 5 chunks leave 1k.
    assert plan_activation([6000] * 6, pending_tokens=31_000, threshold=30_000, retention_floor=6000,
                           buffer_tokens=6000, block_after=36_000) == 5
    # One 6k chunk cannot bring 31k near the floor (25k left > 12k): wait for more buffering ...
    assert plan_activation([6000], pending_tokens=31_000, threshold=30_000, retention_floor=6000,
                           buffer_tokens=6000, block_after=36_000) == 0
    # ... unless block_after is reached.
    assert plan_activation([6000], pending_tokens=36_000, threshold=30_000, retention_floor=6000,
                           buffer_tokens=6000, block_after=36_000) == 1


@given(chunk_lists, st.integers(0, 40_000), tokens)
def test_projected_removal_is_a_prefix_sum(chunks: list[int], floor: int, pending: int) -> None:
    removal = projected_removal(chunks, floor, pending)
    prefixes = {0, *(sum(chunks[:k]) for k in range(1, len(chunks) + 1))}
    assert removal in prefixes
    if pending <= floor:
        assert removal == 0


@given(tokens, tokens, positive)
def test_buffer_size_check_is_monotone(low: int, high: int, buffer: int) -> None:
    assume(low <= high)
    if buffer_has_enough(low, buffer):
        assert buffer_has_enough(high, buffer)
    assert not buffer_has_enough(0, buffer)
    assert buffer_has_enough(math.ceil(buffer / 2), buffer)


@given(tokens, positive, st.floats(0.01, 1.0))
def test_reflection_buffering_starts_at_its_activation_point(tokens_now: int, threshold: int, ratio: float) -> None:
    assert reflection_buffer_due(tokens_now, threshold, ratio) == (tokens_now > 0 and tokens_now >= threshold * ratio)


def test_reflection_slice_reference_example() -> None:
    # 30k observation tokens over 300 lines (100/line), threshold 40k x 0.5 = 20k -> 200 lines, target 15k.
    assert reflection_slice(30_000, 300, 40_000, 0.5) == (200, 15_000)
    assert reflection_slice(0, 10, 40_000, 0.5) == (0, 0)


@given(positive, st.integers(1, 5000), positive, st.floats(0.01, 1.0))
def test_reflection_slice_bounds(observation_tokens: int, lines: int, threshold: int, ratio: float) -> None:
    count, target = reflection_slice(observation_tokens, lines, threshold, ratio)
    assert 1 <= count <= lines
    assert target <= js_round(0.75 * observation_tokens)


@given(positive, st.integers(1, 5000), positive, positive, st.floats(0.01, 1.0))
def test_reflection_slice_grows_with_the_threshold(
    observation_tokens: int, lines: int, low: int, high: int, ratio: float
) -> None:
    assume(low <= high)
    assert reflection_slice(observation_tokens, lines, low, ratio)[0] <= reflection_slice(
        observation_tokens, lines, high, ratio
    )[0]
