"""A diagnostic as the one line compilers print, and the list a refusal shows first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gsd.core.words import plural

if TYPE_CHECKING:
    from gsd.core.models import Diagnostic
    from gsd.core.rules import Report

LISTED_DIAGNOSTICS = 20  # a refusal lists this many, then says how many more


def diagnostic_line(d: Diagnostic) -> str:
    """`path:line:col: severity CODE message`, as compilers print findings."""
    return f"{d.path}:{d.line}:{d.col}: {d.severity} {d.code} {d.message}"


def listed_errors(report: Report, limit: int = LISTED_DIAGNOSTICS) -> str:
    """The errors of `report` as `gsd validate` prints them, at most `limit` of them and
    then `... and N more errors`: what a command refusing on them shows first."""
    errors = [d for d in report.diagnostics if d.severity == "error"]
    lines = [diagnostic_line(d) for d in errors[:limit]]
    if len(errors) > limit:
        lines.append(f"... and {plural(len(errors) - limit, 'more error')}")
    return "".join(line + "\n" for line in lines)
