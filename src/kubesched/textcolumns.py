"""Plain aligned columns, as kubectl prints tables when its output is not a terminal.

A rich table drawn for a pipe, a file or a CI log is cut to 80 columns, its
last columns squeezed to nothing. kubectl's printer instead writes each row on
one line, columns aligned by its tabwriter (cells padded by 3 spaces, at least
6 wide) and the last cell neither padded nor cut: lines are as long as they need
to be, `grep` and `awk` see whole rows and a terminal wraps what it shows.
`simulate`, `explain` and `capacity` print their tables this way when `out` is
not a terminal.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import chain
from typing import Any, TextIO

from rich.cells import cell_len

PADDING = 3  # kubectl's tabwriter padding: the spaces between columns
MIN_WIDTH = 6  # kubectl's tabwriter minwidth: a column with its padding is at least this wide


def is_terminal(out: TextIO | Any) -> bool:
    """Whether `out` is a terminal: people get rich tables there, everything else plain columns."""
    isatty = getattr(out, "isatty", None)
    return bool(isatty is not None and isatty())


def width(text: str) -> int:
    """The columns `text` takes on a terminal (wide characters count twice)."""
    return len(text) if text.isascii() else cell_len(text)


def columns(
    header: Sequence[str] | None, rows: Sequence[Sequence[str]], *, right: Collection[int] = ()
) -> Iterator[str]:
    """The lines of `rows` (under `header` if any) in aligned columns; `right`: the columns right-justified.

    Each column is as wide as its longest cell; the last is not padded, so never cut. A cell with
    newlines continues on the next lines, the other columns blank there. No line ends in spaces.
    """
    table = [header, *rows] if header is not None else rows
    if not table:
        return
    if table[0] and len(set(map(len, table))) == 1:
        text = "".join(chain.from_iterable(table))
        if text.isascii() and "\n" not in text:
            yield from _ascii_lines(table, right)
            return
    yield from _lines(table, right)


def _ascii_lines(table: Sequence[Sequence[str]], right: Collection[int]) -> Iterator[str]:
    """columns() of a table whose rows are as long and whose cells are ASCII on one line (a simulation's
    150,000 pods): widths measured with len, each line laid out by one format string (_lines' layout)."""
    cells = list(zip(*table, strict=True))
    last = len(cells) - 1
    measured = last + 1 if last in right else last
    specs = []
    for i in range(measured):
        w = max(max(map(len, cells[i])) + PADDING, MIN_WIDTH)
        specs.append(f"{{:>{w - PADDING}}}{' ' * PADDING}" if i in right else f"{{:<{w}}}")
    if measured == last:
        specs.append("{}")
    layout = "".join(specs).format
    for row in table:
        yield layout(*row).rstrip()


def _lines(table: Sequence[Sequence[str]], right: Collection[int]) -> Iterator[str]:
    """columns() of any table: wide characters measured as a terminal shows them, cells of several lines."""
    last = max(len(r) for r in table) - 1
    # The last column is measured only to right-justify it: left-justified, it is written as it is.
    measured = last + 1 if last in right else last
    widths = [0] * measured
    for row in table:
        for i, cell in enumerate(row[:measured]):
            w = max(map(width, cell.split("\n"))) if "\n" in cell else width(cell)
            if w > widths[i]:
                widths[i] = w
    widths = [max(w + PADDING, MIN_WIDTH) for w in widths]
    for row in table:
        if any("\n" in cell for cell in row):
            yield from _continued(row, widths, right)
        else:
            yield _line(row, widths, right)


def _line(row: Sequence[str], widths: Sequence[int], right: Collection[int]) -> str:
    """One line: each cell padded to its column's width (the last, not measured unless right-justified, not)."""
    parts = []
    for i, cell in enumerate(row):
        fill = widths[i] - width(cell) if i < len(widths) else 0
        parts.append(" " * (fill - PADDING) + cell + " " * PADDING if i in right else cell + " " * fill)
    return "".join(parts).rstrip()


def _continued(row: Sequence[str], widths: Sequence[int], right: Collection[int]) -> Iterator[str]:
    """A row whose cells hold several lines: a line per line of its tallest cell."""
    split = [cell.split("\n") for cell in row]
    for n in range(max(len(lines) for lines in split)):
        yield _line([lines[n] if n < len(lines) else "" for lines in split], widths, right)


def plain(text: Any) -> str:
    """What a rich cell, title or caption shows, without its markup or styles."""
    from rich.text import Text

    if isinstance(text, Text):
        return text.plain
    return Text.from_markup(text).plain if isinstance(text, str) else str(text)


def from_table(table: Any) -> Iterator[str]:
    """A rich Table's title, header, rows and caption in plain columns: one source for both outputs."""
    cols = table.columns
    rows = list(zip(*([plain(cell) for cell in col.cells] for col in cols), strict=True))
    if table.title:
        yield plain(table.title)
    header = [plain(col.header) for col in cols] if table.show_header else None
    yield from columns(header, rows, right={i for i, col in enumerate(cols) if col.justify == "right"})
    if table.caption:
        yield plain(table.caption)


def plain_lines(parts: Iterable[Any]) -> Iterator[str]:
    """rich Texts and Tables as plain lines: each text whole (no wrapping), each table in columns and set
    apart by an empty line (before a table with a title, after any table followed by more)."""
    from rich.table import Table

    after_table = False
    for i, part in enumerate(parts):
        is_table = isinstance(part, Table)
        if i and (after_table or (is_table and part.title)):
            yield ""
        yield from from_table(part) if is_table else plain(part).split("\n")
        after_table = is_table
