"""The ``recall`` tool of Mastra's retrieval mode (@mastra/memory 1.11+, the behaviour of 1.31.0): the actor reads
the raw messages behind its observations.

Modes (``arguments["mode"]``):

* ``threads``: the resource's threads, newest first, with title, id and dates (in thread scope, the current one);
* ``messages`` (the default): a thread's messages, a page at a time, from its start or end, or forward or backward
  from a cursor message (an end id of an observation group's range); ``partIndex`` reads one part whole, in chunks of
  2,000 tokens (``charOffset``); ``detail="high"`` shows one part at a time in full.

Results are the objects 1.31 returns (keys in its order), and a model reads them as compact JSON
(:func:`result_json`). Errors 1.31 throws raise :class:`RecallError` with its message; the ones it returns (a range
given as a cursor, a cursor from another thread, arguments outside the schema) are results. Search over observation
groups (``mode="search"``) is an om-eval option kept apart (:mod:`om_eval.om.recall.search`); here, as in 1.31 without
a vector store, the mode is not offered.

One difference, on purpose: an argument the tool repeats back (a cursor in a range hint, an error or the result's
``cursor``) is cut after 200 characters (:func:`~om_eval.om.recall.limits.shown`), where 1.31 repeats it whole, three
times in a range hint. No message id comes near that length, so only a hostile cursor reads differently.

Storage is :class:`RecallHistory`: threads and messages in the order they were saved, read the way Mastra's
in-memory store and ``Memory.recall`` read them (sorted by time with ties in saved order, a page taken, then shown
oldest first, system reminders dropped after paging). ``tests/om/recall/test_differential.py`` compares every output
with the package's on generated histories.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from om_eval.om.js.dates import parse_js_date
from om_eval.om.js.json import js_number, js_stringify
from om_eval.om.js.text import js_trim
from om_eval.om.recall.limits import shown
from om_eval.om.recall.parts import (
    MAX_RESULT_TOKENS,
    Detail,
    FormattedPart,
    chunk_by_tokens,
    format_parts,
    has_visible_parts,
    message_parts,
    render_within_budget,
    timestamp,
    truncate_with_hint,
)
from om_eval.om.recall.schema import (
    DEFAULT_SEARCH_HITS,
    MAX_MESSAGES_LIMIT,
    MAX_PAGE,
    MAX_SEARCH_HITS,
    SEARCH_MODE,
    RecallScope,
    validation_error,
)
from om_eval.om.recall.search import SEARCH_NOT_CONFIGURED, GroupSearcher, as_utc
from om_eval.om.records import Message

MAX_THREADS_LIMIT = 50
CURSOR_SCAN_THREADS = 100
NEXT_MESSAGE_WINDOW = 50
CURRENT_MARK = " \u2190 current"


class RecallError(Exception):
    """A call the tool refuses; the message is the one 1.31 throws (the model sees it as the tool's error)."""


@dataclass(frozen=True)
class ThreadInfo:
    """A stored thread: its resource, its dates and its title (``None``: untitled)."""

    id: str
    resource_id: str
    created_at: datetime
    updated_at: datetime
    title: str | None = None


class RecallHistory:
    """The threads and messages the tool can read, in the order they were saved (ties in time keep that order).

    A message saved twice keeps its first place and its last content, as a store keyed by id does.
    """

    def __init__(self, threads: Iterable[ThreadInfo], messages: Iterable[Message]) -> None:
        self._threads: dict[str, ThreadInfo] = {}
        for thread in threads:
            self._threads[thread.id] = thread
        self._messages: dict[str, Message] = {}
        for message in messages:
            self._messages[message.id] = message

    def thread(self, thread_id: str) -> ThreadInfo | None:
        return self._threads.get(thread_id)

    def resource_of(self, message: Message) -> str | None:
        thread = self._threads.get(message.thread_id)
        return thread.resource_id if thread else None

    def message(self, message_id: str) -> Message | None:
        return self._messages.get(message_id)

    def threads_of(self, resource_id: str) -> list[ThreadInfo]:
        """The resource's threads, most recently updated first."""
        owned = [t for t in self._threads.values() if t.resource_id == resource_id]
        return sorted(owned, key=lambda t: _millis(t.updated_at), reverse=True)

    def page_threads(self, resource_id: str, page: int, per_page: int) -> tuple[list[ThreadInfo], bool]:
        """One page of :meth:`threads_of` and whether more follow; a negative page is the store's error."""
        if page < 0:
            raise RecallError("page must be >= 0")
        threads = self.threads_of(resource_id)
        offset = page * per_page
        return threads[offset:offset + per_page], offset + per_page < len(threads)

    def recall(self, thread_id: str, resource_id: str | None, *, limit: int | None = None, newest_first: bool = False,
               after: datetime | None = None, before: datetime | None = None) -> list[Message]:
        """``Memory.recall``: the first ``limit`` messages of the thread in the asked order (``after``/``before``
        exclusive), then oldest first, system reminders dropped."""
        if resource_id:
            thread = self._threads.get(thread_id)
            if thread is None:
                raise RecallError(f"No thread found with id {thread_id}")
            if thread.resource_id != resource_id:
                raise RecallError(f"Thread with id {thread_id} is for resource with id {thread.resource_id} but "
                                  f"resource {resource_id} was queried.")
        chosen = [m for m in self._messages.values() if m.thread_id == thread_id
                  and (not resource_id or self.resource_of(m) == resource_id)
                  and (after is None or _millis(m.created_at) > _millis(after))
                  and (before is None or _millis(m.created_at) < _millis(before))]
        chosen.sort(key=lambda m: _millis(m.created_at), reverse=newest_first)
        if limit is not None:
            chosen = chosen[:limit]
        chosen.sort(key=lambda m: _millis(m.created_at))
        return [m for m in chosen if not _is_system_reminder(m)]


def _millis(moment: datetime) -> int:
    utc = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return (utc - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def _is_system_reminder(message: Message) -> bool:
    if message.role != "user":
        return False
    first_text = next((p for p in message_parts(message) if p.get("type") == "text"), None)
    text = first_text.get("text") if first_text else None
    return isinstance(text, str) and text.startswith("<system-reminder")


def result_json(result: Mapping[str, Any]) -> str:
    """The result as the model reads it: ``JSON.stringify`` of the object."""
    return js_stringify(result)


# -- the call ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Access:
    resource_id: str | None
    thread_scope: str | None
    enforce_thread: bool


def _range_ids(cursor: str) -> tuple[str, str] | None:
    if "," in cursor:
        parts = [p for p in (js_trim(piece) for piece in cursor.split(",")) if p]
        if parts:
            first, last = parts[0], parts[-1]
            start = first[:first.index(":")] if first.find(":") > 0 else first
            end = last[last.index(":") + 1:] if last.find(":") > 0 else last
            return start, end
    colon = cursor.find(":")
    if 0 < colon < len(cursor) - 1:
        return cursor[:colon], cursor[colon + 1:]
    return None


def _range_hint(cursor: str, ids: tuple[str, str]) -> str:
    return (f'The cursor "{shown(cursor)}" looks like a range. Use one of the individual message IDs as the cursor '
            f'instead: start="{shown(ids[0])}" or end="{shown(ids[1])}".')


def _resolve_cursor(history: RecallHistory, cursor: str, access: _Access) -> Message | str:
    """The cursor's message, or the range hint when the cursor looks like a range."""
    normalized = js_trim(cursor)
    if not normalized:
        raise RecallError("Cursor is required")
    ids = _range_ids(normalized)
    if ids:
        return _range_hint(cursor, ids)
    message = history.message(normalized)
    if message is None and access.enforce_thread and access.thread_scope:
        found = history.recall(access.thread_scope, access.resource_id)
        message = next((m for m in found if m.id == normalized), None)
    elif message is None and access.resource_id:
        for thread in history.threads_of(access.resource_id)[:CURSOR_SCAN_THREADS]:
            message = next((m for m in history.recall(thread.id, access.resource_id) if m.id == normalized), None)
            if message:
                break
    if message is None or (access.resource_id and history.resource_of(message) != access.resource_id) or (
            access.enforce_thread and access.thread_scope and message.thread_id != access.thread_scope):
        raise RecallError(f"Could not resolve cursor message: {shown(cursor)}")
    return message


def _thread_lines(thread: ThreadInfo, current: bool) -> list[str]:
    return [f"- **{thread.title or '(untitled)'}**{CURRENT_MARK if current else ''}", f"  id: {thread.id}",
            f"  updated: {timestamp(thread.updated_at)} | created: {timestamp(thread.created_at)}"]


def _list_threads(history: RecallHistory, resource_id: str, current: str, page: int, limit: int,
                  before: str | None, after: str | None) -> dict[str, Any]:
    limit = min(max(limit, 1), MAX_THREADS_LIMIT)
    if before or after:
        threads = history.threads_of(resource_id)
        if before:
            cut = parse_js_date(before)
            threads = [t for t in threads if cut is not None and _millis(t.created_at) < _millis(cut)]
        if after:
            cut = parse_js_date(after)
            threads = [t for t in threads if cut is not None and _millis(t.created_at) > _millis(cut)]
        offset = page * limit
        has_more = offset + limit < len(threads)
        threads = threads[offset:offset + limit]  # a negative offset counts from the back, as JS's slice does
    else:
        threads, has_more = history.page_threads(resource_id, page, limit)
    if not threads:
        return {"threads": "No threads found matching the criteria.", "count": 0, "page": page, "hasMore": False}
    lines = [line for thread in threads for line in _thread_lines(thread, thread.id == current)]
    return {"threads": "\n".join(lines), "count": len(threads), "page": page, "hasMore": has_more}


def _filtered(parts: list[FormattedPart], part_type: str | None, tool_name: str | None) -> list[FormattedPart]:
    if tool_name:
        parts = [p for p in parts if p.type in ("tool-call", "tool-result") and p.tool_name == tool_name]
    if part_type:
        parts = [p for p in parts if p.type == part_type]
    return parts


def _page_result(text: str, count: int, cursor: str, page: int, limit: int, detail: str, has_next: bool,
                 has_prev: bool, truncated: bool = False, token_offset: int = 0) -> dict[str, Any]:
    return {"messages": text, "count": count, "cursor": shown(cursor), "page": page, "limit": limit,
            "detail": detail, "hasNextPage": has_next, "hasPrevPage": has_prev, "truncated": truncated,
            "tokenOffset": token_offset}


def _from_start(history: RecallHistory, thread_id: str, resource_id: str | None, page: int, limit: int, detail: Detail,
                part_type: str | None, tool_name: str | None, anchor: str) -> dict[str, Any]:
    if resource_id:
        thread = history.thread(thread_id)
        if thread is None or thread.resource_id != resource_id:
            raise RecallError("Thread not found")
    page = max(min(page, MAX_PAGE), 1)
    limit = min(max(limit, 1), MAX_MESSAGES_LIMIT)
    page_index = page - 1
    fetch = page_index * limit + limit + 1
    found = history.recall(thread_id, resource_id, limit=fetch, newest_first=anchor == "end")
    visible = [m for m in found[:fetch] if has_visible_parts(m)]
    if anchor == "end":
        visible.reverse()
    skip = page_index * limit
    messages = visible[skip:skip + limit]
    extra = len(visible) > skip + len(messages)
    if messages:
        has_next = page_index > 0 if anchor == "end" else extra
        has_prev = extra if anchor == "end" else page_index > 0
    else:
        has_next, has_prev = False, page_index > 0
    parts = _filtered([p for m in messages for p in format_parts(m, detail)], part_type, tool_name)
    rendered = render_within_budget(parts, {m.id: m.created_at for m in messages})
    if not messages:
        empty = (f"(no messages found on page {page} for this thread)" if page_index > 0
                 else "(no messages in this thread)")
    else:
        empty = "(no message parts matched the current filters)" if part_type or tool_name else "(no messages found)"
    return _page_result(rendered.text or empty, len(messages), messages[0].id if messages else "", page, limit,
                        detail, has_next, has_prev, rendered.truncated, rendered.token_offset)


def _around_cursor(history: RecallHistory, thread_id: str, resource_id: str | None, cursor: str, page: int | None,
                   limit: int | None, detail: Detail, part_type: str | None, tool_name: str | None,
                   thread_scope: str | None, scope: RecallScope) -> dict[str, Any]:
    page = 1 if page is None or page == 0 else page
    page = max(min(page, MAX_PAGE), -MAX_PAGE)
    limit = min(20 if limit is None else limit, MAX_MESSAGES_LIMIT)
    anchor = _resolve_cursor(history, cursor, _Access(resource_id, thread_scope, scope == "thread"))
    if isinstance(anchor, str):
        return _page_result(anchor, 0, cursor, page, limit, detail, False, False)
    other_thread = anchor.thread_id if anchor.thread_id and anchor.thread_id != thread_id else None
    if other_thread and thread_scope:
        text = (f'Cursor does not belong to the active thread. Expected thread "{thread_id}" but cursor '
                f'"{shown(cursor)}" belongs to "{anchor.thread_id}". Pass threadId="{anchor.thread_id}" to browse that '
                'thread.')
        return _page_result(text, 0, cursor, page, limit, detail, False, False)
    forward = page > 0
    page_index = max(abs(page), 1) - 1
    skip = page_index * limit
    fetch = skip + limit + 1
    found = history.recall(other_thread or thread_id, resource_id, limit=fetch, newest_first=not forward,
                           after=anchor.created_at if forward else None,
                           before=None if forward else anchor.created_at)
    visible = [m for m in found if has_visible_parts(m)]
    has_more = len(visible) > skip + limit
    if forward:
        messages = visible[skip:skip + limit]
    else:
        end = max(len(visible) - skip, 0)
        messages = visible[max(end - limit, 0):end]
    has_next = has_more if forward else page_index > 0
    has_prev = page_index > 0 if forward else has_more
    times = {m.id: m.created_at for m in messages}
    parts = _filtered([p for m in messages for p in format_parts(m, detail)], part_type, tool_name)
    if detail == "high" and parts:
        first = parts[0]
        same = [p for p in parts if p.message_id == first.message_id]
        others = [p for p in parts if p.message_id != first.message_id]
        rendered = render_within_budget([first], times)
        hints = []
        if len(same) > 1:
            hints.append(f'next part: partIndex={same[1].part_index} on cursor="{first.message_id}"')
        if others:
            hints.append(f'next message: partIndex={others[0].part_index} on cursor="{others[0].message_id}"')
        elif has_next:
            hints.append(f"more messages available on page {page + 1}")
        text = rendered.text
        if hints:
            text += f"\n\nHigh detail returns 1 part at a time. To continue: {', or '.join(hints)}."
        return _page_result(text, 1, cursor, page, limit, detail, bool(others) or has_next, has_prev,
                            rendered.truncated, rendered.token_offset)
    rendered = render_within_budget(parts, times)
    if not parts:
        empty = ("(no message parts matched the current filters)" if part_type or tool_name
                 else "(no visible message parts found for this page)")
    else:
        empty = "(no messages found)"
    return _page_result(rendered.text or empty, len(messages), cursor, page, limit, detail, has_next, has_prev,
                        rendered.truncated, rendered.token_offset)


def _score(value: float) -> str:
    """``Number.prototype.toFixed(2)``: the nearest hundredth of the exact value, halves away from zero; zero (-0
    too) as ``0.00``, and from 1e21 on the number's own text, as JS writes them."""
    if value == 0:
        return "0.00"
    if abs(value) >= 1e21:
        return js_number(value)
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _search(history: RecallHistory, search: GroupSearcher, query: str, current: str | None, top_k: int,
            before: str | None, after: str | None, thread_scope: str | None) -> dict[str, Any]:
    """``mode="search"``: the hits of ``search`` laid out as 1.31 lays out its vector hits."""
    wanted = min(max(top_k, 1), MAX_SEARCH_HITS)
    asked = min(MAX_SEARCH_HITS, max(wanted * 3, wanted + 10) if thread_scope or before or after else wanted)
    before_at = parse_js_date(before) if before else None
    after_at = parse_js_date(after) if after else None
    if (before and before_at is None) or (after and after_at is None):
        # 1.31 hands an Invalid Date to its vector search, whose filter then throws this.
        raise RecallError("Invalid time value")
    hits = search.search(query, top_k=asked, thread_id=thread_scope, observed_after=after_at,
                         observed_before=before_at)
    kept = [hit for hit in hits if not (thread_scope and hit.thread_id != thread_scope)
            and not (before_at and hit.observed_at and as_utc(hit.observed_at) >= before_at)
            and not (after_at and hit.observed_at and as_utc(hit.observed_at) <= after_at)][:wanted]
    if not kept:
        return {"results": "No matching messages found.", "count": 0}
    sections = []
    for hit in kept:
        thread = history.thread(hit.thread_id)
        here = hit.thread_id == current
        ends = hit.range.split(":") if hit.range else []
        lines = [
            f"### {'Current thread memory' if here else 'Older memory from another thread'}",
            "This result came from the current thread." if here
            else "This result came from an older memory generation in another thread.",
            f"- thread: {hit.thread_id}" + (f" ({thread.title or '(untitled)'})" if thread else ""),
            f"- source: raw messages from ID {ends[0]} through ID {ends[1] if len(ends) > 1 else '(unknown)'}"
            if hit.range else "- source: raw message range unavailable",
            f"- thread updated: {timestamp(thread.updated_at)}" if thread else "",
            f"- observation group: {hit.group_id}" if hit.group_id else "",
            f"- score: {_score(hit.score)}",
            "```text",
            js_trim(hit.text or "") or "_Observation text unavailable._",
            "```",
        ]
        sections.append("\n".join(line for line in lines if line))
    return {"results": truncate_with_hint("\n\n".join(sections), MAX_RESULT_TOKENS), "count": len(kept)}


def _chunk_result(text: str, part: FormattedPart, char_offset: int, continue_as: tuple[str, int]) -> dict[str, Any]:
    chunk = chunk_by_tokens(text, MAX_RESULT_TOKENS, char_offset)
    result: dict[str, Any] = {"text": chunk.text, "messageId": part.message_id, "partIndex": part.part_index,
                              "role": part.role, "type": part.type, "truncated": chunk.truncated,
                              "charOffset": chunk.char_offset}
    if chunk.next_char_offset is not None:
        result["nextCharOffset"] = chunk.next_char_offset
        if chunk.next_char_offset:
            cursor, index = continue_as
            result["note"] = (f'To continue this part, call recall cursor="{shown(cursor)}" partIndex={index} '
                              f'detail="high" charOffset={chunk.next_char_offset}.')
    return result


def _one_part(history: RecallHistory, resource_id: str | None, cursor: str, part_index: int,
              char_offset: int | None, thread_scope: str | None, scope: RecallScope) -> dict[str, Any]:
    resolved = _resolve_cursor(history, cursor, _Access(resource_id, thread_scope, scope != "resource"))
    if isinstance(resolved, str):
        raise RecallError(resolved)
    parts = format_parts(resolved, "high")
    if not parts:
        raise RecallError(f"Message {shown(cursor)} has no visible content (it may be an internal system message). "
                          "Try a neighboring message ID instead.")
    target = next((p for p in reversed(parts) if p.part_index == part_index), None)
    if target is not None:
        return _chunk_result(target.text, target, char_offset or 0, (target.message_id, target.part_index))
    if part_index > max(p.part_index for p in parts):
        following = history.recall(resolved.thread_id, resource_id, limit=NEXT_MESSAGE_WINDOW,
                                   after=resolved.created_at)
        upcoming = next((m for m in following if has_visible_parts(m)), None)
        first = format_parts(upcoming, "high")[0] if upcoming and format_parts(upcoming, "high") else None
        if first is not None:
            note = (f"Part index {part_index} not found in message {shown(cursor)}; showing partIndex "
                    f"{first.part_index} from next message {first.message_id}.\n\n")
            return _chunk_result(note + first.text, first, char_offset or 0, (cursor, part_index))
    indices = ", ".join(str(p.part_index) for p in parts)
    raise RecallError(f"Part index {part_index} not found in message {shown(cursor)}. Available indices: {indices}")


def recall(history: RecallHistory, arguments: Mapping[str, Any], *, thread_id: str | None, resource_id: str | None,
           scope: RecallScope = "resource", search: GroupSearcher | None = None) -> dict[str, Any]:
    """One call of the tool with ``arguments`` (the model's JSON object), asked from ``thread_id`` of
    ``resource_id``; ``scope`` ``resource`` lets it read every thread of the resource, ``thread`` only the current.

    Raises:
        RecallError: the calls 1.31 throws on (an unknown cursor, a thread of another resource, a missing part...).
    """
    invalid = validation_error(arguments, scope, search is not None)
    if invalid is not None:
        return invalid
    # Nulls are dropped (the package's validator retries without them); keys outside the schema stay, as its
    # validator keeps them and the tool reads ``threadId`` in thread scope too.
    args = {k: v for k, v in arguments.items() if v is not None}
    resource_scope = scope == "resource"
    mode, cursor, explicit = args.get("mode"), args.get("cursor"), args.get("threadId")
    page, limit = args.get("page"), args.get("limit")
    detail: Detail = "high" if args.get("detail") == "high" else "low"  # validated above: "low", "high" or absent
    page = int(page) if page is not None else None
    limit = int(limit) if limit is not None else None
    current = thread_id or None
    resolved_explicit = current if explicit == "current" else explicit
    if explicit == "current" and not current:
        raise RecallError("Could not resolve current thread.")

    if mode == SEARCH_MODE:
        if search is None:
            return {"results": SEARCH_NOT_CONFIGURED, "count": 0}
        if not args.get("query"):
            raise RecallError('query is required for mode="search"')
        if not resource_id:
            raise RecallError("Resource ID is required for recall")
        scoped = (current or None) if not resource_scope else (resolved_explicit or None)
        return _search(history, search, str(args["query"]), current, DEFAULT_SEARCH_HITS if limit is None else limit,
                       args.get("before"), args.get("after"), scoped)

    if mode == "threads":
        if not resource_scope or explicit == "current":
            thread = history.thread(current) if current else None
            if thread is None:
                return {"error": "Could not resolve current thread."}
            if resource_scope and resource_id and thread.resource_id != resource_id:
                raise RecallError("Thread does not belong to the active resource")
            return {"threads": "\n".join(_thread_lines(thread, True)), "count": 1, "page": 0, "hasMore": False}
        if not resource_id:
            raise RecallError("Resource ID is required for recall")
        return _list_threads(history, resource_id, current or "", 0 if page is None else page,
                             20 if limit is None else limit, args.get("before"), args.get("after"))

    used_default = not explicit and not cursor and bool(current)
    note = f"threadId wasn't passed so used default {current}.\n\n" if used_default and resource_scope else ""
    chosen = resolved_explicit or (current if used_default else None)
    chosen_id = chosen if isinstance(chosen, str) and chosen else None
    cursor_id = cursor if isinstance(cursor, str) and cursor else None
    has_chosen, has_cursor = chosen_id is not None, cursor_id is not None
    if not has_chosen and not has_cursor:
        raise RecallError(
            'No active thread context and no cursor or threadId was provided for mode="messages". Pass a threadId '
            '(use mode="threads" to discover thread IDs) or a message ID as cursor.' if resource_scope else
            'No active thread context for mode="messages". This tool is limited to the current thread and no current '
            'thread could be resolved.')
    if not resource_scope:
        target = thread_scope = current
    elif chosen_id is not None:
        if not resource_id:
            raise RecallError("Resource ID is required for recall")
        thread = history.thread(chosen_id)
        if thread is None or thread.resource_id != resource_id:
            raise RecallError("Thread does not belong to the active resource")
        target = thread_scope = thread.id
    else:
        target = thread_scope = current
    if cursor_id is not None and not has_chosen and not current:
        if not resource_scope:
            raise RecallError("Current thread is required when browsing by cursor")
        found = _resolve_cursor(history, cursor_id, _Access(resource_id, None, False))
        if isinstance(found, str):
            return _page_result(found, 0, cursor_id, 1 if page is None else page,
                                min(20 if limit is None else limit, 20), detail, False, False)
        target = found.thread_id
    if not target:
        raise RecallError("Thread ID is required for recall")
    if not cursor:
        result = _from_start(history, target, resource_id if resource_scope else None, 1 if page is None else page,
                             20 if limit is None else limit, detail, args.get("partType"), args.get("toolName"),
                             args.get("anchor") or "start")
        return {**result, "messages": note + result["messages"]} if note else result
    if args.get("partIndex") is not None:
        char_offset = args.get("charOffset")
        return _one_part(history, resource_id, cursor, int(args["partIndex"]),
                         None if char_offset is None else int(char_offset), thread_scope, scope)
    return _around_cursor(history, target, resource_id, cursor, page, limit, detail, args.get("partType"),
                          args.get("toolName"), thread_scope, scope)
