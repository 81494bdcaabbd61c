"""The Landlock ruleset the launcher (gsd/io/process/launch.py) applies in the child before exec.

Part of the launcher: standard library only, and no import of gsd but its launcher's own
helpers (it must start fast under `python -I -S`). Every call takes the C library
(`launch.libc()`) and raises OSError when the kernel refuses.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
import sys

# Not `typing`: importing it costs the launcher ~10 ms (mypy reads the names all the same).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Imported as gsd.io.process.landlock (gsd itself, tests), or as `landlock` from its own folder (the
# launcher under `python -I -S`, see sandbox.launcher_argv).
if TYPE_CHECKING or __package__:
    from gsd.io.process import launchhide
else:
    import launchhide

PR_SET_NO_NEW_PRIVS = 38

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
    else (gsd/io/process/launchhide.py): a writable folder holding a hidden path is granted
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
