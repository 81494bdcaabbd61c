"""PLAN.md -> Plan: frontmatter plus a lenient reading of `<task>` blocks.

Most real plan bodies are not well-formed XML (bare `&`, `List<T>` inside an
`<action>`, stray tags), so nothing here is an XML parser: task blocks and
their children are found by scanning for tags, child text is kept exactly as
written, entities are never expanded and nothing is ever fetched.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cache, lru_cache

from gsd.core.models import Diagnostic, Element, Plan, Task
from gsd.formats import frontmatter
from gsd.formats.lines import fenced_ranges, suppressions

# Refuse to read anything this large: it is not a plan someone wrote.
MAX_PLAN_BYTES = 64 * 1024 * 1024

# Children whose own children gsd reads (`<verify><automated>`, decision options).
NESTED_CHILDREN = frozenset({"verify", "options", "option"})
# Children a task may hold; an unclosed one of these is reported.
KNOWN_CHILDREN = frozenset(
    {
        "name",
        "files",
        "action",
        "verify",
        "done",
        "read_first",
        "acceptance_criteria",
        "behavior",
        "what-built",
        "how-to-verify",
        "resume-signal",
        "decision",
        "options",
        "context",
        "instructions",
        "verification",
        "automated",
        "human-check",
        "option",
    }
)

_TASK_TOKEN_RE = re.compile(r"<task(?=[\s>/])|</task\s*>")
_ATTR_RE = re.compile(r"""([^\s=>/"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+)))?""")
_OPEN_TAG_RE = re.compile(
    r"""<([A-Za-z][\w.:-]*)((?:\s+[^\s=>/"']+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>"']+))?)*)\s*(/?)>"""
)
# A backtick opens inline code up to the next backtick on its line (or the line's end).
_INLINE_CODE_RE = re.compile(r"`[^`\n]*(?:`|(?=\n)|\Z)")


@cache
def _inline_specialist_re() -> re.Pattern[str]:
    return re.compile(r"^[ \t]*specialist:[ \t]*(.*?)[ \t]*$", re.M)


def parse_bytes(data: bytes, path: str) -> Plan:
    """Decode a plan file (UTF-8, optional BOM: `parse` drops it) and parse it; bad bytes
    are GSD050."""
    if len(data) > MAX_PLAN_BYTES:
        return unreadable(path, 1, f"file is larger than {MAX_PLAN_BYTES // 2**20} MiB")
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        return unreadable(path, line, "binary file (contains NUL bytes), not a text plan")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return unreadable(
            path, line, f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        )
    return parse(text, path)


def unreadable(path: str, line: int, message: str) -> Plan:
    """A file that is not a readable plan: no content, one GSD050 error."""
    plan = Plan(path, readable=False)
    plan.diagnostics.append(
        Diagnostic(path=path, line=line, col=1, severity="error", code="GSD050", message=message)
    )
    return plan


def parse(text: str, path: str = "<string>") -> Plan:
    """Parse a plan's text. Never raises for bad input: problems become diagnostics."""
    plan = Plan(path)
    if "gsd:" in text:
        plan.suppressions = tuple(suppressions(text))
    body_offset = 0
    try:
        cut = frontmatter.split(text)
        text, body_offset, plan.body_line = cut.text, cut.body_offset, cut.body_line
        plan.frontmatter, plan.key_lines = frontmatter.load(cut.yaml_text)
    except frontmatter.FrontmatterError as exc:
        text = frontmatter.normalize(text)  # split normalises only the text it returns
        plan.diagnostics.append(
            Diagnostic(
                path=path,
                line=exc.line,
                col=1,
                severity="error",
                code="GSD001",
                message=exc.message,
            )
        )
    scanner = _Scanner(text, body_offset, path)
    plan.tasks = scanner.tasks()
    plan.diagnostics.extend(scanner.diagnostics)
    if not plan.tasks:
        plan.legacy_task_lines = scanner.legacy_task_lines()
    _apply_frontmatter_specialists(plan)
    return plan


def _apply_frontmatter_specialists(plan: Plan) -> None:
    """The third specialist form: a frontmatter `tasks: [{specialist: ...}]` list."""
    listed = plan.frontmatter.get("tasks")
    if not isinstance(listed, list):
        return
    for task, entry in zip(plan.tasks, listed, strict=False):
        if task.specialist_form is None and isinstance(entry, dict):
            value = entry.get("specialist")
            if isinstance(value, str):
                task.specialist, task.specialist_form = value, "frontmatter"


# `## Task 1: name`, `### Task 2 - name`: a task as a heading, as older GSD plans wrote it
@cache
def _legacy_task_re() -> re.Pattern[str]:
    return re.compile(r"^#{2,4}[ \t]+Task[ \t]+\d+\b", re.IGNORECASE | re.MULTILINE)


class _Scanner:
    """One pass over a plan body: fenced ranges, task blocks, their children."""

    def __init__(self, text: str, body_offset: int, path: str) -> None:
        self.text = text
        self.body_offset = body_offset
        self.path = path
        self.diagnostics: list[Diagnostic] = []
        self._cursor = (0, 1)  # (offset, its line): lookups mostly move forward
        self._code_starts, self._code_ends = self._code_ranges()

    def line_of(self, offset: int) -> int:
        at, line = self._cursor
        if offset >= at:
            line += self.text.count("\n", at, offset)
        else:
            line -= self.text.count("\n", offset, at)
        self._cursor = (offset, line)
        return line

    def legacy_task_lines(self) -> list[int]:
        """Lines of `## Task N` headings outside code: how plans were written before <task>."""
        found = _legacy_task_re().finditer(self.text, self.body_offset)
        return [self.line_of(m.start()) for m in found if not self.in_code(m.start())]

    def _code_ranges(self) -> tuple[list[int], list[int]]:
        """Sorted, disjoint ranges of fenced blocks and `inline code` spans."""
        starts: list[int] = []
        ends: list[int] = []
        for start, end in self._fences():
            for span in _INLINE_CODE_RE.finditer(self.text, ends[-1] if ends else 0, start):
                starts.append(span.start())
                ends.append(span.end())
            starts.append(start)
            ends.append(end)
        for span in _INLINE_CODE_RE.finditer(self.text, ends[-1] if ends else 0):
            starts.append(span.start())
            ends.append(span.end())
        return starts, ends

    def _fences(self) -> list[tuple[int, int]]:
        """Fenced code ranges, read as authors mean them (SPEC section 2): a fence line
        with an info string inside a block opens one within it (`gsd.formats.lines`)."""
        return fenced_ranges(self.text, self.body_offset, nested=True)

    def in_code(self, offset: int) -> bool:
        """Inside a fenced block, or inside `inline code` on its line."""
        i = bisect_right(self._code_starts, offset) - 1
        return i >= 0 and offset < self._code_ends[i]

    def _error(self, offset: int, code: str, message: str) -> None:
        self.diagnostics.append(
            Diagnostic(
                path=self.path,
                line=self.line_of(offset),
                col=1,
                severity="error",
                code=code,
                message=message,
            )
        )

    def tasks(self) -> list[Task]:
        tasks: list[Task] = []
        open_at: int | None = None  # offset of the `<task` of the block being read
        inner_at = 0
        attrs: dict[str, str] = {}
        for token in _TASK_TOKEN_RE.finditer(self.text, self.body_offset):
            if self.in_code(token.start()):
                continue
            if token.group().startswith("</"):
                if open_at is None:
                    self._error(token.start(), "GSD015", "stray </task> with no open <task>")
                    continue
                tasks.append(self._task(len(tasks) + 1, open_at, inner_at, token.start(), attrs))
                open_at = None
                continue
            if open_at is not None:
                self._error(
                    open_at,
                    "GSD015",
                    f"<task> is not closed before the next <task> on line "
                    f"{self.line_of(token.start())}: add </task>",
                )
                tasks.append(
                    self._task(len(tasks) + 1, open_at, inner_at, token.start(), attrs, False)
                )
            open_at = token.start()
            attrs, inner_at, self_closing = self._open_tag(token.start())
            if self_closing:
                tasks.append(self._task(len(tasks) + 1, open_at, inner_at, inner_at, attrs))
                open_at = None
        if open_at is not None:
            end = self.text.find("</tasks>", inner_at)
            end = len(self.text) if end < 0 else end
            self._error(open_at, "GSD015", "<task> is never closed: add </task>")
            tasks.append(self._task(len(tasks) + 1, open_at, inner_at, end, attrs, False))
        return tasks

    def _open_tag(self, start: int) -> tuple[dict[str, str], int, bool]:
        """Attributes of the tag at `start`, where its content begins, self-closing?"""
        match = _OPEN_TAG_RE.match(self.text, start)
        if match:
            return _attributes(match.group(2)), match.end(), bool(match.group(3))
        # Malformed open tag: read what is there up to the end of the line.
        end = self.text.find(">", start)
        newline = self.text.find("\n", start)
        if end < 0 or (0 <= newline < end):
            end = newline if newline >= 0 else len(self.text)
            self._error(start, "GSD015", "<task> open tag is not closed with '>'")
            return _attributes(self.text[start + 5 : end]), end, False
        return _attributes(self.text[start + 5 : end]), end + 1, False

    def _task(
        self,
        index: int,
        open_at: int,
        inner_at: int,
        end: int,
        attrs: dict[str, str],
        closed: bool = True,
    ) -> Task:
        children = self.elements(inner_at, end)
        task = Task(
            index=index,
            type=attrs.get("type", ""),
            attrs=attrs,
            line=self.line_of(open_at),
            children=children,
            closed=closed,
            raw=self.text[inner_at:end],
        )
        if "specialist" in attrs:
            task.specialist, task.specialist_form = attrs["specialist"], "attribute"
        elif self.text.find("specialist:", inner_at, end) >= 0:
            inline = self._inline_specialist(inner_at, end, children)
            if inline is not None:
                task.specialist, task.specialist_form = inline, "inline"
        return task

    def _inline_specialist(self, start: int, end: int, children: list[Element]) -> str | None:
        """A `specialist: name` line in the task block, outside its children."""
        gaps: list[tuple[int, int]] = []
        cursor = start
        for child in children:
            tag_start = self.text.rfind("<", start, child.offset)
            gaps.append((cursor, max(cursor, tag_start)))
            close = child.offset + len(child.text)
            cursor = self.text.find(">", close, end) + 1 if child.closed else close
        gaps.append((cursor, end))
        for gap_start, gap_end in gaps:
            for match in _inline_specialist_re().finditer(self.text, gap_start, gap_end):
                if not self.in_code(match.start()):
                    # a YAML-style `# comment` after the name is not part of it
                    return match.group(1).split(" #", 1)[0].strip().strip("\"'")
        return None

    def elements(self, start: int, end: int) -> list[Element]:
        """Top-level elements between two offsets, each with its exact text."""
        text, starts, ends = self.text, self._code_starts, self._code_ends
        found: list[Element] = []
        pos = start
        search = _OPEN_TAG_RE.search
        while (match := search(text, pos, end)) is not None:
            tag_start, inner = match.span()
            if starts:  # self.in_code, inlined: this loop is most of a plan's reading
                i = bisect_right(starts, tag_start) - 1
                if i >= 0 and tag_start < ends[i]:
                    pos = inner
                    continue
            tag, attr_text, self_closing = match.groups()
            attrs = _attributes(attr_text) if attr_text else {}
            line = self.line_of(tag_start)
            if self_closing:
                found.append(Element(tag, attrs, "", line, inner))
                pos = inner
                continue
            close = self._close(tag, inner, end)
            if close is None:
                if tag in KNOWN_CHILDREN:
                    found.append(self._unclosed(tag, attrs, tag_start, inner, end))
                pos = inner
                continue
            close_start, pos = close
            element = Element(tag, attrs, text[inner:close_start], line, inner)
            if tag in NESTED_CHILDREN:
                element.children = self.elements(inner, close_start)
            found.append(element)
        return found

    def _close(self, tag: str, inner: int, end: int) -> tuple[int, int] | None:
        """Where the element opened before `inner` closes: the common case cheaply (the
        next `</tag>`, no `<tag` before it, not in code), else by `_find_close`."""
        text = self.text
        close_start = text.find(f"</{tag}>", inner, end)
        if close_start >= 0 and text.find(f"<{tag}", inner, close_start) < 0:
            if not self.in_code(close_start):
                return close_start, close_start + len(tag) + 3
        return self._find_close(tag, inner, end)

    def _unclosed(self, tag: str, attrs: dict[str, str], at: int, inner: int, end: int) -> Element:
        """A known child never closed (GSD015): its text up to the end of its line."""
        self._error(at, "GSD015", f"<{tag}> is never closed: add </{tag}>")
        eol = self.text.find("\n", inner, end)
        eol = end if eol < 0 else eol
        line = self.line_of(at)
        return Element(tag, attrs, self.text[inner:eol], line, inner, closed=False)

    def _find_close(self, tag: str, start: int, end: int) -> tuple[int, int] | None:
        """The `</tag>` matching an open tag, counting nested tags of the same name."""
        depth = 1
        for token in _tag_pattern(tag).finditer(self.text, start, end):
            if self.in_code(token.start()):
                continue
            if token.group().startswith("</"):
                depth -= 1
                if depth == 0:
                    return token.start(), token.end()
            elif not token.group(1):  # `<tag/>` opens nothing
                depth += 1
        return None


@lru_cache(maxsize=64)
def _tag_pattern(tag: str) -> re.Pattern[str]:
    name = re.escape(tag)
    return re.compile(rf"<{name}(?:\s[^>]*?)?(/)?>|</{name}\s*>")


def _attributes(text: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for match in _ATTR_RE.finditer(text):
        name, double, single, bare = match.groups()
        value = double if double is not None else single if single is not None else bare
        attrs[name] = value if value is not None else ""
    return attrs
