"""What must hold before the first agent of a run starts (one line and exit 2 if not).

Found after agents have run, each of these cost time and was logged against a
specialist that had done nothing wrong; found here, nothing has been spawned yet.
"""

from __future__ import annotations

import os
import posixpath
import shlex
import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from gsd.core.errors import GsdError, InputError
from gsd.core.words import plural
from gsd.io.dispatch import TaskDispatch
from gsd.io.git.repo import Git, Status
from gsd.io.plans.agentscan import bundled_agents_dir

# How to get each runner program (SPEC 5), for the line that says it is missing.
INSTALL = {
    "claude": "npm install -g @anthropic-ai/claude-code",
    "gemini": "npm install -g @google/gemini-cli",
    "codex": "npm install -g @openai/codex",
}
LOCK_WAIT_S = 3.0  # an editor's `git status` holds index.lock for milliseconds
NAMED_FILES = 3  # uncommitted files a hint names one by one; more are named by folder


def check_tree(git: Git, *, in_place: bool, allow_dirty: bool) -> None:
    """A repository gsd can work in: a first commit, no merge or rebase half done, and
    (in place only) no uncommitted changes to tracked files, which an agent's rollback
    could not tell from its own. Plans run in worktrees leave the user's files alone."""
    status = git.status() if in_place else git.branch_status()
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
    detached = detached_message(git, status)
    if detached is not None:
        raise InputError(f"{detached[0]}; nothing was run", hint=detached[1])
    if in_place and status.changed and not allow_dirty:
        shown = ", ".join(sorted(status.changed)[:5])
        raise InputError(
            f"workflow.use_worktrees is false (agents run in your checkout) and it has "
            f"uncommitted changes: {shown}; nothing was run",
            hint="commit or stash them first, or pass --allow-dirty to snapshot them",
        )


def check_identity(git: Git) -> None:
    """git can name the author and committer of gsd's commits: a run whose commits would
    fail never starts an agent whose work it could not keep."""
    for who in ("AUTHOR", "COMMITTER"):
        done = git.git("var", f"GIT_{who}_IDENT", ok=(0, 128))
        if done.status != 0:
            raise InputError(
                f"git cannot name the {who.lower()} of gsd's commits in {git.root} "
                "(no user.name or user.email); nothing was run",
                hint='git config --global user.name "Your Name" && '
                "git config --global user.email you@example.com",
            )


def detached_message(git: Git, status: Status) -> tuple[str, str] | None:
    """What is wrong with a detached HEAD (gsd merges into the branch HEAD is on), and
    the `git switch` that fixes it: to the branch at HEAD when there is one; None on a
    branch (or before the first commit)."""
    if status.head is None or status.branch is not None:
        return None
    listed = git.out(
        "for-each-ref", "--format=%(refname:short)", "--points-at", "HEAD", "refs/heads"
    )
    at_head = listed.split()
    switch = f"git switch {at_head[0]}" if at_head else "git switch -c <new-branch>"
    return (
        f"HEAD is detached at {status.head[:7]} in {git.root}: gsd merges each plan's work "
        "into the branch you are on",
        f"switch to a branch first: {switch}",
    )


def files_read(
    root: Path, git_root: Path, plans: Iterable[str], dispatches: Iterable[TaskDispatch]
) -> tuple[list[Path], set[Path]]:
    """What a plan's worktree must hold for the run to do what the disk says: the `plans`
    (paths from `root`, the project's), then each agent's file, and the files a command
    agent's `command` names by a relative path (the spawn finds them in the worktree);
    what gsd ships or lies outside the repository is left out. Second, the agent files:
    gsd reads them from the checkout, so one git ignores is the user's to keep local."""
    bundled = bundled_agents_dir().resolve()
    found = [(root / p).resolve() for p in plans]
    agent_files = set()
    for dispatch in dispatches:
        source = Path(dispatch.agent_source).resolve() if dispatch.agent_source else None
        if source is not None and not source.is_relative_to(bundled):
            found.append(source)
            agent_files.add(source)
        if dispatch.runner != "command":
            continue
        words = [w for w in dispatch.argv if w and not os.path.isabs(w)]
        found += [(root / w).resolve() for w in words if (root / w).is_file()]
    return [f for f in dict.fromkeys(found) if f.is_relative_to(git_root)], agent_files


def uncommitted(git: Git, files: tuple[list[Path], set[Path]]) -> list[tuple[str, str]]:
    """The files (absolute, inside the repository; `files_read`'s) whose last commit is
    not what is on disk, in the order given, each as (path from the repository root, what
    is wrong): a plan's worktree, made from HEAD, would not hold them as they are here."""
    paths, local = files
    rel = {f: Path(os.path.relpath(f, git.root)).as_posix() for f in paths}
    if not rel:
        return []
    status = git.status(rel.values())
    listed = git.out(
        "ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD", "--", *rel.values()
    )
    in_head = set(filter(None, listed.split("\0")))
    found = []
    for path, name in rel.items():
        if name in status.untracked or (name not in in_head and name in status.changed):
            found.append((name, "is not committed"))
        elif name not in in_head and path not in local:
            found.append((name, "is not committed (git ignores it)"))
        elif name in status.changed:
            found.append((name, "has changes that are not committed"))
    return found


def committed_message(found: list[tuple[str, str]]) -> tuple[str, str]:
    """The one line that names the first uncommitted file, and the hint: the commit to make."""
    rel, wrong = found[0]
    more = f" (and {plural(len(found) - 1, 'more file')})" if len(found) > 1 else ""
    message = (
        f"{rel} {wrong}{more}: plans run in worktrees made from the last commit, which "
        "have only what is committed"
    )
    force = " -f" if any("ignores" in w for _, w in found) else ""
    named = [r for r, _ in found]
    if len(named) > NAMED_FILES and not force:  # `git add -f FOLDER` would take in too much
        folders = list(dict.fromkeys(posixpath.dirname(r) or r for r in named))
        named = [f for f in folders if not any(f.startswith(o + "/") for o in folders)]
    paths = " ".join(map(shlex.quote, named))
    return message, f'commit first: git add{force} {paths} && git commit -m "plans and agents"'


def check_committed(git: Git, files: tuple[list[Path], set[Path]]) -> None:
    """Every plan and agent program the run reads from its worktrees is committed as it
    is on disk: one line naming the first that is not, and the commit to make."""
    found = uncommitted(git, files)
    if found:
        message, hint = committed_message(found)
        raise InputError(f"{message}; nothing was run", hint=hint)


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


class Missing(NamedTuple):
    """A program a run would start and cannot find."""

    program: str  # argv[0] as the agent's spawn is given it
    first: TaskDispatch  # the first task that needs it
    needed_by: int  # how many tasks need it
    fallback: bool  # needed only by the fallback agent (`voltagent.fallback_on_error`)
    looked: str  # where it was looked for: "on PATH" or an absolute path

    @property
    def runner(self) -> str:
        return self.first.runner or "command"

    def install(self) -> str:
        """How to get it: the runner's install line, or where a command was looked for."""
        how = INSTALL.get(self.runner)
        off = ", or set `voltagent.fallback_on_error` to false" if self.fallback else ""
        if how:
            return f"install it ({how}) or put it on PATH{off}"
        return f"check `command:` in the {self.first.agent} agent file; looked {self.looked}{off}"

    def named(self) -> str:
        more = self.needed_by - 1
        tail = f", and {plural(more, 'more task')}" if more else ""
        who = f"fallback agent {self.first.agent}" if self.fallback else f"agent {self.first.agent}"
        return (
            f"the {self.runner} runner program `{self.program}` (plan {self.first.plan} "
            f"task {self.first.task}, {who}{tail})"
        )


def missing_programs(
    dispatches: Iterable[TaskDispatch],
    root: Path,
    environ: Mapping[str, str],
    fallbacks: Iterable[TaskDispatch] = (),
) -> list[Missing]:
    """Every program the run would start and cannot find, each with the first task that
    needs it; a program only the fallback agent needs is marked so."""
    found: dict[str, Missing] = {}
    needing: dict[str, set[tuple[str, int]]] = {}  # program -> the tasks that need it
    present: set[str] = set()
    for fallback, group in ((False, dispatches), (True, fallbacks)):
        for dispatch in group:
            program = dispatch.argv[0] if dispatch.argv else None  # None: a person
            if program is None or program in present:
                continue
            if program not in found:
                if find_program(program, root, environ) is not None:
                    present.add(program)
                    continue
                looked = where_looked(program, root)
                found[program] = Missing(
                    program=program, first=dispatch, needed_by=0, fallback=fallback, looked=looked
                )
            needing.setdefault(program, set()).add((dispatch.plan, dispatch.task))
    return [m._replace(needed_by=len(needing[p])) for p, m in found.items()]


def missing_message(missing: list[Missing]) -> tuple[str, str]:
    """One line naming every missing program, and the hint: how to get each."""
    verb = "is" if len(missing) == 1 else "are"
    named = "; ".join(m.named() for m in missing)
    hints = "; ".join(dict.fromkeys(m.install() for m in missing))
    return f"{named} {verb} not installed or not on PATH", hints


def check_runners(
    dispatches: Iterable[TaskDispatch],
    root: Path,
    environ: Mapping[str, str],
    fallbacks: Iterable[TaskDispatch] = (),
) -> None:
    """Every program the run will start can be found (the fallback agent's too): one
    line naming each missing one, the first task that needs it, and how to get it."""
    missing = missing_programs(dispatches, root, environ, fallbacks)
    if missing:
        message, hint = missing_message(missing)
        raise GsdError(f"{message}; nothing was run", hint=hint)


def where_looked(program: str, root: Path) -> str:
    """Where `find_program` looks for `program`, said in words."""
    if "/" not in program:
        return "on PATH"
    return f"for {program if os.path.isabs(program) else root / program}"


def find_program(program: str, root: Path, environ: Mapping[str, str]) -> str | None:
    """Where `program` (an argv[0]) is, as the agent's spawn will look: on PATH, or
    relative to the repository root when it holds a slash; None when it is not there."""
    path = environ.get("PATH", os.defpath)
    if "/" in program and not os.path.isabs(program):
        program = str(root / program)
    return shutil.which(program, path=path)


def marked(dispatches: list[TaskDispatch], missing: list[Missing]) -> list[TaskDispatch]:
    """Each dispatch whose program is missing with what is missing and how to get it
    (its `missing`), for the dry run, which shows the schedule all the same."""
    by_program = {m.program: m for m in missing}
    out = []
    for dispatch in dispatches:
        found = by_program.get(dispatch.argv[0]) if dispatch.argv else None
        if found is not None:
            note = f"`{found.program}` is not installed or not on PATH: {found.install()}"
            dispatch = dispatch._replace(missing=note)
        out.append(dispatch)
    return out
