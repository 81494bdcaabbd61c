"""Progress a person can follow: `[gsd] ...` lines, and on a terminal a live line per
running task with its elapsed time (SPEC 7, "A live run shows progress").

gsd writes its own control sequences in one place, the live lines here: to the stream
below gsd.io.terminal's filter, with the text they show escaped."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from gsd.core.visible import visible
from gsd.io.terminal import unescaped

_UP_AND_CLEAR = "\x1b[{n}F\x1b[J"  # cursor up n lines to column 1, clear to the end


def wants_live(stream: TextIO) -> bool:
    """Live lines on an interactive terminal only: never in CI logs, pipes or TERM=dumb."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM") != "dumb" and not os.environ.get("CI")


class Console:
    """One writer for a run's progress, shared by the threads of a parallel wave.

    `say` prints a line that stays; `running` shows a task below those lines while it
    runs, redrawn every second with its elapsed time, and erased when it ends.
    """

    def __init__(self, stream: TextIO | None = None, live: bool | None = None) -> None:
        raw = unescaped(stream if stream is not None else sys.stderr)
        self.stream = _Unbreakable(raw)
        self.live = wants_live(raw) if live is None else live
        self._lock = threading.Lock()
        self._tasks: dict[int, tuple[str, float]] = {}
        self._next = 0
        self._drawn = 0  # live lines currently on screen
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def say(self, line: str) -> None:
        with self._lock:
            self._erase()
            self.stream.write(f"[gsd] {visible(line, lines=True)}\n")
            self._draw()
            self.stream.flush()

    @contextmanager
    def running(self, label: str) -> Iterator[None]:
        """Show `label` with its elapsed time while the block runs (terminals only)."""
        if not self.live:
            yield
            return
        with self._lock:
            key = self._next
            self._next += 1
            self._tasks[key] = (label, time.monotonic())
            self._start_ticker()
            self._redraw()
        try:
            yield
        finally:
            with self._lock:
                del self._tasks[key]
                self._redraw()

    def refresh(self) -> None:
        """Redraw the live lines with fresh elapsed times (the ticker calls this)."""
        with self._lock:
            self._redraw()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            self._erase()
            self.stream.flush()

    def _start_ticker(self) -> None:
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="gsd-progress", daemon=True)
            self._ticker.start()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            self.refresh()

    def _redraw(self) -> None:
        self._erase()
        self._draw()
        self.stream.flush()

    def _erase(self) -> None:
        if self._drawn:
            self.stream.write(_UP_AND_CLEAR.format(n=self._drawn))
            self._drawn = 0

    def _draw(self) -> None:
        if not self.live or not self._tasks:
            return
        width = max(20, shutil.get_terminal_size((100, 24)).columns - 1)  # never wrap
        now = time.monotonic()
        for label, started in self._tasks.values():
            self.stream.write(f"  {elapsed(now - started):>6}  {visible(label)}"[:width] + "\n")
        self._drawn = len(self._tasks)


class _Unbreakable:
    """A stream whose failures are dropped: a closed terminal (SIGHUP) or a reader that
    went away must not stop a run that is rolling back. After one failure it stays quiet."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except (OSError, ValueError):  # EIO, EPIPE, or a closed stream
                self._gone = True
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._gone = True

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def elapsed(seconds: float) -> str:
    """`7s`, `2:05`, `1:02:09`."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}" if minutes else f"{secs}s"
