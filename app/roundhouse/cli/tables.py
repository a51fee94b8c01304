"""Tables whose names are never cut: an id a user must type is shown whole at any width.

The columns that hold names (`Column.whole`) are as wide as their longest value and never
wrap; the others wrap, and when even that leaves no room, the least needed are left out
(`Column.drop`: higher goes first), so an 80-column terminal shows fewer columns, all
readable, instead of every column cut to a few letters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

# Below this a wrapping column reads as a column of letters: it is left out instead.
MIN_WRAPPED = 8
# Each column's share of borders and padding in Rich's default box.
EDGE = 3


@dataclass
class Column:
    header: str
    cells: list[RenderableType] = field(default_factory=list)
    whole: bool = False
    # 0: always shown; otherwise the higher, the sooner it is left out when space is short.
    drop: int = 0


def _length(cell: RenderableType) -> int:
    if isinstance(cell, Text):
        return cell.cell_len
    if isinstance(cell, str):
        return len(Text.from_markup(cell).plain)
    return MIN_WRAPPED


def _need(column: Column) -> int:
    longest = max([len(column.header), *(_length(c) for c in column.cells)])
    return (longest if column.whole else min(longest, MIN_WRAPPED)) + EDGE


def fitted(title: str, columns: Sequence[Column], width: int | None) -> Table:
    """A table of `columns` that fits `width` (None: any width)."""
    shown = list(columns)
    if width is not None:
        while sum(_need(c) for c in shown) + 1 > width and any(c.drop for c in shown):
            shown.remove(max((c for c in shown if c.drop), key=lambda c: c.drop))
    table = Table(title=title, title_justify="left")
    for column in shown:
        if column.whole:
            table.add_column(
                column.header, no_wrap=True, min_width=_need(column) - EDGE, overflow="ignore"
            )
        else:
            table.add_column(column.header, overflow="fold")
    rows = len(columns[0].cells) if columns else 0
    for row in range(rows):
        table.add_row(*(c.cells[row] for c in shown))
    return table


def console_width() -> int:
    """The terminal's width as the CLI prints to it (COLUMNS when set)."""
    from roundhouse.cli.output import console

    return console.width
