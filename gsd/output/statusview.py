"""What `gsd status` prints: each phase's plans, the open blockers and STATE.md's position
beside gsd's, as text, Markdown or JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gsd.core.words import plural
from gsd.output.views import table

if TYPE_CHECKING:
    from gsd.commands.progress import PlanStatus, Position, ProjectStatus


def render(status: ProjectStatus, fmt: str) -> str:
    """`gsd.commands.progress.project_status`'s data for a terminal, a pull request or a program."""
    if fmt == "json":
        return json.dumps(status.to_json(), indent=2) + "\n"
    markdown = fmt == "markdown"
    out: list[str] = []
    for phase in status.phases:
        head = f"Phase {phase.phase}: {phase.done}/{plural(len(phase.plans), 'plan')} done"
        if phase.archived is not None:
            head += f" (archived, milestone {phase.archived})"
        out.append(f"## {head}" if markdown else head)
        rows = [
            {
                "plan": plan.plan,
                "wave": plan.wave,
                "status": plan.status,
                "tasks committed": _committed(plan),
            }
            for plan in phase.plans
        ]
        if markdown:
            out += ["", table(rows, markdown=True)] if rows else []
        else:
            out += [
                f"  {p.plan}  wave {p.wave}  {p.status:<11}  {_tasks_line(p)}" for p in phase.plans
            ]
        out.append("")
    out.append("## Blockers" if markdown else "Blockers:")
    none = ["none"] if markdown else ["  none"]
    out += [b if markdown else f"  {b}" for b in status.blockers] or none
    if status.position is not None:
        out += ["", *_position(status.position, markdown)]
    return "\n".join(out) + "\n"


def _committed(plan: PlanStatus) -> str:
    """`1/2` of gsd's task commits; a plan done without any (upstream GSD's commits carry
    no Gsd-Task trailer) is done, not `0/2`."""
    if plan.done_outside_gsd:
        return f"none: {plural(plan.tasks, 'task')} done outside gsd"
    return f"{len(plan.committed_tasks)}/{plan.tasks}"


def _tasks_line(plan: PlanStatus) -> str:
    if plan.done_outside_gsd:
        return f"{plural(plan.tasks, 'task')} done outside gsd (no gsd commits)"
    return f"tasks committed {_committed(plan)}"


def _position(position: Position, markdown: bool) -> list[str]:
    """STATE.md's Current Position and what gsd computes, then each disagreement."""
    recorded, computed = position.recorded, position.computed
    percents = [
        f"{percent}% of the {what}"
        for percent, what in (
            (computed.phase_percent, "phase"),
            (computed.project_percent, "project"),
        )
        if percent is not None
    ]
    mine = {"phase": computed.phase or "-", "progress": ", ".join(percents) or "-"}
    rows = [
        {"": key.replace("_", " "), "STATE.md": recorded.get(key, "-"), "gsd": mine.get(key, "")}
        for key in ("phase", "plan", "status", "last_activity", "progress")
        if key in recorded or key in mine
    ]
    out = ["## Current position" if markdown else "Current position:"]
    if markdown:
        out += ["", table(rows, markdown=True)]
    else:
        for r in rows:
            shown = f"  gsd: {r['gsd']}" if r["gsd"] else ""
            out.append(f"  {r['']:<13}  STATE.md: {r['STATE.md']}{shown}")
    for line in position.disagreements:
        out.append(f"- **Disagrees:** {line}" if markdown else f"  disagrees: {line}")
    return out
