"""`gsd init`: create `.planning/` from gsd's bundled template, never overwriting a file."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from gsd.core import layout
from gsd.core.errors import GsdError, InputError, UsageError
from gsd.formats import nofollow
from gsd.formats.files import bundled_dir

CREATED = "created"
KEPT = "kept"


class Scaffolded(NamedTuple):
    """One template file: what became of it (`created` or `kept`), and where."""

    status: str
    path: Path


def template_dir() -> Path:
    """`.planning-template/` in a checkout, `gsd/bundled/planning_template/` when installed."""
    return bundled_dir("planning-template", ".planning-template")


def init(directory: Path) -> list[Scaffolded]:
    """Copy every template file into `directory/.planning/`; files already there are kept."""
    source = template_dir()
    files = sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else []
    if not files:
        raise InputError(f"gsd's planning template is missing ({source})", hint="reinstall gsd")
    planning = directory / layout.PLANNING
    if planning.exists() and not planning.is_dir():
        raise UsageError(f"{planning} exists and is not a directory", hint="move it away first")
    nofollow.trust(directory)  # no link below it followed (a `.planning` link is refused)
    done: list[Scaffolded] = []
    for item in files:
        target = planning / item.relative_to(source)
        done.append(Scaffolded(CREATED if _create(target, item.read_bytes()) else KEPT, target))
    return done


def next_steps(directory: Path | None) -> list[str]:
    """What to do after `gsd init`, in order: the README's quick start, in five lines."""
    steps = [f"cd {directory.as_posix()}"] if directory is not None else []
    steps += [
        "write plans: .planning/phases/01-NAME/01-01-PLAN.md, 01-02-PLAN.md, ...",
        "put agent files in agents/, then: gsd agents sync",
        "no claude installed? set voltagent.fallback_on_error to false in .planning/config.json",
        'commit plans and agents (a run uses the last commit): git add -A && git commit -m "plans"',
        "gsd validate && gsd execute-phase 1 --dry-run",
        "gsd execute-phase 1 && gsd status",
    ]
    return ['next steps (gsd\'s README.md, "Quick start", has an example of each):'] + [
        f"  {n}. {step}" for n, step in enumerate(steps, 1)
    ]


def in_git_work_tree(directory: Path) -> bool:
    """Whether `directory` is inside a git work tree (False when git is missing too)."""
    from gsd.io.git import command as gitexec

    done = gitexec.call(["rev-parse", "--is-inside-work-tree"], cwd=directory, read_only=True)
    return done.status == 0 and done.stdout.strip() == "true"


def _create(target: Path, data: bytes) -> bool:
    """Write a new file; False, touching nothing, when `target` exists in any form."""
    try:
        return nofollow.write_new(target, data)  # exclusive: never replaces what is there
    except nofollow.LinkInPath as exc:
        raise GsdError(f"{target}: cannot create: {exc}", hint="remove the link first") from None
    except OSError as exc:
        raise GsdError(f"{exc.filename or target}: cannot create: {exc.strerror or exc}") from None
