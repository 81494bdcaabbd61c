"""The rules across the plans of one phase: shared ids, dependencies, cycles, waves,
overlaps; each declared (`@rule`) above the function that checks it."""

from __future__ import annotations

from collections.abc import Iterator

from gsd.core.graph import PhaseGraph
from gsd.core.ids import phase_key, split_plan_id
from gsd.core.models import Diagnostic, Plan
from gsd.core.rules.registry import Facts, diag, rule


def check_phase(plans: list[Plan], graph: PhaseGraph, facts: Facts) -> Iterator[Diagnostic]:
    """Rules across the readable plans of one phase directory and their graph."""
    yield from _duplicate_ids(plans)
    yield from _missing_dependencies(plans, graph, facts)
    yield from _cycles(graph)
    yield from _waves(graph)
    yield from _overlaps(graph)


@rule("GSD045", "error", "two plans in a phase share an id")
def _duplicate_ids(plans: list[Plan]) -> Iterator[Diagnostic]:
    seen: dict[str, Plan] = {}
    for plan in sorted(plans, key=lambda p: p.path):
        if not plan.id:
            continue  # no id at all (GSD001, GSD002 or GSD003 says why), none shared
        first = seen.setdefault(plan.id, plan)
        if first is not plan:
            yield diag(plan, 1, "GSD045", f"plan id {plan.id} is also used by {first.path}")


@rule(
    "GSD040",
    "error",
    "depends_on names a plan that does not exist",
    docs="`depends_on` names a plan that does not exist",
)
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


@rule(
    "GSD041",
    "error",
    "dependency cycle",
    docs="dependency cycle; the message lists the cycle `a -> b -> a`",
)
def _cycles(graph: PhaseGraph) -> Iterator[Diagnostic]:
    for cycle in graph.cycles:
        for pid in dict.fromkeys(cycle):
            plan = graph.plans[pid]
            yield diag(
                plan,
                plan.field_line("depends_on"),
                "GSD041",
                f"dependency cycle: {' -> '.join(cycle)}",
            )


@rule(
    "GSD042",
    "warning",
    "declared wave differs from the wave computed from depends_on",
    docs="declared `wave` differs from the wave computed from `depends_on` (`wave: 0` with no "
    "dependencies is the first wave, as upstream numbers it)",
)
@rule(
    "GSD043",
    "warning",
    "wave > 1 with empty depends_on",
    docs="`wave` > 1 with empty `depends_on`",
)
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
        # upstream numbers a phase's first wave 0 as well as 1 (its SDK issue #3266)
        first = declared == 0 and computed == 1 and not plan.depends_on
        if computed is not None and complete and declared != computed and not first:
            yield diag(
                plan,
                line,
                "GSD042",
                f"wave is {declared} but depends_on puts {pid} in wave {computed}",
            )
        if declared > 1 and not plan.depends_on:
            yield diag(plan, line, "GSD043", f"wave is {declared} but depends_on is empty")


@rule(
    "GSD044",
    "warning",
    "plans of one wave both modify a file: they will run one after another",
)
def _overlaps(graph: PhaseGraph) -> Iterator[Diagnostic]:
    for pids, files in graph.shared_files.items():
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        for pid in pids:
            plan = graph.plans[pid]
            others = ", ".join(p for p in pids if p != pid)
            yield diag(
                plan,
                plan.field_line("files_modified"),
                "GSD044",
                f"{pid} and {others} (wave {graph.wave_of[pid]}) both modify {shown}: "
                "they will run one after another",
            )
