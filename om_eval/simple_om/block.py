"""The recalled block and its token budget (spec rule 5 and the ``budget`` option).

Our reading of the budget: the rendered block never exceeds ``max`` tokens, counted on the whole block (BPE
counts of joined lines are not the sums of the lines' counts); the newest observations are kept and the oldest
that do not fit are left out of the block, never out of the state. If not even the newest observation fits,
nothing is injected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

OPEN = "<observations>"
CLOSE = "</observations>"


def render_block(observations: Sequence[str]) -> str | None:
    """``<observations>\\n- a\\n- b\\n</observations>``, oldest first; None when there is nothing to show."""
    return _render(observations) if observations else None


def _render(observations: Sequence[str]) -> str:
    return "\n".join([OPEN, *(f"- {o}" for o in observations), CLOSE])


def fit_block(observations: Sequence[str], max_tokens: int, count_tokens: Callable[[str], int]) -> str | None:
    """The block of the longest run of newest observations whose rendering fits in ``max_tokens``.

    A block of more observations is the same block with more lines, never fewer tokens, so the longest run that
    fits is found by halving: a few counts instead of one per observation.
    """
    low, high = 0, len(observations)  # low observations fit; more than high do not
    while low < high:
        kept = (low + high + 1) // 2
        if count_tokens(_render(observations[-kept:])) <= max_tokens:
            low = kept
        else:
            high = kept - 1
    return _render(observations[-low:]) if low else None
