"""SIGINT, SIGTERM and SIGHUP during a run: remembered, and every agent told to end.

A handler that raises (Python's default for SIGINT) can land anywhere: between a task
commit and the tag's removal, half way through a rollback. Instead the handler only
sets an event; the supervisor ends every agent group when it sees it (exit 130), each
attempt is rolled back by the code that started it, and the run stops at the next step
boundary with `Interrupted` (exit 128 + the signal's number).
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

from gsd.core.errors import Interrupted

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interruption:
    """Installed for the length of a run (main thread only: Python delivers signals
    there); `event` is what the supervisor and the plan threads watch."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self._saved: dict[int, Any] = {}

    def __enter__(self) -> Interruption:
        if threading.current_thread() is threading.main_thread():
            for signum in HANDLED:
                self._saved[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)
        self._saved.clear()

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        first = self.signum is None
        if first:
            self.signum = signum
        self.event.set()
        try:  # a closed terminal (SIGHUP) cannot take it: the run stops all the same
            name = signal.Signals(signum).name
            sys.stderr.write(
                f"\ngsd: {name}: ending the agents and rolling their attempts back...\n"
                if first
                else f"\ngsd: {name}: still stopping, gsd is rolling back\n"
            )
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    @property
    def requested(self) -> bool:
        return self.event.is_set()

    def check(self, where: str = "") -> None:
        """Raise `Interrupted` if a signal came (at a step boundary: nothing half done)."""
        if self.event.is_set():
            raise Interrupted(self.signum or signal.SIGINT, where)
