"""Protected paths git cannot see or would follow: FIFOs, sockets and devices named like
a secret or lying in `.planning/`, and symlinks in `.planning/` (git ignored or not).

Git lists neither a FIFO nor a socket (`git status` and `ls-files` skip them), so an
agent's `.env` made with `mkfifo` passes every git check. gsd walks the checkout for
them instead (symlinks not followed, `.git` not entered), before a spawn and after it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from gsd.core.safety import enforce, planguard
from gsd.core.safety.enforce import any_may_be_protected
from gsd.io.records import safe_dir

_KINDS = (
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


def scan(root: Path) -> dict[str, str]:
    """The protected or `.planning/` entries under `root` that are neither files, folders
    nor symlinks, and the symlinks in `.planning/`, by path (as git names it) -> kind
    ("FIFO", "socket", "symlink", ...)."""
    return walk(root, names=False)[0]


def walk(root: Path, *, names: bool = True) -> tuple[dict[str, str], bool]:
    """`scan`'s entries, and whether any entry under `root` (`.git` left out) has a name
    that may be protected (`enforce.may_be_protected`): when none has, git's listing of
    the ignored protected files (`restore.PROTECTED_SCAN`) is empty, and is not run
    (`names=False`: not looked at, False).

    Folders and regular files are told apart by the type the directory listing carries
    (no `lstat` for them); only the other entries, few, are looked at one by one."""
    found: dict[str, str] = {}
    named = False
    pending = [""]
    top = os.fspath(root)
    while pending:
        rel = pending.pop()
        try:
            entries = list(os.scandir(os.path.join(top, rel) if rel else top))
        except OSError:
            continue
        if names and not named:  # `.git` is no such name: it need not be left out
            named = any_may_be_protected([entry.name for entry in entries])
        for entry in entries:
            try:
                if entry.is_file(follow_symlinks=False):
                    continue  # most entries: no path built, nothing looked up
                if not rel and entry.name == ".git":
                    continue
                if entry.is_dir(follow_symlinks=False):
                    pending.append(f"{rel}/{entry.name}" if rel else entry.name)
                    continue
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            _note(found, f"{rel}/{entry.name}" if rel else entry.name, mode)
    return found, named


def _note(found: dict[str, str], path: str, mode: int) -> None:
    """Add `path` to `found` when it is special (neither folder nor regular file)."""
    kind = next((word for test, word in _KINDS if test(mode)), None)
    if kind and (enforce.is_protected(path) or planguard.in_planning(path)):
        found[path] = kind
    elif stat.S_ISLNK(mode) and planguard.in_planning(path):
        found[path] = "symlink"  # git may ignore it: seen here all the same


def links(root: Path, paths: Iterable[str]) -> dict[str, str]:
    """The `.planning/` paths among `paths` that are symlinks now (path -> "symlink")."""
    found = {}
    for path in paths:
        if planguard.in_planning(path) and os.path.islink(root / path):
            found[path] = "symlink"
    return found


def new_since(root: Path, before: dict[str, str]) -> dict[str, str]:
    """The special entries there are now that `before` (a `scan`) did not hold."""
    now = scan(root)
    return {path: kind for path, kind in now.items() if before.get(path) != kind}


def after_spawn(
    root: Path, before: dict[str, str] | None, changed: Iterable[str]
) -> dict[str, str]:
    """What a spawn left that git does not show as such: special entries new since
    `before` (a `scan` at the checkpoint; None: not known, none reported) and the
    `.planning/` paths among `changed` that are symlinks now."""
    found = new_since(root, before) if before is not None else {}
    found.update(links(root, changed))
    return found


def remove(root: Path, paths: Iterable[str]) -> None:
    """Take those entries away (a rollback): only what is still not a file or folder."""
    for path in paths:
        where = root / path
        if not safe_dir(where.parent, under=root):
            continue  # never through a symlinked folder
        try:
            mode = os.lstat(where).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            try:
                os.unlink(where)
            except OSError:
                pass
