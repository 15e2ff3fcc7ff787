"""Tool calling for the local model, in the tagged format Qwen2.5 was trained on.

llama.cpp runs a plain completion, so the function calls of the OpenAI chat format are written into the prompt
and read back out of the reply here: the offered functions are listed as JSON inside ``<tools>`` at the end of the
system message, each call the model makes is one ``<tool_call>`` block holding ``{"name": ..., "arguments": ...}``,
and a tool's reply goes back as a user turn wrapped in ``<tool_response>``. The tags are the model's own; the
sentences around them are ours.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

TOOLS_NOTE = (
    "\n\n# Tools\n\nYou may call one or more of these functions to help answer. Their signatures are listed, as JSON, "
    "between <tools> and </tools>:\n<tools>\n{tools}\n</tools>\n\nTo call a function, write one block per call and "
    "nothing after the last one:\n<tool_call>\n{{\"name\": <function name>, \"arguments\": <JSON object of "
    "arguments>}}\n</tool_call>"
)
_FENCE = re.compile(r"^```(?:json)?\s*$", re.MULTILINE)
_CALL = re.compile(r"<tool_call>\s*(?P<body>.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)


def tools_note(tools: Sequence[Mapping[str, Any]]) -> str:
    """The text added to the system message that offers ``tools`` (OpenAI function specs)."""
    lines = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    return TOOLS_NOTE.format(tools=lines)


def with_tools(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
               ) -> list[dict[str, Any]]:
    """``messages`` rewritten for a plain chat template: tools offered in the first system message, the model's
    calls written as blocks under its text, tool replies as user turns."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content") or ""
        if role == "tool":
            out.append({"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"})
        elif role == "assistant" and message.get("tool_calls"):
            blocks = [
                "<tool_call>\n" + json.dumps({"name": c["function"]["name"],
                                              "arguments": _arguments(c["function"].get("arguments"))},
                                             ensure_ascii=False) + "\n</tool_call>"
                for c in message["tool_calls"]
            ]
            out.append({"role": "assistant", "content": "\n".join([content, *blocks] if content else blocks)})
        else:
            out.append(dict(message))
    if tools:
        note = tools_note(tools)
        first = next((m for m in out if m.get("role") in ("system", "developer")), None)
        if first is None:
            out.insert(0, {"role": "system", "content": note.lstrip()})
        else:
            first["content"] = str(first.get("content") or "") + note
    return out


def _arguments(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _bare_calls(text: str) -> list[str]:
    """The JSON objects of a reply made of calls only: llama.cpp drops the tags when it turns tokens into text
    (they are special tokens of the model), leaving ``{"name": ..., "arguments": ...}`` lines."""
    bodies, rest = [], _FENCE.sub("", text).strip()
    decoder = json.JSONDecoder()
    while rest:
        try:
            value, end = decoder.raw_decode(rest)
        except ValueError:
            return []
        if not (isinstance(value, dict) and isinstance(value.get("name"), str) and "arguments" in value):
            return []
        bodies.append(rest[:end])
        rest = rest[end:].strip()
    return bodies


def read_calls(text: str, tool_names: Sequence[str] = ()) -> tuple[str, list[dict[str, Any]]]:
    """The reply's text before its first call, and its calls in OpenAI's shape (ids made from the reply, so a
    cached reply keeps them). A block that is not JSON is passed on as the arguments text, for the caller to refuse.
    A reply that is nothing but call objects naming offered tools (``tool_names``) counts as calls too."""
    calls = []
    bodies = [m["body"] for m in _CALL.finditer(text)]
    bare = not bodies
    if bare:
        bodies = [b for b in _bare_calls(text) if json.loads(b)["name"] in tool_names]
    for number, body in enumerate(bodies):
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("name"), str):
            name = parsed["name"]
            arguments = parsed.get("arguments", {})
            arguments_text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        else:
            name, arguments_text = "", body
        digest = hashlib.sha256(f"{number}\n{body}".encode()).hexdigest()[:12]
        calls.append({"id": f"call_{digest}", "type": "function",
                      "function": {"name": name, "arguments": arguments_text}})
    if not calls:
        return text, calls
    return ("" if bare else text[: text.index("<tool_call>")].strip()), calls
