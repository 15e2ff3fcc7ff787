"""Rich tables that fit the console's width without breaking a word.

Why: given a table wider than the console, rich narrows its widest columns whatever they hold, then folds a word
that no longer fits mid-word. Output that is not a terminal (``om-eval report | cat``, a CI log) is 80 columns wide,
rich's default, so a report's headers and cells came out cut (``Multi-sess`` / ``ion``) and the wide table lost
every column but two. Here, before rich sees the table:

1. each column gets a *floor*, its longest word (header or cell), and a *ceiling*, its longest line;
2. the *key* columns (the row names of the compact table; rank and variant of the wide one) are repeated in every
   table; the other columns are taken in order while their floors fit beside the keys, and the rest is folded into
   further tables below, titled ``(continued)``: every cell keeps its row label and no row needs a split word;
3. within one table each column starts at its ceiling; while the table is too wide, the widest column that can
   still shrink gives up one cell, never going below its floor. The widths are fixed on the columns, so rich's own
   collapsing cannot undo them, and a cell wraps only at spaces.

The layout is chosen when the table is rendered, from the console's width (a terminal's, 80 when piped, or
``COLUMNS``), so one renderable fits any console; a wide console gets one table, as before. The one case still
left to rich's folding is a single word wider than the console itself: there is no other way to show it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len

__all__ = ["Column", "FittedTable", "fold", "shrink", "table_width"]

#: Cells of padding per column (rich's default ``(0, 1)``) and of each vertical border (with the outer edges).
_PADDING = 2
_BORDER = 1


def _floor(text: str) -> int:
    return max((cell_len(word) for word in text.split()), default=0)


def _ceiling(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


@dataclass(frozen=True)
class Column:
    """One column as text: its header, a cell per row, and how it is aligned and styled."""

    header: str
    cells: tuple[str, ...]
    right: bool = False
    header_style: str = ""
    """Rich style of the header (empty: the table's)."""

    @property
    def floor(self) -> int:
        """The longest word of the header or a cell: the narrowest the column gets without splitting a word."""
        return max(_floor(text) for text in (self.header, *self.cells)) or 1

    @property
    def ceiling(self) -> int:
        """The longest line: the width at which nothing wraps."""
        return max(_ceiling(text) for text in (self.header, *self.cells)) or 1


def table_width(widths: Sequence[int]) -> int:
    """The printed width of a boxed rich table whose columns have these content widths."""
    return sum(width + _PADDING + _BORDER for width in widths) + _BORDER


def fold(key_floors: Sequence[int], floors: Sequence[int], width: int) -> list[list[int]]:
    """The other columns (their floors, in order) split into groups that fit ``width`` beside the key columns.

    Every group holds at least one column, even one too wide on its own; no column is left out or reordered.

    >>> fold([5], [10, 10, 10], 40)
    [[0, 1], [2]]
    """
    base = table_width(key_floors)
    groups: list[list[int]] = []
    current: list[int] = []
    used = base
    for index, floor in enumerate(floors):
        cost = floor + _PADDING + _BORDER
        if current and used + cost > width:
            groups.append(current)
            current, used = [], base
        current.append(index)
        used += cost
    if current:
        groups.append(current)
    return groups


def shrink(floors: Sequence[int], ceilings: Sequence[int], width: int) -> list[int]:
    """Content widths for columns that fit ``width``: from their ceilings, the widest shrinks first, none below its
    floor (when the floors alone are too wide, the floors)."""
    widths = [max(f, c) for f, c in zip(floors, ceilings)]
    excess = table_width(widths) - width
    while excess > 0:
        shrinkable = [i for i, w in enumerate(widths) if w > floors[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: (widths[i], -i))
        widths[widest] -= 1
        excess -= 1
    return widths


@dataclass(frozen=True)
class FittedTable:
    """A rich renderable: the table, folded and sized to the console's width when printed (see the module doc)."""

    title: str | None
    keys: tuple[Column, ...]
    """Columns repeated in every folded part (row names, or rank and variant)."""
    data: tuple[Column, ...]
    row_styles: tuple[str | None, ...] = ()
    ends: tuple[bool, ...] = ()
    """Per row: a rule is drawn below it."""
    show_lines: bool = False

    @property
    def n_rows(self) -> int:
        return len((*self.keys, *self.data)[0].cells) if self.keys or self.data else 0

    def tables(self, width: int) -> list[Any]:
        """The rich tables printed at ``width``: one when everything fits, else one per fold."""
        from rich.table import Table
        from rich.text import Text

        groups = fold([c.floor for c in self.keys], [c.floor for c in self.data], width) or [[]]
        out = []
        for part, group in enumerate(groups):
            columns = [*self.keys, *(self.data[i] for i in group)]
            widths = shrink([c.floor for c in columns], [c.ceiling for c in columns], width)
            title = self.title if part == 0 or self.title is None else f"{self.title} (continued)"
            grid = Table(title=title, title_style="bold", show_lines=self.show_lines)
            for column, content in zip(columns, widths):
                grid.add_column(Text(column.header), justify="right" if column.right else "left", width=content,
                                header_style=column.header_style, overflow="fold")
            for row in range(self.n_rows):
                grid.add_row(*(Text(column.cells[row]) for column in columns),
                             style=self.row_styles[row] if row < len(self.row_styles) else None,
                             end_section=row < len(self.ends) and self.ends[row])
            out.append(grid)
        return out

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        yield from self.tables(options.max_width)

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        columns = (*self.keys, *self.data)
        narrowest = table_width([c.floor for c in (*self.keys, *self.data[:1])])
        return Measurement(narrowest, table_width([c.ceiling for c in columns])).with_maximum(options.max_width)
