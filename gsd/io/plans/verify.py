"""`gsd verify`: a plan's must_haves checked against the files of a working tree (the
verdicts are gsd.core.musthaves'), the plans a target names, and the `## Must-haves`
section gsd adds to a complete plan's SUMMARY.md."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from gsd.core.ids import is_plan_id
from gsd.core.models import Plan
from gsd.core.musthaves import (
    Check,
    check_artifact,
    check_key_link,
    check_reference,
    declared,
    references,
)
from gsd.formats.lines import fenced_ranges, one_line, table_row
from gsd.io.plans.project import Project
from gsd.io.plans.sources import relative_to_root

# A must_have names a source file; one past this is read no further (it is not code).
MAX_BYTES = 8 * 1024 * 1024


class PlanChecks(NamedTuple):
    """A plan's checks, in the order of its must_haves, then its `@` references."""

    plan_id: str
    path: str  # repo-relative
    checks: list[Check]

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.failed]


class Tree:
    """The files a plan's paths name: under `root` only, unless `home` is given
    (`verification.outside_references: check`): then `~/` names resolve against it, as
    upstream resolves them against $HOME, and absolute names are read as they are."""

    def __init__(self, root: Path, home: Path | None = None) -> None:
        self.root = root.resolve()
        self.home = home

    def locate(self, name: str) -> Path | None:
        """The file `name` means, or None when it would leave the project."""
        if name.startswith("~/"):
            return self.home / name[2:] if self.home is not None else None
        if os.path.isabs(name):
            return Path(name) if self.home is not None else None
        path = (self.root / name).resolve()
        return path if path == self.root or self.root in path.parents else None

    def read(self, name: str) -> str | None:
        """The text of a file (a directory reads as empty, as upstream's existsSync
        passes it); None when missing or outside the project."""
        path = self.locate(name)
        if path is None:
            return None
        try:
            if path.is_dir():
                return ""
            with path.open("rb") as handle:
                return handle.read(MAX_BYTES).decode("utf-8", errors="replace")
        except OSError:
            return None

    def exists(self, name: str) -> bool | None:
        path = self.locate(name)
        return None if path is None else path.exists()


def check_plan(tree: Tree, plan: Plan, text: str) -> PlanChecks:
    """Every check of one plan: its artifacts, its key links, its `@` references."""
    wanted = declared(plan.frontmatter.get("must_haves"))
    checks = [
        check_artifact(a, tree.read(a.path)) if tree.locate(a.path) else _outside(a.path)
        for a in wanted.artifacts
    ]
    for link in wanted.key_links:
        target = tree.read(link.target) if link.target else None
        checks.append(check_key_link(link, tree.read(link.source), target))
    checks.extend(wanted.skipped)
    outside = unfenced(text)
    checks.extend(check_reference(r, tree.exists(r)) for r in references(outside))
    return PlanChecks(plan.id, plan.path, checks)


def _outside(path: str) -> Check:
    return Check("artifact", path, "fail", "outside the project: gsd reads no file there")


def plan_text(root: Path, plan: Plan) -> str:
    """The plan file's text, for its `@` references ("" when it cannot be read)."""
    try:
        return (root / plan.path).read_bytes().decode("utf-8-sig", errors="replace")
    except OSError:
        return ""


def unfenced(text: str) -> str:
    """The text with its fenced blocks blanked: `@router.get("/x")` in a code sample is
    a decorator, not a reference (upstream scans those too and reports them missing)."""
    parts: list[str] = []
    last = 0
    for start, end in fenced_ranges(text):
        parts.extend((text[last:start], " " * (end - start)))
        last = end
    parts.append(text[last:])
    return "".join(parts)


# The plans a target names ---------------------------------------------------------------


def target_plans(project: Project, target: str) -> list[Plan]:
    """A plan file (or a folder of them), a plan id (01-02) or a phase (1, 01-setup)."""
    if os.path.exists(target) and not is_plan_id(target):
        paths = project.plans_under(relative_to_root(project.root, target))
        return [project.plan(p) for p in paths]
    if is_plan_id(target):
        return [project.find_plan(target)]
    return project.phase_plans(project.phase(target))


def verify(project: Project, target: str) -> list[PlanChecks]:
    """Every plan `target` names, checked; files outside the project only with
    `verification.outside_references: check` (`@~/` then resolves against $HOME)."""
    check = project.config.verification.outside_references == "check"
    tree = Tree(project.root, Path.home() if check else None)
    plans = target_plans(project, target)
    return [check_plan(tree, plan, plan_text(project.root, plan)) for plan in plans]


# The SUMMARY.md section -----------------------------------------------------------------

HEADING = "## Must-haves"
MARKS = {"pass": "ok", "fail": "FAIL", "skip": "skip"}


def section(checks: Sequence[Check], failing: str) -> str:
    """The section; `failing` is `verification.must_haves` (warn or fail), said beside
    a failure so a reader knows whether the plan was allowed to complete with it."""
    failed = sum(c.failed for c in checks)
    if not checks:
        verdict = "Nothing to check: no artifacts, key links or @ references."
    elif failed:
        verdict = f"{failed} of {len(checks)} checks failed (verification.must_haves: {failing})."
    else:
        verdict = f"All {len(checks)} checks passed or were skipped (see gsd verify)."
    lines = [HEADING, "", verdict]
    if checks:
        lines += ["", table_row(["Check", "Subject", "Result", "Detail"]), table_row(["---"] * 4)]
        lines += [
            table_row([c.kind, one_line(c.subject), MARKS[c.status], one_line(c.detail)])
            for c in checks
        ]
    return "\n".join(lines) + "\n"
