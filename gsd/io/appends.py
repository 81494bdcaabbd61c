"""The record of gsd's log appends not yet in a commit, so a crash cannot strand them."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gsd.formats import nofollow
from gsd.formats.files import write_atomic
from gsd.io.records import ANY_SIZE, read_private


class Appends:
    """journal/appended.json: {target: [size before, bytes appended, sha256]} of the
    flushes since the last docs commit. A run killed between an append and its commit
    leaves the bytes in the file, uncommitted; the next run finds them here."""

    def __init__(self, record: Path, root: Path) -> None:
        self.record, self.root = record, root

    def note(self, target: str, data: bytes) -> None:
        """Before `data` is appended to `target`: what the file held, and everything
        added since the last docs commit."""
        notes = self._read()
        size, added, _ = notes.get(target, [None, b"", ""])
        if size is None:
            size = _size(self.root / target)
        added = bytes(added) + data
        notes[target] = [size, added, hashlib.sha256(added).hexdigest()]
        record = {t: [n, a.decode("latin-1"), h] for t, (n, a, h) in notes.items()}  # lossless
        write_atomic(self.record, json.dumps(record) + "\n")

    def forget(self) -> None:
        self.record.unlink(missing_ok=True)

    def left(self, dirty: Callable[[list[str]], set[str]]) -> tuple[list[str], list[str]]:
        """The logs whose uncommitted change is exactly what gsd appended (to commit
        now), and a warning for each log whose change is not (left as it is). The record
        is forgotten either way."""
        notes = self._read()
        ours, warnings = [], []
        changed = dirty(list(notes)) if notes else set()
        for target, (size, added, digest) in notes.items():
            if target not in changed:
                continue  # committed before the kill, or the file is gone
            data = _held(self.root / target)
            tail = data[size:]
            if len(data) == size + len(added) and hashlib.sha256(tail).hexdigest() == digest:
                ours.append(target)
            else:
                warnings.append(f"{target} has uncommitted changes gsd did not make; left as it is")
        self.forget()
        return ours, warnings

    def _read(self) -> dict[str, list[Any]]:
        if self.record.is_symlink():
            return {}
        data = read_private(self.record, limit=ANY_SIZE)
        try:
            record = json.loads(data) if data else {}
        except (ValueError, RecursionError):
            return {}
        if not isinstance(record, dict):
            return {}
        return {
            t: [v[0], v[1].encode("latin-1"), v[2]]
            for t, v in record.items()
            if isinstance(v, list) and len(v) == 3
        }


def _held(path: Path) -> bytes:
    """What a log holds; nothing when it is missing or a link is on the way (never followed)."""
    try:
        return nofollow.read_bytes(path) or b""
    except OSError:
        return b""


def _size(path: Path) -> int:
    """A log's size; 0 when it is missing or a link is on the way (never followed)."""
    try:
        fd = nofollow.open_file(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return 0
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)
