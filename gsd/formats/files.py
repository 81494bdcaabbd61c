"""Files read and written safely: atomic writes, text loaded and saved, locked appends,
JSONL lines, bundled data; and paths shown as a person reads them."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gsd.formats import nofollow

if TYPE_CHECKING:
    from gsd.core.errors import GsdError

# errno values that mean "no room", answered by freeing space rather than by permissions
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_NOT_ALLOWED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_UMASK_LOCK = threading.Lock()


def cannot_write(path: Path, error: OSError) -> GsdError:
    """The one line for a write the file system refused: what, where, what to do."""
    from gsd.core.errors import GsdError

    if isinstance(error, nofollow.LinkInPath):
        what = "it" if str(error.link) == str(path) else str(error.link)
        return GsdError(
            f"cannot write {path}: {what} is a symbolic link; gsd follows no link in a project",
            hint="remove the link (an agent may have planted it), check what it points at, "
            "then run again",
        )
    if error.errno in _NO_SPACE:
        hint = "free disk space, then run again"
    elif error.errno in _NOT_ALLOWED:
        hint = "make it writable, then run again"
    else:
        hint = "fix that path, then run again"
    return GsdError(f"cannot write {path}: {error.strerror or error}", hint=hint)


def current_umask() -> int:
    """The process's umask, read without changing it where the kernel shows it: setting
    it to read it back is process-wide, so another thread could create a file meanwhile
    with the wrong mode."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # no /proc (macOS) or a kernel before 4.7
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def write_atomic(
    path: Path, data: str | bytes, *, mode: int | None = None, sync: bool = True
) -> None:
    """Write `data` (text as UTF-8) to `path` through a temporary file in the same folder
    and a rename; the file and then the folder are synced, so a crash leaves the old file
    or the new one, whole. gsd's one atomic writer (gsd.io.records' too). `sync=False`
    leaves the syncs out, for a file no run reads after a crash (a spawn's prompt).

    The file gets `mode` when given (e.g. 0o755 for a git hook), else the mode it
    already has, else the one the umask gives a new file; it is set before the rename,
    so the file never appears with the temporary file's 0600. A refused write (read-only
    folder, full disk) is a GsdError naming `path`, and no temporary file is left. No
    symbolic link is followed on the way (`gsd.formats.nofollow`); a link at `path` is
    refused, or with `mode` given replaced itself, never its target.
    """
    folder: int | None = None
    temp: str | None = None
    try:
        folder, name = nofollow.open_folder(path)
        chosen = _mode_for(folder, name, path) if mode is None else mode
        made = f".{name}.{os.urandom(4).hex()}.tmp"
        handle = os.open(made, _NEW, 0o600, dir_fd=folder)
        temp = made
        with os.fdopen(handle, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
            out.flush()
            os.fchmod(out.fileno(), chosen)
            if sync:
                os.fsync(out.fileno())
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
        temp = None
        with contextlib.suppress(OSError):  # the rename on disk too (not every file system can)
            if sync:
                os.fsync(folder)
    except BaseException as error:
        if temp is not None and folder is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder)
        if isinstance(error, OSError):
            raise cannot_write(path, error) from None
        raise
    finally:
        if folder is not None:
            os.close(folder)


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _mode_for(folder: int, name: str, path: Path) -> int:
    """The permission bits `name` keeps: its own, or a new file's under the umask; a link
    in its place is refused."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return 0o666 & ~current_umask()
    if stat.S_ISLNK(info.st_mode):
        raise nofollow.LinkInPath(path, path)
    return info.st_mode & 0o7777


def load_text(path: Path, *, missing_ok: bool = False) -> str:
    """The file's text, line endings untouched; "" for a missing file when `missing_ok`.
    Read without following a link on the way or at `path` (gsd carries the text forward):
    STATE.md, ROADMAP.md, any Markdown file gsd edits in place with `save_text`."""
    from gsd.core.errors import InputError

    try:
        text = nofollow.read_text(path)
    except nofollow.LinkInPath as exc:
        raise InputError(
            f"cannot read {path}: {exc}",
            hint="remove the link (an agent may have planted it), restore the file from git, "
            "then run again",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    if text is not None:
        return text
    if missing_ok:
        return ""
    raise InputError(f"{path}: not found")


def save_text(path: Path, text: str, *, old: str | None = None) -> bool:
    """Write `text` atomically unless the file already holds it; True when written.

    `old` is the text the caller loaded from `path`: compared instead of reading the
    file again (every edit returns its input when nothing changes).
    """
    from gsd.core.errors import InputError

    if old is not None:
        if old == text:
            return False
    else:
        try:
            if load_text(path) == text:
                return False
        except InputError:
            pass  # missing or unreadable: write it
    write_atomic(path, text)  # an unwritable file is cannot_write's one line
    return True


def append_line(path: Path, line: bytes) -> None:
    """Add one line (ending in a newline) at the end of `path`, under an exclusive lock.

    The line goes out in one `os.write` on an O_APPEND descriptor, so lines from
    parallel processes never interleave; a torn line left by a crash is closed first
    so this one stays readable. Existing bytes are never rewritten; a write the file
    system refuses half way (full disk) is cut back off and is a GsdError naming `path`.
    A new file gets the mode the umask gives. A symbolic link at `path` or on the way to it
    (`.planning/logs` made a link) is refused, never followed: gsd's logs are its own
    files, and a link an agent planted must not make gsd write into whatever it points at.
    """
    try:
        fd = nofollow.open_file(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as error:
        raise cannot_write(path, error) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            _append_locked(fd, line)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as error:
        raise cannot_write(path, error) from None
    finally:
        os.close(fd)


def _append_locked(fd: int, line: bytes) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # a FIFO in a log's place would hang gsd once full
        raise OSError(errno.EINVAL, "not a regular file; gsd appends only to files")
    size = info.st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        line = b"\n" + line
    written = 0
    try:
        while written < len(line):  # one write but on a full disk or a signal
            written += os.write(fd, line[written:])
    except OSError:
        # take back the part that got out, unless someone else has written since
        if written and os.fstat(fd).st_size == size + written:
            os.ftruncate(fd, size)
        raise


def read_lines_file(path: Path, what: str) -> str | None:
    """The text of a line log, read under a shared lock (an append in progress is waited
    out, so no half line is seen); None when the file does not exist."""
    from gsd.core.errors import InputError

    try:
        handle = os.fdopen(nofollow.open_file(path, os.O_RDONLY | os.O_NONBLOCK), "rb")
    except FileNotFoundError:
        return None
    except nofollow.LinkInPath as error:
        raise InputError(f"cannot read the {what} {path}: {error}") from None
    except OSError as error:
        raise InputError(f"{path}: cannot read the {what}: {error.strerror}") from None
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        try:
            data = handle.read()
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return data.decode("utf-8", errors="replace")


def json_line(value: Any, dumps: Callable[[Any], str] | None = None) -> bytes:
    """`value` as one JSON Lines line, newline included, as jsonlines writes it (with
    `dumps` when given, else the standard library's, non-ASCII kept as UTF-8).

    The bytes, not a write: `append_line` puts them out in one locked `os.write`, which
    jsonlines' Writer cannot do (it writes the text and the newline separately, and knows
    no lock), so parallel appends stay whole and a refused write is taken back.
    """
    import io

    import jsonlines

    out = io.BytesIO()
    writer = jsonlines.Writer(out, dumps=dumps) if dumps else jsonlines.Writer(out)
    writer.write(value)
    return out.getvalue()


def jsonl_objects(
    text: str, name: str, accept: Callable[[dict[str, Any]], str | None] = lambda _: None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects of a line log, and a warning (`name:LINE: skipped: why`) per line
    that is not valid JSON, not an object, or refused by `accept` (which returns why).

    Each line is read as jsonlines reads it (one leading RS or byte-order mark dropped,
    then the standard library's `json.loads`: the same values and the same messages
    wherever gsd runs), without its reader's cost per line; the rules stay gsd's: a blank
    line is skipped, and a last line without its newline is a write cut short by a crash:
    skipped silently. (Once a later append has closed it, it is a bad line like any other.)
    """
    if not text.strip():
        return [], []
    import json

    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    lines = text.split("\n")
    last = len(lines)
    loads, append = json.loads, records.append
    for number, line in enumerate(lines, 1):
        if line.startswith(_SKIPPABLE):
            line = line[1:]
        try:
            data = loads(line)
        except ValueError as error:
            if line.strip() and number < last:
                warnings.append(f"{name}:{number}: skipped: not valid JSON ({error})")
            continue
        reason = (
            f"not a JSON object but {type(data).__name__}"
            if not isinstance(data, dict)
            else accept(data)
        )
        if reason is None:
            append(data)
        elif number < last:
            warnings.append(f"{name}:{number}: skipped: {reason}")
    return records, warnings


# what jsonlines drops from the start of a line: an RFC 7464 record separator, a BOM
_SKIPPABLE = ("\x1e", "\ufeff")


def bundled_dir(name: str, checkout_name: str | None = None) -> Path:
    """A folder gsd ships (`agents`, `workflows`, `planning-template`).

    An installed gsd (a wheel: pip --user, a venv, the system) carries it as package
    data, `gsd/bundled/<name>`; in a checkout or an editable install it is the folder
    beside the package (named `checkout_name` there when that differs, e.g.
    `.planning-template`). Never looked up from sys.prefix: `pip install --user` and
    `--prefix` put data files elsewhere.
    """
    from importlib.resources import files

    package = Path(str(files("gsd")))
    installed = package / "bundled" / name.replace("-", "_")
    if installed.is_dir():
        return installed
    checkout = package.parent / (checkout_name or name)
    return checkout if checkout.is_dir() else installed


def display_path(path: Path | str, root: Path | None = None) -> str:
    """A path as a person reads it: below `root` (the project) when one is given, in gsd's
    bundled agents, below the current folder, below ~, or else whole."""
    path = Path(path)
    for base, prefix, itself in _display_bases(root):
        if path == base:
            return itself
        if base in path.parents:
            return prefix + path.relative_to(base).as_posix()
    return str(path)


def _display_bases(root: Path | None) -> Iterator[tuple[Path, str, str]]:
    """display_path's folders, in order, each looked up only when the one before it did
    not hold the path (a list of agents shows thousands of paths below the project)."""
    if root is not None:
        yield root, "", "."
    yield bundled_dir("agents"), "(bundled) ", "gsd's bundled agents"
    yield Path.cwd(), "", "."
    yield Path.home(), "~/", "~"
