"""What the launched program gives up before exec: gsd's terminal and root's privileges.

Part of the launcher (gsd/io/process/launch.py), run in the child between fork and exec; the
same rules: standard library only, no import of gsd, every failure an OSError whose
text is one line. Always applied, with or without Landlock:

- `detach_terminal`: the program leads a new session (setsid), so it has no controlling
  terminal (`/dev/tty` cannot be opened), and none of its descriptors 0-2 is a
  terminal (one that is becomes /dev/null): nothing it does can reach the user's shell;
- `drop_privileges`: every capability but `KEPT` leaves the bounding, effective,
  permitted, inheritable and ambient sets, and PR_SET_NO_NEW_PRIVS is set, so that
  neither a set-user-ID program nor file capabilities give any back. As root that ends
  `chattr +i` (CAP_LINUX_IMMUTABLE), TIOCSTI into another terminal, mounts and
  `open_by_handle_at` (CAP_SYS_ADMIN, CAP_DAC_READ_SEARCH), ptrace of gsd, raw sockets
  that would pass by Landlock's TCP rules (CAP_NET_RAW), device nodes (CAP_MKNOD),
  raising hard resource limits (CAP_SYS_RESOURCE), and the rest of the list below.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PR_CAPBSET_READ = 23
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAPABILITY_VERSION_3 = 0x20080522  # two 32-bit words per set
CAP_SETPCAP = 8
CAP_LAST_FALLBACK = 63  # probed with PR_CAPBSET_READ, which says EINVAL past the last

# What real agents still need as root: to own, read and write the files of their tree
# whoever owns them (git, npm and tar extract as root; npm runs scripts as the folder's
# owner), to signal their own children, and to listen on a low port. Everything else
# (CAP_SYS_ADMIN, CAP_LINUX_IMMUTABLE, CAP_SYS_PTRACE, CAP_NET_ADMIN, CAP_NET_RAW,
# CAP_SYS_MODULE, CAP_MKNOD, CAP_DAC_READ_SEARCH, CAP_SYS_RESOURCE, CAP_SYS_NICE,
# CAP_SYS_CHROOT, CAP_SETFCAP, CAP_BPF, CAP_PERFMON, CAP_AUDIT_*, ... and any the kernel
# adds later) is dropped.
KEPT = {
    0: "CAP_CHOWN",
    1: "CAP_DAC_OVERRIDE",
    3: "CAP_FOWNER",
    4: "CAP_FSETID",
    5: "CAP_KILL",
    6: "CAP_SETGID",
    7: "CAP_SETUID",
    8: "CAP_SETPCAP",  # can only drop more: the bounding set never grows again
    10: "CAP_NET_BIND_SERVICE",
}
KEPT_MASK = sum(1 << number for number in KEPT)
# Kept only where Landlock does not confine the program: codex's own sandbox (bubblewrap,
# used when gsd's is off) needs it to map root into its user namespace. Under Landlock it
# is dropped: Landlock does not restrict extended attributes, so with it a root agent
# could give any program on the machine file capabilities (and Landlock denies the
# bubblewrap's uid map anyway).
UNCONFINED_MASK = KEPT_MASK | 1 << 31  # CAP_SETFCAP


def detach_terminal() -> None:
    """A new session (no controlling terminal), and /dev/null for a terminal on 0-2."""
    if os.getsid(0) != os.getpid():
        os.setsid()  # fails only for a group leader: gsd starts it as a session leader
    null = -1
    try:
        for fd in (0, 1, 2):
            if os.isatty(fd):
                if null < 0:
                    null = os.open(os.devnull, os.O_RDWR | os.O_NOCTTY)
                os.dup2(null, fd)
    finally:
        if null > 2:
            os.close(null)


def drop_privileges(library: Any, kept: int = KEPT_MASK) -> None:
    """Keep only the capabilities in `kept` (`KEPT_MASK`, or `UNCONFINED_MASK`), in every
    set, and set no_new_privs (Linux)."""
    if library is None or not sys.platform.startswith("linux"):
        return
    effective, permitted, inheritable = capabilities(library)
    if effective >> CAP_SETPCAP & 1:  # else the bounding set is not ours to change
        for number in range(last_capability(library) + 1):
            if not kept >> number & 1 and _prctl(library, PR_CAPBSET_READ, number) == 1:
                _check(library, _prctl(library, PR_CAPBSET_DROP, number), f"drop cap {number}")
    _set_capabilities(library, effective & kept, permitted & kept, inheritable & kept)
    if _prctl(library, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL) < 0:
        if ctypes.get_errno() != 22:  # EINVAL: a kernel before 4.3 has no ambient set
            _check(library, -1, "clear ambient capabilities")
    _check(library, _prctl(library, PR_SET_NO_NEW_PRIVS, 1), "PR_SET_NO_NEW_PRIVS")
    _verify(library, kept)


def capabilities(library: Any) -> tuple[int, int, int]:
    """This thread's effective, permitted and inheritable sets, as 64-bit masks."""
    header = ctypes.create_string_buffer(struct.pack("=Ii", CAPABILITY_VERSION_3, 0))
    data = ctypes.create_string_buffer(24)
    _check(library, library.capget(header, data), "capget")
    e0, p0, i0, e1, p1, i1 = struct.unpack("=6I", data.raw)
    return e0 | e1 << 32, p0 | p1 << 32, i0 | i1 << 32


def last_capability(library: Any) -> int:
    """The highest capability number this kernel knows."""
    number = 0
    while number < CAP_LAST_FALLBACK and _prctl(library, PR_CAPBSET_READ, number + 1) >= 0:
        number += 1
    return number


def _set_capabilities(library: Any, effective: int, permitted: int, inheritable: int) -> None:
    header = ctypes.create_string_buffer(struct.pack("=Ii", CAPABILITY_VERSION_3, 0))
    low = (effective & 0xFFFFFFFF, permitted & 0xFFFFFFFF, inheritable & 0xFFFFFFFF)
    high = (effective >> 32, permitted >> 32, inheritable >> 32)
    data = ctypes.create_string_buffer(struct.pack("=6I", *low, *high))
    _check(library, library.capset(header, data), "capset")


def _verify(library: Any, kept: int) -> None:
    """Refuse to go on when a dropped capability is still held (what a kernel, a
    security module or a seccomp filter could make silently fail)."""
    held = 0
    for mask in capabilities(library):
        held |= mask & ~kept
    if held:
        raise OSError(0, f"capabilities still held: {held:#x}")
    if _prctl(library, PR_GET_NO_NEW_PRIVS, 0) != 1:
        raise OSError(0, "no_new_privs is not set")


def _prctl(library: Any, option: int, arg: int) -> int:
    ulong = ctypes.c_ulong
    return int(library.prctl(ctypes.c_int(option), ulong(arg), ulong(0), ulong(0), ulong(0)))


def _check(library: Any, result: int, what: str) -> int:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")
    return result
