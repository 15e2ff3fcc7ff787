"""The Observer's message history in the line format of @mastra/memory 1.15 and later (``mastra_release=v1_31``).

Why a second format: 1.10 writes each message as a ``**Role (date, time):**`` header, its text, and a ``---`` rule
between messages (:func:`~om_eval.om.observer.format_messages`). 1.15 changed every Observer call and every
other-conversations block to one line per part:

* a date line ``Mar 5 2024:`` whenever a line's day differs from the line before (so the first line always has
  one), after which the time is shown again;
* ``User (2:21 PM): text``, or ``User: text`` when the time (to the minute, as shown) equals the line before;
* each text part of a message is its own line with the role repeated; an empty part gives no line;
* messages are joined by a single newline, and the date and time carry over from one message to the next.

The history, and so its token count, is shorter than 1.10's, which moves resource-scope observation points
(the other-conversations block counts toward the threshold). Tool parts are written in 1.31's line shape, but
their arguments as JSON where 1.31 writes an outline of ``path: value`` lines: LongMemEval and LoCoMo have no tool
parts, and the differential tests compare text, reasoning and attachment parts only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from om_eval.om.js.text import utf16_len, utf16_prefix
from om_eval.om.records import Message

_IMAGE_NAME = re.compile(r"\.(?:png|jpg|jpeg|webp|gif|bmp|tiff|tif|heic|heif|avif)\Z", re.IGNORECASE | re.ASCII)


def format_line_date(moment: datetime) -> str:
    """``Mar 5 2024`` (en-US short month, no comma), on the wall clock of the datetime as given."""
    return f"{moment:%b} {moment.day} {moment.year}"


def format_line_time(moment: datetime) -> str:
    """``2:21 PM`` (en-US, 12-hour, minutes always two digits)."""
    hour = moment.hour % 12 or 12
    return f"{hour}:{moment:%M} {'AM' if moment.hour < 12 else 'PM'}"


def cap_part(text: str, max_part_length: int | None) -> str:
    """Cut ``text`` to ``max_part_length`` UTF-16 units without splitting an emoji; the note says how many units
    were left out (1.31 counts the whole dropped pair, where 1.10 counted from the cap)."""
    length = utf16_len(text)
    if not max_part_length or length <= max_part_length:
        return text
    kept = utf16_prefix(text, max_part_length)
    return f"{kept}\n... [truncated {length - utf16_len(kept)} characters]"


@dataclass(frozen=True)
class _Line:
    date: str
    time: str
    title: str
    body: str


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _part_line(part: Mapping[str, Any], role: str, counters: dict[str, int], cap: int | None) -> tuple[str, str]:
    """(title, body) of one part; an empty body means no line."""
    kind = part.get("type", "text")
    if kind == "text":
        return role, cap_part(str(part.get("text", "")), cap)
    if kind == "reasoning":
        return "Reasoning", cap_part(str(part.get("text", "")), cap)
    if kind in ("image", "file"):
        # A file with an image type or name is numbered and named as an image, under the title "File".
        mime = str(part.get("mime_type") or "")
        name = str(part.get("name") or "")
        image_like = mime.lower().startswith("image/") or _IMAGE_NAME.search(name.split("#", 1)[0].split("?", 1)[0])
        shown = "image" if kind == "image" or image_like else "file"
        counters[shown] = counters.get(shown, 0) + 1
        label = name.strip() or mime
        return kind.capitalize(), f"[{shown.capitalize()} #{counters[shown]}{f': {label}' if label else ''}]"
    if kind == "tool-call":
        return f"Tool Call {part.get('tool_name', '')}", cap_part(_json(part.get("args", {})), cap)
    if kind == "tool-result":
        result = part.get("result")
        empty = result is None or (isinstance(result, str) and not result.strip())
        body = "[empty result]" if empty else _json(result)
        return f"Tool Result {part.get('tool_name', '')}", cap_part(body, cap)
    return "", ""  # data-* markers and unknown parts are not shown to the model


def _message_lines(message: Message, counters: dict[str, int], cap: int | None) -> list[_Line]:
    role = message.role[:1].upper() + message.role[1:]
    date, time = format_line_date(message.created_at), format_line_time(message.created_at)
    if isinstance(message.content, str):
        pieces = [(role, cap_part(message.content, cap))]
    else:
        pieces = [_part_line(part, role, counters, cap) for part in message.content]
    return [_Line(date, time, title, body) for title, body in pieces if body]


def history_line_sections(
    messages: Sequence[Message], max_part_length: int | None = None, *, counters: dict[str, int] | None = None
) -> list[str]:
    """Each message's lines as 1.15+ writes them in a history, one text per message ("" for a message with
    nothing to show): the date and time carry over from the message before, so the texts joined by a newline
    are :func:`format_history_lines`. 1.31's history message sends one text part per message."""
    counters = {} if counters is None else counters
    sections: list[str] = []
    previous_date: str | None = None
    previous_time: str | None = None
    for message in messages:
        out: list[str] = []
        for line in _message_lines(message, counters, max_part_length):
            if line.date != previous_date:
                out.append(f"{line.date}:")
                previous_date, previous_time = line.date, None
            shown = f" ({line.time})" if line.time != previous_time else ""
            out.append(f"{line.title}{shown}: {line.body}")
            previous_time = line.time
        sections.append("\n".join(out))
    return sections


def format_history_lines(
    messages: Sequence[Message], max_part_length: int | None = None, *, counters: dict[str, int] | None = None
) -> str:
    """``messages`` as 1.15+ shows them to the Observer (and, cut at 500, in the other-conversations block).

    ``counters`` numbers images and files; a multi-thread call shares one across its threads."""
    return "\n".join(s for s in history_line_sections(messages, max_part_length, counters=counters) if s)


def format_thread_lines(threads: Mapping[str, Sequence[Message]], max_part_length: int | None = None) -> str:
    """Each thread's lines in ``<thread id="...">`` (ids as the model should see them); the date and time start
    over in each thread. Threads follow each other on the next line: 1.31 sends the blank line between them as a
    whitespace-only part, which its message pipeline drops before the model sees it."""
    blocks: list[str] = []
    counters: dict[str, int] = {}
    for thread_id, messages in threads.items():
        body = format_history_lines(messages, max_part_length, counters=counters)
        if body:
            blocks.append(f'<thread id="{thread_id}">\n{body}\n</thread>')
    return "\n".join(blocks)
