"""Which text of an item reaches the buffer (spec rules 1 and 2).

Two shapes are known: ``{"type": "message", "role": ..., "content": str | [{"type": "text", "text": str}, ...]}``
and ``{"type": "tool_output", "output": str}``. Other item types (tool calls, reasoning) carry no text for the
buffer and are skipped; a known type with the wrong fields, or anything that is not a dict with a string
``type``, is an error, so a harness bug surfaces instead of silently shrinking the buffer.

Our readings, where the documentation is silent:

* a message whose content is a list of parts is buffered as the parts' texts joined with :data:`PART_JOINER`
  (one entry per item, as rule 1 says, and a line break is how the parts would read to the observer);
* a text that is empty or only whitespace is not buffered, in either hook;
* ``on_item_append`` buffers only *user* messages and tool outputs: the model's own messages reach the buffer
  through ``store``, so buffering them on append as well would count them twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Between the texts of a message's parts (our reading).
PART_JOINER = "\n"

ACCEPTED_SHAPES = ('{"type": "message", "role": "user" | "assistant", "content": str | '
                   '[{"type": "text", "text": str}, ...]} or {"type": "tool_output", "output": str}')


def _shape_error(item: object, problem: str) -> ValueError:
    shown = repr(item)
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return ValueError(f"item {shown} {problem}: accepted shapes are {ACCEPTED_SHAPES}; "
                      "other item types (tool calls, reasoning) are ignored")


def _message_text(item: Mapping[str, Any]) -> str:
    if not isinstance(item.get("role"), str):
        raise _shape_error(item, "has no string 'role'")
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, Sequence) or isinstance(content, bytes):
        raise _shape_error(item, "has a 'content' that is neither a string nor a list of text parts")
    texts = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise _shape_error(item, f"has a content part {part!r} that is not {{'type': 'text', 'text': str}}")
        texts.append(part["text"])
    return PART_JOINER.join(texts)


def _typed(item: object) -> tuple[str, Mapping[str, Any]]:
    if not isinstance(item, Mapping) or not isinstance(item.get("type"), str):
        raise _shape_error(item, "is not a dict with a string 'type'")
    return item["type"], item


def _buffered(text: str) -> str | None:
    return text if text.strip() else None


def appended_text(item: object) -> str | None:
    """The text ``on_item_append`` buffers for ``item``, or None when it buffers nothing (rule 1)."""
    kind, fields = _typed(item)
    if kind == "message":
        text = _message_text(fields)
        return _buffered(text) if fields["role"] == "user" else None
    if kind == "tool_output":
        output = fields.get("output")
        if not isinstance(output, str):
            raise _shape_error(item, "has no string 'output'")
        return _buffered(output)
    return None


def stored_text(item: object) -> str | None:
    """The text ``store`` buffers for one item of the model's response, or None (rule 2)."""
    kind, fields = _typed(item)
    return _buffered(_message_text(fields)) if kind == "message" else None
