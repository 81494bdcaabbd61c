"""What git commands do not put back, kept byte for byte: .git internals and secrets."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

# Files kept in full up to this size; a bigger one is only compared by its stat stamp.
SIZE_CAP = 1024 * 1024
# The parts of a git directory that decide what code git runs: hooks, config (core.fsmonitor,
# core.pager, filters, aliases, core.hooksPath, include paths) and info/ (attributes, exclude,
# sparse-checkout, grafts). info/refs is left out: `git gc` rewrites it for dumb HTTP.
INTERNALS = ("config", "config.worktree", "hooks", "info")
_SKIPPED = {"info/refs"}


class Saved(NamedTuple):
    """One file, symlink or folder as it was, or its absence."""

    kind: str  # file | link | dir | missing
    mode: int
    data: bytes | None  # a file's bytes, a link's target; None for folders and big files
    digest: str  # sha256 of data ("" when data is None)
    stamp: tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns: a cheap "same?"


MISSING = Saved(kind="missing", mode=0, data=None, digest="", stamp=(0, 0, 0, 0))


def save(base: Path, rel: str, cap: int = SIZE_CAP) -> Saved:
    """`base/rel` as it is now, without following a symlink (a path under a symlinked
    folder is MISSING: what is there is somewhere else)."""
    path = base / rel
    if not _real_folders(base, rel):
        return MISSING
    try:
        info = os.lstat(path)
    except OSError:
        return MISSING
    stamp = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        target = os.fsencode(os.readlink(path))
        return Saved(kind="link", mode=mode, data=target, digest=_digest(target), stamp=stamp)
    if stat.S_ISDIR(info.st_mode):
        return Saved(kind="dir", mode=mode, data=None, digest="", stamp=stamp)
    if not stat.S_ISREG(info.st_mode):
        return Saved(kind="other", mode=mode, data=None, digest="", stamp=stamp)
    if info.st_size > cap:
        return Saved(kind="file", mode=mode, data=None, digest="", stamp=stamp)
    data = _read(path)
    if data is None:
        return Saved(kind="other", mode=mode, data=None, digest="", stamp=stamp)
    return Saved(kind="file", mode=mode, data=data, digest=_digest(data), stamp=stamp)


def save_tree(base: Path, roots: Iterable[str], cap: int = SIZE_CAP) -> dict[str, Saved]:
    """Every entry under each root (folders walked, symlinks not followed), by path
    relative to `base`; an absent root is saved as MISSING."""
    saved: dict[str, Saved] = {}
    pending = list(roots)
    while pending:
        rel = pending.pop()
        if rel in _SKIPPED:
            continue
        entry = save(base, rel, cap)
        saved[rel] = entry
        if entry.kind == "dir":
            try:
                names = os.listdir(base / rel)
            except OSError:
                continue
            pending.extend(f"{rel}/{name}" for name in names)
    return saved


def same_stamps(base: Path, saved: dict[str, Saved]) -> bool:
    """True when no saved entry's inode, size, mtime or ctime moved: one lstat each. A
    folder's times move when an entry is added or removed, and ctime cannot be set back."""
    for rel, entry in saved.items():
        try:
            info = os.lstat(base / rel)
        except OSError:
            if entry.kind != "missing":
                return False
            continue
        if entry.kind == "missing":
            return False
        if (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns) != entry.stamp:
            return False
    return True


def differences(saved: dict[str, Saved], now: dict[str, Saved]) -> list[str]:
    """Paths added, removed or changed (kind, mode or content) between two saves."""
    changed = []
    for rel in sorted(set(saved) | set(now)):
        before, after = saved.get(rel, MISSING), now.get(rel, MISSING)
        if not _same(before, after):
            changed.append(rel)
    return changed


def _same(before: Saved, after: Saved) -> bool:
    if before.kind != after.kind:
        return False
    if before.kind == "missing":
        return True
    if before.mode != after.mode and before.kind != "link":
        return False
    if before.kind == "dir":
        return True
    if before.data is None or after.data is None:  # too big to keep: the stamp decides
        return before.stamp == after.stamp
    return before.digest == after.digest


def restore(base: Path, saved: dict[str, Saved], changed: Iterable[str]) -> list[str]:
    """Put each changed path back as saved (removing what was not there); returns the
    paths that could not be put back (too big to have been kept, or not a file). Nothing
    is removed or written through a symlinked folder."""
    changed = sorted(changed, key=lambda rel: rel.count("/"))
    for rel in reversed(changed):  # deepest first: what is there now goes
        keep = saved.get(rel, MISSING).kind == "dir" and _is_real_dir(base / rel)
        if not keep and _real_folders(base, rel):
            _remove(base / rel)
    lost = []
    for rel in changed:  # shallowest first: folders before their files
        if not _put(base, rel, saved.get(rel, MISSING)):
            lost.append(rel)
    return lost


def _put(base: Path, rel: str, entry: Saved) -> bool:
    path = base / rel
    if entry.kind == "missing":
        return True
    if entry.kind != "dir" and entry.data is None:
        return False
    folder = base
    for part in rel.split("/")[:-1]:  # the folders on the way, made where missing
        folder = folder / part
        if not os.path.lexists(folder):
            os.mkdir(folder, 0o755)
        if not _is_real_dir(folder):
            raise OSError(f"{folder} is not a folder")
    if entry.kind == "dir":
        if not _is_real_dir(path):
            os.mkdir(path, entry.mode)
        os.chmod(path, entry.mode)
        return True
    assert entry.data is not None
    if entry.kind == "link":
        os.symlink(os.fsdecode(entry.data), path)
        return True
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(entry.data)
    os.chmod(path, entry.mode)
    return True


def _remove(path: Path) -> None:
    try:
        info = os.lstat(path)
    except OSError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)  # does not follow symlinks inside
    else:
        os.unlink(path)


def _real_folders(base: Path, rel: str) -> bool:
    """Whether every folder between `base` and `base/rel` is a real one (not a symlink)."""
    folder = base
    for part in rel.split("/")[:-1]:
        folder = folder / part
        if not _is_real_dir(folder):
            return False
    return True


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _read(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digests(saved: dict[str, Saved]) -> dict[str, str]:
    """What a record keeps of a save: kind, mode and content hash (or stamp) per path."""
    return {rel: _fingerprint(entry) for rel, entry in saved.items()}


def _fingerprint(entry: Saved) -> str:
    if entry.kind in ("missing", "dir"):
        return entry.kind
    if entry.data is None:
        return f"{entry.kind} {entry.mode:o} stamp {entry.stamp[1]}-{entry.stamp[2]}"
    return f"{entry.kind} {entry.mode:o} {entry.digest}"


# -- one repository's internals while agents run, shared by this process's threads ------


class Guard:
    """The internals of one repository as they were before its open spawns began; any
    change while one is open is an agent's. Every open checkpoint hears of each change."""

    def __init__(self, common_dir: Path) -> None:
        self.common_dir = common_dir
        self.lock = threading.Lock()
        self.roots: list[str] = []
        self.saved: dict[str, Saved] = {}
        self.open: dict[str, set[str]] = {}  # checkpoint tag -> changes undone while open

    def enter(self, tag: str, roots: list[str]) -> dict[str, Saved]:
        """Open a spawn's watch; the first one saves the internals, later ones add their
        worktree's own roots (after undoing anything changed meanwhile)."""
        with self.lock:
            if self.open:
                self._settle()
            else:
                self.roots, self.saved = [], {}
            new = [root for root in roots if root not in self.roots]
            self.saved.update(save_tree(self.common_dir, new))
            self.roots += new
            self.open[tag] = set()
            return dict(self.saved)

    def check(self) -> None:
        """The quick test every gsd git command runs first (a few lstat calls)."""
        with self.lock:
            if self.open and not same_stamps(self.common_dir, self.saved):
                self._settle()

    def changes(self, tag: str) -> list[str]:
        """What was changed (and is now undone) since `tag` opened; forgets them."""
        with self.lock:
            if self.open:
                self._settle()
            noted = self.open.get(tag, set())
            found = sorted(noted)
            noted.clear()
            return found

    def leave(self, tag: str) -> None:
        with self.lock:
            self.open.pop(tag, None)
            if not self.open:
                self.roots, self.saved = [], {}

    def _settle(self) -> None:
        now = save_tree(self.common_dir, self.roots)
        changed = differences(self.saved, now)
        if changed:
            lost = restore(self.common_dir, self.saved, changed)
            for noted in self.open.values():
                noted.update(changed)
                noted.update(f"{rel} (could not be restored)" for rel in lost)
            now = save_tree(self.common_dir, self.roots)
        # fresh stamps (a folder's move when git rewrites a skipped file); the saved content
        self.saved = {rel: _restamped(entry, now.get(rel)) for rel, entry in self.saved.items()}


def _restamped(entry: Saved, now: Saved | None) -> Saved:
    if now is None or now.kind != entry.kind:
        return entry
    return entry._replace(stamp=now.stamp)


_guards: dict[Path, Guard] = {}
_guards_lock = threading.Lock()


def guard(common_dir: Path) -> Guard:
    """The one Guard of a repository in this process."""
    with _guards_lock:
        found = _guards.get(common_dir)
        if found is None:
            found = _guards[common_dir] = Guard(common_dir)
        return found


def active_guard(common_dir: Path) -> Guard | None:
    found = _guards.get(common_dir)
    return found if found is not None and found.open else None
