"""A supervised program's own cgroups, and the process tree the warden walks where there are none.

Used by gsd/io/process/warden.py (in the launcher: standard library only, no import of gsd) and
by gsd itself (the dry run's description, the sweep of what a killed run left).

Where the program's cgroups go: beneath the cgroups this process is in, one folder per
warden, `gsd-{pid}-{start time}`, in each hierarchy it may write:

- `v2`: the unified hierarchy (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` beside
  v1): always used to track and kill (`cgroup.kill`, Linux 5.14+); `memory.max` and
  `pids.max` where the parent enables those controllers for its children;
- `pids`, `memory`: cgroup v1's hierarchies, for the limits v2 cannot set.

A limit no cgroup sets is kept by the warden itself: it counts the program's processes
and their resident memory every poll (coarse: a fast fork bomb overshoots between polls),
and as an ordinary user RLIMIT_NPROC bounds the user's processes (root ignores it).
"""

from __future__ import annotations

import os
import signal
import time

V2 = "v2"
V1_KINDS = ("pids", "memory")
PREFIX = "gsd-"


class Cgroup:
    """One cgroup folder of the program, and which of its limits it enforces."""

    __slots__ = ("kind", "path", "enforces")

    def __init__(self, kind: str, path: str, enforces: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.path = path
        self.enforces = enforces  # "memory", "processes"


def locations() -> dict[str, str]:
    """Each hierarchy's folder of the cgroup this process is in: {"v2" | "pids" |
    "memory": path}; only hierarchies that are mounted and known."""
    try:
        with open("/proc/self/cgroup") as handle:
            own = [line.rstrip("\n").split(":", 2) for line in handle]
        with open("/proc/self/mountinfo") as handle:
            mounts = [line.split() for line in handle]
    except OSError:
        return {}
    found: dict[str, str] = {}
    for fields in mounts:
        dash = fields.index("-") if "-" in fields else -1
        if dash < 0 or len(fields) < dash + 3:
            continue
        fstype, root, point = fields[dash + 1], fields[3], fields[4]
        options = fields[dash + 3].split(",")
        for number, controllers, path in own:
            kind = _kind(fstype, number, controllers.split(","), options)
            if kind and kind not in found and path.startswith(root):
                relative = path[len(root) :] if root != "/" else path
                found[kind] = os.path.join(point, relative.lstrip("/"))
    return found


def _kind(fstype: str, number: str, controllers: list[str], options: list[str]) -> str:
    if fstype == "cgroup2" and number == "0" and controllers == [""]:
        return V2
    if fstype == "cgroup":
        return next((kind for kind in V1_KINDS if kind in controllers and kind in options), "")
    return ""


def create(name: str, memory: int, processes: int) -> list[Cgroup]:
    """The program's cgroups, made and limited (those that cannot be are left out)."""
    places = locations()
    groups: list[Cgroup] = []
    wanted = {"memory": memory, "processes": processes}
    if V2 in places:
        path = os.path.join(places[V2], name)
        if _mkdir(path):
            controllers = read_text(os.path.join(path, "cgroup.controllers")).split()
            enforces = []
            for what, key in (("memory", "memory"), ("processes", "pids")):
                if wanted[what] and key in controllers and _limit(path, what, wanted[what], V2):
                    enforces.append(what)
            groups.append(Cgroup(V2, path, tuple(enforces)))
    for kind, what in (("pids", "processes"), ("memory", "memory")):
        done = any(what in group.enforces for group in groups)
        if kind in places and not done and (wanted[what] or kind == "pids"):
            path = os.path.join(places[kind], name)
            if _mkdir(path):
                ok = bool(wanted[what]) and _limit(path, what, wanted[what], kind)
                groups.append(Cgroup(kind, path, (what,) if ok else ()))
    return groups


def _mkdir(path: str) -> bool:
    try:
        os.mkdir(path)
    except FileExistsError:
        return True
    except OSError:
        return False
    return True


def _limit(path: str, what: str, value: int, kind: str) -> bool:
    """Write one limit; whether it holds."""
    if what == "processes":
        return _write(os.path.join(path, "pids.max"), str(value))
    if kind == V2:
        _write(os.path.join(path, "memory.swap.max"), "0")  # the limit is all it may use
        return _write(os.path.join(path, "memory.max"), str(value))
    done = _write(os.path.join(path, "memory.limit_in_bytes"), str(value))
    _write(os.path.join(path, "memory.memsw.limit_in_bytes"), str(value))
    return done


def _write(path: str, text: str) -> bool:
    try:
        with open(path, "w") as handle:
            handle.write(text)
    except OSError:
        return False
    return True


def read_text(path: str) -> str:
    """A small kernel file's text; "" when it cannot be read."""
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def join(groups: list[Cgroup], pid: int) -> list[Cgroup]:
    """Move `pid` into each cgroup; the ones it could not join are removed and left out."""
    joined = []
    for group in groups:
        if _write(os.path.join(group.path, "cgroup.procs"), str(pid)):
            joined.append(group)
        else:
            remove([group])
    return joined


def fallback_rlimits(groups: list[Cgroup], processes: int) -> None:
    """In the program's process, before exec: as an ordinary user with no pids cgroup,
    RLIMIT_NPROC allows `processes` more tasks than the user has now (root ignores it)."""
    if not processes or os.getuid() == 0 or any("processes" in g.enforces for g in groups):
        return
    import resource

    uid, count = os.getuid(), 0
    for entry in _proc_pids():
        try:
            if os.stat(f"/proc/{entry}").st_uid == uid:
                count += _threads(entry)
        except OSError:
            continue
    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    soft = count + processes
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (soft, soft))
    except (OSError, ValueError):
        pass


def _proc_pids() -> list[int]:
    try:
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []


def _stat(pid: int) -> list[bytes]:
    """/proc/PID/stat's fields after the command name (state first); [] when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _threads(pid: int) -> int:
    fields = _stat(pid)
    return int(fields[17]) if len(fields) > 17 else 0


def is_zombie(pid: int) -> bool:
    fields = _stat(pid)
    return not fields or fields[0] in (b"Z", b"X")


def descendants(pid: int) -> set[int]:
    """Every live descendant of `pid` (Linux's /proc/PID/task/TID/children, or a walk
    of every process's parent where the kernel has no such file)."""
    if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
        return _descendants_by_parent(pid)
    found: set[int] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            text = read_text(f"/proc/{current}/task/{task}/children")
            for child in map(int, text.split()):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def _descendants_by_parent(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in _proc_pids():
        fields = _stat(entry)
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(entry)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def members(groups: list[Cgroup]) -> set[int]:
    """The processes in the program's cgroups."""
    found: set[int] = set()
    for group in groups:
        found.update(map(int, read_text(os.path.join(group.path, "cgroup.procs")).split()))
    return found


def kill(groups: list[Cgroup]) -> None:
    """SIGKILL everything in a v2 cgroup at once (`cgroup.kill`, Linux 5.14+)."""
    for group in groups:
        if group.kind == V2:
            _write(os.path.join(group.path, "cgroup.kill"), "1")


def limit_hit(groups: list[Cgroup], memory: int, processes: int, *, count: bool) -> str:
    """ "processes" or "memory" when the program went over a limit (a fork refused at
    pids.max, the OOM killer in its memory cgroup, or, with `count`, the warden's own
    count of the live tree); "" when not."""
    for group in groups:
        if "processes" in group.enforces and _event(group.path, "pids.events", "max"):
            return "processes"
        if "memory" in group.enforces:
            events = "memory.events" if group.kind == V2 else "memory.oom_control"
            if _event(group.path, events, "oom_kill"):
                return "memory"
    if not count:
        return ""
    enforced = {what for group in groups for what in group.enforces}
    if (processes and "processes" not in enforced) or (memory and "memory" not in enforced):
        tree = descendants(os.getpid())
        if processes and "processes" not in enforced and len(tree) > processes:
            return "processes"
        if memory and "memory" not in enforced and _resident(tree) > memory:
            return "memory"
    return ""


def _event(path: str, name: str, key: str) -> int:
    for line in read_text(os.path.join(path, name)).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0


def _resident(pids: set[int]) -> int:
    """The resident memory of `pids`, in bytes (shared pages counted in each)."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in pids:
        fields = read_text(f"/proc/{pid}/statm").split()
        if len(fields) > 1:
            total += int(fields[1]) * page
    return total


def remove(groups: list[Cgroup]) -> None:
    """Remove the (empty) cgroup folders; one still holding a process stays."""
    for group in groups:
        for _ in range(20):  # a process just killed leaves its cgroup a moment later
            try:
                os.rmdir(group.path)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)


def sweep() -> int:
    """End what is left in the cgroups of wardens that are gone (a killed gsd, a
    warden killed itself), remove those cgroups, and return how many processes it ended."""
    ended = 0
    for kind, parent in locations().items():
        try:
            names = [n for n in os.listdir(parent) if n.startswith(PREFIX)]
        except OSError:
            continue
        for name in names:
            pid, _, start = name[len(PREFIX) :].partition("-")
            if pid.isdigit() and start_time(int(pid)) == start:
                continue  # its warden is alive and sees to it
            group = Cgroup(kind, os.path.join(parent, name))
            ended += _end(group)
            if not members([group]):
                remove([group])
    return ended


def _end(group: Cgroup) -> int:
    """SIGKILL what is in a warden's cgroup (a few rounds: no waiting on one that
    outlives SIGKILL, a later sweep tries again); how many processes it held."""
    left = members([group])
    ended = len(left)
    kill([group])
    for _ in range(5):
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
        left = members([group])
    return ended


def start_time(pid: int) -> str:
    """A process's start time (clock ticks since boot), "" when it is gone."""
    fields = _stat(pid)
    return fields[19].decode() if len(fields) > 19 else ""
