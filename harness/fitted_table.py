"""What fits the screen: tables that never cut a status or a number (80 columns included), piped lines never
padded to a width, progress lines whose count is never cut.

A column is a figure (a status or a number: never wrapped, never cut, as wide as its widest cell) or text (wraps at
words, folds a long name). When the table would not fit, the columns marked `below` leave it, lowest rank first,
and come back as one line per row under the table; text keeps at least `room` columns while it stays in.
"""
from __future__ import annotations

import dataclasses
import io
import os
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Column, Table
from rich.text import Text

TEXT_ROOM = 24  # the narrowest a text column may get before it is better read below the table
PIPED_WIDTH = 200  # piped, rich assumes 80 columns and cuts table cells; a wide page keeps every column whole
COUNT_ROOM = 7  # "999/999": a progress line's count, never cut
TIME_ROOM = 7  # "0:00:00"
BAR_ROOM = 10  # the bar itself; left out below 60 columns


class TrimmedLines(io.TextIOBase):
    """A stream that drops the spaces rich pads each line with up to the console's width (pipes, logs)."""

    def __init__(self, stream):
        self.stream, self.pending = stream, ""

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            self.stream.write(line.rstrip(" ") + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.write(self.pending)
        self.pending = ""
        self.stream.flush()


def console(stderr: bool = False, **options) -> Console:
    """A rich console (NO_COLOR honoured by rich; `options` are rich's). Piped, no line is padded to the width:
    $COLUMNS wide when set, else wide enough that no column is cut."""
    probe = Console(stderr=stderr, **options)
    if probe.is_terminal:
        return probe
    width = probe.width if os.environ.get("COLUMNS") else PIPED_WIDTH
    return Console(file=TrimmedLines(sys.stderr if stderr else sys.stdout), width=width, **options)


def progress_columns(width: int) -> list:
    """Spinner, text, bar, count, time: the text gets what is left of `width`, so the count is never cut."""
    bar = BAR_ROOM if width >= 60 else 0
    room = max(width - 1 - bar - COUNT_ROOM - TIME_ROOM - 5, 4)  # 1: the spinner; 5: the gaps and a spare
    text = Column(max_width=room, no_wrap=True, overflow="ellipsis")
    count = Column(width=COUNT_ROOM, justify="right", no_wrap=True)
    return ([SpinnerColumn(), TextColumn("{task.description}", table_column=text)]
            + ([BarColumn(bar_width=bar)] if bar else [])
            + [MofNCompleteColumn(table_column=count), TimeElapsedColumn()])


class Steps:
    """One job's steps: a bar on a terminal, one plain line per step when piped. `describe` shortens a label;
    `is_case` names the steps whose line comes when they end (display.Steps)."""

    def __init__(self, console, name: str, bar: bool = True):
        self.console, self.name = console, name
        self.live = console.is_terminal and bar
        self.progress = Progress(*progress_columns(console.width), console=console, transient=True,
                                 disable=not self.live)
        self.task = self.progress.add_task(name, total=None)

    def __enter__(self):
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def describe(self, label: str) -> str:
        return label

    def is_case(self, label: str) -> bool:
        return False

    def step(self, completed: int | None, total: int | None, label: str) -> None:
        """A progress callback; None keeps the count (the worker starting within a step)."""
        text = f"{self.name}: {self.describe(label)}"
        if self.live:
            self.progress.update(self.task, completed=completed, total=total, description=text)
        elif not self.is_case(label) and not label.endswith("done"):
            self.say(text + (f" ({completed}/{total} done)" if total else ""))

    def say(self, line: str) -> None:
        """One plain line, only when piped (on a terminal the bar says it)."""
        if not self.console.is_terminal:
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)


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


def print_fitted(console, table: Table, below: list[str], indent: str = "") -> None:
    """A fitted table, then the lines of the columns that moved below it."""
    console.print(table)
    for line in below:
        console.print(indent + line, highlight=False)
