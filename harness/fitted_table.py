"""Tables that fit the screen without cutting a status or a number (80 columns included).

A column is a figure (a status or a number: never wrapped, never cut, as wide as its widest cell) or text (wraps at
words, folds a long name). When the table would not fit, the columns marked `below` leave it, lowest rank first,
and come back as one line per row under the table; text keeps at least `room` columns while it stays in.
"""
from __future__ import annotations

import dataclasses

from rich.table import Table
from rich.text import Text

TEXT_ROOM = 24  # the narrowest a text column may get before it is better read below the table


@dataclasses.dataclass(frozen=True)
class FitColumn:
    header: str  # may hold "\n" where it may break (figure headers do not wrap otherwise)
    figure: bool = False
    justify: str = "left"
    below: int | None = None  # leaves the table when it would not fit; lower ranks leave first
    room: int = TEXT_ROOM


def _width(markup: str) -> int:
    return max((Text.from_markup(line).cell_len for line in markup.split("\n")), default=0)


def _needs(column: FitColumn, cells: list[str]) -> int:
    """The columns it takes at the least: a figure its widest cell, text its room (or less, when all is shorter)."""
    widest = max([_width(cell) for cell in cells] + [0])
    if column.figure:  # its header breaks only where it holds "\n"
        return max(widest, _width(column.header))
    return max(min(widest, column.room), max(len(word) for word in column.header.split()))


def fit(width: int, columns: list[FitColumn], rows: list[list[str]], key: int = 0,
        **table_options) -> tuple[Table, list[str]]:
    """(the table, the lines that go below it): the `below` columns that do not fit, as 'KEY. header: value'."""
    kept = list(range(len(columns)))
    leaving = sorted((c.below, i) for i, c in enumerate(columns) if c.below is not None)

    def total(indexes):  # cell widths, one space either side, one border between and around
        return sum(_needs(columns[i], [row[i] for row in rows]) for i in indexes) + 3 * len(indexes) + 1

    while leaving and total(kept) > width:
        kept.remove(leaving.pop(0)[1])
    table = Table(**table_options)
    for i in kept:
        column = columns[i]
        table.add_column(column.header, justify=column.justify, no_wrap=column.figure,
                         overflow="ellipsis" if column.figure else "fold",
                         min_width=_needs(column, [row[i] for row in rows]) if column.figure else None)
    for row in rows:
        table.add_row(*(row[i] for i in kept))
    moved = [i for i in range(len(columns)) if i not in kept]
    lines = []
    for row in rows:
        said = [f"{' '.join(columns[i].header.split())}: {row[i]}" for i in moved if Text.from_markup(row[i]).plain]
        if said:
            lines.append(f"{row[key]}. " + "; ".join(said))
    return table, lines
