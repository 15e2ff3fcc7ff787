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
    """The block of the longest run of newest observations whose rendering fits in ``max_tokens``."""
    best: str | None = None
    for kept in range(1, len(observations) + 1):
        block = _render(observations[-kept:])
        if count_tokens(block) > max_tokens:
            break
        best = block
    return best
