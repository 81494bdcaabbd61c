"""An agent's resource limits (config `sandbox.memory`, `sandbox.processes`), and what keeps them.

Every supervised program runs under a warden (gsd/io/process/warden.py) that ends whatever it
leaves running; these are the limits the warden is given, and the words the dry run
shows for them (`describe`: which mechanism this machine has for each).
"""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

from gsd.io.process import cgroups, warden

# High enough that real agents (Node CLIs, a build, a test suite) never meet them, low
# enough that a runaway agent meets them before the machine does.
DEFAULT_MEMORY = 8 * 1024**3
DEFAULT_PROCESSES = 4096


class Limits(NamedTuple):
    """Per agent (or verify command), for it and all it starts; None: no limit."""

    memory: int | None = DEFAULT_MEMORY  # bytes
    processes: int | None = DEFAULT_PROCESSES  # processes and threads


def warden_spec(limits: Limits | None, grace_s: float) -> str:
    """The launcher's `--warden` argument."""
    limits = limits or Limits(None, None)
    return warden.spec_text(grace_s, limits.memory, limits.processes)


def size(number: int) -> str:
    """Bytes as config.json would write them: 8G, 512M, 1536K."""
    for unit, scale in (("G", 1024**3), ("M", 1024**2), ("K", 1024)):
        if number % scale == 0:
            return f"{number // scale}{unit}"
    return str(number)


def mechanisms() -> dict[str, str]:
    """What keeps each limit for a program started from this process: {"memory" |
    "processes" | "tracking": words}, probed without changing anything."""
    places = cgroups.locations()
    found: dict[str, str] = {}
    v2 = places.get(cgroups.V2)
    if v2 is not None and os.access(v2, os.W_OK):
        found["tracking"] = "cgroup v2"
        enabled = cgroups.read_text(os.path.join(v2, "cgroup.subtree_control")).split()
        for what, key in (("memory", "memory"), ("processes", "pids")):
            if key in enabled:
                found[what] = "cgroup v2"
    for kind, what in (("pids", "processes"), ("memory", "memory")):
        path = places.get(kind)
        if what not in found and path is not None and os.access(path, os.W_OK):
            found[what] = f"cgroup v1 {kind}"
    if "processes" not in found and os.getuid() != 0:
        found["processes"] = "RLIMIT_NPROC and gsd's count"
    return found


def describe(limits: Limits) -> str:
    """One line for the dry run: each limit and what keeps it here."""
    if not sys.platform.startswith("linux"):
        return "none: no warden on this system (Linux only); an agent's daemons can outlive it"
    found = mechanisms()
    counted = "counted by gsd every 0.1 s: coarse"
    parts = []
    if limits.memory:
        parts.append(f"memory {size(limits.memory)} ({found.get('memory', counted)})")
    if limits.processes:
        parts.append(f"processes {limits.processes} ({found.get('processes', counted)})")
    tracked = found.get("tracking", "no cgroup")
    parts.append(f"what it leaves running ended by its warden (subreaper, {tracked})")
    return ", ".join(parts)
