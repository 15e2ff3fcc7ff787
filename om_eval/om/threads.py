"""Thread sections in resource-scope observations (om-reference §1.9 steps 3-4).

In resource scope one memory spans many threads, so each thread's observations are kept inside a
``<thread id="...">`` section. Thread ids may be obscured (hashed) so that identifiers which carry meaning,
such as benchmark session ids, never reach a model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import xxhash

from om_eval.om.js.text import WS, js_trim, js_trim_end

_THREAD_TAG_LINE = re.compile(r"^[ \t]*</?thread\b[^>]*>[ \t]*$", re.MULTILINE)
_DATE_LINE = re.compile(r"^Date:.*$", re.MULTILINE)


def obscure_thread_id(thread_id: str, kind: str = "xxh32") -> str:
    """A short stable stand-in for a thread id: 8 hex digits of a 32-bit xxHash (seed 0), as 1.x shows thread ids
    (its ``h32ToString``), or of BLAKE2b (``kind="blake2b"``, om-eval's earlier choice)."""
    data = thread_id.encode("utf-8")
    if kind == "blake2b":
        return hashlib.blake2b(data, digest_size=4).hexdigest()
    return xxhash.xxh32_hexdigest(data)


def strip_thread_tags(text: str) -> str:
    """Remove ``<thread>`` tag lines a model emitted inside its own output."""
    return _THREAD_TAG_LINE.sub("", text).strip()


def _sections(text: str, thread_id: str) -> list[tuple[int, int]]:
    """(start, index of ``</thread>``) of every section for ``thread_id``, in order."""
    opening = f'<thread id="{thread_id}">'
    spans = []
    start = text.find(opening)
    while start >= 0:
        end = text.find("</thread>", start)
        if end < 0:
            break
        spans.append((start, end))
        start = text.find(opening, end)
    return spans


def replace_or_append_thread_section(existing: str, thread_id: str, observations: str, separator: str) -> str:
    """Add ``observations`` to ``thread_id``'s observations (§1.9 step 4).

    When a section of this thread opens with the same ``Date:`` line as the new observations, the new lines
    (minus that repeated header) go inside the first such section, before its ``</thread>``. Otherwise a new
    section is appended after ``separator`` (a message-boundary delimiter or a blank line).
    """
    observations = strip_thread_tags(observations)
    if not observations:
        return existing
    new_date = _DATE_LINE.search(observations)
    if new_date is not None:
        for start, end in _sections(existing, thread_id):
            section_date = _DATE_LINE.search(existing, start, end)
            if section_date is not None and section_date.group(0).strip() == new_date.group(0).strip():
                lines = observations.splitlines()
                lines.remove(new_date.group(0))
                body = "\n".join(lines).strip("\n")
                if not body:
                    return existing
                return existing[:end].rstrip("\n") + "\n" + body + "\n" + existing[end:]
    section = f'<thread id="{thread_id}">\n{observations}\n</thread>'
    return section if not existing.strip() else existing + separator + section


_INLINE_THREAD_TAG = re.compile(r"</?thread\b[^>]{0,1024}>", re.IGNORECASE | re.ASCII)
_SECTION_DATE = re.compile(rf"Date:[{WS}]*([A-Za-z]+[{WS}]+[0-9]+,[{WS}]+[0-9]+)")
_CLOSE = "</thread>"


def merge_thread_section_as_mastra(existing: str, thread_id: str, observations: str, separator: str) -> str:
    """Add ``observations`` to ``thread_id``'s section the way 1.10 and 1.31 do (their
    ``replaceOrAppendThreadSection``), where :func:`replace_or_append_thread_section` is om-eval's reading.

    Mastra strips thread tags wherever they stand, looks only at the thread's *first* section, merges into it when
    that section mentions the new first date anywhere (not only on its first ``Date:`` line), and appends an empty
    section for a thread the Observer wrote nothing for.
    """
    section = f'<thread id="{thread_id}">\n{js_trim(_INLINE_THREAD_TAG.sub("", observations))}\n{_CLOSE}'
    if not existing:
        return section
    date = _SECTION_DATE.search(section)
    if date is None:
        return existing + separator + section
    start = existing.find(f'<thread id="{thread_id}">')
    close = existing.find(_CLOSE, start) if start >= 0 else -1
    if close >= 0:
        end = close + len(_CLOSE)
        current = existing[start:end]
        if f"Date: {date.group(1)}" in current or f"Date:{date.group(1)}" in current:
            date_line_end = section.find("\n", section.find("Date:"))
            new_close = section.rfind(_CLOSE)
            if date_line_end >= 0 and new_close >= 0:
                added = js_trim(section[date_line_end + 1:new_close])
                if added:
                    kept = js_trim_end(current[: -len(_CLOSE)])
                    return existing[:start] + f"{kept}\n{added}\n{_CLOSE}" + existing[end:]
    return existing + separator + section


@dataclass(frozen=True)
class ThreadLoad:
    """A thread waiting to be observed: its id, token count and oldest message time (sortable)."""

    thread_id: str
    tokens: int
    oldest: datetime


def select_threads(loads: Sequence[ThreadLoad], threshold: float, take_all: bool = False) -> list[ThreadLoad]:
    """Largest threads first until their tokens reach ``threshold``, then oldest-first (§1.9 step 2)."""
    by_size = sorted(loads, key=lambda load: -load.tokens)
    chosen: list[ThreadLoad] = []
    total = 0
    for load in by_size:
        if not take_all and chosen and total >= threshold:
            break
        chosen.append(load)
        total += load.tokens
    return sorted(chosen, key=lambda load: load.oldest)


def pack_batches(loads: Iterable[ThreadLoad], max_tokens: int) -> list[list[ThreadLoad]]:
    """Pack threads, in order, into batches of at most ``max_tokens``; an oversized thread is a batch alone."""
    batches: list[list[ThreadLoad]] = []
    current: list[ThreadLoad] = []
    current_tokens = 0
    for load in loads:
        if current and current_tokens + load.tokens > max_tokens:
            batches.append(current)
            current, current_tokens = [], 0
        current.append(load)
        current_tokens += load.tokens
    if current:
        batches.append(current)
    return batches
