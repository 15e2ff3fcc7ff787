"""The layer's settings as one frozen, validated object (docs/memory-systems.md has the rules).

Every error names the argument, the value given and what to pass instead, because these settings usually arrive
from a sweep's config file, far from the code that rejects them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Scope = Literal["resource", "thread"]
SCOPES: tuple[Scope, ...] = ("resource", "thread")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class SimpleOMConfig:
    """What shapes a simple observational memory (the observer and the token counter are passed apart)."""

    #: Buffer tokens at which the observer runs (reached means ``>=``).
    buffer_threshold: int = 2000
    #: Observations kept; the oldest are evicted first.
    max_observations: int = 50
    #: Which conversations share one state: ``resource`` (all threads of a user) or ``thread``.
    scope: Scope = "resource"
    #: Token budget of the memory slot, ``(min, max)``: the recalled block never exceeds ``max``; ``min`` is
    #: recorded only (the documentation gives it no effect we could restate).
    budget: tuple[int, int] = (500, 2500)
    #: Seconds a hook waits for an awaitable observer before it gives up.
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        for name in ("buffer_threshold", "max_observations"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise ValueError(f"{name}={value!r} is invalid: pass an integer >= 1")
        if self.scope not in SCOPES:
            raise ValueError(f"scope={self.scope!r} is invalid: pass 'resource' (all threads of a resource share "
                             "one state) or 'thread' (each thread has its own)")
        budget = self.budget
        if (not isinstance(budget, tuple | list) or len(budget) != 2 or not all(_is_int(b) for b in budget)
                or not 0 <= budget[0] <= budget[1]):
            raise ValueError(f"budget={budget!r} is invalid: pass a (min, max) pair of integers with "
                             "0 <= min <= max, e.g. (500, 2500)")
        object.__setattr__(self, "budget", (budget[0], budget[1]))
        timeout = self.timeout_s
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not math.isfinite(timeout) \
                or timeout <= 0:
            raise ValueError(f"timeout_s={timeout!r} is invalid: pass a finite number of seconds > 0")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; :meth:`from_dict` reads it back."""
        return {"buffer_threshold": self.buffer_threshold, "max_observations": self.max_observations,
                "scope": self.scope, "budget": list(self.budget), "timeout_s": self.timeout_s}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SimpleOMConfig:
        unknown = set(data) - {"buffer_threshold", "max_observations", "scope", "budget", "timeout_s"}
        if unknown:
            raise ValueError(f"simple OM config has unknown keys {sorted(unknown)}: expected buffer_threshold, "
                             "max_observations, scope, budget, timeout_s")
        return cls(**data)  # a JSON budget list becomes a tuple in __post_init__
