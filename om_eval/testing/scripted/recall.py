"""How the scripted model uses the ``recall`` tool when it is offered (retrieval mode, offline).

A fixed two-step plan, so the tool loop is exercised end to end without a language model:

1. With observation groups in its context, it picks the group whose lines share the most words with the question
   and reads that group's range: the messages before its end id (``page: -1``, in the conversation whose
   ``<thread id>`` section holds the group) and the end message itself (``partIndex: 0``). With no groups, it lists
   the threads.
2. After a thread list, it reads the first page of each listed thread (up to :data:`MAX_THREAD_READS`).

Then it answers from its memory lines as the actor always does, and from the raw lines the tool returned when
those hold no answer. Faults test the loop (:data:`TOOL_FAULTS`): ``tool_junk`` (arguments that are not JSON) and
``tool_forever`` (it never stops calling), and the hostile calls of the fault drill (:data:`HOSTILE_FAULTS`), each
made once, in place of the plan's first step:

* ``tool_huge_page``: ``{"page": 10**400}``, a number no float holds;
* ``tool_deep_mode``: ``mode`` nested :data:`DEEP_MODE_LEVELS` lists deep (parses, but deep for anything recursive);
* ``tool_deep_array``: arguments that are an array :data:`DEEP_ARRAY_LEVELS` levels deep (too deep to parse);
* ``tool_long_cursor``: a range-looking cursor of :data:`LONG_CURSOR_CHARS` characters (the tool echoes cursors);
* ``tool_flood``: :data:`FLOOD_CALLS` calls in one reply, each reading the current conversation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from om_eval.om.model import ToolCall

TOOL_NAME = "recall"
MAX_THREAD_READS = 6
HOSTILE_FAULTS = ("tool_huge_page", "tool_deep_mode", "tool_deep_array", "tool_long_cursor", "tool_flood")
TOOL_FAULTS = ("tool_junk", "tool_forever", *HOSTILE_FAULTS)
DEEP_MODE_LEVELS = 900
DEEP_ARRAY_LEVELS = 100_000
LONG_CURSOR_CHARS = 20_000
FLOOD_CALLS = 10_000
_GROUP = re.compile(r"^## Group `(?P<id>[^`]+)`\n_range: `(?P<range>[^`]*)`_\n(?P<body>.*?)(?=^## Group `|\Z)",
                    re.MULTILINE | re.DOTALL)
_HEADER = re.compile(r"^\*\*(?P<role>[a-z]+)(?: \([^)]*\))?\*\* \[[^\]]*\]:$")
_PART = re.compile(r"^\s*\[p\d+\] (?P<text>.*)$")
_THREAD_OPEN = re.compile(r'<thread id="(?P<id>[^"]+)">')
_THREAD_ID = re.compile(r"^  id: (?P<id>\S+)$", re.MULTILINE)


def offers_recall(tools: Sequence[Mapping[str, Any]] | None) -> bool:
    return any((tool.get("function") or {}).get("name") == TOOL_NAME for tool in tools or ())


def _call(step: int, index: int, arguments: Mapping[str, Any]) -> ToolCall:
    return ToolCall(f"call_{step}_{index}", TOOL_NAME, json.dumps(arguments, separators=(",", ":")))


def _turn(messages: Sequence[Mapping[str, Any]]) -> tuple[int, list[Mapping[str, Any]]]:
    """The index of the last user message and what followed it (this turn's tool calls and results)."""
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
    return last_user, list(messages[last_user + 1:])


def tool_result_lines(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The raw message lines the tool returned this turn (each part's text, without its label)."""
    lines: list[str] = []
    for message in _turn(messages)[1]:
        if message.get("role") != "tool":
            continue
        try:
            result = json.loads(str(message.get("content") or ""))
        except ValueError:
            continue
        if not isinstance(result, dict):
            continue
        if "text" in result:  # one part, read whole
            lines += [line.strip() for line in str(result["text"]).splitlines() if line.strip()]
            continue
        for line in str(result.get("messages") or "").splitlines():
            if _HEADER.match(line):
                continue
            part = _PART.match(line)
            text = part["text"] if part else line.strip()
            if text and not text.startswith(("... [truncated", "(", "threadId wasn't")):
                lines.append(text)
    return lines


def plan_calls(messages: Sequence[Mapping[str, Any]], question: str, score: Callable[[str, str], int],
               fault: str | None = None) -> list[ToolCall]:
    """The tool calls to make now (none: answer). ``score(question, text)`` rates how well a text matches."""
    _, turn = _turn(messages)
    step = sum(1 for m in turn if m.get("role") == "assistant" and m.get("tool_calls"))
    if fault == "tool_junk":
        return [ToolCall(f"call_{step}_0", TOOL_NAME, "{mode: threads")]
    if fault == "tool_forever":
        return [_call(step, 0, {"mode": "threads"})]
    if fault in HOSTILE_FAULTS and step == 0:
        return hostile_calls(fault)
    if step == 0:
        context = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
        groups = [(score(question, g["body"]), g["range"], g.start()) for g in _GROUP.finditer(context)]
        best = max(groups, key=lambda item: item[0], default=None)
        if best is None or best[0] == 0 or ":" not in best[1]:
            return [_call(0, 0, {"mode": "threads", "limit": 20})]
        end = best[1].rsplit(":", 1)[1]
        # In resource scope a group sits in its conversation's <thread id> section; a cursor from another
        # conversation needs that id (1.31 answers a bare one with a hint to pass it).
        threads = list(_THREAD_OPEN.finditer(context, 0, best[2]))
        where = {"threadId": threads[-1]["id"]} if threads else {}
        return [_call(0, 0, {**where, "cursor": end, "page": -1, "limit": 20}),
                _call(0, 1, {"cursor": end, "partIndex": 0})]
    if step == 1:
        listed = [str(m.get("content") or "") for m in turn if m.get("role") == "tool"]
        ids = [found["id"] for text in listed for found in _THREAD_ID.finditer(_threads_text(text))]
        return [_call(1, i, {"threadId": t, "limit": 20}) for i, t in enumerate(ids[:MAX_THREAD_READS])]
    return []


def hostile_calls(fault: str) -> list[ToolCall]:
    """The calls of a hostile fault (see the module docstring), built as text so no parser of ours is needed."""
    if fault == "tool_huge_page":
        return [ToolCall("call_0_0", TOOL_NAME, '{"page":1' + "0" * 400 + "}")]
    if fault == "tool_deep_mode":
        mode = "[" * DEEP_MODE_LEVELS + '"threads"' + "]" * DEEP_MODE_LEVELS
        return [ToolCall("call_0_0", TOOL_NAME, '{"mode":' + mode + "}")]
    if fault == "tool_deep_array":
        return [ToolCall("call_0_0", TOOL_NAME, "[" * DEEP_ARRAY_LEVELS + "]" * DEEP_ARRAY_LEVELS)]
    if fault == "tool_long_cursor":
        half = LONG_CURSOR_CHARS // 2
        return [_call(0, 0, {"cursor": "a" * half + ":" + "z" * (LONG_CURSOR_CHARS - half - 1)})]
    if fault == "tool_flood":
        return [_call(0, i, {"mode": "messages"}) for i in range(FLOOD_CALLS)]
    raise ValueError(f"{fault!r} is not a hostile fault: use one of {', '.join(HOSTILE_FAULTS)}")


def _threads_text(content: str) -> str:
    try:
        result = json.loads(content)
    except ValueError:
        return ""
    return str(result.get("threads") or "") if isinstance(result, dict) else ""
