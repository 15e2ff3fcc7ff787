"""How the ``recall`` tool shows stored messages: parts, token-bounded truncation and the page budget (1.31.0).

Split from :mod:`om_eval.om.recall.tool` (which decides *which* messages a call reads) because this half is pure text
work: every length is in UTF-16 units and every count is tokenx's estimate (:mod:`om_eval.om.js.tokenx`), as in the
package, so a page is cut at the same character the reference cuts it.

A part of a stored message, as Mastra's v2 message format names them (``text``, ``tool-invocation``, ``tool-call``,
``tool-result``, ``reasoning``, ``image``, ``file``, ``data-*`` which is never shown, and any other type shown as
``[type]``), becomes one :class:`FormattedPart`; a message whose content is a plain string is one text part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from om_eval.om.js.json import js_stringify
from om_eval.om.js.text import utf16_len, utf16_prefix
from om_eval.om.js.tokenx import estimate_tokens
from om_eval.om.records import Message

Detail = Literal["low", "high"]

LOW_DETAIL_PART_TOKENS = 30
LOW_DETAIL_TEXT_TOKENS = 100
LOW_DETAIL_TOOL_TOKENS = 20
TOOL_RESULT_TOKENS = 4000
MAX_RESULT_TOKENS = 2000
EXPAND_USER_TEXT_TOKENS = 200
EXPAND_OTHER_TOKENS = 50
ENCRYPTED_KEY = "encryptedContent"
ENCRYPTED_REDACT_OVER = 256

_ABSENT = object()


@dataclass(frozen=True)
class FormattedPart:
    """One shown part: its text (perhaps cut) and its whole text (for expansion when the budget allows)."""

    message_id: str
    part_index: int
    role: str
    type: str
    text: str
    full_text: str
    tool_name: str | None = None


def timestamp(moment: datetime) -> str:
    """``2026-03-01 10:00:00Z``: the ISO instant in UTC, milliseconds dropped."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return utc.strftime("%Y-%m-%d %H:%M:%S") + "Z"


def message_parts(message: Message) -> tuple[Mapping[str, Any], ...]:
    """The message's parts; a plain-string content is one text part."""
    if isinstance(message.content, str):
        return ({"type": "text", "text": message.content},)
    return tuple(message.content)


def has_visible_parts(message: Message) -> bool:
    """Whether any part is not an internal ``data-*`` part (the tool skips the others when paging)."""
    return any(not str(part.get("type") or "").startswith("data-") for part in message_parts(message))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix that, with a ``... [truncated ~N tokens]`` line, fits ``max_tokens`` (the text itself
    when it fits)."""
    if not text or max_tokens <= 0:
        return ""
    total = estimate_tokens(text)
    if total <= max_tokens:
        return text

    def candidate(units: int) -> str:
        visible = utf16_prefix(text, units)
        return f"{visible}\n... [truncated ~{total - estimate_tokens(visible)} tokens]"

    low, high, best = 0, utf16_len(text), candidate(0)
    while low <= high:
        middle = (low + high) // 2
        attempt = candidate(middle)
        if estimate_tokens(attempt) <= max_tokens:
            best, low = attempt, middle + 1
        else:
            high = middle - 1
    return best


def truncate_with_hint(text: str, max_tokens: int, hint: str | None = None) -> str:
    """:func:`truncate_to_tokens`, then `` [<hint> for more]`` when it was cut."""
    if estimate_tokens(text) <= max_tokens:
        return text
    return truncate_to_tokens(text, max_tokens) + (f" [{hint} for more]" if hint else "")


def _sanitised(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            key: f"[stripped encryptedContent: {utf16_len(entry)} characters]"
            if key == ENCRYPTED_KEY and isinstance(entry, str) and utf16_len(entry) > ENCRYPTED_REDACT_OVER
            else _sanitised(entry)
            for key, entry in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_sanitised(item) for item in value]
    return value


def format_tool_result(value: Any) -> str:
    """A tool result as the tool shows it: a string as is, anything else as indented JSON; at most 4,000 tokens."""
    if value is _ABSENT:
        return ""
    text = value if isinstance(value, str) else js_stringify(_sanitised(value), 2)
    return truncate_to_tokens(text, TOOL_RESULT_TOKENS)


def _first_present(part: Mapping[str, Any], first: str, second: str) -> Any:
    """JS ``part[first] ?? part[second]`` (``_ABSENT`` for a missing key, ``None`` for null)."""
    value = part.get(first)
    return value if value is not None else part.get(second, _ABSENT)


def _low_detail_limit(kind: str) -> int:
    if kind == "text":
        return LOW_DETAIL_TEXT_TOKENS
    if kind in ("tool-result", "tool-call"):
        return LOW_DETAIL_TOOL_TOKENS
    return LOW_DETAIL_PART_TOKENS


def part_hint(message_id: str, index: int) -> str:
    return f'recall cursor="{message_id}" partIndex={index} detail="high"'


def _make(message: Message, index: int, kind: str, full: str, detail: Detail, tool: str | None = None) -> FormattedPart:
    text = full if detail == "high" else truncate_with_hint(full, _low_detail_limit(kind), part_hint(message.id, index))
    return FormattedPart(message.id, index, message.role, kind, text, full, tool)


def _plain(message: Message, index: int, kind: str, text: str, tool: str | None = None) -> FormattedPart:
    """A part never cut per part (tool calls, attachments, unknown types)."""
    return FormattedPart(message.id, index, message.role, kind, text, text, tool)


def _tool_result_value(part: Mapping[str, Any], invocation: Mapping[str, Any]) -> Any:
    mastra = (part.get("providerMetadata") or {}).get("mastra") if isinstance(part.get("providerMetadata"), Mapping) \
        else None
    if isinstance(mastra, Mapping) and "modelOutput" in mastra:
        return mastra["modelOutput"]
    return invocation.get("result", _ABSENT)


def format_parts(message: Message, detail: Detail) -> list[FormattedPart]:
    """Every shown part of ``message`` at ``detail`` (indices are positions among all parts, hidden ones too)."""
    shown: list[FormattedPart] = []
    for index, part in enumerate(message_parts(message)):
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):
                shown.append(_make(message, index, "text", part["text"], detail))
        elif kind == "tool-invocation":
            invocation = part.get("toolInvocation") or {}
            name = invocation.get("toolName")
            if not name:
                continue
            if invocation.get("state") != "partial-call" and invocation.get("args") is not None:
                arguments = "" if detail == "low" else "\n" + js_stringify(invocation["args"], 2)
                shown.append(_plain(message, index, "tool-call", f"[Tool Call: {name}]{arguments}", name))
            if invocation.get("state") == "result":
                result = format_tool_result(_tool_result_value(part, invocation))
                shown.append(_make(message, index, "tool-result", f"[Tool Result: {name}]\n{result}", detail, name))
        elif kind == "tool-call":
            name = part.get("toolName")
            if name:
                raw = _first_present(part, "input", "args")
                arguments = "" if detail == "low" or raw is None or raw is _ABSENT else "\n" + (
                    raw if isinstance(raw, str) else js_stringify(raw, 2))
                shown.append(_plain(message, index, "tool-call", f"[Tool Call: {name}]{arguments}", name))
        elif kind == "tool-result":
            name = part.get("toolName")
            if name:
                result = format_tool_result(_first_present(part, "output", "result"))
                shown.append(_make(message, index, "tool-result", f"[Tool Result: {name}]\n{result}", detail, name))
        elif kind == "reasoning":
            reasoning = part.get("reasoning")
            reasoning = part.get("text") if reasoning is None else reasoning
            if reasoning:
                shown.append(_make(message, index, "reasoning", reasoning, detail))
        elif kind in ("image", "file"):
            label = f": {part['filename']}" if part.get("filename") else ""
            shown.append(_plain(message, index, kind, f"[{'Image' if kind == 'image' else 'File'}{label}]"))
        elif kind and not str(kind).startswith("data-"):
            shown.append(_plain(message, index, str(kind), f"[{kind}]"))
    return shown


def render_text(parts: Sequence[FormattedPart], timestamps: Mapping[str, datetime]) -> str:
    """A header line per message (role, time, id), then each part as ``  [p<index>] <text>``."""
    lines: list[str] = []
    current = ""
    for part in parts:
        if part.message_id != current:
            current = part.message_id
            moment = timestamps.get(part.message_id)
            when = f" ({timestamp(moment)})" if moment else ""
            if lines:
                lines.append("")
            lines.append(f"**{part.role}{when}** [{part.message_id}]:")
        lines.append(f"  [p{part.part_index}] {part.text}")
    return "\n".join(lines)


def _expand_priority(part: FormattedPart) -> int:
    if part.role == "user" and part.type == "text":
        return 0
    return {"text": 1, "reasoning": 1, "tool-result": 2, "tool-call": 3}.get(part.type, 4)


def _expand_limit(part: FormattedPart) -> int:
    return EXPAND_USER_TEXT_TOKENS if part.role == "user" and part.type == "text" else EXPAND_OTHER_TOKENS


@dataclass(frozen=True)
class Rendered:
    text: str
    truncated: bool
    token_offset: int


def render_within_budget(parts: Sequence[FormattedPart], timestamps: Mapping[str, datetime],
                         max_tokens: int = MAX_RESULT_TOKENS) -> Rendered:
    """The page's text within ``max_tokens``: cut parts are grown back while room is left (user text first, up to
    200 tokens; others up to 50); a page over the budget is cut hard and says by how much."""
    parts = list(parts)
    text = render_text(parts, timestamps)
    total = estimate_tokens(text)
    if total > max_tokens:
        return Rendered(truncate_to_tokens(text, max_tokens), True, total - max_tokens)
    cut = sorted((i for i, part in enumerate(parts) if part.text != part.full_text),
                 key=lambda i: _expand_priority(parts[i]))
    if not cut:
        return Rendered(text, False, 0)
    remaining = max_tokens - total
    for index in cut:
        if remaining <= 0:
            break
        part = parts[index]
        limit = _expand_limit(part)
        full_tokens = estimate_tokens(part.full_text)
        current = estimate_tokens(part.text)
        target = min(full_tokens, limit)
        delta = target - current
        if delta <= 0:
            continue
        if delta <= remaining and target >= full_tokens:
            parts[index] = replace(part, text=part.full_text)
            remaining -= delta
        else:
            grown = truncate_with_hint(part.full_text, min(current + remaining, limit),
                                       part_hint(part.message_id, part.part_index))
            parts[index] = replace(part, text=grown)
            remaining -= estimate_tokens(grown) - current
    expanded = render_text(parts, timestamps)
    expanded_tokens = estimate_tokens(expanded)
    if expanded_tokens <= max_tokens:
        return Rendered(expanded, False, 0)
    return Rendered(truncate_to_tokens(expanded, max_tokens), True, expanded_tokens - max_tokens)


@dataclass(frozen=True)
class Chunk:
    text: str
    char_offset: int
    next_char_offset: int | None
    truncated: bool


def chunk_by_tokens(text: str, max_tokens: int, char_offset: float = 0) -> Chunk:
    """The piece of ``text`` from ``char_offset`` (UTF-16 units) that fits ``max_tokens``, and where the next
    piece starts (``None`` when this one reaches the end)."""
    length = utf16_len(text)
    start = max(0, min(int(char_offset // 1), length))
    units = text.encode("utf-16-le", "surrogatepass")
    if start < length and 0xDC00 <= int.from_bytes(units[2 * start:2 * start + 2], "little") <= 0xDFFF:
        start += 1
    rest = units[2 * start:].decode("utf-16-le", "surrogatepass")
    if not rest or estimate_tokens(rest) <= max_tokens:
        return Chunk(rest, start, None, False)
    low, high, best = 0, utf16_len(rest), ""
    while low <= high:
        middle = (low + high) // 2
        attempt = utf16_prefix(rest, middle)
        if attempt and estimate_tokens(attempt) <= max_tokens:
            best, low = attempt, middle + 1
        else:
            high = middle - 1
    following = start + utf16_len(best)
    return Chunk(best, start, following, following < length)
