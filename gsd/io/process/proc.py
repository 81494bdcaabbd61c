"""Running a supervised program from an argv list, never a shell: to its end, or ended."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

# A program ended because gsd itself was interrupted gets the status gsd exits with then.
from gsd.core.errors import EXIT_INTERRUPTED, EXIT_KILLED, EXIT_NOT_FOUND, EXIT_TIMEOUT
from gsd.io.process import cgroups, procgroups, spawn

if TYPE_CHECKING:
    from gsd.io.confine.limits import Limits
    from gsd.io.confine.sandbox import Confinement


# --- supervised spawns ------------------------------------------------------------------------


class Spawned(NamedTuple):
    """What became of one supervised program."""

    argv: tuple[str, ...]
    exit_code: int  # the program's, or 124/137 on timeout, 127 when it could not start
    timed_out: bool
    killed: bool  # SIGKILL was needed
    duration_s: float
    stdout_path: Path
    stderr_path: Path
    pid: int | None
    error: str | None  # why it could not start (spawn-failed), else None
    leftovers: int  # processes it started still alive after it exited, then ended
    survivors: int  # processes of its group alive even after SIGKILL (D state, EPERM): left
    stopped: bool = False  # ended because `watch` asked (a token budget's abort threshold)
    limit: str = ""  # "memory" or "processes": it went over that limit and was ended


def supervise(
    argv: list[str],
    *,
    cwd: Path,
    stdout_path: Path,
    stderr_path: Path,
    timeout_s: float,
    grace_s: float,
    env: dict[str, str] | None = None,
    stdin_path: Path | None = None,
    registry: Path | None = None,
    cancel: threading.Event | None = None,
    confinement: Confinement | None = None,
    watch: Callable[[], bool] | None = None,
    limits: Limits | None = None,
) -> Spawned:
    """Run a program in its own session and process group, never for longer than asked.

    - stdout and stderr go straight to files (no pipe to fill, no hang on a grandchild);
    - stdin is the prompt file, or /dev/null: a program waiting on stdin sees EOF;
    - on timeout the whole group gets SIGTERM, then SIGKILL after `grace_s`
      (exit 124, or 137 when SIGKILL was needed);
    - what it leaves running is ended the same way by its warden (gsd/io/process/warden.py, a
      subreaper: `setsid` and double forks do not escape), counted in `leftovers`;
    - `limits` (else `confinement`'s) hold for it and all it starts: over one, all end;
    - the program is started through gsd/io/process/launch.py (no code runs between fork and exec
      in gsd's threaded process): the child gets SIGKILL if gsd dies (Linux parent-death
      signal), and, when `confinement` says so, it and all its descendants can write
      only where it allows (Landlock); a sandbox that cannot be applied is a failure to
      start (exit 126), never an unconfined run;
    - the group is recorded in `registry` until it is gone, so the next run can reap it;
    - after SIGKILL gsd waits at most `max(grace_s, 1)` seconds more: a process stuck in
      the kernel (D state) or not gsd's to signal is counted in `survivors`, not waited on;
    - `cancel` set (gsd interrupted) ends the group as on a timeout; exit status 130;
    - `watch` is asked every 0.2 s: when it answers True the group is ended the same
      way, `stopped` is set and the exit status is 143 (SIGTERM's, as a shell reports it).
    A program that cannot be started is a result (exit 127, or 126 when it cannot be
    executed or confined; `error` set, `pid` None), not an exception.
    """
    started = time.monotonic()
    spec = _warden(limits or (confinement.limits if confinement else None), grace_s)
    started_child = spawn.start(
        argv, cwd, env, stdin_path, stdout_path, stderr_path, confinement, spec
    )
    if isinstance(started_child, str):
        return _never_ran(
            argv,
            EXIT_NOT_FOUND,
            started_child,
            time.monotonic() - started,
            stdout_path,
            stderr_path,
        )
    child, status = started_child
    ended, failure = _watch(child, status, argv, timeout_s, grace_s, registry, cancel, watch)
    if failure is not None:  # the launcher said why the program never ran
        return _never_ran(
            argv, ended.code, failure, time.monotonic() - started, stdout_path, stderr_path
        )
    return _finished(argv, child.pid, ended, time.monotonic() - started, stdout_path, stderr_path)


def _warden(limits: Limits | None, grace_s: float) -> str:
    from gsd.io.confine.limits import warden_spec

    return warden_spec(limits, grace_s)


def _finished(
    argv: list[str],
    pid: int,
    ended: _Ended,
    duration_s: float,
    stdout_path: Path,
    stderr_path: Path,
) -> Spawned:
    """What became of a program that ran: its exit status as a shell reports it."""
    code = ended.code
    if not ended.timed_out and code < 0:
        code = 128 - code  # killed by a signal N: 128 + N, as a shell reports it
    return Spawned(
        argv=tuple(argv),
        exit_code=code,
        timed_out=ended.timed_out,
        killed=ended.killed,
        duration_s=duration_s,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        pid=pid,
        error=None,
        leftovers=ended.leftovers,
        survivors=ended.survivors,
        stopped=ended.stopped,
        limit=ended.limit,
    )


class _Ended(NamedTuple):
    """How a supervised group ended: its status and what was left of it."""

    code: int
    timed_out: bool
    killed: bool
    leftovers: int
    survivors: int
    stopped: bool = False
    limit: str = ""


def _watch(
    child: subprocess.Popen[bytes],
    status: int,
    argv: list[str],
    timeout_s: float,
    grace_s: float,
    registry: Path | None,
    cancel: threading.Event | None,
    watch: Callable[[], bool] | None = None,
) -> tuple[_Ended, str | None]:
    """Wait for a started program, ending its group on timeout, on `cancel` or when it
    leaves processes behind; returns how it ended and the launcher's reason it never
    ran (None when it ran). Whatever happens, nothing of the group runs on unsupervised."""
    record = None
    timed_out = killed = stopped = False
    leftovers = survivors = 0
    try:
        record = procgroups.register(registry, child.pid, argv)
        try:
            code = _wait(child, timeout_s, cancel, watch)
        except subprocess.TimeoutExpired:
            timed_out = True
            enough, survivors = procgroups.end_group(child.pid, grace_s, leader=child)
            killed = not enough
            code = EXIT_KILLED if killed else EXIT_TIMEOUT
        except _Cancelled:
            survivors = procgroups.end_group(child.pid, grace_s, leader=child)[1]
            code = EXIT_INTERRUPTED
        except _Stopped:
            stopped = True
            survivors = procgroups.end_group(child.pid, grace_s, leader=child)[1]
            code = EXIT_STOPPED
        if not survivors:
            leftovers = procgroups.group_size(child.pid)
            if leftovers:
                survivors = procgroups.end_group(child.pid, grace_s)[1]
    except BaseException:  # the registry cannot be written, Ctrl-C, ...: nothing runs on
        survivors = procgroups.end_group(child.pid, grace_s, leader=child)[1]  # unsupervised
        raise
    finally:
        failure, report = spawn.read_status(status)
        survivors = survivors or _count(report, "survivors")  # gsd's count, else the warden's
        cgroups.sweep()  # a warden that was killed itself leaves its cgroups
        if record is not None and not survivors:  # else the next run tries to reap them
            record.unlink(missing_ok=True)
    ended = _Ended(
        code=code,
        timed_out=timed_out,
        killed=killed,
        leftovers=leftovers + _count(report, "leftovers"),
        survivors=survivors,
        stopped=stopped,
        limit=report.get("limit", "-").strip("-"),
    )
    return ended, failure


def _count(report: dict[str, str], key: str) -> int:
    value = report.get(key, "0")
    return int(value) if value.isdigit() else 0


def _never_ran(
    argv: list[str],
    code: int,
    error: str,
    duration_s: float,
    stdout_path: Path,
    stderr_path: Path,
) -> Spawned:
    """A program that could not be started, or that its launcher could not run."""
    return Spawned(
        argv=tuple(argv),
        exit_code=code,
        timed_out=False,
        killed=False,
        duration_s=duration_s,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        pid=None,
        error=error,
        leftovers=0,
        survivors=0,
    )


class _Cancelled(Exception):
    pass


class _Stopped(Exception):
    pass


EXIT_STOPPED = 143  # 128 + SIGTERM: what a shell reports for a program gsd ended


def _wait(
    child: subprocess.Popen[bytes],
    timeout_s: float,
    cancel: threading.Event | None,
    watch: Callable[[], bool] | None = None,
) -> int:
    """`child.wait(timeout_s)`, looking at `cancel` and `watch` every 0.2 s when given.

    Woken the moment the child exits (a pidfd, Linux 5.3+), not by Popen.wait's polling,
    whose sleeps double up to 50 ms: a 12 ms launch would be seen at 15.5 or 31.5 ms."""

    deadline = time.monotonic() + timeout_s
    pidfd = _pidfd(child.pid)
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(child.args, timeout_s)
            polled = cancel is None and watch is None
            code = _wait_step(child, pidfd, remaining if polled else min(remaining, 0.2))
            if code is not None:
                return code
            if cancel is not None and cancel.is_set():
                raise _Cancelled
            if watch is not None and watch():
                raise _Stopped
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+, or Python < 3.9 there
        return None


def _wait_step(child: subprocess.Popen[bytes], pidfd: int | None, seconds: float) -> int | None:
    """The child's exit status if it exits within `seconds`, else None."""
    if pidfd is None:
        try:
            return child.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return None
    import math
    import select

    poller = select.poll()
    poller.register(pidfd, select.POLLIN)  # readable once the process has exited
    poller.poll(math.ceil(seconds * 1000))
    return child.poll()
