"""Runs started in the background (`gsd mcp --allow-run`): a separate `gsd execute-phase`
or `gsd execute-plan` process in a session of its own, so the process that started it
can end without ending the run. It is the command a user types, with the same lock,
sandbox and logs; only its output goes to a file: `<git common dir>/gsd/background/
<stamp>-<pid>.out`, beside a record of the launch (`.json`: pid, argv, start, and the
exit status once the process that started it saw it end).

Stopping one is what Ctrl-C does: SIGINT to the process that holds the run lock, which
ends every agent, rolls each attempt back and releases the lock as it always does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.core.utc import utc_stamp
from gsd.formats import nofollow
from gsd.formats.files import cannot_write, write_atomic
from gsd.io.lock import common_git_dir, live_holder, process_alive

RUN_COMMANDS = ("execute-phase", "execute-plan")


@dataclass(frozen=True)
class Launch:
    """One background run: its process, argv, start, files, and exit status if known."""

    pid: int
    argv: list[str]
    started: str
    output: Path
    record: Path
    exit_code: int | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "pid": self.pid,
            "argv": self.argv,
            "started": self.started,
            "output": str(self.output),
            "exit_code": self.exit_code,
        }


def start(root: Path, args: list[str]) -> tuple[Launch, subprocess.Popen[bytes]]:
    """Start `gsd ARGS` (a RUN_COMMANDS command) in `root`, detached: its own session, no
    stdin, its output to a file under the git dir. Its exit status goes into the launch
    record when `latest` sees it ended."""
    if not args or args[0] not in RUN_COMMANDS:
        raise ValueError(f"not a run command: {args}")
    folder = layout.background_dir(common_git_dir(root))
    now = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now / 1e9)) + f".{now // 1000 % 10**6:06d}"
    argv = [sys.executable, "-m", "gsd", *args]
    scratch = folder / f"{stamp}-{os.getpid()}.out"
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    try:
        fd = nofollow.open_file(scratch, flags, 0o600)  # no link followed, at any level
    except OSError as error:
        raise cannot_write(scratch, error) from None
    with os.fdopen(fd, "ab") as output:
        process = subprocess.Popen(
            argv,
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # no signal of ours or of a terminal reaches it
            close_fds=True,
        )
    named = folder / f"{stamp}-{process.pid}.out"
    held, name = nofollow.open_folder(named)  # the open file follows: the run writes on
    try:
        os.replace(scratch.name, name, src_dir_fd=held, dst_dir_fd=held)
    finally:
        os.close(held)
    launch = Launch(process.pid, argv, utc_stamp(), named, named.with_suffix(".json"))
    _write(launch)
    _reap()
    _children[process.pid] = (process, launch)
    _prune(folder)
    return launch, process


KEPT = 20  # launches whose record and output stay in .git/gsd/background/


def _prune(folder: Path) -> None:
    """Forget all but the last KEPT launches (their records and outputs)."""
    for record in sorted(folder.glob("*.json"))[:-KEPT]:
        record.with_suffix(".out").unlink(missing_ok=True)
        record.unlink(missing_ok=True)


# The runs this process started, polled (and so reaped) whenever one is looked at: no
# thread waits on them (one blocked in wait() would make every poll() answer None).
_children: dict[int, tuple[subprocess.Popen[bytes], Launch]] = {}


def _reap() -> None:
    """Each run this process started that has ended: its exit status into its record."""
    for pid, (process, launch) in list(_children.items()):
        if process.poll() is not None:
            _write(replace(launch, exit_code=process.returncode))
            del _children[pid]


def _write(launch: Launch) -> None:
    write_atomic(launch.record, json.dumps(launch.to_json(), indent=1) + "\n", sync=False)


def latest(root: Path) -> Launch | None:
    """The last run started in the background in this repository, or None."""
    _reap()
    folder = layout.background_dir(common_git_dir(root))
    records = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for record in reversed(records):
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
            code = data.get("exit_code")
            found = Launch(
                int(data["pid"]),
                [str(a) for a in data["argv"]],
                str(data["started"]),
                Path(str(data["output"])),
                record,
                code if isinstance(code, int) else None,
            )
        except (OSError, ValueError, KeyError, TypeError):
            continue
        return found
    return None


def still_running(launch: Launch) -> bool:
    """Is the launched process still there (starting, running, or ending after it
    released the lock)? Not once its exit status is known, nor for another process
    that took its pid."""
    if launch.exit_code is not None or not process_alive(launch.pid):
        return False
    return _same_command(launch.pid, list(launch.argv))


def output_tail(launch: Launch, lines: int = 20) -> str:
    """The last lines a background run printed (shown to the caller, never parsed)."""
    try:
        with open(launch.output, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def running_pid(root: Path) -> int | None:
    """The pid of the live gsd run of this repository (the run lock's holder), or None."""
    holder = live_holder(common_git_dir(root))
    pid = None if holder is None else holder.get("pid")
    return pid if isinstance(pid, int) else None


def stop(root: Path, seconds: float) -> tuple[int, bool]:
    """Send the live run SIGINT, as Ctrl-C does, and wait up to `seconds` for its process
    to end (every agent ended, every attempt rolled back, the lock released): its pid, and
    whether it ended in time. GsdError when no run is live or the lock's holder is no gsd
    run (its command line differs: a pid reused)."""
    common = common_git_dir(root)
    holder = live_holder(common)
    if holder is None:
        raise GsdError(
            f"no gsd run is live in {root}: nothing to stop",
            hint="run_status says how the last run ended",
        )
    pid = int(str(holder["pid"]))
    argv = holder.get("argv")
    argv = [str(a) for a in argv] if isinstance(argv, list) else []
    if not set(argv[1:2]) & set(RUN_COMMANDS):
        raise GsdError(
            f"the run lock is held by `gsd {' '.join(argv[1:])}` (pid {pid}), not by a run",
            hint="try again once it is done",
        )
    if not _same_command(pid, list(argv)):
        raise GsdError(
            f"the run lock names pid {pid}, which is not the gsd run that took it",
            hint=f"check the process, then remove {layout.lock_file(common)}",
        )
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not process_alive(pid):
            return pid, True
        time.sleep(0.2)
    return pid, not process_alive(pid)


def _same_command(pid: int, argv: list[object]) -> bool:
    """Does process `pid` run the command the lock's holder wrote (its arguments after
    the program: `python -m gsd` and a `gsd` script differ only before them)?"""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc: the pid and the host were checked
    running = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
    tail = [str(a) for a in argv[1:]]
    return not tail or running[-len(tail) :] == tail
