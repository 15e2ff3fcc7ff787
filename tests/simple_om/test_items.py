"""Which text an item buffers (rules 1 and 2) and which shapes are refused."""

from __future__ import annotations

from typing import Any

import pytest

from om_eval.simple_om.items import PART_JOINER, appended_text, stored_text
from tests.simple_om.helpers import assistant, tool, user


def test_user_messages_and_tool_outputs_are_buffered_on_append() -> None:
    assert appended_text(user("hello there")) == "hello there"
    assert appended_text(tool("42 rows")) == "42 rows"


def test_text_parts_are_joined_with_a_line_break() -> None:
    item = {"type": "message", "role": "user",
            "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]}
    assert PART_JOINER == "\n"
    assert appended_text(item) == "first\nsecond"
    assert stored_text({**item, "role": "assistant"}) == "first\nsecond"


def test_append_skips_the_models_own_messages_and_other_item_types() -> None:
    assert appended_text(assistant("I said this")) is None  # it reaches the buffer through store()
    assert appended_text({"type": "message", "role": "system", "content": "be brief"}) is None
    assert appended_text({"type": "function_call", "name": "search", "arguments": "{}"}) is None


def test_store_keeps_only_message_text() -> None:
    assert stored_text(assistant("done")) == "done"
    assert stored_text({"type": "function_call", "name": "search", "arguments": "{}"}) is None
    assert stored_text({"type": "reasoning", "summary": []}) is None
    assert stored_text(tool("out")) is None


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_texts_are_not_buffered(text: str) -> None:
    assert appended_text(user(text)) is None
    assert appended_text(tool(text)) is None
    assert stored_text(assistant(text)) is None
    assert stored_text({"type": "message", "role": "assistant", "content": []}) is None


@pytest.mark.parametrize(("item", "problem"), [
    ("hello", "is not a dict with a string 'type'"),
    ({"role": "user", "content": "hi"}, "is not a dict with a string 'type'"),
    ({"type": "message", "content": "hi"}, "has no string 'role'"),
    ({"type": "message", "role": "user", "content": 7}, "neither a string nor a list of text parts"),
    ({"type": "message", "role": "user", "content": [{"type": "image", "url": "x"}]}, "content part"),
    ({"type": "message", "role": "user", "content": ["plain"]}, "content part 'plain'"),
    ({"type": "tool_output", "result": "x"}, "has no string 'output'"),
])
def test_unknown_shapes_name_the_item_and_the_accepted_ones(item: Any, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        appended_text(item)
    message = str(caught.value)
    assert message.startswith(f"item {item!r}") and problem in message
    assert 'accepted shapes are {"type": "message"' in message and '{"type": "tool_output", "output": str}' in message


def test_store_checks_message_shapes_too() -> None:
    with pytest.raises(ValueError, match="has no string 'role'"):
        stored_text({"type": "message", "content": "hi"})
