"""Observation groups: each observation cycle's output tagged with the range of raw messages it came from
(@mastra/memory 1.11+ retrieval mode; om-reference §1.9, the behaviour of 1.31.0).

A group is written ``<observation-group id="…" range="firstId:lastId">`` on its own line, its observations, then
``</observation-group>``. The actor reads the groups as ``## Group `id``` headings with a ``_range:`` line, so it can
hand a range's end ids to the ``recall`` tool (:mod:`om_eval.om.recall.tool`) and read the messages verbatim. The
Reflector never sees the tags (they are stripped from its input); its output is mapped back to the groups it came from
(:func:`reconcile_after_reflection`).

Why the scanner and not a regex: 1.31 reads tags left to right, treats only line-started openings as tags (an inline
mention of the tag name stays text), drops an opening that a line-started sibling interrupts, and never nests. The
same walk is reproduced here, and ``tests/om/test_groups_differential.py`` checks it against the package.

One departure: Mastra draws each group id from 8 random bytes. Here a cycle's id is the hash of its range and text
(:func:`group_id_for`), so a replay writes the same memory twice and the actor's prompt, and every cached call,
stays the same; the ids have the same shape (16 lowercase hex characters).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from om_eval.om.js.text import LINE_START, WS, js_trim
from om_eval.om.records import Message

OPEN_TAG = "<observation-group"
CLOSE_TAG = "</observation-group>"
REFLECTION_KIND = "reflection"

_ATTRIBUTE = re.compile(r'([A-Za-z0-9_][A-Za-z0-9_-]*)="([^"]*)"')
_GROUP_HEADING = re.compile(rf"{LINE_START}##[{WS}]+Group[{WS}]+")
_RANGE_LINE = re.compile(rf"{LINE_START}_range:[{WS}]*`[^`]*`_[{WS}]*\n?")
_BACKTICKED = re.compile(r"`([^`]+)`")
_BLANK_RUNS = re.compile(r"\n{3,}")
_DIGITS = re.compile(r"[0-9]+")
_MAX_SAFE_INTEGER = 2**53 - 1


@dataclass(frozen=True)
class ObservationGroup:
    """One group: its id, the message range it covers, its observations, and ``kind="reflection"`` after a
    reflection."""

    id: str
    range: str
    content: str
    kind: str | None = None


@dataclass(frozen=True)
class _Tag:
    start: int
    end: int
    attributes: str
    content: str


def group_id_for(range_: str, observations: str) -> str:
    """A stable 16-hex-character id for a group (see the module docstring for why it is not random)."""
    return hashlib.sha256(f"{range_}\n{observations}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def wrap_in_group(observations: str, range_: str, group_id: str, kind: str | None = None) -> str:
    """``observations`` (trimmed) inside a group tag; the attributes are written as given, unescaped."""
    kind_attribute = f' kind="{kind}"' if kind else ""
    return f'{OPEN_TAG} id="{group_id}" range="{range_}"{kind_attribute}>\n{js_trim(observations)}\n{CLOSE_TAG}'


def _is_line_start(text: str, index: int) -> bool:
    return index == 0 or text[index - 1] == "\n"


def _scan(text: str) -> tuple[list[_Tag], list[tuple[int, int]]]:
    """The complete tags, and the openings that never close before a line-started sibling (or at all)."""
    tags: list[_Tag] = []
    incomplete: list[tuple[int, int]] = []
    cursor = close_floor = 0
    while cursor < len(text):
        start = text.find(OPEN_TAG, cursor)
        if start == -1:
            break
        attributes_start = start + len(OPEN_TAG)
        if attributes_start >= len(text) or not re.match(f"[{WS}]", text[attributes_start]):
            cursor = attributes_start
            continue
        open_end = text.find(">", attributes_start)
        if open_end == -1:
            break
        close_start = text.find(CLOSE_TAG, max(open_end + 1, close_floor))
        if close_start == -1:
            if _is_line_start(text, start):
                incomplete.append((start, open_end + 1))
            close_floor = len(text)
            cursor = open_end + 1
            continue
        nested = text.find(OPEN_TAG, open_end + 1)
        if nested != -1 and nested < close_start and _is_line_start(text, nested):
            incomplete.append((start, open_end + 1))
            close_floor = close_start
            cursor = nested
            continue
        tags.append(_Tag(start, close_start + len(CLOSE_TAG), text[attributes_start:open_end],
                         text[open_end + 1:close_start]))
        close_floor = close_start
        cursor = close_start + len(CLOSE_TAG)
    return tags, incomplete


def _attributes(text: str) -> dict[str, str]:
    return {key: value for key, value in _ATTRIBUTE.findall(text)}


def _replace_tags(text: str, replace: Callable[[_Tag], str]) -> str:
    """``text`` with every complete tag replaced and every incomplete opening removed (closing tags stay)."""
    tags, incomplete = _scan(text)
    pieces: list[str] = []
    cursor = 0
    openings = iter(incomplete)
    pending = next(openings, None)

    def drop_openings_before(limit: float) -> None:
        nonlocal cursor, pending
        while pending is not None and pending[0] < limit:
            start, end = pending
            pending = next(openings, None)
            if start < cursor:
                continue
            pieces.append(text[cursor:start])
            cursor = end

    for tag in tags:
        drop_openings_before(tag.start)
        pieces.extend((text[cursor:tag.start], replace(tag)))
        cursor = tag.end
    drop_openings_before(float("inf"))
    pieces.append(text[cursor:])
    return "".join(pieces)


def parse_groups(text: str) -> list[ObservationGroup]:
    """The complete groups of ``text`` that have both an id and a range, in order."""
    if not text:
        return []
    groups = []
    for tag in _scan(text)[0]:
        attributes = _attributes(tag.attributes)
        if attributes.get("id") and attributes.get("range"):
            groups.append(ObservationGroup(attributes["id"], attributes["range"], js_trim(tag.content),
                                           attributes.get("kind")))
    return groups


def strip_groups(text: str) -> str:
    """``text`` with the tags removed and their observations kept (what the Reflector reads)."""
    if not text:
        return text
    return js_trim(_BLANK_RUNS.sub("\n\n", _replace_tags(text, lambda tag: js_trim(tag.content))))


def render_groups(text: str) -> str | None:
    """The groups as ``## Group `id``` sections with a ``_range:`` line (what the actor reads); ``None`` when
    ``text`` holds no group."""
    if not parse_groups(text):
        return None

    def heading(tag: _Tag) -> str:
        attributes = _attributes(tag.attributes)
        if not attributes.get("id") or not attributes.get("range"):
            return js_trim(tag.content)
        return f"## Group `{attributes['id']}`\n_range: `{attributes['range']}`_\n\n{js_trim(tag.content)}"

    return js_trim(_BLANK_RUNS.sub("\n\n", _replace_tags(text, heading)))


def _segments(range_: str) -> list[str]:
    return [segment for segment in (js_trim(s) for s in range_.split(",")) if segment]


def _endpoints(segment: str) -> tuple[str, str] | None:
    parts = [js_trim(part) for part in segment.split(":")]
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def combine_ranges(groups: Sequence[ObservationGroup]) -> str:
    """One range covering ``groups``: by value when every end is a number, else from the first start to the last
    end; segments that are not ``start:end`` pairs are joined with commas."""
    segments = list(dict.fromkeys(s for group in groups for s in _segments(group.range)))
    if not segments:
        return ""
    pairs = [_endpoints(segment) for segment in segments]
    numeric = []
    for pair in pairs:
        if pair is None or not all(_DIGITS.fullmatch(end) for end in pair):
            break
        values = int(pair[0]), int(pair[1])
        if max(values) > _MAX_SAFE_INTEGER:
            break
        low, high = sorted(zip(values, pair, strict=True), key=lambda item: item[0])
        numeric.append((low, high))
    else:
        first = numeric[0]
        last = numeric[0]
        for bounds in numeric[1:]:
            if bounds[0][0] < first[0][0]:
                first = bounds
            if bounds[1][0] > last[1][0]:
                last = bounds
        return f"{first[0][1]}:{last[1][1]}"
    complete = [pair for pair in pairs if pair is not None]
    if len(complete) < len(pairs):
        return ",".join(segments)
    return f"{complete[0][0]}:{complete[-1][1]}"


def _content_lines(text: str) -> list[str]:
    return [line for line in (js_trim(raw) for raw in text.split("\n")) if line]


def _reflection_sections(content: str) -> list[tuple[str, str]]:
    """(heading, body) of each ``## Group`` section of a reflection; empty when it has none."""
    text = js_trim(content)
    if not text or not _GROUP_HEADING.search(text):
        return []
    sections = []
    for piece in _GROUP_HEADING.split(text):
        piece = js_trim(piece)
        if not piece:
            continue
        heading, newline, body = piece.partition("\n")
        body = js_trim(body) if newline else ""
        sections.append((js_trim(heading), js_trim(_RANGE_LINE.sub("", body, count=1))))
    return sections


def derive_provenance(content: str, groups: Sequence[ObservationGroup]) -> list[ObservationGroup]:
    """A reflection's ``## Group`` sections mapped back to the source groups whose lines they carry."""
    sections = _reflection_sections(content)
    if not sections or not groups:
        return []
    derived = []
    for index, (heading, body) in enumerate(sections):
        match = _BACKTICKED.search(heading)
        group_id = (js_trim(match.group(1)) if match else "") or f"derived-group-{index + 1}"
        identified = next((group for group in groups if group.id == group_id), None)
        body_lines = set(_content_lines(body))
        matching = [group for group in groups if any(line in body_lines for line in _content_lines(group.content))]
        if identified is not None:
            own_lines = set(_content_lines(identified.content))
            contributing = [
                group for group in matching
                if group.id != identified.id
                and any(line in body_lines and line not in own_lines for line in _content_lines(group.content))
            ]
            resolved = [group for group in groups
                        if group is identified or any(group is other for other in contributing)]
        elif matching:
            resolved = matching
        else:
            resolved = [groups[min(index, len(groups) - 1)]]
        derived.append(ObservationGroup(group_id, combine_ranges(resolved), body, REFLECTION_KIND))
    return derived


def reconcile_after_reflection(content: str, source: str, new_id: Callable[[], str]) -> str | None:
    """A reflection of grouped observations, grouped again: by its ``## Group`` sections when it kept them, else
    as one group spanning every source range. ``None`` when ``source`` had no groups (the reflection stays as it
    is); ``new_id`` names the spanning group."""
    source_groups = parse_groups(source)
    if not source_groups:
        return None
    text = js_trim(content)
    if not text:
        return ""
    derived = derive_provenance(text, source_groups)
    if derived:
        return "\n\n".join(wrap_in_group(g.content, g.range, g.id, g.kind) for g in derived)
    return wrap_in_group(text, combine_ranges(source_groups), new_id(), REFLECTION_KIND)


def _visible(message: Message) -> bool:
    if isinstance(message.content, str):
        return True  # a stored text message is one text part
    return any(
        (kind := part.get("type")) and not str(kind).startswith("data-") and kind != "step-start"
        for part in message.content
    )


def message_range(messages: Sequence[Message], shown_id: Callable[[str], str] = str) -> str | None:
    """``firstId:lastId`` of the messages with visible content (all of them when none has), each id as
    ``shown_id`` gives it to models; ``None`` for no messages."""
    if not messages:
        return None
    first = next((m for m in messages if _visible(m)), messages[0])
    last = next((m for m in reversed(messages) if _visible(m)), messages[-1])
    return f"{shown_id(first.id)}:{shown_id(last.id)}"
