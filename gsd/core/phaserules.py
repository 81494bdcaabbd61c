"""The rules across the plans of one phase: shared ids, dependencies, cycles, waves, overlaps."""

from __future__ import annotations

from collections.abc import Iterator

from gsd.core.graph import PhaseGraph
from gsd.core.ids import phase_key, split_plan_id
from gsd.core.models import Diagnostic, Plan
from gsd.core.rules import Facts, diag


def check_phase(plans: list[Plan], graph: PhaseGraph, facts: Facts) -> Iterator[Diagnostic]:
    """Rules across the readable plans of one phase directory and their graph."""
    yield from _duplicate_ids(plans)
    yield from _missing_dependencies(plans, graph, facts)
    yield from _cycles(graph)
    yield from _waves(graph)
    yield from _overlaps(graph)


def _duplicate_ids(plans: list[Plan]) -> Iterator[Diagnostic]:
    seen: dict[str, Plan] = {}
    for plan in sorted(plans, key=lambda p: p.path):
        if not plan.id:
            continue  # no id at all (GSD001, GSD002 or GSD003 says why), none shared
        first = seen.setdefault(plan.id, plan)
        if first is not plan:
            yield diag(plan, 1, "GSD045", f"plan id {plan.id} is also used by {first.path}")


def _missing_dependencies(
    plans: list[Plan], graph: PhaseGraph, facts: Facts
) -> Iterator[Diagnostic]:
    for plan in plans:
        for dep in plan.depends_on:
            if dep in graph.plans:
                continue
            dep_phase, own_phase = phase_key(split_plan_id(dep)[0]), phase_key(plan.phase)
            exists = dep in facts.all_plan_ids
            if exists and dep_phase and own_phase and dep_phase < own_phase:
                continue  # an earlier phase's plan: done before this phase starts
            what = "a plan of a later phase" if exists else "not a plan of this or an earlier phase"
            yield diag(
                plan,
                plan.field_line("depends_on"),
                "GSD040",
                f"depends_on names {dep!r}, which is {what}",
            )


def _cycles(graph: PhaseGraph) -> Iterator[Diagnostic]:
    for cycle in graph.cycles:
        for pid in dict.fromkeys(cycle):
            plan = graph.plans[pid]
            yield diag(
                plan, plan.field_line("depends_on"), "GSD041",
                f"dependency cycle: {' -> '.join(cycle)}",
            )  # fmt: skip


def _waves(graph: PhaseGraph) -> Iterator[Diagnostic]:
    for pid, plan in graph.plans.items():
        declared = plan.wave
        if declared is None:
            continue
        computed = graph.wave_of.get(pid)
        line = plan.field_line("wave")
        # with a missing dependency (GSD040) the computed wave means nothing; a
        # dependency named twice is still one dependency
        complete = all(
            d in graph.plans for d in plan.depends_on if split_plan_id(d)[0] == plan.phase
        )
        if computed is not None and complete and declared != computed:
            yield diag(
                plan, line, "GSD042",
                f"wave is {declared} but depends_on puts {pid} in wave {computed}",
            )  # fmt: skip
        if declared > 1 and not plan.depends_on:
            yield diag(plan, line, "GSD043", f"wave is {declared} but depends_on is empty")


def _overlaps(graph: PhaseGraph) -> Iterator[Diagnostic]:
    for pids, files in graph.shared_files.items():
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        for pid in pids:
            plan = graph.plans[pid]
            others = ", ".join(p for p in pids if p != pid)
            yield diag(
                plan, plan.field_line("files_modified"), "GSD044",
                f"{pid} and {others} (wave {graph.wave_of[pid]}) both modify {shown}: "
                "they will run one after another",
            )  # fmt: skip
