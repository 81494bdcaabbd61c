"""The rules across the plans of one phase: shared ids, dependencies, cycles, waves, overlaps."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gsd.core.graph import PhaseGraph
from gsd.core.ids import PLAN_NUMBER, phase_key, split_plan_id
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
                plan,
                plan.field_line("depends_on"),
                "GSD041",
                f"dependency cycle: {' -> '.join(cycle)}",
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


_PLAN_WORD = re.compile(r"(?:^|[-_ ])plan(?:$|[-_ ])", re.IGNORECASE)
_NUMBER_TOKEN = re.compile(rf"^{PLAN_NUMBER}$")


def expected_plan_name(name: str, phase_number: str) -> str | None:
    """The name gsd would read a misnamed plan file under (`01-PLAN-01-foundation.md` ->
    `01-01-foundation-PLAN.md`), or None when `name` is no plan or is named right.

    Upstream warns about such files too (get-shit-done issue #2893); gsd reads only
    `*-PLAN.md`, so without this a misnamed plan is silently never run."""
    if not name.lower().endswith(".md") or name.endswith("-PLAN.md"):
        return None
    stem = name[:-3]
    if not _PLAN_WORD.search(stem):
        return None
    tokens = [t for t in re.split(r"[-_ ]+", stem) if t and t.lower() != "plan"]
    if (
        tokens
        and phase_key(tokens[0]) is not None
        and phase_key(tokens[0]) == phase_key(phase_number)
    ):
        tokens = tokens[1:]  # the phase's own number; the plan's number follows
    numbers = [t for t in tokens if _NUMBER_TOKEN.match(t)]
    words = [t for t in tokens if not _NUMBER_TOKEN.match(t)]
    number = numbers[0] if numbers else "01"
    slug = "-".join(w.lower() for w in words)
    return f"{phase_number}-{number.zfill(2)}{'-' + slug if slug else ''}-PLAN.md"
