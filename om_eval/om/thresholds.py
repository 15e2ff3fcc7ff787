"""Pure threshold math of Observational Memory (om-reference §1.6–§1.8).

Why a module of its own: these few formulas decide *when* the observer and reflector run, so a wrong rounding
mode or an off-by-one comparison silently changes every benchmark number. They are kept free of state and I/O
so that they can be property-tested and compared, value for value, with the reference implementation.

Rounding follows JavaScript's ``Math.round`` (halves go up), not Python's banker's rounding, because the
reference is written in TypeScript.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

ThresholdLike = int | float | Mapping[str, float]

#: Overshoot allowed past the activation target, as a fraction of the retention floor (§1.7 step 3).
MAX_OVERSHOOT_RATIO = 0.95
#: Message tokens that must stay in context after an activation, capped by the retention floor.
MIN_REMAINING_TOKENS = 1000
#: Below ``threshold - RAMP_FACTOR * buffer_tokens`` buffering runs at its normal interval; above, at half.
RAMP_FACTOR = 1.1
#: 1.10's continuation reminder message as its activation counts it at later steps (tokenx 1.3.0, the message
#: overhead included; measured with the engine differential). See ``observation.activation_counts_reminder``.
REMINDER_TOKENS_1_10 = 281


def js_round(value: float) -> int:
    """Round half up, like JavaScript's ``Math.round``."""
    return math.floor(value + 0.5)


def max_threshold(threshold: ThresholdLike) -> float:
    """The upper end of a threshold: the number itself, or ``threshold["max"]`` for a range."""
    if isinstance(threshold, Mapping):
        return threshold["max"]
    return threshold


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def resolve_buffer_tokens(buffer_tokens: float | bool | None, message_tokens: ThresholdLike) -> int | None:
    """Message tokens between two async buffering passes.

    Args:
        buffer_tokens: a ratio of the observation threshold when in (0, 1), an absolute count otherwise;
            ``False`` (or ``None``) disables async buffering.
        message_tokens: the observation threshold (a number or a ``{"min", "max"}`` range).

    Returns:
        The absolute interval in tokens, or ``None`` when buffering is disabled.
    """
    if buffer_tokens is False or buffer_tokens is None:
        return None
    if 0 < buffer_tokens < 1:
        return js_round(max_threshold(message_tokens) * buffer_tokens)
    return js_round(buffer_tokens)


def resolve_block_after(block_after: float, threshold: ThresholdLike) -> int:
    """Token count at which the agent stops waiting for buffered work and observes synchronously.

    A value in [1, 100) is a multiplier of the threshold; anything else is an absolute count.
    """
    if 1 <= block_after < 100:
        return js_round(max_threshold(threshold) * block_after)
    return js_round(block_after)


def resolve_retention_floor(buffer_activation: float, threshold: ThresholdLike) -> float:
    """Message tokens to keep in context after buffered observations are activated.

    ``buffer_activation`` >= 1000 is an absolute floor; otherwise it is the fraction of the threshold to
    *remove*, so the floor is ``threshold * (1 - ratio)``.
    """
    if buffer_activation >= 1000:
        return float(buffer_activation)
    return max_threshold(threshold) * (1 - _clamp(buffer_activation, 0.0, 1.0))


def resolve_activation_ratio(buffer_activation: float, threshold: ThresholdLike) -> float:
    """The activation ratio handed to storage: the fraction of pending tokens to activate."""
    if buffer_activation >= 1000:
        return _clamp(1 - buffer_activation / max_threshold(threshold), 0.0, 1.0)
    return _clamp(buffer_activation, 0.0, 1.0)


def dynamic_message_threshold(message_tokens: int, observation_tokens: int, current_observation_tokens: int) -> int:
    """Observation threshold when messages and observations share one token budget (``share_token_budget``).

    Messages may use whatever the observations leave of ``message_tokens + observation_tokens``, but never
    less than ``message_tokens``. Example with 30k/40k: 0 observation tokens -> 70k; 10k -> 60k; >= 40k -> 30k.
    """
    total_budget = message_tokens + observation_tokens
    return js_round(max(total_budget - current_observation_tokens, message_tokens))


def select_activation_boundary(
    chunk_message_tokens: Sequence[float],
    retention_floor: float,
    pending_tokens: float,
    force_max: bool = False,
) -> int:
    """How many leading buffered chunks to activate (§1.7, the "over-bias" rule with a 95 % safeguard).

    The goal is to remove ``pending - retention_floor`` message tokens. Prefixes that reach that target are
    preferred ("over"), unless they overshoot by more than 95 % of the floor or would leave almost nothing in
    context; then the largest prefix below the target ("under") is taken.

    Args:
        chunk_message_tokens: message tokens covered by each buffered chunk, oldest first.
        retention_floor: message tokens that should stay in context.
        pending_tokens: unobserved message tokens now in context.
        force_max: pending tokens are at or above ``block_after``: take the over boundary whenever it leaves
            the minimum in context.

    Returns:
        The number of leading chunks to activate; 0 when nothing needs removing or there are no chunks.
    """
    if not chunk_message_tokens:
        return 0
    target = max(0.0, pending_tokens - retention_floor)
    if target == 0:
        return 0

    best_over: tuple[int, float] | None = None
    best_under: tuple[int, float] | None = None
    cumulative = 0.0
    for count, tokens in enumerate(chunk_message_tokens, start=1):
        cumulative += tokens
        if cumulative >= target:
            if best_over is None or cumulative < best_over[1]:
                best_over = (count, cumulative)
        elif best_under is None or cumulative > best_under[1]:
            best_under = (count, cumulative)

    max_overshoot = MAX_OVERSHOOT_RATIO * retention_floor
    min_remaining = min(MIN_REMAINING_TOKENS, retention_floor)

    if best_over is not None:
        leaves_enough = pending_tokens - best_over[1] >= min_remaining
        if force_max and leaves_enough:
            return best_over[0]
        if best_over[1] - target <= max_overshoot and leaves_enough:
            return best_over[0]
    if best_under is not None and pending_tokens - best_under[1] >= min_remaining:
        return best_under[0]
    if best_over is not None:
        return best_over[0]
    return 1


def async_buffer_interval(pending_tokens: float, buffer_tokens: float, threshold: float) -> float:
    """The buffering interval in force at ``pending_tokens``: halved once past the ramp point."""
    ramp_point = threshold - RAMP_FACTOR * buffer_tokens
    return buffer_tokens / 2 if pending_tokens >= ramp_point else buffer_tokens


def should_trigger_async_buffer(
    pending_tokens: float, last_boundary: float, buffer_tokens: float, threshold: float
) -> bool:
    """Whether pending tokens crossed a new buffering interval since the last buffer (§1.8 step 8).

    Triggers when ``floor(pending / interval) > floor(last_boundary / interval)``, where the interval is
    ``buffer_tokens``, halved at or above ``threshold - 1.1 * buffer_tokens`` (30k/6k: 23,400 -> 3,000).
    """
    if buffer_tokens <= 0:
        return False
    interval = async_buffer_interval(pending_tokens, buffer_tokens, threshold)
    return math.floor(pending_tokens / interval) > math.floor(last_boundary / interval)


def observation_due(pending_tokens: float, threshold: float) -> bool:
    """Observation fires at or above its threshold (``>=``), and never with nothing pending."""
    return pending_tokens > 0 and pending_tokens >= threshold


def reflection_due(observation_tokens: float, threshold: float, *, at_threshold: bool = False) -> bool:
    """Reflection fires strictly above its threshold (``>``, 1.10), or from it on with ``at_threshold`` (1.31)."""
    return observation_tokens >= threshold if at_threshold else observation_tokens > threshold


# -- async buffering and activation (§1.7, §1.10, §1.11) ------------------------------------------------------


def buffer_has_enough(candidate_tokens: float, buffer_tokens: float) -> bool:
    """A buffering pass only calls the Observer for at least half an interval of new messages (§1.10 step 2)."""
    return candidate_tokens > 0 and candidate_tokens >= buffer_tokens / 2


def projected_removal(
    chunk_message_tokens: Sequence[float], retention_floor: float, pending_tokens: float, force_max: bool = False
) -> float:
    """Message tokens an activation would take out of context now (0 when nothing needs removing)."""
    count = select_activation_boundary(chunk_message_tokens, retention_floor, pending_tokens, force_max)
    return float(sum(chunk_message_tokens[:count]))


def plan_activation(
    chunk_message_tokens: Sequence[float],
    *,
    pending_tokens: float,
    threshold: float,
    retention_floor: float,
    buffer_tokens: float,
    block_after: float,
) -> int:
    """How many leading buffered chunks to activate now; 0 means "do not activate" (§1.7 gate and boundary).

    Activation waits for the threshold (activating earlier would only break the actor's prompt cache). Below
    ``block_after`` it is also skipped when the chunks could not bring the context within ``buffer_tokens`` of
    the retention floor: a partial activation that leaves too much is worse than waiting for more buffering. At
    or above ``block_after`` the boundary is chosen with ``force_max``. Once the gate passes, at least one chunk
    is activated (rule 5 of the boundary choice).
    """
    if not chunk_message_tokens or not observation_due(pending_tokens, threshold):
        return 0
    force_max = pending_tokens >= block_after
    count = select_activation_boundary(chunk_message_tokens, retention_floor, pending_tokens, force_max)
    removal = sum(chunk_message_tokens[:count])
    if not force_max and pending_tokens - removal > retention_floor + buffer_tokens:
        return 0
    return max(count, 1)


def reflection_buffer_due(observation_tokens: float, threshold: float, activation: float) -> bool:
    """Async reflection starts once observations reach ``activation`` x the reflection threshold (§1.11 step 1)."""
    return observation_tokens > 0 and observation_tokens >= threshold * activation


def reflection_slice(
    observation_tokens: float, line_count: int, threshold: float, activation: float
) -> tuple[int, int]:
    """Which leading lines an async reflection condenses, and its compression target (§1.11).

    The slice is the first lines worth ``activation`` x the threshold at the average tokens per line (never more
    lines than exist, at least one); the target asks for three quarters of the slice's estimated size.

    Returns:
        ``(lines_to_reflect, target_tokens)``.
    """
    if line_count <= 0 or observation_tokens <= 0:
        return 0, 0
    per_line = observation_tokens / line_count
    lines = max(1, min(math.floor(threshold * activation / per_line), line_count))
    return lines, js_round(0.75 * per_line * lines)
