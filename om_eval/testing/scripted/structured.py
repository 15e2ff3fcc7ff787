"""The scripted model's replies to structured requests: a JSON instance of a requested schema, built
deterministically from the words of the prompt, and per-token log probabilities when they are asked for.

A library that asks for ``response_format={"type": "json_schema", ...}`` (Graphiti's extraction, any pydantic
response model) gets JSON its own validator accepts, the same for the same prompt, so it runs end to end offline
through its real code. The values carry the prompt's own words, so what the library stores is not empty: strings
are the last user message's leading words, a list holds one item, numbers are the schema's minimum or 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["JSON_FALLBACK", "last_user_text", "schema_instance", "scripted_logprobs", "structured_reply"]

#: The reply to JSON mode without a schema and without a system's own responder: valid JSON that says nothing, so a
#: library parses it, stores nothing and its system reports the empty build (never OM-format text it cannot parse).
JSON_FALLBACK = "{}"
_WORDS = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
#: Nesting at which optional parts stop being filled (a recursive schema must end).
_MAX_DEPTH = 6


def structured_reply(response_format: Mapping[str, Any], prompt: str) -> str:
    """The JSON text for ``response_format`` (``json_schema`` with its schema, else :data:`JSON_FALLBACK`)."""
    if response_format.get("type") != "json_schema":
        return JSON_FALLBACK
    spec = response_format.get("json_schema") or {}
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    if not isinstance(schema, Mapping):
        return JSON_FALLBACK
    return json.dumps(schema_instance(schema, prompt), ensure_ascii=False, sort_keys=True)


def schema_instance(schema: Mapping[str, Any], prompt: str) -> Any:
    """A value valid against ``schema`` (JSON Schema as pydantic and OpenAI's structured outputs write it: objects,
    arrays, scalars, ``enum``/``const``, ``anyOf``/``oneOf``/``allOf``, local ``$ref`` into ``$defs``).

    >>> schema_instance({"type": "object", "properties": {"name": {"type": "string"},
    ...                  "tags": {"type": "array", "items": {"type": "integer", "minimum": 2}}},
    ...                  "required": ["name"]}, "Alice moved to Paris")
    {'name': 'Alice moved to Paris', 'tags': [2]}
    """
    words = _WORDS.findall(prompt)[:12] or ["unknown"]  # the start: a library appends its schema to the prompt
    return _instance(schema, schema, " ".join(words), 0)


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return node
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part, {}) if isinstance(target, Mapping) else {}
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}} if isinstance(target, Mapping) else {}


def _instance(node: Mapping[str, Any], root: Mapping[str, Any], text: str, depth: int) -> Any:
    node = _resolve(node, root)
    if "const" in node:
        return node["const"]
    if isinstance(node.get("enum"), list) and node["enum"]:
        return node["enum"][0]
    for key in ("anyOf", "oneOf"):
        options = [o for o in node.get(key) or () if isinstance(o, Mapping)]
        if options:
            chosen = next((o for o in options if _resolve(o, root).get("type") != "null"), options[0])
            return _instance(chosen, root, text, depth)
    if node.get("allOf"):
        merged: dict[str, Any] = {}
        for part in node["allOf"]:
            merged.update(_resolve(part, root))
        return _instance(merged, root, text, depth)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in node else "array" if "items" in node else "string"
    if kind == "object":
        properties = node.get("properties") or {}
        required = set(node.get("required") or ())
        return {name: _instance(sub, root, text, depth + 1) for name, sub in properties.items()
                if name in required or depth < _MAX_DEPTH}
    if kind == "array":
        found = node.get("items")
        items: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        count = max(1 if depth < _MAX_DEPTH else 0, int(node.get("minItems") or 0))
        return [_instance(items, root, text, depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        low = node.get("minimum", node.get("exclusiveMinimum", 0))
        value = low + (1 if "exclusiveMinimum" in node and "minimum" not in node else 0)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string(node, text)


def _string(node: Mapping[str, Any], text: str) -> str:
    fixed = {"date-time": "2023-05-20T00:00:00Z", "date": "2023-05-20", "time": "00:00:00", "uuid":
             "00000000-0000-4000-8000-000000000000", "email": "user@example.com", "uri": "https://example.com/"}
    value = fixed.get(str(node.get("format")), text)
    low, high = int(node.get("minLength") or 0), node.get("maxLength")
    value = value.ljust(low, "x")
    return value[: int(high)] if isinstance(high, int) else value


def scripted_logprobs(text: str, top: int | None) -> list[dict[str, Any]]:
    """Per-token log probabilities for ``text`` in OpenAI's shape: every token certain (``logprob`` 0.0), its
    ``top`` alternatives far less likely. Deterministic, so a reranker that reads them ranks the same every time."""
    tokens = re.findall(r"\S+|\s+", text) or [""]
    return [{"token": token, "logprob": 0.0, "bytes": list(token.encode()),
             "top_logprobs": [{"token": token, "logprob": 0.0, "bytes": list(token.encode())},
                              *({"token": f"<alt{i}>", "logprob": -10.0 * i, "bytes": None} for i in
                                range(1, top or 0))]}
            for token in tokens]


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The last user message's text (the whole prompt's when there is none)."""
    users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    return users[-1] if users else " ".join(str(m.get("content") or "") for m in messages)
