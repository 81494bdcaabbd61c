"""Paths gsd writes (and the files it carries forward) opened without following a symbolic
link at any level: from a folder gsd trusts, one component at a time, each opened relative
to the last with O_NOFOLLOW (O_DIRECTORY for folders), folders made as needed.

An agent works inside the checkout's files: it can replace `.planning/logs`, a phase
folder or STATE.md with a link to a folder or file outside, and git carries the link into
the user's checkout with the merge. Opening `root/.planning/logs/x.jsonl` by its name
follows every link on the way; walking it from `root`'s descriptor follows none, so a
link anywhere below `root` is refused (`LinkInPath`, one line naming it) and nothing
outside is written or read.

The folders gsd trusts as they are (`trust`): the checkout, each plan worktree and the
git folders, registered when gsd opens them (`gsd.io.git.Git`, `gsd.io.project.Project`);
the folders above them belong to the user (a home folder may well be a link). A path
below no trusted folder is opened as before: its last component without following a link.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_trusted: set[Path] = set()


class LinkInPath(OSError):
    """A symbolic link where gsd writes or reads: `filename` is the link, `filename2` the
    path gsd was opening."""

    def __init__(self, link: Path, path: Path) -> None:
        super().__init__(errno.ELOOP, "a symbolic link on the way", str(link), None, str(path))
        self.link, self.path = link, path

    def __str__(self) -> str:
        return f"{self.link} is a symbolic link; gsd follows no link in a project"


def trust(root: Path) -> None:
    """Walk paths below `root` from `root` (as written and as the kernel resolves it)."""
    _trusted.add(Path(os.path.abspath(root)))
    _trusted.add(Path(os.path.realpath(root)))


def _split(path: Path) -> tuple[Path, tuple[str, ...]]:
    """The trusted folder nearest above `path` and the components below it; a path below
    none: its folder and its name."""
    absolute = Path(os.path.abspath(path))  # ".." is lexical: no link is ever followed
    for parent in absolute.parents:
        if parent in _trusted:
            return parent, absolute.parts[len(parent.parts) :]
    return absolute.parent, (absolute.name,)


def _refuse(fd: int, name: str, base: Path, path: Path, error: OSError) -> OSError:
    """`error` as a LinkInPath when `name` (in folder `fd`, at `base`) is a link."""
    try:
        linked = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        linked = False
    return LinkInPath(base / name, path) if linked else error


def _descend(fd: int, name: str, base: Path, path: Path, create: bool) -> int:
    try:
        return os.open(name, _DIR, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as error:
        raise _refuse(fd, name, base, path, error) from None
    try:
        os.mkdir(name, 0o777, dir_fd=fd)
    except FileExistsError:
        pass  # made meanwhile: the open below still refuses a link
    try:
        return os.open(name, _DIR, dir_fd=fd)
    except OSError as error:
        raise _refuse(fd, name, base, path, error) from None


def open_folder(path: Path, *, create: bool = True) -> tuple[int, str]:
    """A descriptor of `path`'s folder, reached without following a link (made as needed
    with `create`), and `path`'s name in it. The caller closes the descriptor."""
    root, parts = _split(path)
    if not parts or ".." in parts:
        raise IsADirectoryError(errno.EISDIR, "not a file", str(path))
    if create and len(parts) == 1:
        try:
            root.mkdir(parents=True, exist_ok=True)  # below no trusted folder: as before
        except FileExistsError:  # the folder's name is taken by a file: say that
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    base = root
    try:
        for name in parts[:-1]:
            below = _descend(fd, name, base, Path(path), create)
            os.close(fd)
            fd, base = below, base / name
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def open_file(path: Path, flags: int, mode: int = 0o666) -> int:
    """`os.open(path, flags, mode)` with no link followed on the way or at `path`."""
    folder, name = open_folder(path, create=bool(flags & os.O_CREAT))
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
    except OSError as error:
        if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO):
            raise
        raise _refuse(folder, name, Path(path).parent, Path(path), error) from None
    finally:
        os.close(folder)


def read_bytes(path: Path) -> bytes | None:
    """A regular file's bytes, or None when it (or its folder) does not exist; a link on
    the way or at `path` is LinkInPath, anything but a regular file an OSError."""
    try:
        fd = open_file(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", str(path))
        return handle.read()


def read_text(path: Path) -> str | None:
    """`read_bytes` as UTF-8 text (newlines as they are)."""
    data = read_bytes(path)
    return None if data is None else data.decode("utf-8")
