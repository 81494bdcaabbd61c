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

from gsd.dispatch import TaskDispatch
from gsd.errors import GsdError, InputError
from gsd.git import Git

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
    """Every program the run will start can be found (named, with how to install it)."""
    path = environ.get("PATH", os.defpath)
    for dispatch in dispatches:
        if not dispatch.argv:
            continue  # a human checkpoint: nobody is spawned
        program = dispatch.argv[0]
        if "/" in program and not os.path.isabs(program):
            program = str(root / program)
        if shutil.which(program, path=path) is not None:
            continue
        where = f"plan {dispatch.plan} task {dispatch.task}, agent {dispatch.agent}"
        runner = dispatch.runner or "command"
        how = INSTALL.get(runner)
        hint = (
            f"install it ({how}) or put it on PATH"
            if how
            else f"check `command:` in the {dispatch.agent} agent file"
        )
        raise GsdError(f"the {runner} runner program `{dispatch.argv[0]}` ({where}) is not "
                       "installed or not on PATH; nothing was run", hint=hint)  # fmt: skip
