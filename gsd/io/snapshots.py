"""Where gsd's agent-CLI hooks keep their files (the checkout's git directory, trusted),
and the snapshots the pre-compact hook saves (`gsd.commands.lifehooks`), read back for
`gsd mcp`'s `snapshot` tool, never through a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.formats import nofollow
from gsd.io.git import command as gitexec


def git_dir(root: Path) -> Path | None:
    """The git directory of the checkout at `root` (a linked worktree's own, under the
    main repository's), trusted as `Git` trusts it: gsd's writes below it follow no link
    gsd did not make (`gsd.formats.nofollow`); None outside a checkout."""
    done = gitexec.call(["rev-parse", "--absolute-git-dir"], cwd=root, read_only=True)
    found = Path(done.stdout.strip()) if done.status == 0 and done.stdout.strip() else None
    if found is not None:
        nofollow.trust(found)
    return found


def saved_snapshot(root: Path, session: str | None = None) -> tuple[Path, str]:
    """The snapshot `pre_compact` saved for `session` (None: the newest), read without
    following links; a GsdError when there is none or it cannot be read."""
    found = git_dir(root)
    path = None
    if found is not None and session:
        path = layout.compact_snapshot(found, session)
    elif found is not None:
        folder = layout.compact_snapshot(found, "newest").parent
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
