"""The one ATX heading reader and the one table-row reader and writer (gsd.formats.lines)."""

from __future__ import annotations

import pytest

from gsd.formats.lines import (
    Heading,
    Lines,
    TableRow,
    heading_of,
    is_table_row,
    row_cells,
    split_row,
    table_row,
)

pytestmark = pytest.mark.unit  # `make test-fast` runs these

# CommonMark 0.31.2 section 4.2, examples 62-79 as far as a line reader can read them.
HEADINGS = [
    pytest.param("# foo", Heading(level=1, title="foo"), id="level-1"),
    pytest.param("###### foo", Heading(level=6, title="foo"), id="level-6"),
    pytest.param("####### foo", None, id="seven-is-text"),
    pytest.param("#5 bolt", None, id="no-space-after-the-run"),
    pytest.param("#hashtag", None, id="hashtag"),
    pytest.param("\\## foo", None, id="escaped"),
    pytest.param("#\tfoo", Heading(level=1, title="foo"), id="tab-after-the-run"),
    pytest.param("#                  foo                     ", Heading(1, "foo"), id="trimmed"),
    pytest.param("   ### foo", Heading(level=3, title="foo"), id="three-spaces-of-indent"),
    pytest.param("    # foo", None, id="four-spaces-are-code"),
    pytest.param("\t# foo", None, id="a-tab-is-four-columns"),
    pytest.param("## foo ##", Heading(level=2, title="foo"), id="closing-run"),
    pytest.param("# foo ##################################", Heading(1, "foo"), id="long-closing"),
    pytest.param("##### foo ##   ", Heading(level=5, title="foo"), id="spaces-after-closing"),
    pytest.param("### foo ### b", Heading(level=3, title="foo ### b"), id="run-then-text"),
    pytest.param("# foo#", Heading(level=1, title="foo#"), id="run-without-space"),
    pytest.param("### foo \\###", Heading(level=3, title="foo \\###"), id="escaped-closing"),
    pytest.param("## ", Heading(level=2, title=""), id="empty"),
    pytest.param("#", Heading(level=1, title=""), id="bare-run"),
    pytest.param("### ###", Heading(level=3, title=""), id="only-a-closing-run"),
    pytest.param("Foo bar # baz", None, id="not-at-the-start"),
]


@pytest.mark.parametrize(("line", "heading"), HEADINGS)
def test_heading_of(line: str, heading: Heading | None) -> None:
    assert heading_of(line) == heading


def test_lines_headings_use_the_heading_reader() -> None:
    text = "# Title #\n```\n## not one\n```\n  ## Indented\n    ## code\n##\n"
    assert list(Lines(text).headings()) == [(0, 1, "Title"), (4, 2, "Indented"), (6, 2, "")]


# GFM tables (github.github.com/gfm/#tables-extension-): `\|` is a pipe inside a cell; the
# outer pipes are optional; every byte is kept for surgical edits.
ROWS = [
    pytest.param("| a | b |", TableRow("|", [" a ", " b "], "|"), ["a", "b"], id="plain"),
    pytest.param(
        "  | a |  b  |  ", TableRow("  |", [" a ", "  b  "], "|  "), ["a", "b"], id="spaces-kept"
    ),
    pytest.param(
        "| a \\| b | c |",
        TableRow("|", [" a \\| b ", " c "], "|"),
        ["a | b", "c"],
        id="escaped-pipe-is-one-cell",
    ),
    pytest.param(
        "| `a \\| b` |", TableRow("|", [" `a \\| b` "], "|"), ["`a | b`"], id="in-code-too"
    ),
    pytest.param("| a | b", TableRow("|", [" a ", " b"], ""), ["a", "b"], id="no-closing"),
    pytest.param("a | b", TableRow("", ["a ", " b"], ""), ["a", "b"], id="no-outer-pipes"),
    pytest.param("| a \\|", TableRow("|", [" a \\|"], ""), ["a |"], id="escaped-last-pipe"),
    pytest.param("| |", TableRow("|", [" "], "|"), [""], id="one-empty-cell"),
]


@pytest.mark.parametrize(("body", "row", "values"), ROWS)
def test_split_row(body: str, row: TableRow, values: list[str]) -> None:
    assert split_row(body) == row
    assert split_row(body).text() == body
    assert row_cells(body) == values


@pytest.mark.parametrize(
    ("values", "body"),
    [
        pytest.param(["a", "b"], "| a | b |", id="plain"),
        pytest.param(["a | b", "-"], "| a \\| b | - |", id="pipe-escaped"),
        pytest.param(["C:\\", "x"], "| C:\\ | x |", id="backslash-kept"),
        pytest.param(["a \\| b"], "| a \\\\| b |", id="escaped-pipe-escaped-again"),
    ],
)
def test_table_row_writes_what_row_cells_reads(values: list[str], body: str) -> None:
    assert table_row(values) == body
    assert row_cells(body) == values


@pytest.mark.parametrize(
    ("body", "row"),
    [
        pytest.param("| a |", True, id="row"),
        pytest.param("   | a |", True, id="indented"),
        pytest.param("a | b", False, id="no-opening-pipe"),
        pytest.param("text", False, id="text"),
    ],
)
def test_is_table_row(body: str, row: bool) -> None:
    assert is_table_row(body) is row
