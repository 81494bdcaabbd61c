"""The run lock, `<git common dir>/gsd/run.lock`: one live run per repository, whichever
worktree it runs in; a dead run's lock is taken over."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
from pathlib import Path
from types import TracebackType

from gsd.core import layout
from gsd.core.errors import GsdError, InputError
from gsd.core.utc import utc_stamp
from gsd.formats.files import cannot_write
from gsd.io.git import command as gitexec
from gsd.io.process import procgroups


def common_git_dir(root: Path) -> Path:
    """The git directory shared by all worktrees of the repository `root` is in."""
    done = gitexec.call(["rev-parse", "--git-common-dir"], cwd=root, read_only=True)
    if done.status != 0:
        detail = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        raise InputError(
            f"not a git repository: {root} ({detail})",
            hint="run git init",
            details=gitexec.details(done.args, done),
        )
    return (root / done.stdout.strip()).resolve()  # git may answer relative to `root`


def repo_lock(root: Path) -> RunLock:
    """The run lock of the repository `root` is in (not taken yet)."""
    return RunLock(common_git_dir(root))


class RunLock:
    """Held for a whole run: an exclusive flock on the lock file, which the kernel
    releases when the holder dies however it dies. The file names the holder (pid,
    start time, command) for the error a second run prints."""

    def __init__(self, common_dir: Path, registry: Path | None = None) -> None:
        self.path = layout.lock_file(common_dir)
        # where supervised process groups are recorded (those a dead run left are reaped)
        self.registry = layout.running_dir(common_dir) if registry is None else registry
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        for _ in range(10):
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _describe(_read(fd))
                os.close(fd)
                raise GsdError(
                    f"another gsd run holds {self.path}: {holder}",
                    hint="wait for it to finish, or stop that process",
                ) from None
            except OSError as error:  # e.g. a file system without flock
                os.close(fd)
                raise cannot_write(self.path, error) from None
            # The holder may have unlinked the file between our open and our flock:
            # then we locked a file nobody else will ever see. Start again.
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            try:
                if _read(fd):  # a dead run's lock: end what it left running
                    procgroups.reap(self.registry)
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(_holder()).encode() + b"\n", 0)
            except BaseException as error:
                os.close(fd)
                if isinstance(error, OSError):
                    raise cannot_write(self.path, error) from None
                raise
            self._fd = fd
            return self
        raise GsdError(f"cannot take {self.path}: it keeps changing", hint="try again")

    def _open(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as error:  # a read-only .git, a full disk: one line
            raise cannot_write(self.path, error) from None

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)  # closing releases the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def live_holder(common_dir: Path) -> dict[str, object] | None:
    """Who holds the run lock of the repository whose common git dir is `common_dir`:
    the holder's record (pid, started, host, argv) while that process lives on this
    host, else None. Read only: the lock is never taken, so a run starting now is never
    refused because someone looked."""
    try:
        data = layout.lock_file(common_dir).read_bytes()
        holder = json.loads(data) if data.strip() else None
    except (OSError, ValueError):
        return None
    if not isinstance(holder, dict) or holder.get("host") != socket.gethostname():
        return None
    pid = holder.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not process_alive(pid):
        return None
    return holder


def process_alive(pid: int) -> bool:
    """A process `pid` exists (and is no zombie that nobody reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return True
    return not fields or fields[0] != "Z"


def _holder() -> dict[str, object]:
    return {
        "pid": os.getpid(),
        "started": utc_stamp(),
        "host": socket.gethostname(),
        "argv": sys.argv,
    }


def _read(fd: int) -> dict[str, object]:
    try:
        data = os.pread(fd, 65536, 0)
        value = json.loads(data) if data.strip() else {}
    except (OSError, ValueError):
        return {"unreadable": True}
    return value if isinstance(value, dict) else {"unreadable": True}


def _describe(holder: dict[str, object]) -> str:
    if not holder or "pid" not in holder:
        return "a run that has not written its name yet"
    argv = holder.get("argv")
    command = " ".join(str(a) for a in argv) if isinstance(argv, list) else "?"
    host, since = holder.get("host", "?"), holder.get("started", "?")
    return f"pid {holder['pid']} on {host} since {since} ({command})"
