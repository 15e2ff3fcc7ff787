"""A small cache keyed by the identity of its arguments, for work repeated on the same objects.

Questions that share a history (a LoCoMo conversation's ~200) hold the same session objects; what the harness
derives from a session (its gold-free view, its share of the history's hash, its tokens) is the same each time.
Keyed by identity, a lookup costs nothing however long the session; the arguments are kept alive while cached, so
an id is never reused by another object meanwhile. Values must not be mutated by callers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import wraps
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def by_identity(maxsize: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Cache a function of positional arguments by their identities, the ``maxsize`` most recently used."""

    def wrap(function: Callable[P, R]) -> Callable[P, R]:
        kept: OrderedDict[tuple[int, ...], tuple[tuple[Any, ...], R]] = OrderedDict()
        lock = threading.Lock()

        @wraps(function)
        def cached(*args: P.args, **kwargs: P.kwargs) -> R:
            if kwargs:
                raise TypeError(f"{function.__name__} is cached by its positional arguments only")
            key = tuple(map(id, args))
            with lock:
                hit = kept.get(key)
                if hit is not None and all(a is b for a, b in zip(hit[0], args)):
                    kept.move_to_end(key)
                    return hit[1]
            value = function(*args, **kwargs)  # kwargs is empty: checked above
            with lock:
                kept[key] = (args, value)
                kept.move_to_end(key)
                while len(kept) > maxsize:
                    kept.popitem(last=False)
            return value

        cached.cache_clear = kept.clear  # type: ignore[attr-defined]
        return cached

    return wrap
