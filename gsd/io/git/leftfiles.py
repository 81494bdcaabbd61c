"""What an agent left that git would take wrongly or quietly: a repository of its own
inside the worktree, and files too big for a commit nobody asked for."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

MEGABYTE = 1024 * 1024


def nested_repositories(root: Path, changed: Iterable[str]) -> list[str]:
    """The changed paths (and the folders above them, below `root`) that hold a `.git`
    of their own: `git add` would commit each as a bare gitlink, with no .gitmodules
    and none of its files."""
    found: set[str] = set()
    looked: set[str] = set()  # folders without a `.git`: each looked at once
    top = str(root)
    for path in changed:
        parts = path.rstrip("/").split("/")
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if folder in found:
                break
            if folder in looked:
                continue
            if folder != ".git" and os.path.lexists(os.path.join(top, folder, ".git")):
                found.add(folder)
                break
            looked.add(folder)
    return sorted(found)


def large_files(root: Path, paths: Iterable[str], limit_mb: float) -> list[tuple[str, int]]:
    """(path, size in bytes) of each regular file among `paths` bigger than `limit_mb`
    megabytes (0: no limit); symbolic links are not followed."""
    if limit_mb <= 0:
        return []
    limit = limit_mb * MEGABYTE
    found = []
    for path in sorted(set(paths)):
        try:
            stat = os.lstat(root / path)
        except (OSError, ValueError):
            continue
        if stat.st_size > limit and not os.path.islink(root / path):
            found.append((path, stat.st_size))
    return found


def megabytes(size: int) -> str:
    return f"{size / MEGABYTE:,.1f} MB"
