"""`gsd hooks install --claude|--gemini` and `gsd hooks run`: gsd inside the agent CLIs.

Hooks in the project's `.claude/settings.json` or `.gemini/settings.json`. By default two:
after the agent writes or edits a plan file, gsd validates it and hands the errors back
to the model; when a session starts, the agent gets `gsd status` in a few lines.
`--hook` adds the others (gsd/commands/lifehooks.py): session end, before a tool, after
a delegated agent, before context compaction. The hook command is `<gsd> hooks run
<cli>-<what>`: it reads the CLI's JSON on stdin, so no plan text is ever part of a shell
line. The protocol is in gsd/formats/runners/agenthooks.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gsd.core.errors import EXIT_FINDINGS, GsdError, UsageError
from gsd.core.words import plural
from gsd.formats.runners import agenthooks
from gsd.formats.runners.agenthooks import (
    DEFAULT_HOOKS,
    HOOK_NAMES,
    POST_EDIT,
    SESSION_START,
    Answer,
    HookInput,
)

# The hook call (`run`) imports little: an edit of a file that is not a plan is answered
# before the validator, the settings files or even pathlib are loaded.
if TYPE_CHECKING:
    from pathlib import Path

    from gsd.commands.hooks import Report

# `gsd hooks run NAME`: the names the installed commands use.
RUN_NAMES = tuple(f"{cli}-{what}" for cli in agenthooks.CLIS for what in HOOK_NAMES)
# gsd.io.plans.sources.PLAN_SUFFIX, spelled here: that module would load pathlib
PLAN_SUFFIX = "-PLAN.md"


def install(cwd: Path, cli: str, program: str | None = None, hooks: tuple[str, ...] = ()) -> Report:
    """Add gsd's hooks to the project's settings for `cli`, keeping all else in it: the
    default two, `hooks` (names of HOOK_NAMES) and any gsd hook the file already holds."""
    import shlex
    import shutil

    from gsd.commands.hooks import Report, checked_program, find_gsd
    from gsd.formats.runners import clisettings

    root = _project_root(cwd)
    warnings: list[str] = []
    if program is None:
        program = find_gsd()
        if program is None:
            warnings.append("no gsd program found; the hooks will run `gsd` from PATH")
    elif "/" not in program:  # a bare name: the hook finds it on PATH (portable settings)
        if shutil.which(program) is None:
            warnings.append(f"no {program} on PATH here; the hooks will fail until there is")
    else:
        program = checked_program(program)
    path = root / clisettings.SETTINGS[cli]
    settings, indent = clisettings.load(path)
    names = (*DEFAULT_HOOKS, *hooks, *clisettings.our_names(settings))
    groups = agenthooks.hook_groups(cli, shlex.quote(program or "gsd"), names)
    updated = clisettings.with_hooks(settings, groups)
    shown = _show(path, cwd)
    if updated == settings:
        return Report([f"gsd's {cli} hooks are already in {shown}"], warnings)
    action = "updated" if clisettings.ours(settings) else "added"
    clisettings.save(path, updated, indent)
    lines = [f"{action} gsd's hooks in {shown}:"] + [f"  {c}" for c in clisettings.ours(updated)]
    return Report(lines, warnings)


def uninstall(cwd: Path, cli: str) -> Report:
    """Take gsd's hooks out of the project's settings for `cli`; nothing else changes."""
    from gsd.commands.hooks import Report
    from gsd.formats.runners import clisettings

    path = _project_root(cwd) / clisettings.SETTINGS[cli]
    shown = _show(path, cwd)
    if not path.exists():
        return Report([f"no {shown}: nothing to do"], [])
    settings, indent = clisettings.load(path)
    if not clisettings.ours(settings):
        return Report([f"no gsd hooks in {shown}: nothing to do"], [])
    remaining = clisettings.without_hooks(settings)
    if not remaining:  # it held gsd's hooks and nothing else: gsd made it
        _remove(path)
        return Report([f"removed {shown} (it held gsd's hooks only)"], [])
    clisettings.save(path, remaining, indent)
    return Report([f"removed gsd's hooks from {shown}"], [])


def call(name: str, read: Callable[[], str]) -> Answer:
    """`gsd hooks run NAME`: `run` on what `read` gives (stdin, read once NAME is known
    to be a hook's); a problem is one line on stderr and exit 1, never 2, which would
    block the agent's edit."""
    try:
        if name not in RUN_NAMES:
            from gsd.core.words import did_you_mean

            close = did_you_mean(name, RUN_NAMES)
            known = f"use one of {', '.join(RUN_NAMES)}"
            raise UsageError(f"no hook named {name!r}", hint=f"{close} {known}" if close else known)
        return run(name, read())
    except GsdError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        return Answer(EXIT_FINDINGS, stderr=f"gsd hooks run {name}: {exc.message}{hint}\n")


def run(name: str, stdin_text: str) -> Answer:
    """Answer one hook call: `name` is one of RUN_NAMES, `stdin_text` what the CLI sent."""
    cli, _, what = name.partition("-")
    hook_input = agenthooks.parse_input(stdin_text)
    if what == POST_EDIT:
        return check_edit(cli, hook_input)
    if what == SESSION_START:
        return session_start(cli, hook_input)
    from gsd.commands import lifehooks

    return lifehooks.run(cli, what, hook_input)


def check_edit(cli: str, hook_input: HookInput) -> Answer:
    """Validate the file an edit touched when it is a plan; errors go back to the model."""
    plan = plan_file(hook_input)
    if plan is None:
        return Answer(0)
    from gsd.formats.diagnostics import diagnostic_line
    from gsd.io.plans.project import Project
    from gsd.io.plans.validate import validate

    root, relative = plan
    report = validate(Project(root, paths=[relative]), [relative])
    errors = [d for d in report.diagnostics if d.severity == "error"]
    if not errors:
        return Answer(0)
    lines = [diagnostic_line(d) for d in report.diagnostics]
    head = (
        f"gsd validate: {relative} was saved, but it has {plural(len(errors), 'error')}; "
        f"fix them in the file (`gsd validate {relative}` checks it again):"
    )
    return agenthooks.block_edit(cli, "\n".join([head, *lines]))


def plan_file(hook_input: HookInput) -> tuple[Path, str] | None:
    """The project root and root-relative path of the edited file when it is a plan.

    A plan, as `gsd validate` and the git hook pick them: a name ending in -PLAN.md,
    inside a project's `.planning/` folder; the root is the folder holding `.planning/`.
    """
    if not hook_input.file_path.endswith(PLAN_SUFFIX):
        return None
    from pathlib import Path

    from gsd.core import layout

    path = Path(hook_input.cwd or ".", hook_input.file_path).absolute()
    for folder in path.parents:
        if folder.name == layout.PLANNING:
            root = folder.parent
            if not path.is_file():
                return None  # deleted or moved since: nothing to check
            return root, path.relative_to(root).as_posix()
    return None


def session_start(cli: str, hook_input: HookInput) -> Answer:
    """`gsd status` in a few lines, as context for the agent; nothing without a project."""
    from pathlib import Path

    from gsd.commands.progress import project_status
    from gsd.io.plans.project import Project, find_root

    start = Path(hook_input.cwd or ".")
    try:
        root = find_root(start)
    except UsageError:
        return Answer(0)
    project = Project(root)
    if not project.planning.is_dir():
        return Answer(0)
    from gsd.commands.lifehooks import brief_status

    return agenthooks.add_context(cli, brief_status(project_status(project)))


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError as exc:
        raise GsdError(f"{path}: {exc.strerror or exc}", hint="remove it by hand") from None


def _project_root(cwd: Path) -> Path:
    from gsd.io.plans.project import find_root

    return find_root(cwd, hint="run gsd hooks install in a gsd project (gsd init makes one)")


def _show(path: Path, cwd: Path) -> str:
    try:
        return path.relative_to(cwd.resolve()).as_posix()
    except ValueError:
        return str(path)
