"""What `execute-phase` reads to derive STATE.md and ROADMAP.md after each merge, kept
between runs so that a merge into a large project costs what it costs in a small one
(issue 23): per phase folder, its plans as the phase graph lists them (id, path, task
count); per SUMMARY.md, the facts STATE.md takes from it (day, minutes, files).

Never trusted over the files: each entry is kept under the stamps of the files it came
from (inode, size, modification and change times in ns, by `lstat`; regular files only,
never through a link) and used only while they are the same; a file changed less than
`RACY_NS` before it was read is not kept (a change within the clock's step could leave
its stamps as they were); the cache is signed with the user's key (`records`), so one
written by anything but gsd is dropped, and it names the code that wrote it (the stamps
of the modules the facts come from), so another version of gsd starts afresh. It lives
in `.git/gsd/` of the checkout. `gsd sync` and `sync --check` never read it: they derive
everything from the files, as before.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.io import records

CACHE_FILE = "derive-cache.json"
RACY_NS = 2_000_000_000  # files changed this close to the read are read again next time
_CONTEXT = b"gsd derive cache v1\0"
# the modules whose code the kept facts come from: another version of any, a new cache
_CODE = (
    "gsd.core.graph",
    "gsd.core.ids",
    "gsd.core.models",
    "gsd.formats.frontmatter",
    "gsd.formats.simpleyaml",
    "gsd.formats.planning.plan",
    "gsd.formats.planning.summaryread",
    "gsd.io.plans.project",
    "gsd.io.plans.sources",
    "gsd.run.derive",
    "gsd.run.derivecache",
)

Stamp = tuple[int, int, int, int]  # inode, size, mtime_ns, ctime_ns
Kept = tuple[str, str, str, int]  # the graph's key, the plan's id, its path, its tasks
Summary = tuple[str | None, int | None, int]  # day, minutes, files


def stamp(path: Path | str) -> Stamp | None:
    """A regular file's stamps (not through a link), or None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class DeriveCache:
    """The kept facts of one checkout; what a derive used is what is saved."""

    def __init__(self, path: Path | None, data: dict[str, Any]) -> None:
        self.path = path
        self._folders: dict[str, Any] = data.get("folders", {})
        self._summaries: dict[str, Any] = data.get("summaries", {})
        self._new_folders: dict[str, Any] = {}
        self._new_summaries: dict[str, Any] = {}
        self._since = time.time_ns() - RACY_NS

    @classmethod
    def load(cls, git_dir: Path) -> DeriveCache:
        """The checkout's cache, or an empty one (none yet, forged, another gsd's)."""
        path = git_dir / layout.GSD / CACHE_FILE
        data = records.read_private(path) if path.parent.is_dir() else None
        return cls(path, _verified(data) or {})

    def begin(self) -> None:
        """A new derive: what the last one kept is found, and files changed since
        `RACY_NS` before now are not kept."""
        self._folders = {**self._folders, **self._new_folders}
        self._summaries = {**self._summaries, **self._new_summaries}
        self._since = time.time_ns() - RACY_NS

    def folder(self, rel: str, files: list[str], root: Path) -> list[Kept] | None:
        """The plans kept for a phase folder whose plan files are `files` (repo-relative
        paths, as listed now), if every one is as it was."""
        stamps = [stamp(root / f) for f in files]
        if any(s is None for s in stamps):
            return None
        key = [[f, *s] for f, s in zip(files, stamps, strict=True) if s is not None]
        kept = self._folders.get(rel)
        if kept is None or kept[0] != key:
            return None
        self._new_folders[rel] = kept
        return [tuple(entry) for entry in kept[1]]

    def keep_folder(self, rel: str, files: list[str], root: Path, plans: list[Kept]) -> None:
        """Keep what the phase graph of `files` listed, under their stamps taken after
        they were read: a file changed since `RACY_NS` before this derive began is not
        kept (its stamps might not show a change made in the same clock step)."""
        stamps = [stamp(root / f) for f in files]
        if any(s is None or max(s[2], s[3]) >= self._since for s in stamps):
            return
        key = [[f, *s] for f, s in zip(files, stamps, strict=True) if s is not None]
        self._new_folders[rel] = [key, [list(p) for p in plans]]

    def summary(self, rel: str, path: Path) -> Summary | None:
        """The facts kept for a SUMMARY file (`rel` from the root), if it is as it was."""
        kept = self._summaries.get(rel)
        if kept is None or list(stamp(path) or ()) != kept[0]:
            return None
        self._new_summaries[rel] = kept
        return kept[1], kept[2], kept[3]

    def keep_summary(self, rel: str, path: Path, facts: Summary) -> None:
        """Keep a SUMMARY's facts under its stamps taken after it was read (as
        `keep_folder`: one changed since `RACY_NS` before this derive began is not)."""
        now = stamp(path)
        if now is None or max(now[2], now[3]) >= self._since:
            return
        self._new_summaries[rel] = [list(now), *facts]

    def save(self) -> None:
        """Write what this derive used (stale entries drop out); a failure only costs the
        next derive its speed."""
        if self.path is None:
            return
        data = {"code": _code(), "folders": self._new_folders, "summaries": self._new_summaries}
        body = json.dumps(data, separators=(",", ":"), ensure_ascii=True).encode()
        try:
            folder = records.private_dir(self.path.parent, under=self.path.parent.parent)
            records.write_private(folder / CACHE_FILE, _mac(body).encode() + b"\n" + body)
        except (GsdError, OSError):
            pass


def _mac(body: bytes) -> str:
    return hmac.new(records.record_key(), _CONTEXT + body, hashlib.sha256).hexdigest()


def _verified(data: bytes | None) -> dict[str, Any] | None:
    """The cache's data when gsd's key signed it and this code wrote it, else None."""
    if not data:
        return None
    mac, _, body = data.partition(b"\n")
    try:
        if not hmac.compare_digest(_mac(body).encode(), mac):
            return None
        found = json.loads(body)
    except (GsdError, ValueError, RecursionError):
        return None
    if not isinstance(found, dict) or found.get("code") != _code():
        return None
    folders, summaries = found.get("folders"), found.get("summaries")
    if not isinstance(folders, dict) or not isinstance(summaries, dict):
        return None
    return found


def _code() -> list[list[Any]]:
    """The stamps of the modules the facts come from (size and mtime of each source)."""
    found: list[list[Any]] = []
    for name in _CODE:
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        try:
            info = os.stat(where) if where else None
        except OSError:
            info = None
        found.append([name, info.st_size, info.st_mtime_ns] if info else [name])
    return found
