"""`gsd validate` end to end, its options, and their parser for the git-hook fast path.

Click costs about three times the interpreter's own start-up, and `gsd validate`
runs on every commit. So `gsd.cli.entry` parses validate's few options here, without
Click, and hands anything else (`--help`, a typo, a bad value) to Click, which
gives the usual help and error messages. Both read OPTIONS, the one table of them
(gsd.cli.read_commands builds the Click command from it), and both call `run`.
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
    select: str | None = None  # rule codes, comma-separated: over config.json's
    ignore: str | None = None  # ... added to config.json's


class Option(NamedTuple):
    """One option of `gsd validate`: its names, the Options field it sets, its help."""

    names: tuple[str, ...]
    field: str
    help: str
    kind: str = "text"  # flag, text, format (one of FORMATS), count (a whole number >= 1)
    metavar: str | None = None


OPTIONS = (
    Option(("--phase",), "phase", "Validate one phase (a number such as 1 or 02.1)."),
    Option(("--staged",), "staged", "Validate the blobs staged in the git index.", "flag"),
    Option(("--strict",), "strict", "Treat warnings as failures (exit 1).", "flag"),
    Option(("--format",), "fmt", "", "format"),  # its help: gsd.cli.shared.format_option
    Option(
        ("-j", "--jobs"),
        "jobs",
        "Processes for large trees (default: one per CPU; 1 for none).",
        "count",
    ),
    Option(
        ("--base",),
        "base",
        "Fail (exit 1) only on findings that were not there at REV, such as a pull "
        "request's base; every finding is still reported.",
        metavar="REV",
    ),
    Option(
        ("--select",),
        "select",
        "Report only these rules: codes or their starts, comma-separated (GSD01 is "
        "GSD010-GSD019); replaces config.json's validate.select.",
        metavar="CODES",
    ),
    Option(
        ("--ignore",),
        "ignore",
        "Do not report these rules (codes or their starts, comma-separated), besides "
        "config.json's validate.ignore.",
        metavar="CODES",
    ),
)
_BY_NAME = {name: option for option in OPTIONS for name in option.names}


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
        option = _BY_NAME.get(name)
        if option is None or (option.kind == "flag" and eq):
            return None
        if option.kind == "flag":
            given[option.field] = True
            continue
        if not eq:
            following = next(rest, None)
            if following is None:
                return None
            value = following
        given[option.field] = value
    return _checked(paths, given)


def _checked(paths: list[str], given: dict[str, Any]) -> Options | None:
    """The options with their values checked and converted, or None for Click to explain."""
    for option in OPTIONS:
        text = given.get(option.field)
        if not isinstance(text, str):
            continue  # absent, or a flag
        if option.kind == "format" and text not in FORMATS:
            return None
        if option.kind == "count":
            # isdecimal, not isdigit: "²" is a digit int() refuses; Click explains bad values
            if not text.isdecimal() or int(text) < 1:
                return None
            given[option.field] = int(text)
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
    root, report = validate_options(options)  # before any output: a bad code is one line
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
    from gsd.core.rules.select import selection
    from gsd.io.plans.phases import resolve_phase
    from gsd.io.plans.project import Project
    from gsd.io.plans.sources import relative_to_root
    from gsd.io.plans.validate import configured_selection, validate

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
    chosen = selection(configured_selection(project.source), options.select, options.ignore)
    report = validate(project, targets, strict=options.strict, jobs=options.jobs, selection=chosen)
    return root, report


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
