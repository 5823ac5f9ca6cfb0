"""Plain columns as kubectl's printer writes them for a pipe: aligned, the last column whole, no trailing spaces."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from tests.terminal import Terminal

from kubesched.textcolumns import columns, from_table, is_terminal, plain_lines


def test_columns_are_as_wide_as_their_longest_cell_plus_three_spaces() -> None:
    lines = list(
        columns(("NAME", "STATUS", "REASON"), [("a-long-name", "Scheduled", ""), ("b", "Unschedulable", "why")])
    )
    assert lines == [
        "NAME          STATUS          REASON",
        "a-long-name   Scheduled",
        "b             Unschedulable   why",
    ]


def test_the_last_column_is_never_cut_nor_padded() -> None:
    reason = "0/5000 nodes are available: " + ", ".join(f"{i} reason-{i}" for i in range(200))
    lines = list(columns(("POD", "REASON"), [("a", reason), ("bb", "short")]))
    assert lines == ["POD   REASON", f"a     {reason}", "bb    short"]


def test_a_column_is_at_least_six_wide_as_kubectls() -> None:
    assert list(columns(None, [("a", "1", "x"), ("b", "22", "y")])) == ["a     1     x", "b     22    y"]


def test_right_justified_columns_the_last_one_too() -> None:
    lines = list(columns(("NODE", "COUNT", "INSTANCES"), [("n1", "7", "3"), ("node-2", "12", "110")], right={1, 2}))
    assert lines == [
        "NODE     COUNT   INSTANCES",
        "n1           7           3",
        "node-2      12         110",
    ]


def test_a_cell_of_several_lines_continues_under_itself() -> None:
    lines = list(columns(("NODE", "FAILED", "NOTE"), [("n1", "one\nsecond line", "x"), ("n2", "two", "y\nz")]))
    assert lines == [
        "NODE   FAILED        NOTE",
        "n1     one           x",
        "       second line",
        "n2     two           y",
        "                     z",
    ]


def test_wide_characters_take_two_columns() -> None:
    assert list(columns(None, [("日本", "x"), ("ab", "y")])) == ["日本   x", "ab     y"]


def test_no_rows() -> None:
    assert list(columns(("POD", "NODE"), [])) == ["POD   NODE"]
    assert list(columns(None, [])) == []


def test_a_rich_table_in_plain_columns_without_its_markup() -> None:
    t = Table(title="Title: [bold]x[/]")
    t.add_column("NODE")
    t.add_column("SCORE", justify="right")
    t.add_column("WHY")
    t.add_row("[green]n1[/]", "100", Text("a [literal] bracket"))
    t.add_row("n2", "9", "[dim]second\nline[/]")
    t.caption = "1 more"
    assert list(from_table(t)) == [
        "Title: x",
        "NODE   SCORE   WHY",
        "n1       100   a [literal] bracket",
        "n2         9   second",
        "               line",
        "1 more",
    ]


def test_texts_whole_and_tables_apart() -> None:
    titled = Table(title="Scores")
    titled.add_column("NODE")
    titled.add_row("n1")
    untitled = Table()
    untitled.add_column("NODE")
    untitled.add_row("n2")
    long = "word " * 60
    parts = [Text("header\n" + long), titled, Text("after"), Text("intro:"), untitled]
    assert list(plain_lines(parts)) == ["header", long, "", "Scores", "NODE", "n1", "", "after", "intro:", "NODE", "n2"]


def test_is_terminal() -> None:
    assert is_terminal(Terminal())
    assert not is_terminal(Text())  # no isatty at all


def test_the_ascii_layout_lays_out_what_the_general_one_does() -> None:
    """columns() lays a table of one-line ASCII cells out with format strings (_ascii_lines): the same lines as
    the general path (_lines) on random tables, braces, blanks, trailing spaces and right-justified columns."""
    import random

    from kubesched.textcolumns import _ascii_lines, _lines

    rng = random.Random(7)
    alphabet = "ab {}:/-_ 0123456789"
    for _ in range(300):
        ncols = rng.randint(1, 5)
        rows = [
            tuple("".join(rng.choice(alphabet) for _ in range(rng.choice((0, 1, 3, 9, 20)))) for _ in range(ncols))
            for _ in range(rng.randint(1, 6))
        ]
        right = {i for i in range(ncols) if rng.random() < 0.3}
        assert list(_ascii_lines(rows, right)) == list(_lines(rows, right)), (rows, right)
        assert list(columns(None, rows, right=right)) == list(_lines(rows, right))


def test_tables_the_ascii_layout_cannot_lay_out_take_the_general_path() -> None:
    wide = [("名前", "x"), ("b", "y")]
    assert list(columns(None, wide)) == ["名前   x", "b      y"]
    ragged = [("a", "b", "c"), ("dd", "e")]
    assert list(columns(None, ragged)) == ["a     b     c", "dd    e"]
    assert list(columns(None, [(), ()])) == ["", ""]
