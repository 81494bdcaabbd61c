"""`gsd hooks install|uninstall`: a git pre-commit hook that validates the staged plans."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from gsd.core import layout
from gsd.core.errors import GsdError, UsageError
from gsd.formats.files import write_atomic

HOOK = "pre-commit"
# Where a hook that was there before gsd's is kept (and run from) until uninstall.
PREVIOUS = HOOK + ".gsd-previous"
# How gsd recognises its own hook: never overwrite or remove a file without this line.
MARKER = "# gsd-plans pre-commit hook: written by `gsd hooks install`"
# The plan files of the project at the top of the repository (SPEC 1: names end in -PLAN.md).
PATHSPEC = ":(glob).planning/**/*-PLAN.md"

# POSIX sh, so that a commit touching no plan file costs one `git diff` and no Python.
# Nothing read from git is ever evaluated: file names only ever travel as quoted "$@".
_SCRIPT = """\
#!/bin/sh
@MARKER@
# Remove it with `gsd hooks uninstall` (which puts back any hook it replaced).
# It runs the hook it replaced first (whose failure still blocks the commit), then
# `gsd validate --staged` on the plan files the commit adds or changes.
GSD=@GSD@

previous="$0@SUFFIX@"
if [ -x "$previous" ]; then
    "$previous" "$@" || exit $?
fi

plans=$(git -c core.quotePath=false diff --cached --name-only --no-renames --no-ext-diff \\
    --diff-filter=ACMT -- '@PATHSPEC@') || exit $?
[ -n "$plans" ] || exit 0

# one argument per name; a name git had to quote (a tab, a newline, ...) is not
# passed on: then every staged plan is validated instead
set --
while IFS= read -r path; do
    case $path in
        '"'*) set --; break ;;
    esac
    set -- "$@" "$path"
done <<EOF
$plans
EOF

if [ ! -x "$GSD" ]; then
    found=$(command -v gsd) || {
        echo "gsd pre-commit hook: cannot run gsd (${GSD:-no path recorded} is not there and" \\
            "no gsd is on PATH); install gsd-plans and run 'gsd hooks install' again," \\
            "or 'gsd hooks uninstall'" >&2
        exit 1
    }
    GSD=$found
fi
"$GSD" validate --staged -- "$@" && exit 0
status=$?
echo "gsd pre-commit hook: commit blocked (fix the plans above and git add them;" \\
    "git commit --no-verify skips the check)" >&2
exit $status
"""


class Report(NamedTuple):
    """What a hooks command did, as lines for the user, and warnings."""

    lines: list[str]
    warnings: list[str]


class _Repo(NamedTuple):
    hooks: Path
    top: Path


def render_hook(program: str) -> str:
    """The hook script, running `program` (an absolute path; '' for `gsd` on PATH)."""
    return (
        _SCRIPT.replace("@MARKER@", MARKER)
        .replace("@GSD@", shlex.quote(program))
        .replace("@PATHSPEC@", PATHSPEC)
        .replace("@SUFFIX@", PREVIOUS.removeprefix(HOOK))
    )


def find_gsd() -> str | None:
    """The gsd program running now (its console script), else the one on PATH."""
    names = [sys.argv[0]] if Path(sys.argv[0]).name == "gsd" else []
    for name in [*names, "gsd"]:
        found = shutil.which(name)
        if found:
            return os.path.abspath(found)
    return None


def is_ours(path: Path) -> bool:
    """Whether `path` is a hook gsd wrote (it holds the marker line)."""
    try:
        with open(path, "rb") as handle:
            return MARKER.encode() in handle.read(64 * 1024)
    except OSError:  # missing, a directory, unreadable: not ours, so never touched
        return False


def install(cwd: Path, program: str | None = None) -> Report:
    """Install gsd's pre-commit hook in the hooks folder git uses (core.hooksPath too).

    A hook that is already there is moved to `pre-commit.gsd-previous` and run by
    gsd's hook; gsd's own hook is rewritten only when it changed.
    """
    repo = _repo(cwd)
    warnings = _nested_project_warning(cwd, repo.top)
    if program is None:
        program = find_gsd()
        if program is None:
            warnings.append("no gsd program found; the hook will look for `gsd` on PATH")
    else:
        program = checked_program(program)
    hook, previous = repo.hooks / HOOK, repo.hooks / PREVIOUS
    text = render_hook(program or "")
    lines: list[str] = []
    moved = False
    if is_ours(hook):
        if hook.read_bytes() == text.encode() and os.access(hook, os.X_OK):
            already = f"gsd's pre-commit hook is already installed: {_show(hook, cwd)}"
            return Report([already], warnings)
        action = "updated"
    else:
        action = "installed"
        if _exists(hook):
            if _exists(previous):
                raise UsageError(
                    f"{_show(hook, cwd)} is not gsd's hook, and {PREVIOUS} (a hook gsd kept "
                    "earlier) is there too",
                    hint="move one of them away, then run gsd hooks install again",
                )
            _guard(os.rename, hook, previous)
            moved = True
            lines.append(
                f"moved your hook to {_show(previous, cwd)}: gsd's hook runs it first, and "
                "its failure still blocks a commit"
            )
        elif _exists(previous):
            lines.append(f"{_show(previous, cwd)} (from an earlier install) runs first")
    try:
        _guard(write_atomic, hook, text, mode=0o755)
    except GsdError:
        if moved:  # leave things as they were: the user's hook back in its place
            os.rename(previous, hook)
        raise
    runs = f"runs {program or 'gsd'} validate --staged on the plan files a commit adds or changes"
    return Report([f"{action} {_show(hook, cwd)}: {runs}", *lines], warnings)


def uninstall(cwd: Path) -> Report:
    """Remove gsd's pre-commit hook and put back the hook it replaced, byte for byte.

    Not installed is not an error: nothing is touched and the report says so.
    """
    repo = _repo(cwd)
    hook, previous = repo.hooks / HOOK, repo.hooks / PREVIOUS
    if not is_ours(hook):
        if _exists(hook):
            return Report([f"{_show(hook, cwd)} is not gsd's hook: left as it is"], [])
        if _exists(previous):
            _guard(os.rename, previous, hook)
            return Report([f"restored {_show(hook, cwd)} from {PREVIOUS}"], [])
        return Report([f"no gsd pre-commit hook in {_show(repo.hooks, cwd)}: nothing to do"], [])
    if _exists(previous):
        _guard(os.rename, previous, hook)  # replaces gsd's hook in one step; mode kept
        return Report([f"removed gsd's hook and restored your {_show(hook, cwd)}"], [])
    _guard(os.unlink, hook)
    return Report([f"removed {_show(hook, cwd)}"], [])


def _repo(cwd: Path) -> _Repo:
    """The hooks folder git runs hooks from (core.hooksPath, worktrees) and the top level."""
    from gsd.io.git import command as gitexec

    done = gitexec.call(
        ["rev-parse", "--show-toplevel", "--git-path", "hooks"], cwd=cwd, read_only=True
    )
    if done.status != 0:
        reason = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise UsageError(
            f"gsd hooks needs a git work tree: {reason}",
            hint="run it inside a git repository",
            details=gitexec.details(done.args, done),
        )
    top, hooks = done.stdout.rstrip("\n").split("\n")[:2]
    # `--git-path` answers relative to cwd unless the path is absolute
    return _Repo(Path(os.path.normpath(cwd / hooks)), Path(top))


def _nested_project_warning(cwd: Path, top: Path) -> list[str]:
    """The hook checks `.planning/` at the top level only; say so if this project is not there."""
    for folder in (cwd.resolve(), *cwd.resolve().parents):
        if (folder / layout.PLANNING).is_dir():
            if folder != top.resolve():
                return [
                    f"the hook validates plans under {top / layout.PLANNING} only, not "
                    f"{folder / layout.PLANNING}"
                ]
            break
        if folder == top.resolve():
            break
    return []


def checked_program(program: str) -> str:
    """`--gsd PROGRAM` as an absolute path; not an executable file is a usage error."""
    path = os.path.abspath(program)  # the hook runs from the top of the work tree
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise UsageError(f"--gsd {program}: not an executable file")
    return path


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()  # a dangling symlink is a hook too


def _show(path: Path, cwd: Path) -> str:
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return str(path)


def _guard(action: Callable[..., object], *args: object, **kwargs: object) -> None:
    """Run a file operation; an OSError becomes one line naming the file."""
    try:
        action(*args, **kwargs)
    except OSError as exc:
        where = exc.filename or args[0]
        raise GsdError(f"{where}: {exc.strerror or exc}", hint="check the hooks folder") from None
