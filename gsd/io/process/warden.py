"""The warden: the launcher's parent half, which outlives the program to end all it started.

`start` is called by gsd/io/process/launch.py after the parent-death signal and before the
sandbox. It forks: the child returns and goes on to the sandbox and exec; the parent
becomes the warden and never returns. The warden

- is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the program starts, however
  it detaches (`setsid`, `setpgid(0, 0)`, a double fork), stays a descendant of the
  warden, and comes back to it as an orphan;
- puts the program in a cgroup of its own where one is writable (`cgroups`): v2 for
  tracking (`cgroup.kill`) and, where its controllers are enabled, `memory.max` and
  `pids.max`; else cgroup v1's `pids` and `memory` hierarchies; else it counts the
  program's descendants and their memory itself, every `POLL_S`;
- when the program's main process exits, sends what is left SIGTERM, then SIGKILL
  after the grace period, until nothing is left; on `KILL_NOW` (gsd's grace is over)
  or `PARENT_GONE` (gsd died: the warden's parent-death signal) at once;
- ends everything when a limit is hit (a fork failed at `pids.max`, the OOM killer ran
  in its memory cgroup, or its own count went over);
- forwards SIGTERM, SIGINT and SIGHUP to the program when it left the warden's group;
- writes one line to the status pipe (`REPORT` key=value ...), removes its cgroups
  and exits as the program did (its exit code, or killed by the same signal).

Standard library only, and no import of gsd: it runs in the launcher under `-I -S`.
"""

from __future__ import annotations

import os
import signal
import sys
import time

# Not `typing` (see launch.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
KILL_NOW = signal.SIGUSR1  # from gsd: the grace period is over, SIGKILL everything
PARENT_GONE = signal.SIGUSR2  # the warden's parent-death signal: gsd is gone
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
WATCHED = {signal.SIGCHLD, KILL_NOW, PARENT_GONE, *FORWARDED}
POLL_S = 0.1
KILL_PATIENCE_S = 0.5  # SIGKILL rounds before the rest are counted as survivors (gsd waits 1 s)
REPORT = "gsd-warden: "
PREFIX = "gsd-"  # its cgroups: gsd-{pid}-{start time}

if __package__:
    from gsd.io.process import cgroups  # imported as part of gsd
else:  # the launcher, run from its folder (no gsd on its path)
    import cgroups  # type: ignore[import-not-found, no-redef]


class Spec:
    """The warden's part of the launcher's command line: `grace=S,memory=B,processes=N`."""

    __slots__ = ("grace", "memory", "processes")

    def __init__(self, text: str) -> None:
        values = dict(item.partition("=")[::2] for item in text.split(",") if item)
        try:
            self.grace = float(values.get("grace", "10"))
            self.memory = int(values.get("memory", "0"))  # bytes; 0: no limit
            self.processes = int(values.get("processes", "0"))  # 0: no limit
        except ValueError:
            raise ValueError(f"usage: --warden {text!r}") from None


def spec_text(grace: float, memory: int | None, processes: int | None) -> str:
    """The `--warden` argument for these settings (None: no limit)."""
    return f"grace={grace:g},memory={memory or 0},processes={processes or 0}"


def start(library: Any, parent: int | None, status_fd: int | None, text: str) -> None:
    """Fork; return in the child only, once it is placed in its cgroups. The parent
    becomes the warden and exits as the child's program does. Linux only (a subreaper,
    /proc, sigtimedwait): elsewhere it returns at once and there is no warden."""
    if not sys.platform.startswith("linux"):
        return
    try:
        spec = Spec(text)
    except ValueError as exc:
        for fd in (2, status_fd):
            if fd is not None:
                os.write(fd, f"gsd-launch: {exc}\n".encode())
        os._exit(126)
    name = f"{PREFIX}{os.getpid()}-{cgroups.start_time(os.getpid())}"
    groups = cgroups.create(name, spec.memory, spec.processes)
    _prctl(library, PR_SET_CHILD_SUBREAPER, 1)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    reader, writer = os.pipe()
    keeper = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(writer)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        _prctl(library, PR_SET_PDEATHSIG, int(signal.SIGKILL))
        os.read(reader, 1)  # placed in its cgroups (or the warden is gone)
        os.close(reader)
        if os.getppid() != keeper:  # the warden died before the parent-death signal was set
            os._exit(126)
        cgroups.fallback_rlimits(groups, spec.processes)
        return
    os.close(reader)
    groups = cgroups.join(groups, pid)
    os.write(writer, b"x")
    os.close(writer)
    _prctl(library, PR_SET_PDEATHSIG, int(PARENT_GONE))
    warden = Warden(pid, spec, groups)
    if parent is not None and os.getppid() != parent:
        warden.kill_all()
    _exit_as(warden.run(), status_fd, warden)


def _prctl(library: Any, option: int, value: int) -> None:
    import ctypes

    if library is not None:
        ulong = ctypes.c_ulong
        library.prctl(ctypes.c_int(option), ulong(value), ulong(0), ulong(0), ulong(0))


class Warden:
    """The warden's state: the program, its cgroups, what was ended and why."""

    def __init__(self, pid: int, spec: Spec, groups: list[cgroups.Cgroup]) -> None:
        self.pid = pid
        self.spec = spec
        self.groups = groups
        self.status: int | None = None  # the program's wait status, once it exited
        self.seen: set[int] = set()  # processes ended after the program's exit
        self.survivors = 0
        self.urgent = False  # everything was SIGKILLed at once: no grace period after
        self.limit = ""  # "processes" or "memory" when one was hit
        self.limits = (spec.memory, spec.processes)

    def run(self) -> int:
        """Wait for the program (answering signals, watching limits), then end the rest."""
        while self.status is None:
            self._handle(signal.sigtimedwait(WATCHED, POLL_S))
            self._reap()
            if self.status is None and not self.limit:
                self.limit = cgroups.limit_hit(self.groups, *self.limits, count=True)
                if self.limit:
                    self.kill_all()
        self.limit = self.limit or cgroups.limit_hit(self.groups, *self.limits, count=False)
        self._end_leftovers()
        return self.status

    def _handle(self, info: Any) -> None:
        if info is None or info.si_signo == signal.SIGCHLD:
            return
        if info.si_signo in (KILL_NOW, PARENT_GONE):
            self.kill_all()
            return
        try:  # the program got it with its group, unless it left the group
            if os.getpgid(self.pid) != os.getpgid(0):
                os.killpg(os.getpgid(self.pid), info.si_signo)
        except OSError:
            pass

    def _reap(self) -> None:
        """Collect every exited child (orphans come to a subreaper too)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.pid:
                self.status = status

    def members(self) -> set[int]:
        """The live processes the program started (its tree and its cgroups)."""
        found = cgroups.descendants(os.getpid()) | cgroups.members(self.groups)
        found.discard(os.getpid())
        return {pid for pid in found if not cgroups.is_zombie(pid)}

    def _end_leftovers(self) -> None:
        """What outlived the program: SIGTERM, then SIGKILL after the grace period."""
        left = self.members()
        if not left or self.urgent:
            return
        self.seen |= left
        _signal_all(left, signal.SIGTERM)
        deadline = time.monotonic() + self.spec.grace
        while left and time.monotonic() < deadline:
            info = signal.sigtimedwait(WATCHED, 0.05)
            if info is not None and info.si_signo in (KILL_NOW, PARENT_GONE):
                break
            self._reap()
            left = self.members()
            self.seen |= left
        self.kill_all()

    def kill_all(self) -> None:
        """SIGKILL the program and all it started, round after round, until none is
        left (a fork bomb forks between rounds) or KILL_PATIENCE_S have passed."""
        self.urgent = self.status is None  # the program too: no grace period after it
        cgroups.kill(self.groups)
        deadline = time.monotonic() + KILL_PATIENCE_S
        left = self.members()
        while left and time.monotonic() < deadline:
            if self.status is not None:
                self.seen |= left
            _signal_all(left, signal.SIGKILL)
            time.sleep(0.01)
            self._reap()
            left = self.members()
        self.survivors = len(left)

    def report(self) -> str:
        """The line gsd reads from the status pipe."""
        kinds = "+".join(group.kind for group in self.groups) or "none"
        leftovers = len(self.seen - {self.pid})
        return (
            f"{REPORT}leftovers={leftovers} survivors={self.survivors} "
            f"limit={self.limit or '-'} cgroups={kinds}\n"
        )


def _signal_all(pids: set[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _exit_as(status: int, status_fd: int | None, warden: Warden) -> NoReturn:
    """Remove the cgroups, report, and end as the program ended."""
    if not warden.survivors:
        cgroups.remove(warden.groups)  # else gsd's sweep tries again later
    if status_fd is not None:
        try:
            os.write(status_fd, warden.report().encode())
        except OSError:
            pass
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        os._exit(code)
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(-code, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {-code})
    os.kill(os.getpid(), -code)
    os._exit(128 - code)  # a signal that does not end a process
