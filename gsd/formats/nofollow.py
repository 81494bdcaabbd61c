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
git folders, registered when gsd opens them (`gsd.io.git.repo.Git`, `gsd.io.plans.project.Project`);
the folders above them belong to the user (a home folder may well be a link). A path
below no trusted folder is opened as before: its last component without following a link.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_trusted: set[str] = set()  # absolute paths as strings: looked up on every log line


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
    _trusted.add(os.path.abspath(root))
    _trusted.add(os.path.realpath(root))


def _split(path: Path) -> tuple[str, list[str]]:
    """The trusted folder nearest above `path` and the components below it; a path below
    none: its folder and its name."""
    absolute = os.path.abspath(path)  # ".." is lexical: no link is ever followed
    cut = len(absolute)
    while (cut := absolute.rfind("/", 0, cut)) > 0:
        if absolute[:cut] in _trusted:
            return absolute[:cut], absolute[cut + 1 :].split("/")
    folder, name = os.path.split(absolute)
    return folder, [name]


def _refuse(fd: int, name: str, base: str, path: Path, error: OSError) -> OSError:
    """`error` as a LinkInPath when `name` (in folder `fd`, at `base`) is a link."""
    try:
        linked = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        linked = False
    return LinkInPath(Path(base, name), Path(path)) if linked else error


def _descend(fd: int, name: str, base: str, path: Path, create: bool) -> int:
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
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if not create:
            raise
        try:  # a trusted folder (or one below none) is the user's: made as before
            os.makedirs(root, exist_ok=True)
        except FileExistsError:  # the folder's name is taken by a file: say that
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    base = root
    try:
        for name in parts[:-1]:
            below = _descend(fd, name, base, path, create)
            os.close(fd)
            fd, base = below, f"{base}/{name}"
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
        raise _refuse(folder, name, os.path.dirname(os.path.abspath(path)), path, error) from None
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


def write_new(path: Path, data: bytes, mode: int | None = None) -> bool:
    """Create `path` holding `data` (folders made as needed; `mode` exactly, else what the
    umask gives), never replacing anything and following no link; False, touching
    nothing, when something is there already."""
    try:
        fd = open_file(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if mode is not None else 0o666
        )
    except FileExistsError:
        return False
    try:
        with os.fdopen(fd, "wb") as out:
            if mode is not None:
                os.fchmod(fd, mode)
            out.write(data)
    except BaseException:
        folder, name = open_folder(path, create=False)
        try:
            os.unlink(name, dir_fd=folder)
        finally:
            os.close(folder)
        raise
    return True


def symlink_new(path: Path, target: str) -> None:
    """Make the link `path` -> `target` (folders made as needed), following no link."""
    folder, name = open_folder(path)
    try:
        os.symlink(target, name, dir_fd=folder)
    finally:
        os.close(folder)
