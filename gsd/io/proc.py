"""Starting programs from argv lists, never a shell: short commands and supervised agents."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from gsd.io.sandbox import Confinement

# Exit statuses a shell gives for a program it cannot find / cannot execute.
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126


class Completed(NamedTuple):
    """A finished short command: its exit status and captured output."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class CompletedBytes(NamedTuple):
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes


def run_bytes(
    argv: list[str], *, cwd: Path | None = None, input: bytes | None = None
) -> CompletedBytes:
    """Run a short command to completion, capturing bytes (git goes through gsd.io.gitread).

    A missing program is a result with status 127, not an exception.
    """
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        return CompletedBytes(tuple(argv), EXIT_NOT_FOUND, b"", f"{argv[0]}: not found".encode())
    except PermissionError:
        return CompletedBytes(
            tuple(argv), EXIT_NOT_EXECUTABLE, b"", f"{argv[0]}: permission denied".encode()
        )
    return CompletedBytes(tuple(argv), done.returncode, done.stdout, done.stderr)


def run(argv: list[str], *, cwd: Path | None = None, input: str | None = None) -> Completed:
    """`run_bytes` for text output (UTF-8, undecodable bytes replaced)."""
    done = run_bytes(argv, cwd=cwd, input=None if input is None else input.encode())
    return Completed(
        done.argv,
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


# --- supervised spawns ------------------------------------------------------------------------

EXIT_TIMEOUT = 124  # ended by SIGTERM after the timeout (GNU timeout's status)
EXIT_KILLED = 137  # needed SIGKILL after the grace period (128 + 9)
EXIT_INTERRUPTED = 130  # ended because gsd itself was interrupted (128 + SIGINT)
_POLL_S = 0.05


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
    leftovers: int  # processes of its group still alive after it exited, then ended
    survivors: int  # processes of its group alive even after SIGKILL (D state, EPERM): left


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
) -> Spawned:
    """Run a program in its own session and process group, never for longer than asked.

    - stdout and stderr go straight to files: no pipe to fill, no memory to grow, no
      hang when a grandchild keeps them open;
    - stdin is the prompt file, or /dev/null: a program waiting on stdin sees EOF;
    - on timeout the whole group gets SIGTERM, then SIGKILL after `grace_s`
      (exit 124, or 137 when SIGKILL was needed);
    - when the program exits on its own, anything left in its group is ended the same way;
    - the program is started through gsd/io/launch.py (no code runs between fork and exec
      in gsd's threaded process): the child gets SIGKILL if gsd dies (Linux parent-death
      signal), and, when `confinement` says so, it and all its descendants can write
      only where it allows (Landlock); a sandbox that cannot be applied is a failure to
      start (exit 126), never an unconfined run;
    - the group is recorded in `registry` until it is gone, so the next run can reap it;
    - after SIGKILL gsd waits at most `max(grace_s, 1)` seconds more: a process stuck in
      the kernel (D state) or not gsd's to signal is counted in `survivors`, not waited on;
    - when `cancel` is set (gsd is interrupted while other threads supervise), the group
      is ended as on a timeout and the exit status is 130 (as for Ctrl-C).
    A program that cannot be started is a result (exit 127, or 126 when it cannot be
    executed or confined; `error` set, `pid` None), not an exception.
    """
    import time

    started = time.monotonic()
    started_child = _start(argv, cwd, env, stdin_path, stdout_path, stderr_path, confinement)
    if isinstance(started_child, str):
        return _never_ran(argv, EXIT_NOT_FOUND, started_child, time.monotonic() - started,
                          stdout_path, stderr_path)  # fmt: skip
    child, status = started_child
    ended, failure = _watch(child, status, argv, timeout_s, grace_s, registry, cancel)
    if failure is not None:  # the launcher said why the program never ran
        return _never_ran(argv, ended.code, failure, time.monotonic() - started,
                          stdout_path, stderr_path)  # fmt: skip
    code = ended.code
    if not ended.timed_out and code < 0:
        code = 128 - code  # killed by a signal N: 128 + N, as a shell reports it
    return Spawned(
        argv=tuple(argv), exit_code=code, timed_out=ended.timed_out, killed=ended.killed,
        duration_s=time.monotonic() - started, stdout_path=stdout_path,
        stderr_path=stderr_path, pid=child.pid, error=None, leftovers=ended.leftovers,
        survivors=ended.survivors,
    )  # fmt: skip


class _Ended(NamedTuple):
    """How a supervised group ended: its status and what was left of it."""

    code: int
    timed_out: bool
    killed: bool
    leftovers: int
    survivors: int


def _watch(
    child: subprocess.Popen[bytes],
    status: int,
    argv: list[str],
    timeout_s: float,
    grace_s: float,
    registry: Path | None,
    cancel: threading.Event | None,
) -> tuple[_Ended, str | None]:
    """Wait for a started program, ending its group on timeout, on `cancel` or when it
    leaves processes behind; returns how it ended and the launcher's reason it never
    ran (None when it ran). Whatever happens, nothing of the group runs on unsupervised."""
    record = None
    timed_out = killed = False
    leftovers = survivors = 0
    try:
        record = _record(registry, child.pid, argv)
        try:
            code = _wait(child, timeout_s, cancel)
        except subprocess.TimeoutExpired:
            timed_out = True
            enough, survivors = _end_group(child.pid, grace_s, leader=child)
            killed = not enough
            code = EXIT_KILLED if killed else EXIT_TIMEOUT
        except _Cancelled:
            survivors = _end_group(child.pid, grace_s, leader=child)[1]
            code = EXIT_INTERRUPTED
        if not survivors:
            leftovers = _group_size(child.pid)
            if leftovers:
                survivors = _end_group(child.pid, grace_s)[1]
    except BaseException:  # the registry cannot be written, Ctrl-C, ...: nothing runs on
        survivors = _end_group(child.pid, grace_s, leader=child)[1]  # unsupervised
        raise
    finally:
        if record is not None and not survivors:  # else the next run tries to reap them
            record.unlink(missing_ok=True)
        failure = _read_status(status)
    ended = _Ended(code=code, timed_out=timed_out, killed=killed, leftovers=leftovers,
                   survivors=survivors)  # fmt: skip
    return ended, failure


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
        argv=tuple(argv), exit_code=code, timed_out=False, killed=False,
        duration_s=duration_s, stdout_path=stdout_path, stderr_path=stderr_path, pid=None,
        error=error, leftovers=0, survivors=0,
    )  # fmt: skip


def _start(
    argv: list[str],
    cwd: Path,
    env: dict[str, str] | None,
    stdin_path: Path | None,
    stdout_path: Path,
    stderr_path: Path,
    confinement: Confinement | None,
) -> tuple[subprocess.Popen[bytes], int] | str:
    """Open the output files and start `argv` through gsd/io/launch.py in a new session: the
    child and the read end of the pipe its launcher reports a failure to start on (see
    `_read_status`), or why it could not be started (also written to its stderr file)."""
    from gsd.io import sandbox

    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    stderr_path.parent.mkdir(parents=True, exist_ok=True)
    if confinement is not None and confinement.landlock:
        # Its own output files: it writes them through fds 1 and 2 anyway, and a
        # `>/dev/stderr` opens them again by name.
        writable = (*confinement.writable, stdout_path, stderr_path)
        confinement = confinement._replace(writable=writable)
    with contextlib.ExitStack() as files:
        out = files.enter_context(open(stdout_path, "wb"))
        # One file for both (`2>&1`): one open file, one offset; two opens would each
        # write from offset 0 over the other's bytes.
        same = _same_file(stdout_path, stderr_path)
        err = out if same else files.enter_context(open(stderr_path, "wb"))
        stdin = files.enter_context(open(stdin_path, "rb")) if stdin_path else subprocess.DEVNULL
        try:
            program = _find_program(argv[0], env)
            reader, writer = os.pipe()  # not inherited by gsd's other children (PEP 446)
            files.callback(os.close, writer)  # the launcher holds its own copy
            command = sandbox.launcher_argv(
                [program, *argv[1:]], confinement, os.getpid(), status_fd=writer
            )
            try:
                child = subprocess.Popen(
                    command, cwd=cwd, env=env, stdin=stdin, stdout=out, stderr=err,
                    start_new_session=True, close_fds=True, pass_fds=(writer,),
                )  # fmt: skip
            except BaseException:
                os.close(reader)
                raise
        except OSError as exc:
            err.write(f"gsd: cannot start {argv[0]}: {exc.strerror or exc}\n".encode())
            return f"{argv[0]}: {exc.strerror or exc}"
        return child, reader


def _find_program(name: str, env: dict[str, str] | None) -> str:
    """`name` found on the child's PATH (as exec would), or FileNotFoundError; a name
    with a slash is left to the launcher, relative to the child's working folder."""
    import errno
    import shutil

    if "/" in name:
        return name
    found = shutil.which(name, path=os.pathsep.join(os.get_exec_path(env)))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "not found on PATH")
    return found


def _read_status(reader: int) -> str | None:
    """The launcher's one-line reason the program never ran, or None: the pipe is empty
    once the program runs (the launcher's end is closed on exec). Never blocks."""
    try:
        os.set_blocking(reader, False)
        data = os.read(reader, 4096)
    except OSError:  # nothing written and still open somewhere: the program ran
        data = b""
    finally:
        os.close(reader)
    return data.decode("utf-8", "replace").strip().removeprefix("gsd-launch: ") or None


def _same_file(a: Path, b: Path) -> bool:
    """Whether `b` names the file `a` (which exists) names, however spelled."""
    try:
        return a == b or os.path.samefile(a, b)
    except OSError:
        return False  # `b` does not exist yet: not the same file


class _Cancelled(Exception):
    pass


def _wait(child: subprocess.Popen[bytes], timeout_s: float, cancel: threading.Event | None) -> int:
    """`child.wait(timeout_s)`, looking at `cancel` every 0.2 s when there is one.

    Woken the moment the child exits (a pidfd, Linux 5.3+), not by Popen.wait's polling,
    whose sleeps double up to 50 ms: a 12 ms launch would be seen at 15.5 or 31.5 ms."""
    import time

    deadline = time.monotonic() + timeout_s
    pidfd = _pidfd(child.pid)
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(child.args, timeout_s)
            code = _wait_step(child, pidfd, remaining if cancel is None else min(remaining, 0.2))
            if code is not None:
                return code
            if cancel is not None and cancel.is_set():
                raise _Cancelled
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


def _group_size(pgid: int) -> int:
    """How many processes of the group are alive (0 when none); reads /proc on Linux."""
    import os

    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return 0
    except PermissionError:
        return 1
    count = 0
    try:
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    with open(f"/proc/{entry.name}/stat", "rb") as handle:
                        fields = handle.read().rsplit(b")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[2]) == pgid and fields[0] != b"Z":
                    count += 1
    except OSError:
        return 1
    return count


def _end_group(
    pgid: int, grace_s: float, leader: subprocess.Popen[bytes] | None = None
) -> tuple[bool, int]:
    """SIGTERM to the group, SIGKILL after the grace period. Returns whether SIGTERM was
    enough, and how many processes are alive `max(grace_s, 1)` seconds after SIGKILL
    (stuck in the kernel, or not gsd's to signal): those are given up on, not waited for."""
    import os
    import signal
    import time

    def signal_group(sig: int) -> None:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    signal_group(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if leader is not None and leader.poll() is None:
            time.sleep(_POLL_S)
            continue
        if _group_size(pgid) == 0:
            return True, 0
        time.sleep(_POLL_S)
    signal_group(signal.SIGKILL)
    deadline = time.monotonic() + max(grace_s, 1.0)
    if leader is not None:
        try:
            leader.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass  # counted below with the rest of the group
    while (alive := _group_size(pgid)) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    return False, alive


def _record(registry: Path | None, pid: int, argv: list[str]) -> Path | None:
    """Note a running group (pid = pgid, and the pid's start time against pid reuse)."""
    if registry is None:
        return None
    import json

    registry.mkdir(parents=True, exist_ok=True)
    path = registry / f"{pid}.json"
    path.write_text(json.dumps({"pgid": pid, "start": _start_time(pid), "argv0": argv[0]}))
    return path


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def reap(registry: Path, grace_s: float = 2.0) -> list[int]:
    """End the groups a dead gsd run left behind; return their ids."""
    import json

    reaped: list[int] = []
    if not registry.is_dir():
        return reaped
    for path in sorted(registry.glob("*.json")):
        try:
            record = json.loads(path.read_text())
            pgid = int(record["pgid"])
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)
            continue
        # the leader may be gone while its group lives on; a reused pid is not ours
        same = record.get("start") in (None, _start_time(pgid)) or _start_time(pgid) is None
        if same and _group_size(pgid):
            reaped.append(pgid)
            if _end_group(pgid, grace_s)[1]:
                continue  # still there after SIGKILL: the record stays for a later run
        path.unlink(missing_ok=True)
    return reaped
