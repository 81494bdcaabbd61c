"""The rules of `gsd validate`: their codes, what they need to know of the project, the report."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol

from gsd.core.models import Diagnostic, Plan, Severity


class Rule(NamedTuple):
    code: str
    severity: Severity
    summary: str


RULES: dict[str, Rule] = {
    r.code: r
    for r in (
        Rule("GSD001", "error", "frontmatter missing or unparseable"),
        Rule("GSD002", "error", "required frontmatter field missing"),
        Rule(
            "GSD003", "error", "frontmatter value of the wrong type or outside its allowed values"
        ),
        Rule("GSD010", "warning", "plan has no tasks"),
        Rule("GSD011", "error", "unknown task type (or `gate` value)"),
        Rule("GSD012", "error", "task lacks a child its type requires"),
        Rule("GSD013", "warning", "task lacks a recommended child"),
        Rule("GSD014", "error", "checkpoint task in a plan whose `autonomous` is not false"),
        Rule("GSD015", "error", "task block not closed, nested, or a stray closing tag"),
        Rule("GSD020", "error", "malformed specialist name (allowed: [A-Za-z0-9][A-Za-z0-9_.:-]*)"),
        Rule("GSD021", "warning", "specialist not in the roster: falls back to gsd-executor"),
        Rule("GSD022", "error", "task `runner=` names no runner, or its `model=` is unusable"),
        Rule(
            "GSD030",
            "error",
            "unsafe path in <files> or files_modified (absolute, `..`, leaves the repo)",
        ),
        Rule("GSD040", "error", "depends_on names a plan that does not exist"),
        Rule("GSD041", "error", "dependency cycle"),
        Rule("GSD042", "warning", "declared wave differs from the wave computed from depends_on"),
        Rule("GSD043", "warning", "wave > 1 with empty depends_on"),
        Rule(
            "GSD044",
            "warning",
            "plans of one wave both modify a file: they will run one after another",
        ),
        Rule("GSD045", "error", "two plans in a phase share an id"),
        Rule(
            "GSD046",
            "warning",
            "file in a phase folder looks like a plan but is not named NN-MM-name-PLAN.md",
        ),
        Rule("GSD050", "error", "file is not valid UTF-8, or is not a regular text file"),
        Rule("GSD060", "warning", "config.json key gsd does not read in a section gsd reads"),
    )
}

# Rules that are errors under --strict.
STRICT_ERRORS = frozenset({"GSD021"})


class Facts(Protocol):
    """What the rules need to know of the project beyond the plans they read."""

    @property
    def roster(self) -> Collection[str] | None:
        """The specialists of available_agents.md; None when there is no roster."""

    @property
    def all_plan_ids(self) -> Collection[str]:
        """The id of every plan in `.planning/`, in any phase."""

    def leaves_through_symlink(self, normal: str) -> bool:
        """Whether a repo-relative path (normalised, no `..`) resolves outside the repo."""

    def model_problem(self, model: str) -> str | None:
        """Why a task's `model=` cannot be handed to a runner, or None when it can."""


class Report:
    """What one run of the rules found."""

    __slots__ = ("files", "diagnostics", "paths")

    def __init__(
        self, files: int, diagnostics: list[Diagnostic], paths: Sequence[str] = ()
    ) -> None:
        self.files = files
        self.diagnostics = diagnostics
        self.paths = paths  # the plan files checked, findings or not (JUnit lists each)

    @property
    def errors(self) -> int:
        return sum(d.severity == "error" for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.severity == "warning" for d in self.diagnostics)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "errors": self.errors,
            "warnings": self.warnings,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


def diag(plan: Plan, line: int, code: str, message: str) -> Diagnostic:
    """A finding of rule `code` at a line of a plan, at the rule's severity."""
    return Diagnostic(
        path=plan.path, line=line, col=1, severity=RULES[code].severity, code=code, message=message
    )


def escalate(found: Iterable[Diagnostic], strict: bool) -> Iterator[Diagnostic]:
    """The findings, with `--strict` making errors of the rules in STRICT_ERRORS."""
    for d in found:
        if strict and d.code in STRICT_ERRORS:
            d = d._replace(severity="error")
        yield d
