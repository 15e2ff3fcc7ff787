"""Items and a word counter shared by the simple OM tests."""

from __future__ import annotations

from typing import Any, TypedDict

from om_eval.simple_om import SimpleObservationalMemory


class Ids(TypedDict, total=False):
    thread_id: str
    resource_id: str


#: The conversation most tests use; in resource scope only the resource id matters.
IDS: Ids = {"thread_id": "t1", "resource_id": "u1"}


def words(text: str) -> int:
    """A counting stub whose numbers can be read off the test text."""
    return len(text.split())


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": text}


def tool(text: str) -> dict[str, Any]:
    return {"type": "tool_output", "output": text}


def make(**options: Any) -> SimpleObservationalMemory:
    options.setdefault("count_tokens", words)
    return SimpleObservationalMemory(**options)
