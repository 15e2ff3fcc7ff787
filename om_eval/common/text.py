"""Text from datasets and models made safe for a terminal.

Why: a dataset (or a model reply) may hold escape sequences; printed raw they recolour, clear or retitle the
user's terminal and can hide lines. Control characters other than line feed and tab are shown as visible
``\\xNN`` / ``\\uNNNN`` escapes instead. Stored data keeps the original text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every terminal control character (C0 but ``\\n``/``\\t``, DEL, C1, bidi overrides) escaped."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def printable_data(value: Any) -> Any:
    """:func:`printable` applied to every string inside mappings and lists (keys too)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, Mapping):
        return {printable_data(k): printable_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_data(v) for v in value]
    return value


def common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b``, found by halving: each comparison runs in C, so long
    prompts stay cheap."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
