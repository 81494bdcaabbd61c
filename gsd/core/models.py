"""Plain data for plans, tasks and diagnostics, and what an agent's run said (no I/O).

These are NamedTuples and slotted classes, not pydantic models or dataclasses,
on purpose: they sit on the `gsd validate` git-hook path, where importing
pydantic, or `dataclasses` (which pulls in `inspect`), costs more than
validating a plan (see docs/PERFORMANCE.md).
"""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple

# The plan-id grammar is gsd.core.ids's (tests and older callers import these names from here).
from gsd.core.ids import (
    is_plan_id,
    normalize_plan_ref,
    plan_id_from_filename,
    split_plan_id,
)

Severity = Literal["error", "warning"]
SpecialistForm = Literal["attribute", "inline", "frontmatter"]

# The plan fields SPEC section 2 requires, in the order upstream writes them.
REQUIRED_FIELDS = (
    "phase",
    "plan",
    "type",
    "wave",
    "depends_on",
    "files_modified",
    "autonomous",
    "must_haves",
)

# The runners an agent or a task's `runner=` may name (gsd.formats.agents.Runner, which needs
# pydantic; this copy keeps `gsd validate` light and a test keeps the two equal).
RUNNERS = ("claude", "gemini", "codex", "command")


class Diagnostic(NamedTuple):
    """One finding: `path:line:col: severity CODE message`."""

    path: str
    line: int
    col: int
    severity: Severity
    code: str
    message: str

    def sort_key(self) -> tuple[str, int, int, str, str]:
        """Where, then which rule, then the message: two findings of one rule on one line
        (two missing fields) come out in the same order in every run."""
        return (self.path, self.line, self.col, self.code, self.message)

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


class Suppression(NamedTuple):
    """A `<!-- gsd: ignore CODES -->` comment of a Markdown file (gsd.core.rules.select)."""

    line: int  # the line whose findings it hides
    codes: tuple[str, ...]  # as written, upper-cased; () for every rule
    at: int  # the line the comment is on


class Element:
    """An XML-like element read leniently: its text is kept exactly as written."""

    __slots__ = ("tag", "attrs", "text", "line", "offset", "closed", "children")

    def __init__(
        self,
        tag: str,
        attrs: dict[str, str],
        text: str,
        line: int,
        offset: int = 0,  # of `text` in the file
        closed: bool = True,
    ) -> None:
        self.tag = tag
        self.attrs = attrs
        self.text = text
        self.line = line
        self.offset = offset
        self.closed = closed
        self.children: list[Element] = []

    def __repr__(self) -> str:
        return f"Element({self.tag!r}, line={self.line}, text={self.text[:30]!r})"


class Task:
    """One `<task>` block of a plan."""

    __slots__ = (
        "index",
        "type",
        "attrs",
        "line",
        "children",
        "specialist",
        "specialist_form",
        "closed",
        "raw",
    )

    def __init__(
        self,
        index: int,  # 1-based position in the plan
        type: str,
        attrs: dict[str, str],
        line: int,
        children: list[Element],
        closed: bool = True,
        raw: str = "",  # the whole inner text of the block, exactly
    ) -> None:
        self.index = index
        self.type = type
        self.attrs = attrs
        self.line = line
        self.children = children
        self.closed = closed
        self.raw = raw
        self.specialist: str | None = None  # as written, before any resolution
        self.specialist_form: SpecialistForm | None = None

    def __repr__(self) -> str:
        return f"Task({self.index}, {self.type!r}, line={self.line}, name={self.name!r})"

    def child(self, tag: str) -> Element | None:
        for element in self.children:
            if element.tag == tag:
                return element
        return None

    def child_text(self, tag: str) -> str | None:
        element = self.child(tag)
        return None if element is None else element.text

    @property
    def name(self) -> str:
        text = self.child_text("name")
        return " ".join(text.split()) if text else ""

    @property
    def files(self) -> list[str]:
        """Paths listed in `<files>`: comma- or newline-separated."""
        text = self.child_text("files") or ""
        return [p.strip() for p in re.split(r"[,\n]", text) if p.strip()]

    @property
    def is_checkpoint(self) -> bool:
        return self.type.startswith("checkpoint:")

    @property
    def runner(self) -> str | None:
        """`runner="gemini"`: the task runs on this runner, not its agent's (SPEC 0)."""
        return self.attrs.get("runner")

    @property
    def model(self) -> str | None:
        """`model="..."`: the model this task asks its runner for (SPEC 0)."""
        return self.attrs.get("model")

    @property
    def review(self) -> str | None:
        """`review="AGENT"`: the agent that reviews this task's work before gsd accepts
        its commit (issue 24); `review="none"` opts out of config's `review`."""
        return self.attrs.get("review")

    @property
    def plan_first(self) -> str | None:
        """`plan-first="true"`: the task proposes read-only before it works (issue 24);
        `"false"` opts out of config's `gates.plan_first`."""
        return self.attrs.get("plan-first")


class Plan:
    """A parsed PLAN.md file; `frontmatter` holds strings, lists and dicts only."""

    __slots__ = (
        "path",
        "frontmatter",
        "tasks",
        "key_lines",
        "body_line",
        "diagnostics",
        "readable",
        "legacy_task_lines",
        "suppressions",
    )

    def __init__(self, path: str, *, readable: bool = True) -> None:
        self.path = path
        self.frontmatter: dict[str, Any] = {}
        self.tasks: list[Task] = []
        self.key_lines: dict[str, int] = {}  # 1-based line of each top-level key
        self.body_line = 1
        self.diagnostics: list[Diagnostic] = []  # found while reading: GSD001, GSD050 ...
        self.readable = readable
        self.legacy_task_lines: list[int] = []  # `## Task N` headings of a plan with no <task>
        self.suppressions: tuple[Suppression, ...] = ()  # its `<!-- gsd: ignore -->` comments

    def __repr__(self) -> str:
        return f"Plan({self.path!r}, {len(self.tasks)} tasks)"

    @property
    def id(self) -> str:
        """`03-01` from `03-01-auth-PLAN.md`, else from the frontmatter (`phase: 03-auth`,
        `plan: "01"`); "" when neither makes a plan id: such a plan is never scheduled,
        and a value like `plan: "01/../x"` never reaches a path, a tag or a branch name."""
        return plan_id_from_filename(self.path) or self._id_from_frontmatter()

    def _id_from_frontmatter(self) -> str:
        phase, number = self.frontmatter.get("phase"), self.frontmatter.get("plan")
        if not isinstance(phase, str) or not isinstance(number, str):
            return ""
        candidate = f"{phase.split('-')[0]}-{number}"
        return candidate if is_plan_id(candidate) else ""

    @property
    def phase(self) -> str:
        return split_plan_id(self.id)[0]

    @property
    def number(self) -> str:
        """The plan's number within its phase: `02` for plan `01-02`."""
        return split_plan_id(self.id)[1]

    def field_line(self, key: str) -> int:
        return self.key_lines.get(key, 1)

    def list_field(self, key: str) -> list[str]:
        """A list-of-strings field, tolerating a scalar or a missing value."""
        value = self.frontmatter.get(key)
        if isinstance(value, list):
            return [v for v in value if isinstance(v, str)]
        if isinstance(value, str) and value.strip():
            return [value.strip()]
        return []

    @property
    def depends_on(self) -> list[str]:
        return [normalize_plan_ref(ref) for ref in self.list_field("depends_on")]

    @property
    def files_modified(self) -> list[str]:
        # `files-modified` is a spelling found in real plans
        return self.list_field("files_modified") or self.list_field("files-modified")

    @property
    def wave(self) -> int | None:
        value = self.frontmatter.get("wave")
        # isdecimal, not isdigit: "²" is a digit that int() refuses
        if isinstance(value, str) and value.strip().isdecimal():
            return int(value)
        return None

    @property
    def autonomous(self) -> bool | None:
        value = self.frontmatter.get("autonomous")
        if isinstance(value, str):
            return {"true": True, "false": False}.get(value.strip().lower())
        return None


# What an agent's run said: read by gsd.formats (runners, taskreport), judged by gsd.core


class RunnerOutput(NamedTuple):
    """What a runner said, read from its structured output when there is one."""

    text: str  # the agent's final text (the raw stdout when nothing structured)
    is_error: bool
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    structured: bool  # the runner's JSON (or the command's result file) was found
    # the runner's own structured error said rate or usage limit (HTTP 429 or 529)
    rate_limited: bool = False
    # what the runner refused the agent: (tool, its file or command) per denial
    denied: tuple[tuple[str, str], ...] = ()
    # figures refused (a negative count, a cost that is not a finite amount), one a line
    notes: tuple[str, ...] = ()


class TaskReport(NamedTuple):
    """The Task Report and Downstream Context an agent prints last (workflows/task-report.md)."""

    status: str  # success | partial | failure, or the raw value; "" when missing
    files_created: list[str]
    files_modified: list[str]
    files_deleted: list[str]
    validation: str  # pass | fail | skipped, or the raw value
    errors: str | None  # None for `none`
    key_interfaces: str
    patterns: str
    warnings: str
    complete: bool  # all six Task Report fields were present
    # the Downstream Context block as the agent wrote it, for the tasks after it; ""
    # when the report has none
    downstream: str = ""
