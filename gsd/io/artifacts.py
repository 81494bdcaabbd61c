"""A plan's must_haves checked against the files of a working tree (the reading half of
`gsd verify`; the verdicts are gsd.core.musthaves')."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from gsd.core.models import Plan
from gsd.core.musthaves import (
    Check,
    check_artifact,
    check_key_link,
    check_reference,
    declared,
    references,
)
from gsd.formats.lines import fenced_ranges

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
