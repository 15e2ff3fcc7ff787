"""``JSON.stringify`` as V8 writes it, for text a model reads from a tool (the recall tool's results).

Why not ``json.dumps`` alone: whole floats are written ``1.0`` (JS writes ``1``), exponents differ (``1e+21``), and a
lone surrogate is written raw instead of escaped. Everything else (the escapes of control characters, quotes and
backslashes, U+2028 left as is) is the same with ``ensure_ascii=False``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def js_number(value: int | float) -> str:
    """``String(value)`` for a JSON number (non-finite numbers are written ``null``, as JSON.stringify does)."""
    if isinstance(value, bool):
        raise TypeError("a bool is not a JSON number")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    sign = "-" if exponent.startswith("-") else "+"
    return f"{mantissa.removesuffix('.0')}e{sign}{int(exponent.lstrip('+-'))}"


def _string(text: str) -> str:
    dumped = json.dumps(text, ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", dumped)


_MAX_INDEX = 2**32 - 2


def _array_index(key: str) -> int | None:
    """The key as an array index when JS treats it as one (canonical decimal below 2**32 - 1)."""
    if key.isascii() and key.isdigit() and (key == "0" or not key.startswith("0")):
        number = int(key)
        return number if number <= _MAX_INDEX else None
    return None


def js_key_order(value: Mapping[Any, Any]) -> list[tuple[str, Any]]:
    """An object's entries in JS property order: array-index keys ascending, then the others as inserted."""
    entries = [(str(k), v) for k, v in value.items()]
    indexed = sorted((e for e in entries if _array_index(e[0]) is not None), key=lambda e: _array_index(e[0]) or 0)
    return indexed + [e for e in entries if _array_index(e[0]) is None]


def js_stringify(value: Any, indent: int = 0, _depth: int = 0) -> str:
    """``JSON.stringify(value, null, indent)`` (``indent`` 0: compact). Keys keep their insertion order."""
    pad = "\n" + " " * (indent * (_depth + 1)) if indent else ""
    close = "\n" + " " * (indent * _depth) if indent else ""
    colon = ": " if indent else ":"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping):
        items = [f"{_string(k)}{colon}{js_stringify(v, indent, _depth + 1)}" for k, v in js_key_order(value)]
        return "{" + ",".join(pad + item for item in items) + close + "}" if items else "{}"
    if isinstance(value, (list, tuple)):
        items = [js_stringify(v, indent, _depth + 1) for v in value]
        return "[" + ",".join(pad + item for item in items) + close + "]" if items else "[]"
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")
