"""The snapshots gsd's pre-compact hook saves (`gsd.commands.lifehooks`), read back for
`gsd mcp`'s `snapshot` tool: under the checkout's git directory, never through a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.formats import nofollow
from gsd.io.git import command as gitexec


def saved_snapshot(root: Path, session: str | None = None) -> tuple[Path, str]:
    """The snapshot `pre_compact` saved for `session` (None: the newest), read without
    following links; a GsdError when there is none or it cannot be read."""
    done = gitexec.call(["rev-parse", "--absolute-git-dir"], cwd=root, read_only=True)
    git_dir = Path(done.stdout.strip()) if done.status == 0 and done.stdout.strip() else None
    path = None
    if git_dir is not None and session:
        path = layout.compact_snapshot(git_dir, session)
    elif git_dir is not None:
        folder = layout.compact_snapshot(git_dir, "newest").parent
        saved = [p for p in _listed(folder) if p.suffix == ".md"]
        path = max(saved, key=_written, default=None)
    try:
        text = nofollow.read_text(path) if path is not None else None
    except (OSError, UnicodeDecodeError) as exc:
        raise GsdError(f"cannot read the snapshot {path}: {exc}") from None
    if path is None or text is None:
        which = f"for session {session!r}" if session else "yet"
        raise GsdError(
            f"no snapshot saved {which}",
            hint="`gsd hooks install --claude --hook pre-compact` saves one at each compaction",
        )
    return path, text


def _listed(folder: Path) -> list[Path]:
    """The entries of `folder`, none when it is not a folder (a link is not one)."""
    try:
        return [] if folder.is_symlink() else list(folder.iterdir())
    except OSError:
        return []


def _written(path: Path) -> float:
    """When `path` was written, a link or anything but a file never the newest."""
    try:
        info = os.lstat(path)
    except OSError:
        return float("-inf")
    return info.st_mtime if stat.S_ISREG(info.st_mode) else float("-inf")
