"""The user's own state folder, outside every repository: the record-signing key and the
plans' worktrees live there (SPEC 0 of 2026-11-27), and where a configured worktree
folder is refused.

Plan worktrees are not kept under `.git/`: Claude Code treats every path under a `.git/`
folder as a sensitive file and refuses every edit there (as root in `acceptEdits` mode,
allow rules notwithstanding), and many other tools skip such paths.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gsd.core import layout
from gsd.core.errors import InputError

WORKTREE_DIR_ENV = "GSD_WORKTREE_DIR"  # wins over config.json's `workflow.worktree_dir`
CONFIG_KEY = "workflow.worktree_dir"
_HINT = (
    f"set {WORKTREE_DIR_ENV} or {CONFIG_KEY} in .planning/config.json to a folder outside "
    'the repository and outside every .git folder, e.g. "~/gsd-worktrees"'
)


def state_home(environ: Mapping[str, str]) -> Path:
    """$XDG_STATE_HOME when it is an absolute path, else ~/.local/state."""
    state = environ.get("XDG_STATE_HOME", "").strip()
    if state and os.path.isabs(state):
        return Path(state)
    return _home(environ) / ".local" / "state"


def worktrees_folder(
    root: Path,
    common_dir: Path,
    configured: str | None,
    environ: Mapping[str, str],
    config_file: Path | None = None,
) -> Path:
    """The folder the repository's plan worktrees live in, `{base}/{repo key}`: the base
    is $GSD_WORKTREE_DIR, else config.json's `workflow.worktree_dir` (`config_file`,
    named in its error), else `{state home}/gsd/worktrees`. `~` is the home folder and
    a relative base starts at the checkout's root `root`. An InputError (one line) when
    the folder would be inside the repository or inside any `.git` folder."""
    given = environ.get(WORKTREE_DIR_ENV, "").strip()
    source = WORKTREE_DIR_ENV
    if not given and configured:
        given, source = configured, _config_source(config_file)
    if given:
        base = _expand(given, root, environ)
    else:
        base = layout.default_worktrees_base(state_home(environ))
        source = "the default worktree folder"
    common = Path(os.path.realpath(common_dir))
    folder = layout.plan_worktrees_dir(Path(os.path.realpath(base)), common)
    problem = _inside(folder, [Path(os.path.realpath(root)), _checkout_of(common), common])
    if problem:
        shown = given or str(base)
        raise InputError(f"{source}: {shown} would put plan worktrees {problem}", hint=_HINT)
    return folder


def _home(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or Path.home())


def _expand(given: str, root: Path, environ: Mapping[str, str]) -> Path:
    if given == "~" or given.startswith("~/"):
        return _home(environ) / given[2:]
    return root / given  # an absolute path stays as it is


def _checkout_of(common: Path) -> Path:
    """The main checkout's root when the git directory is its `.git` folder."""
    return common.parent if common.name == layout.GIT else common


def _inside(folder: Path, repository: list[Path]) -> str:
    """Why `folder` (resolved) is no place for plan worktrees, "" when it is one."""
    if layout.GIT in folder.parts:
        return f"inside a .git folder ({folder})"
    for place in repository:
        if folder == place or place in folder.parents:
            return f"inside the repository ({folder} is in {place})"
    return ""


def _config_source(config_file: Path | None) -> str:
    """`{config.json}:{line}` of `workflow.worktree_dir`, or the key alone."""
    if config_file is None:
        return CONFIG_KEY
    from gsd.formats import settings

    try:
        lines = settings.key_lines(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{config_file}: {CONFIG_KEY}"
    line = lines.get(("workflow", "worktree_dir"))
    return f"{config_file}:{line}: {CONFIG_KEY}" if line else f"{config_file}: {CONFIG_KEY}"
