"""What git commands do not put back, kept byte for byte: .git internals, index flags, secrets."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import struct
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

ASSUME_UNCHANGED = "assume-unchanged"
SKIP_WORKTREE = "skip-worktree"


class Saved(NamedTuple):
    """One file, symlink or folder as it was, or its absence."""

    kind: str  # file | link | dir | missing
    mode: int
    data: bytes | None  # a file's bytes, a link's target; None for folders and big files
    digest: str  # sha256 of data ("" when data is None)
    stamp: tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns: a cheap "same?"


MISSING = Saved("missing", 0, None, "", (0, 0, 0, 0))


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
        return Saved("link", mode, target, _digest(target), stamp)
    if stat.S_ISDIR(info.st_mode):
        return Saved("dir", mode, None, "", stamp)
    if not stat.S_ISREG(info.st_mode):
        return Saved("other", mode, None, "", stamp)
    if info.st_size > cap:
        return Saved("file", mode, None, "", stamp)
    data = _read(path)
    if data is None:
        return Saved("other", mode, None, "", stamp)
    return Saved("file", mode, data, _digest(data), stamp)


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


# -- the index's assume-unchanged and skip-worktree flags ------------------------------


def index_stamp(index: Path) -> tuple[int, int, int, int] | None:
    """The index file's inode, size, mtime and ctime: equal stamps, equal flags."""
    try:
        info = os.stat(index)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def index_flags(index: Path, hash_size: int = 20) -> dict[str, str] | None:
    """Index entries with assume-unchanged or skip-worktree set: path -> the flags, comma
    separated. None when the index is a kind this reader leaves to git (split, sparse,
    unknown version, damaged); {} when there is no index."""
    try:
        data = index.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError:
        return None
    try:
        return _parse_flags(data, hash_size)
    except (struct.error, ValueError, IndexError):
        return None


def _parse_flags(data: bytes, hash_size: int) -> dict[str, str] | None:
    signature, version, count = struct.unpack_from(">4sII", data, 0)
    if signature != b"DIRC" or version not in (2, 3, 4):
        return None
    flags_at = 40 + hash_size  # ctime, mtime, dev, ino, mode, uid, gid, size, then the hash
    unpack, find = struct.unpack_from, data.index
    offset, name = 12, b""
    found: dict[str, str] = {}
    for _ in range(count):  # the hot loop (20,000 entries: a few ms): no work per entry
        (flags,) = unpack(">H", data, offset + flags_at)
        start = offset + flags_at + 2
        extended = 0
        if flags & 0x4000:
            (extended,) = unpack(">H", data, start)
            start += 2
        if version == 4:
            strip, start = _varint(data, start)
            end = find(b"\0", start)
            name = name[: len(name) - strip] + data[start:end]
            offset = end + 1
        else:
            length = flags & 0xFFF
            end = find(b"\0", start) if length == 0xFFF else start + length
            if flags & 0x8000 or extended & 0x4000:
                name = data[start:end]
            offset += (end - offset + 8) & ~7  # NUL padded to a multiple of 8
        if flags & 0x8000 or extended & 0x4000:
            kinds = [ASSUME_UNCHANGED] if flags & 0x8000 else []
            kinds += [SKIP_WORKTREE] if extended & 0x4000 else []
            found[name.decode("utf-8", "surrogateescape")] = ",".join(kinds)
    if _has_extension(data, offset, hash_size, (b"link", b"sdir")):
        return None  # split index (entries live in another file) or sparse index
    return found


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """Git's offset varint (index v4's prefix length)."""
    byte = data[at]
    value = byte & 0x7F
    while byte & 0x80:
        at += 1
        byte = data[at]
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, at + 1


def _has_extension(data: bytes, offset: int, hash_size: int, wanted: tuple[bytes, ...]) -> bool:
    end = len(data) - hash_size
    while offset + 8 <= end:
        signature, size = struct.unpack_from(">4sI", data, offset)
        if signature in wanted:
            return True
        offset += 8 + size
    return False


def parse_ls_files_v(out: str) -> dict[str, str]:
    """`git ls-files -v -z`: a lowercase tag is assume-unchanged, S (or s) skip-worktree."""
    found: dict[str, str] = {}
    for item in out.split("\0"):
        if len(item) < 3:
            continue
        tag, path = item[0], item[2:]
        kinds = [k for k, on in ((ASSUME_UNCHANGED, tag.islower()),
                                 (SKIP_WORKTREE, tag.upper() == "S")) if on]  # fmt: skip
        if kinds:
            found[path] = ",".join(kinds)
    return found


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


# -- refs gsd itself wrote, so that another task's watch does not blame its agent -----


class Ledger:
    """The values gsd gave each ref of one repository in this process ("" = deleted),
    with a running number: a checkpoint ignores gsd's own writes made after it.

    Every value since a mark counts, not just the last: another thread's tag can be
    created and deleted between a `for-each-ref` and the look here, and the value that
    listing saw is still gsd's own."""

    KEEP = 16  # values kept per ref: a mark is never older than one task's writes

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.writes: dict[str, list[tuple[int, str]]] = {}

    def now(self) -> int:
        with self.lock:
            return self.count

    def wrote(self, ref: str, sha: str) -> None:
        with self.lock:
            self.count += 1
            values = self.writes.setdefault(ref, [])
            values.append((self.count, sha))
            del values[: -self.KEEP]

    def forget(self, ref: str) -> None:
        with self.lock:
            self.writes.pop(ref, None)

    def ever(self, ref: str, value: str) -> bool:
        """Whether gsd gave `ref` this value ("" = deleted it) at any time in this process
        (its checkpoint tags: another plan's comes and goes as that plan's tasks start and
        end, and the listing that saw it may be older or newer than any mark)."""
        with self.lock:
            return any(sha == value for _, sha in self.writes.get(ref, []))

    def last(self, ref: str, mark: int) -> str | None:
        """The last value gsd gave `ref` after `mark` ("" = deleted), or None."""
        with self.lock:
            values = [sha for n, sha in self.writes.get(ref, []) if n > mark]
        return values[-1] if values else None

    def since(self, mark: int) -> dict[str, frozenset[str]]:
        """Refs gsd wrote after `mark`, with every value it gave them since."""
        with self.lock:
            found = {
                ref: frozenset(sha for n, sha in values if n > mark)
                for ref, values in self.writes.items()
            }
        return {ref: values for ref, values in found.items() if values}


_ledgers: dict[Path, Ledger] = {}
_ref_locks: dict[Path, threading.Lock] = {}


def ref_lock(common_dir: Path) -> threading.Lock:
    """One lock per repository for putting refs back: two plans' rollbacks in a wave
    both see an agent's stray ref, and only the first may delete it."""
    with _guards_lock:
        return _ref_locks.setdefault(common_dir, threading.Lock())


def ledger(common_dir: Path) -> Ledger:
    with _guards_lock:
        found = _ledgers.get(common_dir)
        if found is None:
            found = _ledgers[common_dir] = Ledger()
        return found
