"""Whether a plan is done: its SUMMARY.md, unless an agent's task commit brought it
(SPEC 0 of 2026-11-27, "Done means done").

Every change an agent makes reaches git only through a task commit, which carries a
`Gsd-Task` trailer (gsd squashes the agent's own commits into it). So a SUMMARY.md
counts when the newest commit that touched it is anything else: gsd's own `docs(...)`
commit, or the user's (an upstream-GSD project's hand-written summaries), or when it
is not committed at all (the user's, or gsd's with `git.commit_docs: false`; no agent
reaches the user's checkout: the sandbox keeps it out, and without one
`gsd.io.confine.userguard` moves what it leaves there aside). One SUMMARY.md that a task
commit brought is not "done", with a one-line note saying so.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from gsd.formats.planning import summaryread
from gsd.io.git import command as gitexec

_lock = threading.Lock()
# a phase folder -> (its SUMMARY files' stamps, the forged ones: name -> task commit)
_seen: dict[Path, tuple[tuple[tuple[str, int, int, int, int], ...], dict[str, str]]] = {}
_noted: set[Path] = set()


def find(folder: Path | str, plan_id: str) -> Path | None:
    """The plan's SUMMARY.md in that phase folder when it makes the plan done, else None."""
    return finder(folder)(plan_id)


def finder(folder: Path | str, whole: TaskSummaries | None = None) -> Callable[[str], Path | None]:
    """`find` for the plans of one phase folder, its SUMMARY files looked over (and git
    asked which a task commit brought) once for them all, when the first is found; none
    asked when `whole` (the project's one look) says no task commit brought any."""
    brought: dict[str, str] | None = None

    def find_one(plan_id: str) -> Path | None:
        nonlocal brought
        found = summaryread.find(folder, plan_id)
        if found is None:
            return None
        if brought is None:
            brought = {} if whole is not None and whole.none_in(Path(folder)) else None
            brought = forged(Path(folder)) if brought is None else brought
        return _unless_forged(found, plan_id, brought.get(found.name))

    return find_one


class TaskSummaries:
    """Whether any task commit (one with a `Gsd-Task` trailer) that HEAD reaches changed a
    SUMMARY file below the project's root: one `git log` for the whole project, asked
    when a phase folder first needs it. When none did, no folder's `forged` can name one
    (its `git log` lists a subset of those commits), and none is asked; when one did, or
    git cannot say, each folder asks its own as before."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._none: bool | None = None

    def none_in(self, folder: Path) -> bool:
        """True when `folder` is in the project's repository and no task commit ever
        changed a SUMMARY file of the project."""
        if not _same_repository(self.root, folder):
            return False
        if self._none is None:
            self._none = _no_task_summary(self.root)
        return self._none


def _same_repository(root: Path, folder: Path) -> bool:
    """`folder` is below `root` with no `.git` on the way (no nested repository)."""
    try:
        parts = folder.relative_to(root).parts
    except ValueError:
        return False
    return not any(
        os.path.lexists(root.joinpath(*parts[: n + 1], ".git")) for n in range(len(parts))
    )


def _no_task_summary(root: Path) -> bool:
    """Every commit HEAD reaches (`--full-history`: no side of a merge left out) that
    changed a `*SUMMARY.md` below `root`, merges aside (they name no file): none a task
    commit. False when git fails otherwise (each folder then asks its own `git log`)."""
    done = gitexec.call(
        [
            "log",
            "-z",
            "--full-history",
            "--no-merges",
            "--format=%x1e%(trailers:key=Gsd-Task,valueonly)",
            "HEAD",
            "--",
            "*SUMMARY.md",
        ],
        cwd=root,
        read_only=True,
    )
    if done.status != 0:  # none when there is no commit yet (each folder's fails the same)
        return _unborn(root)
    return not any(record.replace("\0", "").strip() for record in done.stdout.split("\x1e")[1:])


def _unborn(root: Path) -> bool:
    """The repository has no commit yet (`rev-parse --verify --quiet` says so with status
    1 and nothing else): every `git log HEAD` there fails, `_task_brought` finds none."""
    done = gitexec.call(["rev-parse", "--verify", "--quiet", "HEAD"], cwd=root, read_only=True)
    return done.status == 1 and not done.stdout.strip()


def _unless_forged(found: Path, plan_id: str, commit: str | None) -> Path | None:
    if commit is None:
        return found
    with _lock:
        first = found not in _noted
        _noted.add(found)
    if first:
        sys.stderr.write(
            f"gsd: warning: {found.name} came in task commit {commit[:12]} (an agent wrote "
            f"it), not from gsd: plan {plan_id} is not done; `git rm` it to run the plan, "
            "or commit it yourself if the plan is done\n"
        )
    return None


def exists(folder: Path | str, plan_id: str) -> bool:
    """Whether the plan is done (`find`)."""
    return find(folder, plan_id) is not None


def forged(folder: Path) -> dict[str, str]:
    """The SUMMARY files of a phase folder whose newest commit is a task commit, by name
    -> that commit; asked of git again only when one of the files changed on disk."""
    stamps = _stamps(folder)
    if not stamps:
        return {}
    with _lock:
        known = _seen.get(folder)
    if known is not None and known[0] == stamps:
        return known[1]
    found = _task_brought(folder)
    with _lock:
        _seen[folder] = (stamps, found)
    return found


def _stamps(folder: Path) -> tuple[tuple[str, int, int, int, int], ...]:
    found = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return ()
    for entry in entries:
        if entry.name.endswith("SUMMARY.md"):
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found.append(
                (entry.name, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
            )
    return tuple(sorted(found))


def _task_brought(folder: Path) -> dict[str, str]:
    """One `git log` of the folder's SUMMARY files, newest first: the first commit that
    names a file decides. Not a repository (a corpus folder), no git: none forged."""
    done = gitexec.call(
        [
            "log",
            "-z",
            "--format=%x1e%H%x00%(trailers:key=Gsd-Task,valueonly)",
            "--name-only",
            "--relative",
            "HEAD",
            "--",
            "*SUMMARY.md",
        ],
        cwd=folder,
        read_only=True,
    )
    if done.status != 0:
        return {}
    decided: dict[str, str] = {}
    for record in done.stdout.split("\x1e")[1:]:
        sha, _, rest = record.partition("\0")
        trailers, _, names = rest.partition("\0")
        for name in names.split("\0"):
            name = name.strip("\n")
            if name and "/" not in name and name not in decided:
                decided[name] = sha if trailers.strip() else ""
    return {name: sha for name, sha in decided.items() if sha}
