"""The registry of `gsd validate`'s rules: each rule declares its code, severity, summary
and docs beside the function that checks it (`@rule(...)`), and lands in RULES; also what
the rules need to know of the project, and the report they make."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

from gsd.core.models import Diagnostic, Plan, Severity

F = TypeVar("F", bound=Callable[..., Any])


class Rule(NamedTuple):
    code: str
    severity: Severity
    summary: str  # the line `gsd rules` prints
    docs: str = ""  # its row in docs/PLANS.md's table, where it says more than the summary
    strict: bool = False  # an error under --strict

    @property
    def explained(self) -> str:
        """What docs/PLANS.md's rule table says of the rule."""
        return self.docs or self.summary


# Every rule, by code in code order, once gsd.core.rules has loaded its rule modules.
RULES: dict[str, Rule] = {}


def register(*rules: Rule) -> None:
    """Add rules whose findings are made elsewhere (the plan reader's GSD001, GSD015 and
    GSD050; config.json's GSD060); `rule` is the usual way."""
    for found in rules:
        if found.code in RULES:
            raise ValueError(f"rule {found.code} is declared twice")
        RULES[found.code] = found


def rule(
    code: str, severity: Severity, summary: str, *, docs: str = "", strict: bool = False
) -> Callable[[F], F]:
    """Declare rule `code`, checked by the function this decorates (one function may
    check several rules: a decorator each)."""

    def declare(check: F) -> F:
        register(Rule(code, severity, summary, docs=docs, strict=strict))
        return check

    return declare


def in_code_order() -> None:
    """Sort RULES by code, as `gsd rules` lists them (each module registers its own)."""
    ordered = sorted(RULES.items())
    RULES.clear()
    RULES.update(ordered)


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


def finding(path: str, line: int, code: str, message: str) -> Diagnostic:
    """A finding of rule `code` at a line of a file, at the rule's severity."""
    severity = RULES[code].severity
    return Diagnostic(path=path, line=line, col=1, severity=severity, code=code, message=message)


def diag(plan: Plan, line: int, code: str, message: str) -> Diagnostic:
    """A finding of rule `code` at a line of a plan, at the rule's severity."""
    return finding(plan.path, line, code, message)


def escalate(found: Iterable[Diagnostic], strict: bool) -> Iterator[Diagnostic]:
    """The findings, with `--strict` making errors of the rules that say `strict`."""
    for d in found:
        if strict and d.code in RULES and RULES[d.code].strict:
            d = d._replace(severity="error")
        yield d
