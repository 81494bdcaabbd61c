"""Refs gsd itself wrote, so that another task's watch does not blame its agent for them."""

from __future__ import annotations

import threading
from pathlib import Path


class Ledger:
    """The values gsd gave each ref of one repository in this process ("" = deleted),
    with a running number: a checkpoint ignores gsd's own writes made after it.

    Every value since a mark counts, not just the last: another thread's tag can be
    created and deleted between a `for-each-ref` and the look here, and the value that
    listing saw is still gsd's own."""

    KEEP = 16  # values kept per ref: a mark is never older than one task's writes

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.writes: dict[str, list[tuple[int, str]]] = {}

    def now(self) -> int:
        with self.lock:
            return self.count

    def wrote(self, ref: str, sha: str) -> None:
        with self.lock:
            self.count += 1
            values = self.writes.setdefault(ref, [])
            values.append((self.count, sha))
            del values[: -self.KEEP]

    def forget(self, ref: str) -> None:
        with self.lock:
            self.writes.pop(ref, None)

    def ever(self, ref: str, value: str) -> bool:
        """Whether gsd gave `ref` this value ("" = deleted it) at any time in this process
        (its checkpoint tags: another plan's comes and goes as that plan's tasks start and
        end, and the listing that saw it may be older or newer than any mark)."""
        with self.lock:
            return any(sha == value for _, sha in self.writes.get(ref, []))

    def last(self, ref: str, mark: int) -> str | None:
        """The last value gsd gave `ref` after `mark` ("" = deleted), or None."""
        with self.lock:
            values = [sha for n, sha in self.writes.get(ref, []) if n > mark]
        return values[-1] if values else None

    def since(self, mark: int) -> dict[str, frozenset[str]]:
        """Refs gsd wrote after `mark`, with every value it gave them since."""
        with self.lock:
            found = {
                ref: frozenset(sha for n, sha in values if n > mark)
                for ref, values in self.writes.items()
            }
        return {ref: values for ref, values in found.items() if values}


_ledgers: dict[Path, Ledger] = {}
_ref_locks: dict[Path, threading.Lock] = {}
_registry_lock = threading.Lock()  # guards the two tables above


def ref_lock(common_dir: Path) -> threading.Lock:
    """One lock per repository for putting refs back: two plans' rollbacks in a wave
    both see an agent's stray ref, and only the first may delete it."""
    with _registry_lock:
        return _ref_locks.setdefault(common_dir, threading.Lock())


def ledger(common_dir: Path) -> Ledger:
    with _registry_lock:
        found = _ledgers.get(common_dir)
        if found is None:
            found = _ledgers[common_dir] = Ledger()
        return found
