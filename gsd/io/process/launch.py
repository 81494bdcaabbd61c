"""The launcher gsd execs every supervised program through: parent-death signal, sandbox, exec.

Run in the child, never in the process it serves, as a script or (gsd's way, see
`sandbox.launcher_argv`: its cached bytecode then starts faster) imported by `-c`::

    python -I -S launch.py [--parent PID] [--status-fd FD] [--warden SPEC] [--landlock]
                           [--write PATH]... [--hide PATH]... [--connect PORT,...]
                           -- PROGRAM [ARG...]

It runs in the child, after fork and before the program, so that gsd's own (threaded)
process never runs Python code between fork and exec (which Python documents as unsafe
in a process with threads). In order:

1. PR_SET_PDEATHSIG(SIGKILL): the kernel kills this process, and the program it becomes,
   when gsd dies; then, if gsd (`--parent`) is already gone, it stops at once;
   with `--warden`: it forks, and its parent stays as the warden (gsd/io/process/warden.py),
   which ends whatever the program leaves running and keeps its resource limits;
2. always (gsd/io/process/launchcaps.py): a new session with no controlling terminal and no
   terminal on fds 0-2; every capability but a few a program working on files needs
   dropped from every set, and PR_SET_NO_NEW_PRIVS. If that fails: exit 126;
3. with `--landlock`: a Landlock ruleset that handles every filesystem *write* right
   the kernel knows and, from ABI 6, confines signals to the sandbox; only the `--write`
   paths (and what is beneath them) are writable. A `--write` path that does not exist
   is skipped. With `--hide`, reading files is handled too: it is granted everywhere
   but beneath the `--hide` paths (gsd/io/process/launchhide.py says how, and what it costs;
   gsd/io/process/landlock.py builds the ruleset).
   With `--connect` (a comma-separated list of TCP ports, maybe empty) and ABI 4+, the
   ruleset also handles outgoing TCP connections: only to those ports (on any address)
   may the program connect; listening (bind) stays allowed. Below ABI 4 `--connect` is
   ignored (the kernel has no network rules; gsd's dry run says so).
   If the sandbox cannot be applied the program is NOT run unconfined: exit 126;
4. exec the program (exit 127 when it cannot be found, 126 when it cannot be executed).

Every failure is one line on stderr, `gsd-launch: ...`, also written to `--status-fd`
(inherited from gsd; closed on exec, so gsd reads an empty pipe when the program started).
Standard library only, and no import of gsd: it must start fast under `-I -S`.
"""

from __future__ import annotations

import ctypes
import os
import sys

if __package__:
    from gsd.io.process import warden  # imported as part of gsd
else:  # the launcher, run from its folder with no gsd on its path (-I leaves it out)
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after the stdlib's
    import warden  # type: ignore[import-not-found, no-redef]

# Not `typing`: importing it costs the launcher ~10 ms (mypy reads the names all the same).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

# Imported as gsd.io.process.launch (gsd itself, tests), or as `launch` from its own folder (the
# launcher under `python -I -S`, see sandbox.launcher_argv): its helpers likewise.
if TYPE_CHECKING or __package__:
    from gsd.io.process import landlock, launchcaps
else:  # as a script, too (-I leaves the script's folder out of sys.path): after the stdlib
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    import landlock
    import launchcaps

EXIT_CANNOT_RUN = 126
EXIT_NOT_FOUND = 127

PR_SET_PDEATHSIG = 1
SIGKILL = 9


class LaunchError(Exception):
    """Why the program is not run, with the exit status that says so."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# the options that take a value
VALUED = ("--parent", "--status-fd", "--write", "--hide", "--connect", "--warden")


class Options:
    """The launcher's command line."""

    __slots__ = (
        "parent",
        "status_fd",
        "landlock",
        "writable",
        "argv",
        "hidden",
        "connect",
        "warden",
    )

    def __init__(
        self,
        parent: int | None,
        status_fd: int | None,
        landlock: bool,
        writable: tuple[str, ...],
        argv: tuple[str, ...],
        hidden: tuple[str, ...] = (),
        connect: tuple[int, ...] | None = None,
        warden: str | None = None,
    ) -> None:
        self.warden = warden  # gsd/io/process/warden.py's spec, None: no warden
        self.parent = parent
        self.status_fd = status_fd
        self.landlock = landlock
        self.writable = writable
        self.argv = argv
        self.hidden = hidden  # `--hide`: unreadable under Landlock
        self.connect = connect  # the TCP ports it may connect to; None: any


def parse_options(args: list[str]) -> Options:
    """The options before `--`, and the program's argv after it (hand-parsed: fast)."""
    parent = status_fd = None
    landlock = False
    writable: list[str] = []
    hidden: list[str] = []
    connect: tuple[int, ...] | None = None
    warden = None
    index = 0
    while index < len(args) and args[index] != "--":
        option = args[index]
        if option == "--landlock":
            landlock = True
            index += 1
            continue
        if option not in VALUED or index + 1 >= len(args):
            raise LaunchError(EXIT_CANNOT_RUN, f"usage: unknown or incomplete option {option!r}")
        value = args[index + 1]
        if option == "--warden":
            warden = value
        elif option == "--write":
            writable.append(value)
        elif option == "--hide":
            hidden.append(value)
        elif option == "--connect":
            connect = parse_ports(value)
        elif not value.isdigit():
            raise LaunchError(EXIT_CANNOT_RUN, f"usage: {option} needs a number, not {value!r}")
        elif option == "--parent":
            parent = int(value)
        else:
            status_fd = int(value)
        index += 2
    argv = tuple(args[index + 1 :])
    if not argv:
        raise LaunchError(EXIT_CANNOT_RUN, "usage: no program after --")
    return Options(
        parent, status_fd, landlock, tuple(writable), argv, tuple(hidden), connect, warden
    )


def parse_ports(value: str) -> tuple[int, ...]:
    """`--connect`'s comma-separated TCP ports ("" for none)."""
    ports = tuple(part for part in value.split(",") if part)
    if not all(part.isdigit() and int(part) < 65536 for part in ports):
        raise LaunchError(EXIT_CANNOT_RUN, f"usage: --connect needs TCP ports, not {value!r}")
    return tuple(int(part) for part in ports)


def libc() -> Any:
    """The C library with errno kept, or None where there is none to load (not POSIX)."""
    try:
        library = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    library.syscall.restype = ctypes.c_long
    return library


def die_with_parent(library: Any, parent: int | None) -> None:
    """SIGKILL when the parent dies (Linux); stop now if it is already gone."""
    if library is not None and sys.platform.startswith("linux"):
        ulong = ctypes.c_ulong
        library.prctl(ctypes.c_int(PR_SET_PDEATHSIG), ulong(SIGKILL), ulong(0), ulong(0), ulong(0))
    # Checked after the prctl: a parent that dies before it would leave us unwatched.
    if parent is not None and os.getppid() != parent:
        raise LaunchError(EXIT_CANNOT_RUN, f"gsd (pid {parent}) is gone; not starting")


def run(options: Options) -> NoReturn:
    """Steps 1-4 of the module docstring; returns only by raising LaunchError."""
    library = libc()
    die_with_parent(library, options.parent)
    if options.warden is not None:  # the parent stays, to end all the program starts
        warden.start(library, options.parent, options.status_fd, options.warden)
    give_up_terminal_and_privileges(library, options.landlock)
    if options.landlock:
        try:
            landlock.apply_landlock(library, options.writable, options.hidden, options.connect)
        except OSError as exc:
            raise LaunchError(
                EXIT_CANNOT_RUN, f"cannot apply the sandbox: {exc.strerror or exc}"
            ) from None
    program = options.argv[0]
    try:
        if "/" in program:
            os.execv(program, options.argv)
        os.execvp(program, options.argv)
    except FileNotFoundError:
        raise LaunchError(EXIT_NOT_FOUND, f"cannot start {program}: not found") from None
    except OSError as exc:
        raise LaunchError(EXIT_CANNOT_RUN, f"cannot start {program}: {exc.strerror}") from None


def give_up_terminal_and_privileges(library: Any, landlock: bool) -> None:
    """Step 2 of the module docstring (gsd/io/process/launchcaps.py), with or without Landlock."""
    kept = launchcaps.KEPT_MASK if landlock else launchcaps.UNCONFINED_MASK
    try:
        launchcaps.detach_terminal()
    except OSError as exc:
        raise LaunchError(
            EXIT_CANNOT_RUN, f"cannot leave the terminal (setsid): {exc.strerror}"
        ) from None
    try:
        launchcaps.drop_privileges(library, kept)
    except OSError as exc:
        raise LaunchError(EXIT_CANNOT_RUN, f"cannot drop privileges: {exc.strerror}") from None


def main(args: list[str]) -> NoReturn:
    status_fd = None
    try:
        options = parse_options(args)
        status_fd = options.status_fd
        if status_fd is not None:
            os.set_inheritable(status_fd, False)  # the program must not hold it open
        run(options)
    except LaunchError as failure:
        _fail(failure.status, str(failure), status_fd)


def _fail(status: int, message: str, status_fd: int | None) -> NoReturn:
    line = f"gsd-launch: {message}\n".encode(errors="replace")
    for fd in (2, status_fd):
        if fd is not None:
            try:
                os.write(fd, line)
            except OSError:
                pass  # nowhere to say it: the exit status still does
    os._exit(status)


if __name__ == "__main__":
    main(sys.argv[1:])
