"""`gsd validate` end to end, and its option parser for the git-hook fast path.

Click costs about three times the interpreter's own start-up, and `gsd validate`
runs on every commit. So `gsd.cli.entry` parses validate's few options here, without
Click, and hands anything else (`--help`, a typo, a bad value) to Click, which
gives the usual help and error messages. Both paths call `run`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gsd.core.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from gsd.core.words import plural
from gsd.output import render

if TYPE_CHECKING:
    from gsd.core.models import Diagnostic
    from gsd.core.rules import Report

# The output formats of `gsd validate`, one per renderer (the Click option reads them here).
FORMATS = tuple(render.FORMATS)


class Options(NamedTuple):
    paths: list[str] = []  # never mutated: parse() builds a new list
    phase: str | None = None
    staged: bool = False
    strict: bool = False
    fmt: str = "text"
    jobs: int | None = None
    base: str | None = None  # a revision: only findings new since it fail the run


_FLAGS = {"--staged": "staged", "--strict": "strict"}
_VALUED = {
    "--phase": "phase",
    "--format": "fmt",
    "--jobs": "jobs",
    "-j": "jobs",
    "--base": "base",
}


def parse(args: list[str]) -> Options | None:
    """validate's options, or None when Click should handle the command line."""
    paths: list[str] = []
    given: dict[str, Any] = {}
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            paths.extend(rest)
            break
        if not arg.startswith("-") or arg == "-":
            paths.append(arg)
            continue
        name, eq, value = arg.partition("=")
        if name in _FLAGS and not eq:
            given[_FLAGS[name]] = True
        elif name in _VALUED:
            if not eq:
                following = next(rest, None)
                if following is None:
                    return None
                value = following
            given[_VALUED[name]] = value
        else:
            return None
    if given.get("fmt", "text") not in FORMATS:
        return None
    if "jobs" in given:
        # isdecimal, not isdigit: "²" is a digit int() refuses; Click explains bad values
        if not given["jobs"].isdecimal() or int(given["jobs"]) < 1:
            return None
        given["jobs"] = int(given["jobs"])
    return Options(paths, **given)


def _root(options: Options) -> Path:
    """The project's root; plan files named outside any project are read from here."""
    from gsd.io.plans.project import find_root

    try:
        return find_root(Path.cwd(), hint="run gsd init to create one, or pass plan files")
    except UsageError:
        if options.paths:
            return Path.cwd().resolve()
        raise


def run(options: Options) -> int:
    """Validate what the options name, print the findings, return the exit code."""
    root, report = validate_options(options)
    sys.stdout.write(render.FORMATS[options.fmt](report))
    sys.stdout.flush()
    fails = ("error", "warning") if options.strict else ("error",)
    failing = [d for d in report.diagnostics if d.severity in fails]
    if options.base is not None and failing:
        failing = new_since(root, options.base, failing, staged=options.staged)
        sys.stderr.write(
            f"gsd: {plural(len(failing), 'failing finding')} new since "
            f"{options.base} (the others were there already)\n"
        )
    if options.fmt == "text":
        sys.stderr.write(render.summary(report) + "\n")
    return EXIT_FINDINGS if failing else EXIT_OK


def validate_options(options: Options) -> tuple[Path, Report]:
    """The project's root and the findings in what the options name (paths, a phase or
    all of `.planning/`); `gsd mcp`'s validate tool calls it too."""
    from gsd.core.layout import PLANNING
    from gsd.io.plans.phases import resolve_phase
    from gsd.io.plans.project import Project
    from gsd.io.plans.sources import relative_to_root
    from gsd.io.plans.validate import validate

    if options.paths and options.phase is not None:
        raise UsageError(
            "--phase and PATHS name what to validate twice", hint="pass one or the other"
        )
    root = _root(options)
    if options.paths:
        targets = [relative_to_root(root, p) for p in options.paths]
    elif options.phase is not None:
        phase = resolve_phase(root / PLANNING, options.phase)
        targets = [phase.path.relative_to(root).as_posix()]
    else:
        targets = [PLANNING]
    project = Project(root, staged=options.staged, paths=targets)
    if not options.paths and options.phase is None and not project.source.exists(PLANNING):
        raise UsageError(f"no {PLANNING}/ in {root}", hint="run gsd init, or pass plan files")
    return root, validate(project, targets, strict=options.strict, jobs=options.jobs)


def new_since(
    root: Path, base: str, found: list[Diagnostic], *, staged: bool = False
) -> list[Diagnostic]:
    """The findings of `found` that `gsd validate` did not report at revision `base`, as
    `gsd diff` tells them apart: by code, path and message, never by line (an edit
    above a problem moves it without making it new), a moved plan keeping its own.
    A finding outside `.planning/` (a plan file named on the command line) has no
    counterpart at `base` and is new."""
    from gsd.commands.diff import Side, compare
    from gsd.commands.revisions import base_snapshot, load_snapshot
    from gsd.core.layout import PLANNING
    from gsd.io.plans.sources import GitIndex, Source, WorkingTree

    source: Source = GitIndex(root, [PLANNING]) if staged else WorkingTree(root)
    head = load_snapshot(root, source, Side("head", None, False))
    new = set(compare(base_snapshot(root, base), head).new_diagnostics)
    known = set(head.diagnostics)
    return [d for d in found if d in new or d not in known]
