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
   with `--warden`: it forks, and its parent stays as the warden (gsd/io/warden.py),
   which ends whatever the program leaves running and keeps its resource limits;
2. always (gsd/io/launchcaps.py): a new session with no controlling terminal and no
   terminal on fds 0-2; every capability but a few a program working on files needs
   dropped from every set, and PR_SET_NO_NEW_PRIVS. If that fails: exit 126;
3. with `--landlock`: a Landlock ruleset that handles every filesystem *write* right
   the kernel knows and, from ABI 6, confines signals to the sandbox; only the `--write`
   paths (and what is beneath them) are writable. A `--write` path that does not exist
   is skipped. With `--hide`, reading files is handled too: it is granted everywhere
   but beneath the `--hide` paths (gsd/io/launchhide.py says how, and what it costs).
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
import stat
import struct
import sys

if __package__:
    from gsd.io import warden  # imported as part of gsd
else:  # the launcher, run from its folder with no gsd on its path (-I leaves it out)
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))  # after the stdlib's
    import warden  # type: ignore[import-not-found, no-redef]

# Not `typing`: importing it costs the launcher ~10 ms (mypy reads the names all the same).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

# Imported as gsd.io.launch (gsd itself, tests), or as `launch` from its own folder (the
# launcher under `python -I -S`, see sandbox.launcher_argv): its helpers likewise.
if TYPE_CHECKING or __package__:
    from gsd.io import launchcaps, launchhide
else:  # as a script, too (-I leaves the script's folder out of sys.path): after the stdlib
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    import launchcaps
    import launchhide

EXIT_CANNOT_RUN = 126
EXIT_NOT_FOUND = 127

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
SIGKILL = 9

# Landlock (include/uapi/linux/landlock.h); the syscall numbers are the same on every
# architecture Linux added them to after the 5.x unification.
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1
LANDLOCK_RULE_NET_PORT = 2  # ABI 4
ACCESS_NET_CONNECT_TCP = 1 << 1  # ABI 4 (1 << 0, BIND_TCP, is never handled)
LANDLOCK_SCOPE_SIGNAL = 1 << 1

ACCESS_FS_READ_FILE = 1 << 2
ACCESS_FS_WRITE_FILE = 1 << 1
ACCESS_FS_REMOVE_DIR = 1 << 4
ACCESS_FS_REMOVE_FILE = 1 << 5
ACCESS_FS_MAKE_CHAR = 1 << 6
ACCESS_FS_MAKE_DIR = 1 << 7
ACCESS_FS_MAKE_REG = 1 << 8
ACCESS_FS_MAKE_SOCK = 1 << 9
ACCESS_FS_MAKE_FIFO = 1 << 10
ACCESS_FS_MAKE_BLOCK = 1 << 11
ACCESS_FS_MAKE_SYM = 1 << 12
ACCESS_FS_REFER = 1 << 13  # ABI 2
ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3
ACCESS_FS_IOCTL_DEV = 1 << 15  # ABI 5

WRITE_RIGHTS_ABI1 = (
    ACCESS_FS_WRITE_FILE
    | ACCESS_FS_REMOVE_DIR
    | ACCESS_FS_REMOVE_FILE
    | ACCESS_FS_MAKE_CHAR
    | ACCESS_FS_MAKE_DIR
    | ACCESS_FS_MAKE_REG
    | ACCESS_FS_MAKE_SOCK
    | ACCESS_FS_MAKE_FIFO
    | ACCESS_FS_MAKE_BLOCK
    | ACCESS_FS_MAKE_SYM
)
# The only rights a rule on a non-directory may carry (any other is EINVAL).
FILE_RIGHTS = ACCESS_FS_READ_FILE | ACCESS_FS_WRITE_FILE | ACCESS_FS_TRUNCATE | ACCESS_FS_IOCTL_DEV


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
        self.warden = warden  # gsd/io/warden.py's spec, None: no warden
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


def landlock_abi(library: Any) -> int:
    """The kernel's Landlock ABI version; OSError when it has none (or may not use it)."""
    version = int(
        library.syscall(
            ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
            None,
            ctypes.c_size_t(0),
            ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
        )
    )
    if version < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))
    return version


def write_rights(abi: int) -> int:
    """Every filesystem write right ABI `abi` knows (handling an unknown one is EINVAL)."""
    rights = WRITE_RIGHTS_ABI1
    if abi >= 2:
        rights |= ACCESS_FS_REFER
    if abi >= 3:
        rights |= ACCESS_FS_TRUNCATE
    if abi >= 5:
        rights |= ACCESS_FS_IOCTL_DEV
    return rights


def ruleset_attr(abi: int, handled: int, net: int = 0) -> bytes:
    """struct landlock_ruleset_attr, only as long as the fields this ABI knows."""
    scoped = LANDLOCK_SCOPE_SIGNAL if abi >= 6 else 0
    fields = struct.pack("=QQQ", handled, net, scoped)  # fs, net, scoped
    return fields[: 8 if abi < 4 else 16 if abi < 6 else 24]


def _check(result: int, what: str) -> int:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")
    return result


def apply_landlock(
    library: Any,
    writable: tuple[str, ...],
    hidden: tuple[str, ...] = (),
    connect: tuple[int, ...] | None = None,
) -> None:
    """Make this thread (and what it execs) unable to write anywhere but `writable`;
    with `hidden`, to read a file beneath a `hidden` path; and from ABI 4 with `connect`,
    to connect over TCP to any port but those."""
    if library is None or not sys.platform.startswith("linux"):
        raise OSError(0, f"Landlock is Linux-only (this is {sys.platform})")
    abi = landlock_abi(library)
    handled = write_rights(abi) | (ACCESS_FS_READ_FILE if hidden else 0)
    net = ACCESS_NET_CONNECT_TCP if connect is not None and abi >= 4 else 0
    attr = ruleset_attr(abi, handled, net)
    syscall = library.syscall
    ruleset = _check(
        syscall(
            ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
            attr,
            ctypes.c_size_t(len(attr)),
            ctypes.c_uint32(0),
        ),
        "landlock_create_ruleset",
    )
    try:
        add_file_rules(library, ruleset, writable, hidden, handled)
        if net:
            add_port_rules(library, ruleset, connect or ())
        _check(
            library.prctl(
                ctypes.c_int(PR_SET_NO_NEW_PRIVS),
                ctypes.c_ulong(1),
                ctypes.c_ulong(0),
                ctypes.c_ulong(0),
                ctypes.c_ulong(0),
            ),
            "PR_SET_NO_NEW_PRIVS",
        )
        _check(
            syscall(
                ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF),
                ctypes.c_long(ruleset),
                ctypes.c_uint32(0),
            ),
            "landlock_restrict_self",
        )
    finally:
        os.close(ruleset)


def add_file_rules(
    library: Any, ruleset: int, writable: tuple[str, ...], hidden: tuple[str, ...], handled: int
) -> None:
    """Every handled right on each `writable` path; with `hidden`, reading everywhere
    else (gsd/io/launchhide.py): a writable folder holding a hidden path is granted
    around it, a path listed as writable is readable even inside a hidden folder."""
    if not hidden:
        for path in writable:
            _add_path_rule(library, ruleset, path, handled)
        return
    hide = tuple(os.path.realpath(path) for path in hidden)
    try:
        for path in launchhide.granted(hide):
            _add_path_rule(library, ruleset, path, ACCESS_FS_READ_FILE)
        for path in writable:
            real = os.path.realpath(path)
            inner = tuple(folder for folder in hide if folder != real)
            parts = launchhide.granted(inner, real) if os.path.isdir(real) else [path]
            for part in parts:
                _add_path_rule(library, ruleset, part, handled)
    except OSError as exc:
        if exc.filename is None:
            raise
        raise OSError(
            exc.errno, f"cannot hide {', '.join(hidden)}: {exc.filename}: {exc.strerror}"
        ) from None


def _add_path_rule(library: Any, ruleset: int, path: str, handled: int) -> None:
    """One path_beneath rule: every handled right on a directory, file rights otherwise."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there to write to: nothing to allow
    except OSError as exc:
        raise OSError(exc.errno, f"{path}: {exc.strerror}") from None
    try:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        allowed = handled if is_dir else handled & FILE_RIGHTS
        attr = struct.pack("=Qi", allowed, fd)  # packed: u64 + s32, 12 bytes
        _check(
            library.syscall(
                ctypes.c_long(SYS_LANDLOCK_ADD_RULE),
                ctypes.c_long(ruleset),
                ctypes.c_long(LANDLOCK_RULE_PATH_BENEATH),
                attr,
                ctypes.c_uint32(0),
            ),
            f"landlock_add_rule {path}",
        )
    finally:
        os.close(fd)


def add_port_rules(library: Any, ruleset: int, ports: tuple[int, ...]) -> None:
    """One net_port rule per TCP port the program may connect to (ABI 4+)."""
    for port in dict.fromkeys(ports):
        attr = struct.pack("=QQ", ACCESS_NET_CONNECT_TCP, port)  # allowed_access, port
        _check(
            library.syscall(
                ctypes.c_long(SYS_LANDLOCK_ADD_RULE),
                ctypes.c_long(ruleset),
                ctypes.c_long(LANDLOCK_RULE_NET_PORT),
                attr,
                ctypes.c_uint32(0),
            ),
            f"landlock_add_rule port {port}",
        )


def run(options: Options) -> NoReturn:
    """Steps 1-4 of the module docstring; returns only by raising LaunchError."""
    library = libc()
    die_with_parent(library, options.parent)
    if options.warden is not None:  # the parent stays, to end all the program starts
        warden.start(library, options.parent, options.status_fd, options.warden)
    give_up_terminal_and_privileges(library, options.landlock)
    if options.landlock:
        try:
            apply_landlock(library, options.writable, options.hidden, options.connect)
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
    """Step 2 of the module docstring (gsd/io/launchcaps.py), with or without Landlock."""
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
