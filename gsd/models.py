"""Plain data for plans, tasks and diagnostics (no I/O).

These are dataclasses rather than pydantic models on purpose: they sit on the
`gsd validate` hook path, where importing pydantic alone would cost more than
the whole validation of a plan (see docs/PERFORMANCE.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

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

PLAN_ID_RE = re.compile(r"(\d+[A-Za-z]?(?:\.\d+)*)-(\d+)")


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding: `path:line:col: severity CODE message`."""

    path: str
    line: int
    col: int
    severity: Severity
    code: str
    message: str

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.line, self.col, self.code)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
        }


@dataclass(slots=True)
class Element:
    """An XML-like element read leniently: its text is kept exactly as written."""

    tag: str
    attrs: dict[str, str]
    text: str
    line: int
    # offset of `text` in the file, so nested elements can be located by line
    offset: int = 0
    closed: bool = True
    children: list[Element] = field(default_factory=list)


@dataclass(slots=True)
class Task:
    """One `<task>` block of a plan."""

    index: int  # 1-based position in the plan
    type: str
    attrs: dict[str, str]
    line: int
    children: list[Element] = field(default_factory=list)
    specialist: str | None = None  # as written, before any resolution
    specialist_form: SpecialistForm | None = None
    closed: bool = True
    raw: str = ""  # the whole inner text of the block, exactly

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


@dataclass(slots=True)
class Plan:
    """A parsed PLAN.md file; `frontmatter` holds strings, lists and dicts only."""

    path: str
    frontmatter: dict[str, Any]
    tasks: list[Task]
    # 1-based line of each top-level frontmatter key, for diagnostics
    key_lines: dict[str, int] = field(default_factory=dict)
    body_line: int = 1
    # problems found while reading (GSD001, GSD050, unclosed tags ...)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    readable: bool = True

    @property
    def id(self) -> str:
        """`03-01` from `03-01-auth-PLAN.md`; falls back to the frontmatter."""
        return plan_id_from_filename(self.path) or self._id_from_frontmatter()

    def _id_from_frontmatter(self) -> str:
        phase = str(self.frontmatter.get("phase", "")).split("-")[0]
        return f"{phase}-{self.frontmatter.get('plan', '')}"

    @property
    def phase(self) -> str:
        return self.id.rsplit("-", 1)[0]

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
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        return None

    @property
    def autonomous(self) -> bool | None:
        value = self.frontmatter.get("autonomous")
        if isinstance(value, str):
            return {"true": True, "false": False}.get(value.strip().lower())
        return None


@lru_cache(maxsize=1 << 16)
def plan_id_from_filename(path: str) -> str | None:
    """The first two numeric tokens of the file name: `02.1-01-x-PLAN.md` -> `02.1-01`."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    match = PLAN_ID_RE.search(name)
    return f"{match.group(1)}-{match.group(2)}" if match else None


def normalize_plan_ref(ref: str) -> str:
    """`"01-01"`, `01-01-PLAN.md` and `01-foundation/01-01` all name plan `01-01`."""
    ref = ref.strip().strip("\"'")
    return plan_id_from_filename(ref) or ref
