"""What must hold before the first agent of a run starts (one line and exit 2 if not).

Found after agents have run, each of these cost time and was logged against a
specialist that had done nothing wrong; found here, nothing has been spawned yet.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from gsd.core.errors import GsdError, InputError
from gsd.io.dispatch import TaskDispatch
from gsd.io.git import Git

# How to get each runner program (SPEC 5), for the line that says it is missing.
INSTALL = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "gemini": "npm install -g @google/gemini-cli",
    "codex": "npm install -g @openai/codex",
}
LOCK_WAIT_S = 3.0  # an editor's `git status` holds index.lock for milliseconds


def check_tree(git: Git, *, in_place: bool, allow_dirty: bool) -> None:
    """A repository gsd can work in: a first commit, no merge or rebase half done, and
    (in place only) no uncommitted changes to tracked files, which an agent's rollback
    could not tell from its own. Plans run in worktrees leave the user's files alone."""
    status = git.status()
    if status.head is None:
        raise InputError(
            f"the repository has no commits yet: {git.root}", hint="make an initial commit first"
        )
    operation = git.operation_in_progress()
    if operation:
        raise InputError(
            f"a {operation} is in progress in {git.root}; nothing was run",
            hint=f"finish or abort the {operation} first",
        )
    if in_place and status.changed and not allow_dirty:
        shown = ", ".join(sorted(status.changed)[:5])
        raise InputError(
            f"workflow.use_worktrees is false (agents run in your checkout) and it has "
            f"uncommitted changes: {shown}; nothing was run",
            hint="commit or stash them first, or pass --allow-dirty to snapshot them",
        )


def check_index_lock(git: Git, wait_s: float = LOCK_WAIT_S) -> None:
    """No other git process holds the index: a lock that lasts is one line, not a
    task failure later (a lock held for a moment, by an editor, is waited out)."""
    deadline = time.monotonic() + wait_s
    while (lock := git.index_lock_held()) is not None:
        if time.monotonic() >= deadline:
            raise InputError(
                f"another git process holds {lock}; nothing was run",
                hint="wait for it to finish; if no git process is running, delete the file",
            )
        time.sleep(0.1)


def check_runners(
    dispatches: Iterable[TaskDispatch], root: Path, environ: Mapping[str, str]
) -> None:
    """Every program the run will start can be found: one line naming each missing one,
    the first task that needs it, and how to install it."""
    missing: dict[str, tuple[TaskDispatch, int]] = {}  # program -> (first task, tasks)
    for dispatch in dispatches:
        if not dispatch.argv:
            continue  # a human checkpoint: nobody is spawned
        program = dispatch.argv[0]
        if program in missing:
            missing[program] = (missing[program][0], missing[program][1] + 1)
        elif find_program(program, root, environ) is None:
            missing[program] = (dispatch, 1)
    if not missing:
        return
    named, hints = [], []
    for program, (first, count) in missing.items():
        more = f", and {count - 1} more task{'s' if count > 2 else ''}" if count > 1 else ""
        runner = first.runner or "command"
        named.append(f"the {runner} runner program `{program}` (plan {first.plan} task "
                     f"{first.task}, agent {first.agent}{more})")  # fmt: skip
        how = INSTALL.get(runner)
        hints.append(f"install it ({how}) or put it on PATH" if how
                     else f"check `command:` in the {first.agent} agent file")  # fmt: skip
    verb = "is" if len(named) == 1 else "are"
    raise GsdError(f"{'; '.join(named)} {verb} not installed or not on PATH; nothing was run",
                   hint="; ".join(dict.fromkeys(hints)))  # fmt: skip


def find_program(program: str, root: Path, environ: Mapping[str, str]) -> str | None:
    """Where `program` (an argv[0]) is, as the agent's spawn will look: on PATH, or
    relative to the repository root when it holds a slash; None when it is not there."""
    path = environ.get("PATH", os.defpath)
    if "/" in program and not os.path.isabs(program):
        program = str(root / program)
    return shutil.which(program, path=path)
