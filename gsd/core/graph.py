"""The phase graph: waves from `depends_on`, cycles, critical path, overlap groups, and
which phases' schedules changed between two sets of plans."""

from __future__ import annotations

import posixpath

from gsd.core.ids import plan_sort_key
from gsd.core.models import Plan


class PhaseGraph:
    """The schedule of one phase's plans, shared by validate, show, waves and execute."""

    __slots__ = (
        "plans",
        "deps",
        "wave_of",
        "waves",
        "cycles",
        "critical_path",
        "overlap_groups",
        "shared_files",
    )

    def __init__(self, plans: dict[str, Plan], deps: dict[str, list[str]]) -> None:
        self.plans = plans  # by id, in plan order; the first plan wins a duplicate id
        self.deps = deps  # in-phase dependencies that exist
        self.wave_of: dict[str, int] = {}
        self.waves: list[list[str]] = []
        self.cycles: list[list[str]] = []
        self.critical_path: list[str] = []
        # per wave, groups of plans that share a file in files_modified (run one by one)
        self.overlap_groups: list[list[str]] = []
        self.shared_files: dict[tuple[str, ...], list[str]] = {}

    def sequential_groups(self, wave: list[str]) -> list[list[str]]:
        """A wave's plans as groups: each group runs in order, groups in parallel."""
        grouped = {pid: group for group in self.overlap_groups for pid in group}
        out: list[list[str]] = []
        seen: set[str] = set()
        for pid in wave:
            if pid in seen:
                continue
            group = grouped.get(pid, [pid])
            out.append(group)
            seen.update(group)
        return out


def build(plans: list[Plan]) -> PhaseGraph:
    """Compute the schedule of one phase's plans (duplicate ids: the first wins;
    a plan without an id, a validation error, is not scheduled)."""
    by_id: dict[str, Plan] = {}
    for plan in sorted(plans, key=lambda p: (plan_sort_key(p.id), p.path)):
        if plan.id:
            by_id.setdefault(plan.id, plan)
    # a plan that depends on itself stays in: it is a cycle of one (GSD041)
    deps = {
        pid: [d for d in dict.fromkeys(plan.depends_on) if d in by_id]
        for pid, plan in by_id.items()
    }
    graph = PhaseGraph(plans=by_id, deps=deps)
    _levels(graph)
    _critical_path(graph)
    _overlaps(graph)
    return graph


def changed_schedules(
    base: dict[str, Plan], head: dict[str, Plan]
) -> tuple[tuple[str, PhaseGraph], ...]:
    """HEAD's graph of each phase whose schedule changed: its waves, dependencies,
    overlap groups or cycles differ from BASE's (a new phase's schedule is a change)."""

    def by_phase(plans: dict[str, Plan]) -> dict[str, list[Plan]]:
        out: dict[str, list[Plan]] = {}
        for path, plan in plans.items():
            out.setdefault(posixpath.dirname(path), []).append(plan)
        return out

    def schedule(graph: PhaseGraph) -> tuple[object, ...]:
        return graph.waves, graph.deps, graph.overlap_groups, graph.cycles

    old, new = by_phase(base), by_phase(head)
    changed = []
    for folder in sorted(new):
        graph = build(new[folder])
        if graph.plans and schedule(graph) != schedule(build(old.get(folder, []))):
            changed.append((posixpath.basename(folder), graph))
    return tuple(changed)


def _levels(graph: PhaseGraph) -> None:
    """Kahn's algorithm by levels: wave 1 has no dependencies, counted from 1."""
    remaining = {pid: len(d) for pid, d in graph.deps.items()}
    dependents: dict[str, list[str]] = {pid: [] for pid in graph.deps}
    for pid, ds in graph.deps.items():
        for d in ds:
            dependents[d].append(pid)
    level = [pid for pid, n in remaining.items() if n == 0]
    wave = 1
    while level:
        graph.waves.append(level)
        following: list[str] = []
        for pid in level:
            graph.wave_of[pid] = wave
            for child in dependents[pid]:
                remaining[child] -= 1
                if remaining[child] == 0:
                    following.append(child)
        level = sorted(following, key=plan_sort_key)
        wave += 1
    stuck = [pid for pid in graph.deps if pid not in graph.wave_of]
    graph.cycles = _cycles(graph.deps, stuck)


def _cycles(deps: dict[str, list[str]], stuck: list[str]) -> list[list[str]]:
    """One path `a -> b -> a` per cycle among the plans Kahn could not place."""
    stuck_set = set(stuck)
    cycles: list[list[str]] = []
    done: set[str] = set()
    for start in stuck:
        if start in done:
            continue
        path: list[str] = []
        on_path: dict[str, int] = {}
        node: str | None = start
        # Walk dependencies inside the stuck set until a node repeats: every stuck
        # node has a stuck dependency, so the walk always closes a cycle.
        while node is not None and node not in on_path and node not in done:
            on_path[node] = len(path)
            path.append(node)
            node = next((d for d in deps[node] if d in stuck_set), None)
        if node is not None and node in on_path:
            cycle = path[on_path[node] :]
            cycles.append([*cycle, cycle[0]])
        done.update(path)
    return cycles


def _critical_path(graph: PhaseGraph) -> None:
    """The longest dependency chain (in plans); ties go to the earlier plan."""
    best: dict[str, list[str]] = {}
    for wave in graph.waves:
        for pid in wave:
            longest: list[str] = []
            for d in graph.deps[pid]:
                if len(best.get(d, [])) > len(longest):
                    longest = best[d]
            best[pid] = [*longest, pid]
    graph.critical_path = max(best.values(), key=len, default=[])


def _overlaps(graph: PhaseGraph) -> None:
    """Plans of one wave that modify the same file are grouped (union-find)."""
    for wave in graph.waves:
        parent = {pid: pid for pid in wave}
        owners: dict[str, list[str]] = {}
        for pid in wave:
            for path in dict.fromkeys(graph.plans[pid].files_modified):
                owners.setdefault(posixpath.normpath(path.strip()), []).append(pid)
        for path, pids in owners.items():
            if len(pids) > 1:
                graph.shared_files.setdefault(tuple(pids), []).append(path)
                for other in pids[1:]:
                    parent[_find(parent, other)] = _find(parent, pids[0])
        groups: dict[str, list[str]] = {}
        for pid in wave:
            groups.setdefault(_find(parent, pid), []).append(pid)
        graph.overlap_groups.extend(g for g in groups.values() if len(g) > 1)


def _find(parent: dict[str, str], pid: str) -> str:
    while parent[pid] != pid:
        parent[pid] = parent[parent[pid]]
        pid = parent[pid]
    return pid
