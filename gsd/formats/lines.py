"""Markdown's line rules (fences, headings, tables, `<!-- gsd: ignore -->` comments) and
text as lines for exact edits.

This module is the one reader of fenced code for every file gsd reads: plans
(`gsd.formats.planning.plan`, and through it `gsd.commands.diff` and `gsd.formats.prompt`),
agent output (`gsd.formats.taskreport`), STATE.md, ROADMAP.md and the roster; and the
one reader of ATX headings (`heading_of`) and of table rows (`split_row`, `row_cells`,
with `table_row` their writer) for STATE.md and ROADMAP.md. Those two are edited through
`Lines`: each line keeps its own `\r`, so CRLF stays CRLF and a missing final newline
stays missing.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from functools import cache
from typing import NamedTuple

from gsd.core.models import Suppression


# An ATX heading's opening run, CommonMark 0.31.2 section 4.2
# (spec.commonmark.org/0.31.2/#atx-headings): up to three spaces of indent (four make an
# indented code block, and a tab reaches column four), one to six `#`, then a space, a
# tab or the end of the line (`#5` is text).
@cache
def _atx_opening_re() -> re.Pattern[str]:
    return re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")


# A pipe that separates table cells: GFM tables (github.github.com/gfm/#tables-extension-)
# read `\|` as a pipe inside a cell, so a pipe after a backslash separates nothing.
@cache
def _cell_pipe_re() -> re.Pattern[str]:
    return re.compile(r"(?<!\\)\|")


# A code fence, CommonMark 0.31.2 section 4.5 (spec.commonmark.org/0.31.2/#fenced-code-blocks):
# a run of at least three backticks or three tildes, then the info string. CommonMark
# allows up to three spaces of indent counted from the content column of the list item or
# quote holding the fence; a line reader knows no containers, so any indent counts: real
# plans fence code seven spaces deep in numbered lists, and an indented code block that
# shows a fence line is rarer.
FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
# A table's header separator: `|---|:--:|`, `--- | ---`.
SEPARATOR_RE = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*(?::?-+:?[ \t]*)?$")


def one_line(value: str) -> str:
    """A value as one line: a newline inside it would hand an edit a line it does not own."""
    return re.sub(r"[ \t]*[\r\n]+[ \t]*", " ", value).strip()


class Fence(NamedTuple):
    """A fence line: its character, how long its run is, its info string (trimmed)."""

    char: str
    length: int
    info: str

    def closed_by(self, other: Fence) -> bool:
        """CommonMark: a run of the same character at least as long, and nothing after it."""
        return other.char == self.char and other.length >= self.length and not other.info


def fence_of(line: str) -> Fence | None:
    """The fence `line` is, or None. A backtick fence's info string holds no backtick
    (```` ```a``` ```` is inline code, not a fence)."""
    match = FENCE_RE.match(line)
    if match is None:
        return None
    run, info = match.group(1), match.group(2).strip()
    if run[0] == "`" and "`" in info:
        return None
    return Fence(run[0], len(run), info)


def fenced_blocks(
    fences: Iterable[tuple[int, int, Fence]],
    end: int,
    *,
    nested: bool = False,
    unclosed: bool = True,
) -> list[tuple[int, int]]:
    """(first, last) of each fenced block, from the document's fence lines in order, each
    given as (first, last, fence) in the caller's unit (offsets or line numbers).

    CommonMark: a block runs from its opening fence to the first fence line of the same
    character, at least as long, with no info string; other fence lines are its text; a
    block never closed runs to `end` (with `unclosed=False` it fences nothing). `nested`
    is SPEC section 2's reading of plans as their authors mean them: inside a block a
    fence line with an info string opens a block within it (a ```` ```markdown ````
    example holding a ```` ```bash ```` one), closed first.
    """
    blocks: list[tuple[int, int]] = []
    open_fences: list[Fence] = []
    opened = 0
    for first, last, fence in fences:
        if not open_fences:
            open_fences.append(fence)
            opened = first
        elif open_fences[-1].closed_by(fence):
            open_fences.pop()
            if not open_fences:
                blocks.append((opened, last))
        elif nested and fence.info:
            open_fences.append(fence)
    if open_fences and unclosed:
        blocks.append((opened, end))
    return blocks


def text_fences(text: str, start: int = 0) -> Iterator[tuple[int, int, Fence]]:
    """(line start, line end, fence) of each fence line of `text` from offset `start`
    (str.find for the runs: a regex over every line is 10x slower on a large plan)."""
    runs: list[int] = []
    for marker in ("```", "~~~"):
        pos = text.find(marker, start)
        while pos >= 0:
            runs.append(pos)
            end = pos + 3
            while end < len(text) and text[end] == marker[0]:
                end += 1
            pos = text.find(marker, end)
    runs.sort()
    last_line = -1
    for pos in runs:
        line_start = text.rfind("\n", 0, pos) + 1
        if line_start == last_line or text[line_start:pos].strip(" \t"):
            continue  # one fence a line, and only at its start
        last_line = line_start
        eol = text.find("\n", pos)
        eol = len(text) if eol < 0 else eol
        fence = fence_of(text[line_start:eol])
        if fence is not None:
            yield line_start, eol, fence


def fenced_ranges(text: str, start: int = 0, *, nested: bool = False) -> list[tuple[int, int]]:
    """(start, end) offsets of the fenced blocks of `text` from `start`, fence lines
    included, an unclosed block to the end of the text (see `fenced_blocks`)."""
    return fenced_blocks(text_fences(text, start), len(text), nested=nested)


class Heading(NamedTuple):
    """An ATX heading: its level (the number of `#`) and its title, trimmed, without the
    closing run of `#`."""

    level: int
    title: str


def heading_of(line: str) -> Heading | None:
    """The ATX heading `line` is, or None (CommonMark 0.31.2 section 4.2).

    A closing run of `#` goes when a space or a tab comes before it (`# foo#` is titled
    `foo#`, `### foo \\###` keeps its escaped run); `#` alone is an empty heading. A line
    reader knows no containers: a heading inside a list item or a quote is not one.
    """
    opening = _atx_opening_re().match(line)
    if opening is None:
        return None
    title = line[opening.end() :].strip(" \t")
    unclosed = title.rstrip("#")
    if not unclosed:
        title = ""
    elif unclosed[-1] in " \t":
        title = unclosed.rstrip(" \t")
    return Heading(level=len(opening.group(1)), title=title)


class TableRow(NamedTuple):
    """A table row split at its cell pipes, every byte kept: `opening` is its indent and
    opening pipe (just the indent when it has none), `cells` the raw text between the
    pipes (spaces and `\\|` escapes as written), `closing` the closing pipe and what
    follows it ("" when it has none)."""

    opening: str
    cells: list[str]
    closing: str

    def text(self) -> str:
        """The row as a line again."""
        return self.opening + "|".join(self.cells) + self.closing


def split_row(body: str) -> TableRow:
    """`  | a | b \\| c |` as ("  |", [" a ", " b \\| c "], "|"): a GFM table row, where
    `\\|` is a pipe inside a cell; the outer pipes are optional, as in GFM."""
    pipes = [match.start() for match in _cell_pipe_re().finditer(body)]
    start, stop = 0, len(body)
    opening = closing = ""
    if pipes and not body[: pipes[0]].strip(" \t"):
        start = pipes.pop(0) + 1
        opening = body[:start]
    if pipes and not body[pipes[-1] + 1 :].strip(" \t"):
        stop = pipes.pop()
        closing = body[stop:]
    bounds = [start - 1, *pipes, stop]
    cells = [body[bounds[i] + 1 : bounds[i + 1]] for i in range(len(bounds) - 1)]
    return TableRow(opening=opening, cells=cells, closing=closing)


def is_table_row(body: str) -> bool:
    """Whether a line is a row of the tables gsd edits: one that opens with a pipe."""
    return body.lstrip(" \t").startswith("|")


def cell_value(cell: str) -> str:
    """A raw cell's content: trimmed, `\\|` read as `|`."""
    return cell.strip().replace("\\|", "|")


def row_cells(body: str) -> list[str]:
    """The contents of a table row's cells (`cell_value` of each)."""
    return [cell_value(cell) for cell in split_row(body).cells]


def escape_cell(value: str) -> str:
    """A value as a cell's text: a pipe in it escaped, so it stays one cell."""
    return value.replace("|", "\\|")


def table_row(values: Iterable[str]) -> str:
    """`| a | b |`, each value escaped (`escape_cell`)."""
    return cells_row(escape_cell(value) for value in values)


def cells_row(cells: Iterable[str]) -> str:
    """`| a | b |`, each cell as it is (escaped already, or a code span)."""
    return "| " + " | ".join(cells) + " |"


def markdown_table(
    headings: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    right: Collection[int] = (),
    fit: bool = False,
) -> list[str]:
    """A GFM table's lines, cells as they are (`cells_row`), unpadded: the headings, the
    rule (`---` under each, or as wide as its heading cell when `fit`; `---:` under the
    columns `right` aligns right), then a line per row. gsd's other tables, aligned
    for a terminal, are tabulate's (`gsd.output.views.table`)."""
    rules = ["-" * (len(h) + 2 if fit else 3) for h in headings]
    rule = "|".join(r[:-1] + ":" if i in right else r for i, r in enumerate(rules))
    return [cells_row(headings), f"|{rule}|", *(cells_row(row) for row in rows)]


class Lines:
    """A text as lines; each line keeps its own `\\r`, so joining gives back every byte."""

    def __init__(self, text: str) -> None:
        self.parts = text.split("\n")
        # New lines copy the first line's ending; "" stands for "\n".
        self.cr = "\r" if len(self.parts) > 1 and self.parts[0].endswith("\r") else ""
        # `plain`'s last answer, and the lines it was for (compared whole: `parts` is
        # changed in place by its callers too)
        self._plain_kept: tuple[bool, list[str], list[int]] | None = None

    def __len__(self) -> int:
        """The number of lines; a final newline does not start one more."""
        return len(self.parts) - 1 if self.parts[-1] == "" else len(self.parts)

    def text(self) -> str:
        return "\n".join(self.parts)

    def body(self, index: int) -> str:
        part = self.parts[index]
        return part[:-1] if part.endswith("\r") else part

    def set(self, index: int, body: str) -> None:
        self.parts[index] = body + ("\r" if self.parts[index].endswith("\r") else "")

    def insert(self, index: int, bodies: list[str]) -> None:
        new = [body + self.cr for body in bodies]
        if index == len(self.parts):
            # After a last line without a newline: that line gets one, the new last has none.
            self.parts[-1] += self.cr
            new[-1] = bodies[-1]
        self.parts[index:index] = new

    def delete(self, index: int) -> None:
        del self.parts[index]
        if not self.parts:
            self.parts = [""]
        elif index == len(self.parts):
            # The deleted line was the last and had no newline: neither has the new last.
            self.parts[-1] = self.body(index - 1)

    def result(self, original: str) -> str:
        """The text; `original` itself, the very same string, when nothing changed."""
        new = self.text()
        return original if new == original else new

    def plain(self, frontmatter: bool = True) -> list[int]:
        """Indexes of the lines outside frontmatter (unless `frontmatter` is False: the
        text has none) and fenced code blocks. Unlike CommonMark, a fence that never
        closes fences nothing: gsd edits these files, and a section it appends after such
        a fence must stay findable, or every run would append it again."""
        kept = self._plain_kept
        if kept is not None and kept[0] == frontmatter and kept[1] == self.parts:
            return list(kept[2])  # the same lines as last time: the same answer
        found = self._plain(frontmatter)
        self._plain_kept = (frontmatter, list(self.parts), found)
        return list(found)

    def _plain(self, frontmatter: bool) -> list[int]:
        start, count = 0, len(self)
        if frontmatter and count and self.body(0).strip() == "---":
            start = next((i + 1 for i in range(1, count) if self.body(i).strip() == "---"), 0)
        fences = ((i, i, fence) for i in range(start, count) if (fence := fence_of(self.body(i))))
        fenced: set[int] = set()
        for first, last in fenced_blocks(fences, count, unclosed=False):
            fenced.update(range(first, last + 1))
        return [i for i in range(start, count) if i not in fenced]

    def headings(self) -> Iterator[tuple[int, int, str]]:
        """(index, level, title) of each Markdown heading outside frontmatter and fences."""
        for i in self.plain():
            heading = heading_of(self.body(i))
            if heading is not None:
                yield i, heading.level, heading.title

    def section(self, title: re.Pattern[str], levels: tuple[int, ...] = (2,)) -> range | None:
        """The lines of the first section titled `title`: its heading up to the next heading
        of the same or a higher level."""
        start, level = -1, 0
        for index, depth, text in self.headings():
            if start < 0:
                if depth in levels and title.fullmatch(text.strip()):
                    start, level = index, depth
            elif depth <= level:
                return range(start, index)
        return range(start, len(self)) if start >= 0 else None

    def field(self, span: range, label: str) -> tuple[int, re.Match[str]] | None:
        """The first `Label: value` line of the section (also `**Label:** value`, `- Label:`)."""
        words = r"[ \t]+".join(re.escape(word) for word in label.split())
        pattern = re.compile(
            rf"^(?P<prefix>[ \t]*(?:[-*+][ \t]+)?(?:\*\*)?{words}(?:\*\*)?:(?:\*\*)?[ \t]*)"
            r"(?P<value>.*)$",
            re.I,
        )
        for index in self.plain():
            if index in span[1:]:
                match = pattern.match(self.body(index))
                if match:
                    return index, match
        return None

    def append_to(self, span: range, bodies: list[str], apart: bool = False) -> None:
        """Add lines after the last non-blank line of a section (and a blank line)."""
        last = max(i for i in span if i == span.start or self.body(i).strip())
        new = [""] + bodies if apart and last != span.start else list(bodies)
        if last == span.start:  # an empty section: keep a blank line around the new lines
            new.insert(0, "")
            if last + 1 < len(self) and self.body(last + 1).strip():
                new.append("")
        self.insert(last + 1, new)

    def append_section(self, heading: str, bodies: list[str]) -> None:
        """Add a section at the end of the text, after a blank line."""
        count = len(self)
        new = [""] if count and self.body(count - 1).strip() else []
        self.insert(count, [*new, heading, "", *bodies])


# A `<!-- gsd: ignore CODES -->` comment that ends a line (HTML comments Markdown hides).
@cache
def _suppression_re() -> re.Pattern[str]:
    return re.compile(r"<!--\s*gsd:\s*ignore\b([^>]*?)-->\s*$")


def suppressions(text: str) -> Iterator[Suppression]:
    """Each `<!-- gsd: ignore CODES -->` of a Markdown text: at the end of a line it hides
    that line's findings, alone on a line those of the line below (codes are separated by
    commas or spaces)."""
    if "gsd:" not in text:
        return
    for number, row in enumerate(text.splitlines(), 1):
        match = _suppression_re().search(row) if "gsd:" in row else None
        if match is not None:
            alone = not row[: match.start()].strip()
            codes = tuple(w.upper() for w in re.split(r"[\s,]+", match[1]) if w)
            yield Suppression(number + 1 if alone else number, codes, number)
