"""Whether an attempt the judge passed is done (SPEC 0, "Done means done"): pure rules.

The judge reads what the agent said; these hold it against what git saw the attempt
change. A Task Report that names files created or modified which the task's commit
does not hold is `report-mismatch`; a writing-tier task whose runner denied its writes
and that changed nothing is `permission-denied`; a writing-tier task that changed
nothing and claimed nothing "made no change" (shown, not failed). Whether a plan file
it wrote validates is asked of `gsd validate` by `gsd.run.taskdone`.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Sequence

from gsd.core.models import TaskReport

# the tiers whose agents are there to change files (core.models' tiers)
WRITING_TIERS = frozenset({"read+write", "full"})
# the tools whose denial is a write refused: Claude Code's file tools and its shell
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"})
PLAN_SUFFIX = "-PLAN.md"

# `src/a.py (new)`, `src/a.py: the loader`: a note after the path is not part of it
_NOTE_RE = re.compile(r"\s*(?:\([^()]*\)|:\s.*)$")


def claimed(report: TaskReport | None) -> list[str]:
    """The files a Task Report says the task created or modified, as written, once each
    (`none`, `-` and empty lists are no claim)."""
    if report is None:
        return []
    return list(dict.fromkeys([*report.files_created, *report.files_modified]))


def normal(path: str, roots: Sequence[str] = ()) -> str:
    """A claimed path as git names it: relative to the repository (an absolute path
    under one of `roots` made so), `/` separators, no `./`, no note after it."""
    text = _NOTE_RE.sub("", path.strip().strip("`'\"").replace("\\", "/")).strip()
    for root in roots:
        prefix = root.rstrip("/") + "/"
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    text = posixpath.normpath(text) if text else ""
    return "" if text == "." else text.rstrip("/")


def missing(claims: Iterable[str], changed: Iterable[str], roots: Sequence[str] = ()) -> list[str]:
    """The claimed files the attempt did not change, as written in the report. A claim
    holds when git saw that path change (a file listed as created that existed and was
    modified holds too), a file below it (a folder), a path its glob matches, or the
    path its first word names (`src/a.py new module`)."""
    paths = set(changed)
    lacking = []
    for claim in claims:
        path = normal(claim, roots)
        if not path or _holds(path, paths) or _holds(normal(path.split()[0]), paths):
            continue
        lacking.append(claim)
    return lacking


def _holds(path: str, changed: set[str]) -> bool:
    if path in changed:
        return True
    if any(c in path for c in "*?["):
        return any(fnmatch.fnmatchcase(p, path) for p in changed)
    return any(p.startswith(path + "/") for p in changed)


def denied_writes(denied: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The denials that refused a write: a file tool or a shell command."""
    return [(tool, target) for tool, target in denied if tool in WRITE_TOOLS]


def denial_text(denied: Sequence[tuple[str, str]], limit: int = 5) -> str:
    """`Write src/a.py, Bash echo x > b` (the first `limit`, then how many more)."""
    shown = [" ".join(f"{tool} {target}".split())[:120] for tool, target in denied[:limit]]
    more = len(denied) - limit
    return ", ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def permission_denied(tier: str, denied: Sequence[tuple[str, str]], changed: bool) -> str:
    """Why a writing-tier task whose runner denied its writes and that changed nothing
    is not done ("" when it is not that)."""
    if tier not in WRITING_TIERS or changed or not denied:
        return ""
    return f"the runner denied every write and nothing changed: {denial_text(denied)}"


def made_no_change(tier: str, changed: bool, report: TaskReport | None) -> bool:
    """A writing-tier task that changed nothing and claimed nothing: shown as "made
    no change" (a read-only tier is expected to change nothing)."""
    return tier in WRITING_TIERS and not changed and not claimed(report)


def plan_files(changed: Iterable[str]) -> list[str]:
    """The plan files (`*-PLAN.md`, anywhere) among the changed paths."""
    return [p for p in changed if posixpath.basename(p).endswith(PLAN_SUFFIX)]
