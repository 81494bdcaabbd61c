"""The user's checkout beside a plan's worktree, when no Landlock sandbox keeps agents out
of it: what an agent changed there is put back, and what it displaced is kept.

With Landlock an agent cannot write the user's checkout at all; without it (an old
kernel, macOS, `"sandbox": {"enabled": false}`) gsd keeps, for the length of each
spawn, a snapshot of the checkout's uncommitted state (a `git stash create` commit that
no ref points at, and the untracked files' names) and its ignored secrets. Afterwards
anything that differs is put back as it was, and the bytes it replaced are moved to
`.git/gsd/displaced/{time}/`: a change the user made at the same moment is kept there,
never lost.
"""

from __future__ import annotations

import shutil
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.io.git import guard as gitguard
from gsd.io.git.repo import Git
from gsd.io.git.restore import ProtectedFiles
from gsd.io.plans import specialfiles


class Snapshot(NamedTuple):
    tree: str  # a commit whose tree is the working tree (HEAD's when nothing was changed)
    staged: str  # a commit whose tree is the index
    untracked: frozenset[str]
    secrets: dict[str, gitguard.Saved]
    head: str
    branch: str | None
    special: dict[str, str]  # FIFOs, sockets named like secrets or in .planning/


# One snapshot for all the spawns open at once (the plans of a wave): taken when the
# first starts, so that none is taken after another plan's agent already wrote there.
class _Shared:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.spawns = 1  # how many open spawns use it


_lock = threading.Lock()
_open: dict[Path, _Shared] = {}  # the user's checkout -> its snapshot while spawns run


def take(user: Git) -> Snapshot | None:
    """The user's checkout as it is now (no ref, index or file changes), or the one the
    spawns still open took; None when it cannot be taken (a merge half done there: a
    stash cannot be made), and then nothing is put back either."""
    with _lock:
        shared = _open.get(user.root)
        if shared is not None:
            shared.spawns += 1
            return shared.snapshot
        try:
            head = user.head() or ""
            made = user.stash_create()
            status = user.status()
        except GsdError:
            return None
        tree, staged = (made, f"{made}^2") if made else (head, head)
        snap = Snapshot(
            tree=tree,
            staged=staged,
            untracked=frozenset(status.untracked),
            secrets=ProtectedFiles(user).keep(),
            head=head,
            branch=status.branch,
            special=specialfiles.scan(user.root),
        )
        _open[user.root] = _Shared(snap)
        return snap


def put_back(user: Git, before: Snapshot) -> list[str]:
    """Put the checkout back as `before` found it; returns what had changed, one note each
    (none: nothing did). Displaced bytes go to .git/gsd/displaced/. When HEAD or the
    branch moved meanwhile the user is at work there (a commit, a pull, a switch): then
    nothing is put back, which could revert the user's own commit."""
    status = user.status()
    if (status.head or "", status.branch) != (before.head, before.branch):
        return []
    return _put_back(user, before)


def release(user: Git, before: Snapshot) -> None:
    """A spawn that took `before` is over (however it ended): the last one forgets it."""
    with _lock:
        shared = _open.get(user.root)
        if shared is not None and shared.snapshot is before:
            shared.spawns -= 1
            if not shared.spawns:
                del _open[user.root]


def _put_back(user: Git, before: Snapshot) -> list[str]:
    changed = user.paths_differing(before.tree)
    staged = user.staged_differing(before.staged)
    new = sorted(user.untracked_files() - before.untracked)
    keep = layout.displaced_dir(user.git_dir) / datetime.now(timezone.utc).strftime(
        "%Y%m%dT%H%M%S%fZ"
    )
    special = specialfiles.new_since(user.root, before.special)  # git sees none of them
    for rel in sorted(set(changed) | set(new) | set(special)):
        _displace(user.root, rel, keep)
    if changed:
        user.restore_paths(before.tree, changed, staged=False)
    if staged:
        user.restore_paths(before.staged, staged, staged=True)
    secrets = ProtectedFiles(user).put_back(before.secrets)
    notes = [f"{rel} (changed)" for rel in changed]
    notes += [f"{rel} (staged)" for rel in staged if rel not in changed]
    notes += [f"{rel} (new)" for rel in new]
    notes += [f"{rel} (ignored secret)" for rel in secrets]
    notes += [f"{rel} (a {kind})" for rel, kind in sorted(special.items())]
    return notes


def _displace(root: Path, rel: str, keep: Path) -> None:
    """Move what is at `rel` now into `keep` (nothing there: nothing to keep)."""
    source = root / rel.rstrip("/")
    if not (source.exists() or source.is_symlink()):
        return
    target = keep / rel.rstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(source), str(target))
