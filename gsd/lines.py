"""Markdown text as lines, for edits that change only the lines they mean to.

STATE.md and ROADMAP.md are edited through `Lines`: each line keeps its own `\r`, so
CRLF stays CRLF and a missing final newline stays missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

HEADING_RE = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
FENCE_RE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
# A table's header separator: `|---|:--:|`, `--- | ---`.
SEPARATOR_RE = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*(?::?-+:?[ \t]*)?$")


class Lines:
    """A text as lines; each line keeps its own `\\r`, so joining gives back every byte."""

    def __init__(self, text: str) -> None:
        self.parts = text.split("\n")
        # New lines copy the first line's ending; "" stands for "\n".
        self.cr = "\r" if len(self.parts) > 1 and self.parts[0].endswith("\r") else ""

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
        text has none) and fenced code blocks (a fence that never closes fences nothing:
        text gsd appends after it must stay findable)."""
        start, count = 0, len(self)
        if frontmatter and count and self.body(0).strip() == "---":
            start = next((i + 1 for i in range(1, count) if self.body(i).strip() == "---"), 0)
        fenced: set[int] = set()
        fence, opened = "", 0
        for i in range(start, count):
            opener = FENCE_RE.match(self.body(i))
            if fence:
                if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                    fenced.update(range(opened, i + 1))
                    fence = ""
            elif opener:
                fence, opened = opener.group(1), i
        return [i for i in range(start, count) if i not in fenced]

    def headings(self) -> Iterator[tuple[int, int, str]]:
        """(index, level, title) of each Markdown heading outside frontmatter and fences."""
        for i in self.plain():
            match = HEADING_RE.match(self.body(i))
            if match:
                yield i, len(match.group(1)), match.group(2)

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
