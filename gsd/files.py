"""Safe file writes: atomic replacement, and locked appends of whole lines."""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_atomic(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write `text` to `path` through a temporary file in the same folder and a rename.

    `mode` (e.g. 0o755 for a git hook) is set before the rename, so the file never
    appears with the temporary file's 0600.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            if mode is not None:
                os.fchmod(out.fileno(), mode)
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


def jsonl_objects(
    text: str, name: str, accept: Callable[[dict[str, Any]], str | None] = lambda _: None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects of a line log, and a warning (`name:LINE: skipped: why`) per line
    that is not valid JSON, not an object, or refused by `accept` (which returns why).

    A last line without its newline is a write cut short by a crash: skipped silently.
    (Once a later append has closed it, it is a bad line like any other.)
    """
    import json

    records: list[dict[str, Any]] = []
    warnings: list[str] = []
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        reason: str | None = None
        try:
            data = json.loads(line)
        except ValueError as error:
            reason = f"not valid JSON ({error})"
        else:
            if not isinstance(data, dict):
                reason = f"not a JSON object but {type(data).__name__}"
            else:
                reason = accept(data)
                if reason is None:
                    records.append(data)
        if reason is not None and number < len(lines):
            warnings.append(f"{name}:{number}: skipped: {reason}")
    return records, warnings


def bundled_dir(name: str, checkout_name: str | None = None) -> Path:
    """A folder gsd ships (`agents`, `workflows`, `planning-template`): beside the package
    in a checkout or an editable install (named `checkout_name` there when it differs,
    e.g. `.planning-template`), else the copy a wheel installs under `{prefix}/share/gsd/`."""
    here = Path(__file__).resolve().parent.parent / (checkout_name or name)
    return here if here.is_dir() else Path(sys.prefix) / "share" / "gsd" / name
