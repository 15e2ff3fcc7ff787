"""Finding the lists in a builder's outputs (prior thread metadata, threads, messages) and making them slots.

A list is rendered with one item of each kind, with two items, and (where it can be empty in the same shape) with
none; :func:`~om_eval.om.exact.template.derive_list` then tells the text around it, each item and the join. A list
of threads that each hold a list (their metadata lines, their messages) is found in two steps: the inner list in one
thread, then the threads, each thread's item being what lies between the two.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from om_eval.om.exact.errors import RenderError
from om_eval.om.exact.template import ListSlot, Sentinels, Template, Values, derive_list, with_empty


@dataclass(frozen=True)
class RenderedItem:
    """One list item as rendered: its key and kind, what the builder is given, what the template is filled with."""

    key: str
    kind: str
    given: Any
    values: Values
    literals: Mapping[str, str]
    marks: tuple[str, ...]
    """Texts only this item puts in the output (its sentinels, its formatted messages)."""

    def span(self, output: str) -> tuple[int, int]:
        """Where this item's marks are in ``output``: from the first one's start to the last one's end."""
        found = [(output.find(mark), output.find(mark) + len(mark)) for mark in self.marks if mark in output]
        if not found:
            raise RenderError("an item left no trace in the output")
        return min(start for start, _ in found), max(end for _, end in found)


class ListFinder:
    """Derives list slots from renderings, cutting items with the renderer's :class:`Sentinels`."""

    def __init__(self, sentinels: Sentinels, what: str) -> None:
        self.s = sentinels
        self.what = what

    def list_slot(
        self,
        name: str,
        make: Callable[[str, str], RenderedItem],
        kinds: Sequence[str],
        render: Callable[[Sequence[RenderedItem]], str],
        empty: str | None,
        *,
        repeats: bool = False,
        none: str | None = None,
    ) -> tuple[ListSlot, str, str, Mapping[str, str]] | None:
        """A list's slot, the text around it (uncut) and the literals of its items; ``None`` if no kind shows.

        ``make(kind, key)`` makes an item; ``render(items)`` renders with those items; ``empty`` is the output with
        no item, to tell which kinds this shape shows (``None``: all show). ``repeats``: the list holds items of
        one kind (threads, messages), so two of them give the join. ``none``: the output with no item when a
        list can be empty within the same shape (a history without messages).
        """
        firsts = {kind: make(kind, kind) for kind in kinds}
        singles = {kind: render([item]) for kind, item in firsts.items()}
        shown = [kind for kind in kinds if empty is None or singles[kind] != empty]
        if not shown:
            return None
        everything = render([firsts[k] for k in shown])
        order = sorted(shown, key=lambda k: firsts[k].span(everything)[0])
        used = {kind: firsts[kind] for kind in order}
        pair: tuple[str, str, str] | None = None
        if len(order) >= 2:
            pair = (order[0], order[1], render([firsts[order[0]], firsts[order[1]]]))
        else:  # a second item of the one kind shown: two renderings to tell the item from its surroundings
            second = make(order[0], order[0] + "#2")
            used[second.key] = second
            if repeats:  # threads, messages: the two in one rendering give the join
                pair = (order[0], second.key, render([firsts[order[0]], second]))
        outputs = {key: singles[key] if key in singles else render([item]) for key, item in used.items()}
        found = derive_list(outputs, pair, {key: used[key].span(output) for key, output in outputs.items()})
        if none is not None:
            found = with_empty(found, none)
        literals: dict[str, str] = {}
        for item in used.values():
            literals.update(item.literals)
        items = {kind: self.s.cut(found.items[kind], literals) for kind in order}
        slot = ListSlot(name, found.join, items, tuple(order))
        return slot, found.before, found.after, literals

    def section(self, before: str, slot: ListSlot, after: str, literals: Mapping[str, str]) -> Template:
        return self.s.cut(before, literals) + (slot,) + self.s.cut(after, literals)

    def nested(
        self,
        outer: str,
        inner: str,
        kinds: Sequence[str],
        make: Callable[[str, str], RenderedItem],
        render: Callable[[Sequence[tuple[str, Sequence[RenderedItem]]]], str],
        empty: str | None,
        *,
        repeats: bool = False,
        none: str | None = None,
    ) -> tuple[Template, dict[str, Any], str] | None:
        """A list of threads, each holding a list of items: the section template, the values of a two-thread
        rendering and that rendering (to check the template with)."""
        inner_id = self.s.line("thread_id")
        found_inner = self.list_slot(inner, make, kinds, lambda items: render([(inner_id, items)]), empty,
                                     repeats=repeats)
        if found_inner is None:
            return None
        inner_slot, inner_before, inner_after, literals = found_inner
        first_kind = inner_slot.order[0]

        def make_thread(kind: str, key: str) -> RenderedItem:
            thread_id = self.s.line("thread_id")
            item = make(first_kind, key)
            return RenderedItem(key, kind, (thread_id, [item]), {"thread_id": thread_id}, item.literals,
                         (thread_id, *item.marks))

        found_outer = self.list_slot(outer, make_thread, ["thread"],
                                     lambda items: render([item.given for item in items]), None, repeats=True,
                                     none=none)
        assert found_outer is not None
        outer_slot, before, after, outer_literals = found_outer
        literals = {**literals, **outer_literals}
        if not (inner_before.startswith(before) and inner_after.endswith(after)):
            raise RenderError(f"{self.what}: a thread's {inner} do not sit inside its {outer} item")
        thread_before = inner_before[len(before):]
        thread_after = inner_after[:len(inner_after) - len(after)]
        if thread_before.count(inner_id) != 1:
            raise RenderError(f"{self.what}: a thread's item does not show its id once")
        thread_template = self.s.cut(thread_before, literals) + (inner_slot,) + self.s.cut(thread_after, literals)
        slot = ListSlot(outer, outer_slot.join, {"thread": thread_template}, ("thread",))
        template = self.section(before, slot, after, literals)
        # Check with two threads, each with every kind (twice the first kind when it is the only one).
        threads = []
        for _ in range(2):
            thread_id = self.s.line("thread_id")
            order = list(inner_slot.order)
            if repeats:
                order *= 2
            items = [make(kind, f"{kind}@{n}") for n, kind in enumerate(order)]
            threads.append((thread_id, items))
        values = {outer: [("thread", {"thread_id": t, inner: [(i.kind, i.values) for i in items]})
                          for t, items in threads]}
        return template, values, render(threads)
