"""Templates: a builder's output with its inputs cut out, so a pack renders per-call prompts without Node.

Why this works: Mastra's prompt builders only concatenate. Called once with a *sentinel* in place of each input
(a private-use character no prompt contains), the output holds the literal text and, where the sentinel is, the
place of the input. A :class:`Slot` records that place and what the builder does to a value on the way: a sentinel
is written as two halves around a line feed, and what stands between them in the output is what the builder turns a
line feed into (1.31 indents prior values in the multi-thread prompt). Builders that make a list (prior thread
metadata, threads, history parts) are called with one item of each kind and with two items; the common prefix and
suffix of those outputs is the text around the list, the rest is each item and the join (:func:`derive_list`).

What a template cannot see: a transformation of a value that leaves a sentinel unchanged (a trim, a JSON quoting),
and branches no rendered shape took. The renderer renders every shape the engine uses and the tests compare
filled templates with the builders' own output on generated inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from om_eval.om.exact.errors import RenderError

#: Sentinels come from Unicode's supplementary private-use plane: no prompt text contains them, and two of them
#: never share a first character, so a common prefix of two outputs never ends inside one.
_SENTINEL_BASE = 0xF0000
_SENTINEL_LIMIT = 0xFFFFD


@dataclass(frozen=True)
class Slot:
    """Where an input goes.

    Attributes:
        name: the input's name.
        newline: what a line feed inside the value becomes.
        transform: the name of a rewrite applied to the value first (``anchor_ids`` for 1.9-1.10's Reflector).
    """

    name: str
    newline: str = "\n"
    transform: str | None = None


@dataclass(frozen=True)
class ListSlot:
    """Where a list of items goes: each item rendered from the template of its kind, joined by ``join``.

    ``order`` is the order the builder puts the kinds in when an item of each kind is present.
    """

    name: str
    join: str
    items: Mapping[str, Template]
    order: tuple[str, ...]


Part: TypeAlias = "str | Slot | ListSlot"
Template: TypeAlias = "tuple[Part, ...]"
Item: TypeAlias = "tuple[str, Values]"
Values: TypeAlias = "Mapping[str, str | Sequence[Item]]"
Transforms: TypeAlias = Mapping[str, Callable[[str], str]]


def fill(template: Template, values: Values, transforms: Transforms | None = None) -> str:
    """The text of ``template`` with ``values``: a string per :class:`Slot`, a list of ``(kind, values)`` per
    :class:`ListSlot` (rendered in the order given). A missing value is an error, never an empty string."""
    out: list[str] = []
    for part in template:
        if isinstance(part, str):
            out.append(part)
            continue
        if part.name not in values:
            raise KeyError(f"no value for {part.name!r}")
        value = values[part.name]
        if isinstance(part, Slot):
            if not isinstance(value, str):
                raise TypeError(f"{part.name!r} takes a string")
            if part.transform is not None:
                value = (transforms or {})[part.transform](value)
            out.append(value.replace("\n", part.newline) if part.newline != "\n" else value)
        else:
            if isinstance(value, str):
                raise TypeError(f"{part.name!r} takes a list of (kind, values)")
            out.append(part.join.join(fill(part.items[kind], item, transforms) for kind, item in value))
    return "".join(out)


# -- JSON ---------------------------------------------------------------------------------------------------------


def to_json(template: Template) -> list[Any]:
    """``template`` as JSON: text as strings, slots as objects."""
    out: list[Any] = []
    for part in template:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, Slot):
            slot: dict[str, Any] = {"slot": part.name}
            if part.newline != "\n":
                slot["newline"] = part.newline
            if part.transform is not None:
                slot["transform"] = part.transform
            out.append(slot)
        else:
            out.append({"list": part.name, "join": part.join, "order": list(part.order),
                        "items": {kind: to_json(item) for kind, item in part.items.items()}})
    return out


def from_json(data: Sequence[Any]) -> Template:
    """The inverse of :func:`to_json`."""
    parts: list[Part] = []
    for part in data:
        if isinstance(part, str):
            parts.append(part)
        elif "slot" in part:
            parts.append(Slot(part["slot"], part.get("newline", "\n"), part.get("transform")))
        else:
            items = {kind: from_json(item) for kind, item in part["items"].items()}
            parts.append(ListSlot(part["list"], part["join"], items, tuple(part["order"])))
    return tuple(parts)


def text_of(template: Template) -> Iterator[str]:
    """Every literal piece of ``template``, list items included (for scans of the pack's wording)."""
    for part in template:
        if isinstance(part, str):
            yield part
        elif isinstance(part, ListSlot):
            for item in part.items.values():
                yield from text_of(item)


# -- deriving templates from outputs ------------------------------------------------------------------------------


class Sentinels:
    """Hands out sentinels and turns outputs that contain them back into templates."""

    def __init__(self) -> None:
        self._next = _SENTINEL_BASE
        self._slots: dict[str, tuple[str, str | None, str | None]] = {}

    def _char(self) -> str:
        if self._next > _SENTINEL_LIMIT:
            raise RenderError("ran out of sentinel characters")
        char = chr(self._next)
        self._next += 1
        return char

    def value(self, name: str, transform: str | None = None) -> str:
        """A sentinel value for the input ``name``: two halves around a line feed."""
        first, second = self._char(), self._char()
        self._slots[first] = (name, second, transform)
        return f"{first}\n{second}"

    def line(self, name: str, transform: str | None = None) -> str:
        """A one-line sentinel for an input the builder would not take with a line feed inside."""
        first = self._char()
        self._slots[first] = (name, None, transform)
        return first

    def is_sentinel(self, char: str) -> bool:
        return _SENTINEL_BASE <= ord(char) <= _SENTINEL_LIMIT

    def cut(self, output: str, literals: Mapping[str, str] | None = None) -> Template:
        """``output`` as a template: every sentinel replaced by its slot.

        ``literals`` maps texts to slot names: a builder's own rendering of an input that holds a sentinel (the
        formatted messages, a value in its wrapping) is cut out whole.
        """
        spans: dict[int, tuple[int, str]] = {}
        for text, name in (literals or {}).items():
            if not any(self.is_sentinel(char) for char in text):
                raise RenderError(f"the text given for {name!r} holds no sentinel, so it is not unique")
            start = output.find(text)
            while start >= 0:
                spans[start] = (start + len(text), name)
                start = output.find(text, start + len(text))
        parts: list[Part] = []
        text_run: list[str] = []

        def flush() -> None:
            if text_run:
                parts.append("".join(text_run))
                text_run.clear()

        index = 0
        while index < len(output):
            if index in spans:
                end, name = spans[index]
                flush()
                parts.append(Slot(name))
                index = end
                continue
            char = output[index]
            if not self.is_sentinel(char):
                text_run.append(char)
                index += 1
                continue
            if char not in self._slots:
                raise RenderError(f"a sentinel (U+{ord(char):X}) was found where no input went")
            name, second, transform = self._slots[char]
            flush()
            if second is None:
                parts.append(Slot(name, transform=transform))
                index += 1
                continue
            end = output.find(second, index + 1)
            between = output[index + 1:end]
            if end < 0 or not between or any(self.is_sentinel(c) for c in between):
                raise RenderError(f"the builder split or dropped the input {name!r}")
            parts.append(Slot(name, between, transform))
            index = end + 1
        flush()
        return tuple(parts)


def common_prefix(texts: Sequence[str]) -> int:
    """The length of the prefix all ``texts`` share."""
    shortest = min(len(t) for t in texts)
    for i in range(shortest):
        if any(t[i] != texts[0][i] for t in texts[1:]):
            return i
    return shortest


def common_suffix(texts: Sequence[str], limit: int) -> int:
    """The length of the suffix all ``texts`` share, at most ``limit``."""
    for i in range(limit):
        if any(t[-1 - i] != texts[0][-1 - i] for t in texts[1:]):
            return i
    return limit


@dataclass(frozen=True)
class ListShape:
    """A list found in outputs: the text before and after it, each kind's item, the join."""

    before: str
    items: Mapping[str, str]
    join: str
    after: str


def derive_list(
    singles: Mapping[str, str], pair: tuple[str, str, str] | None, spans: Mapping[str, tuple[int, int]] | None = None
) -> ListShape:
    """The list in outputs that differ only by their items.

    Args:
        singles: key -> output with that one item (at least two entries: for a list of a single kind, two items of
            that kind under two keys).
        pair: ``(key_a, key_b, output)``: the output with item ``a`` then item ``b``, the same items (and
            sentinels) as in ``singles``; ``None`` when the list never holds two items (the join is then "").
        spans: key -> where that single's item-specific text starts and ends: the text around the list stops
            there even when two items begin alike (two formatted messages share their opening).
    """
    outputs = list(singles.values())
    if len(outputs) < 2:
        raise RenderError("a list needs two one-item renderings")
    start = common_prefix(outputs)
    if spans:
        start = min([start, *(first for first, _ in spans.values())])
    end = common_suffix(outputs, min(len(t) for t in outputs) - start)
    if spans:
        end = min([end, *(len(singles[key]) - last for key, (_, last) in spans.items())])
    before, after = outputs[0][:start], outputs[0][len(outputs[0]) - end:]
    items = {key: text[start:len(text) - end] for key, text in singles.items()}
    if pair is None:
        return ListShape(before, items, "", after)
    key_a, key_b, both = pair
    head, tail = before + items[key_a], items[key_b] + after
    if not (both.startswith(head) and both.endswith(tail)) or len(both) < len(head) + len(tail):
        raise RenderError("a list's two-item rendering does not extend its one-item renderings")
    return ListShape(before, items, both[len(head):len(both) - len(tail)], after)


def with_empty(found: ListShape, empty: str) -> ListShape:
    """``found`` rearranged so that it also renders the list with no item as ``empty``.

    Items that all begin (or end) alike leave that common text in ``before`` (or ``after``), which is right for one
    item or more but not for none. Given the no-item rendering, that text goes back into each item and out of the
    join.
    """
    for cut in range(min(len(found.before), len(empty)), -1, -1):
        if not (found.before.startswith(empty[:cut]) and found.after.endswith(empty[cut:])):
            continue
        head = found.before[cut:]
        tail = found.after[:len(found.after) - (len(empty) - cut)]
        join = found.join
        if join and not (join.startswith(tail) and join.endswith(head) and len(join) >= len(head) + len(tail)):
            continue
        items = {key: head + item + tail for key, item in found.items.items()}
        return ListShape(empty[:cut], items, join[len(tail):len(join) - len(head)] if join else "", empty[cut:])
    raise RenderError("a list's no-item rendering does not fit its one-item renderings")
