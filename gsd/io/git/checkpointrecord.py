"""What a checkpoint is: its record, its tag's name, and its signed file under .git/gsd."""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from gsd.core import layout
from gsd.io import records
from gsd.io.git import guard as gitguard
from gsd.io.git.repo import SHA_RE, Git

CHECKPOINT_PREFIX = "refs/tags/checkpoint/"
STAMP = "%Y%m%dT%H%M%SZ"
CHECKPOINT_NAME = re.compile(
    r"^refs/tags/checkpoint/(?P<plan>.+)/(?P<task>\d+)-(?P<stamp>\d{8}T\d{6}Z)-[0-9a-z]+$"
)


class Kept(NamedTuple):
    """What a checkpoint keeps byte for byte in this process only (never in its record)."""

    protected: dict[str, gitguard.Saved]  # ignored .env*, *.pem, *.key files
    stash_log: gitguard.Saved  # the stash list (refs/stash's reflog)
    index_stamp: tuple[int, int, int, int] | None  # the index file's stamp: same stamp, same flags
    special: dict[str, str] = {}  # FIFOs, sockets named like secrets or in .planning/


class Checkpoint(NamedTuple):
    """Everything needed to put a repository back exactly as it was before a spawn."""

    tag: str  # full ref name under refs/tags/checkpoint/
    head: str  # the commit HEAD pointed at
    branch: str | None  # short branch name, None when HEAD was detached
    snapshot: str | None  # stash-like commit of uncommitted work (--allow-dirty), or None
    untracked: tuple[str, ...]  # untracked, non-ignored paths that predate the checkpoint
    refs: dict[str, str]  # snapshot_refs() at checkpoint time
    flags: dict[str, str]  # index entries flagged assume-unchanged/skip-worktree (the user's)
    foreign: tuple[str, ...]  # branches then checked out in other worktrees (full names)
    internals: dict[str, str]  # fingerprints of .git hooks, config, info/ (for recovery)
    protected: dict[str, str]  # fingerprints of ignored .env*, *.pem, *.key files
    root: str  # the worktree it belongs to
    mark: int = 0  # gsd's own ref writes after this point are not the agent's
    kept: Kept | None = None  # byte copies, in the process that made the checkpoint
    # the agent ran in a Landlock sandbox that lets it write no git directory: whatever
    # happens to refs and .git internals meanwhile is the user's (or gsd's), never undone
    confined: bool = False

    @property
    def name(self) -> str:
        """The tag as `git tag` lists it, SPEC 6's `git_state`: `checkpoint/01-02/...`."""
        return self.tag.removeprefix("refs/tags/")


class CheckpointTag(NamedTuple):
    """A checkpoint tag found in the repository (`gsd checkpoints list`)."""

    tag: str
    plan_id: str
    task: int
    created: datetime
    sha: str


def gsds_tag(git: Git, ref: str, now: str | None) -> bool:
    """A checkpoint tag as gsd itself left it (another plan's, made or removed while
    this spawn ran): not the agent's doing, whatever the moment it was seen. One an
    agent made, or one of gsd's that an agent removed, is not."""
    return ref.startswith(CHECKPOINT_PREFIX) and git.ledger.ever(ref, now or "")


class CheckpointRecords:
    """The open checkpoints of one worktree, one signed file each under .git/gsd: what a
    killed run needs, never followed through a link."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.folder = layout.checkpoints_dir(git.git_dir)

    def path(self, tag: str) -> Path:
        """The record's file of the checkpoint tagged `tag`."""
        name = tag.removeprefix(CHECKPOINT_PREFIX).replace("/", "_")
        return self.folder / f"{name}.json"

    def save(self, cp: Checkpoint) -> None:
        """Everything `rollback` needs but the byte copies, signed, kept while the tag
        lives: a run killed during a spawn is rolled back by the next one (`recover`)."""
        data: dict[str, Any] = cp._asdict()
        for field in ("mark", "kept"):
            data.pop(field)
        data["untracked"], data["foreign"] = list(cp.untracked), list(cp.foreign)
        records.private_dir(self.folder, under=self.git.git_dir)
        records.write_private(self.path(cp.tag), records.sign(data).encode())

    def remove(self, tag: str) -> None:
        """Remove the checkpoint's record (a missing one is not an error)."""
        if records.safe_dir(self.folder, under=self.git.git_dir):
            self.path(tag).unlink(missing_ok=True)

    def load_all(self) -> tuple[list[Checkpoint], list[str]]:
        """The records gsd wrote and signed here, newest first; every other file in the
        folder is reported once (and removed): gsd never acts on a record it did not write."""
        folder = self.folder
        if not os.path.lexists(folder):
            return [], []
        if not records.safe_dir(folder, under=self.git.git_dir):
            return [], [f"ignored {folder}: a symlink or not a folder (gsd does not follow it)"]
        found, warnings = [], []
        for path in sorted(folder.iterdir(), reverse=True):
            if path.name.startswith("."):  # a temporary file of a write cut short
                path.unlink(missing_ok=True)
                continue
            cp, reason = self._load(path)
            if cp is None:
                warnings.append(f"ignored {path}: {reason} (gsd acts only on records it wrote)")
                path.unlink(missing_ok=True)
            else:
                found.append(cp)
        return found, warnings

    def _load(self, path: Path) -> tuple[Checkpoint | None, str]:
        """The checkpoint a file holds, or None and why gsd will not act on it."""
        text = records.read_private(path)
        if text is None:
            return None, "a symlink, not a regular file, or too big"
        data = records.verify(text)
        if data is None:
            return None, "not signed by gsd (or damaged)"
        cp = checkpoint_from(data)
        if cp is None or self.path(cp.tag) != path:
            return None, "signed, but not a checkpoint record of this name"
        if Path(cp.root) != self.git.root:
            return None, f"a record of another worktree ({cp.root})"
        return cp, ""


def checkpoint_from(data: dict[str, Any]) -> Checkpoint | None:
    """A record's data as a Checkpoint, or None when a field is missing or mistyped."""
    try:
        cp = Checkpoint(
            tag=str(data["tag"]),
            head=str(data["head"]),
            branch=data["branch"],
            snapshot=data["snapshot"],
            untracked=tuple(data["untracked"]),
            refs=dict(data["refs"]),
            flags=dict(data["flags"]),
            foreign=tuple(data["foreign"]),
            internals=dict(data["internals"]),
            protected=dict(data["protected"]),
            root=str(data["root"]),
            confined=bool(data.get("confined", False)),
        )
    except (KeyError, TypeError, ValueError):
        return None
    texts = [*cp.untracked, *cp.refs, *cp.refs.values(), *cp.flags, *cp.foreign]
    fine = (
        cp.tag.startswith(CHECKPOINT_PREFIX)
        and SHA_RE.fullmatch(cp.head) is not None
        and (cp.snapshot is None or SHA_RE.fullmatch(str(cp.snapshot)) is not None)
        and (cp.branch is None or isinstance(cp.branch, str))
        and all(isinstance(text, str) for text in texts)
    )
    return cp if fine else None
