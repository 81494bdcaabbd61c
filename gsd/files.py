"""Safe file writes: atomic replacement, and locked appends of whole lines."""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def append_line(path: Path, line: bytes) -> None:
    """Add one line (ending in a newline) at the end of `path`, under an exclusive lock.

    The line goes out in one `os.write` on an O_APPEND descriptor, so lines from
    parallel processes never interleave and a crash leaves at worst a torn last line;
    a torn line left by an earlier crash is closed first so this one stays readable.
    Existing bytes are never rewritten.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            written = os.write(fd, line)
            while written < len(line):  # only on a full disk or a signal; still locked
                written += os.write(fd, line[written:])
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def read_lines_file(path: Path, what: str) -> str | None:
    """The text of a line log, read under a shared lock (an append in progress is waited
    out, so no half line is seen); None when the file does not exist."""
    from gsd.errors import InputError

    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return None
    except OSError as error:
        raise InputError(f"{path}: cannot read the {what}: {error.strerror}") from None
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        try:
            data = handle.read()
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return data.decode("utf-8", errors="replace")
