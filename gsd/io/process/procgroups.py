"""Process groups gsd started: counting and ending them, and the registry a later run reaps from."""

from __future__ import annotations

import subprocess
from pathlib import Path

_POLL_S = 0.05


def group_size(pgid: int) -> int:
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


def end_group(
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
        if group_size(pgid) == 0:
            return True, 0
        time.sleep(_POLL_S)
    deadline = time.monotonic() + max(grace_s, 1.0)
    if leader is not None and leader.poll() is None:
        _kill_now(leader, deadline)
    signal_group(signal.SIGKILL)
    if leader is not None:
        try:
            leader.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass  # counted below with the rest of the group
    while (alive := group_size(pgid)) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    return False, alive


def _kill_now(leader: subprocess.Popen[bytes], deadline: float) -> None:
    """Ask the leader, the program's warden (gsd/io/process/warden.py), to SIGKILL the program and
    all it started, and wait for it: a SIGKILL to the group would end the warden with
    it, and leave alive what left the group. Before its warden is set up the signal
    ends the launcher."""
    import time

    from gsd.io.process.warden import KILL_NOW

    try:
        leader.send_signal(KILL_NOW)
        leader.wait(timeout=max(0.0, deadline - time.monotonic()))
    except (OSError, subprocess.TimeoutExpired):
        pass  # the group's SIGKILL follows


def register(registry: Path | None, pid: int, argv: list[str]) -> Path | None:
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
        if same and group_size(pgid):
            reaped.append(pgid)
            if end_group(pgid, grace_s)[1]:
                continue  # still there after SIGKILL: the record stays for a later run
        path.unlink(missing_ok=True)
    from gsd.io.process import cgroups

    cgroups.sweep()  # what a killed run's wardens left in their cgroups
    return reaped
