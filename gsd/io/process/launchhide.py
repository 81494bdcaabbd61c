"""The paths a Landlock rule may be put on so that everything is granted but `hidden`.

Part of the launcher (gsd/io/process/launch.py); standard library only, no import of gsd.

Landlock only allows: a rule grants a folder and all that is beneath it, and nothing can
be taken back below. So "everything but H" is granted as every entry of `/` but the
one on the way to H, every entry of that folder but the next one on the way, and so on
down to H's own folder, whose entries but H are granted. The cost: an entry created in
one of those folders (H's ancestors) after the program started has no rule, so the
program cannot get the right on it; and a file replaced there by a rename (a new inode)
loses its rule. What lies below a granted entry (`/usr`, the worktree) is unaffected.

Symbolic links among the entries are not granted: a rule on the link's target could
grant H itself; what is reached through a link is judged by where it leads.
"""

from __future__ import annotations

import os


def granted(hidden: tuple[str, ...], start: str = "/") -> list[str]:
    """The paths under `start` (a real folder) to put a rule on so that everything
    beneath `start` is covered but the `hidden` paths (absolute, symlinks resolved).

    Just `[start]` when nothing hidden is inside it; [] when `start` itself is hidden.
    An OSError when a folder on the way cannot be listed (then nothing can be hidden)."""
    inside = {path for path in hidden if _within(path, start)}
    if not inside:
        return [start]
    if start in inside:
        return []
    on_the_way = {parent for path in inside for parent in _parents(path, start)}
    return _around(start, inside, on_the_way)


def _around(folder: str, hidden: set[str], on_the_way: set[str]) -> list[str]:
    """Every entry of `folder` but the hidden ones; into the ones on the way to one."""
    paths: list[str] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.path in hidden or entry.is_symlink():
                continue
            if entry.path in on_the_way:
                if entry.is_dir(follow_symlinks=False):
                    paths += _around(entry.path, hidden, on_the_way)
                continue  # a file where a folder on the way should be: no rule
            paths.append(entry.path)
    return paths


def _parents(path: str, start: str) -> list[str]:
    """The folders strictly between `start` and `path`."""
    parents = []
    parent = os.path.dirname(path)
    while parent != start and _within(parent, start):
        parents.append(parent)
        parent = os.path.dirname(parent)
    return parents


def _within(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or beneath it (both absolute and normalised)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")
