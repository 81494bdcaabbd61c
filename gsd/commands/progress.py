"""`gsd status`: where each phase and plan stands, from SUMMARY files, commits and STATE.md."""

from __future__ import annotations

from typing import Any

from gsd.core.ids import same_plan
from gsd.core.words import plural
from gsd.formats import state, summaryread
from gsd.io.gitread import committed_tasks
from gsd.io.project import Project


def project_status(project: Project) -> dict[str, Any]:
    """Per phase: each plan's status (done, paused, failed, in progress, pending), its
    committed tasks, and the open blockers of STATE.md."""
    committed = committed_tasks(project.root, plan_branches=True)  # {} without git
    state_path = project.planning / "STATE.md"
    text = state.load(state_path) if state_path.exists() else ""
    blockers = state.blockers(text)
    failures = state.blocker_plans(text)  # gsd's own bullets, not people's notes
    phases = []
    for phase in project.phases():
        graph = project.phase_graph(phase)
        plans = []
        for plan_id, plan in graph.plans.items():
            done_tasks = [t.index for t in plan.tasks if f"{plan_id}-{t.index}" in committed]
            mine = [kind for tag, kind in failures if same_plan(tag, plan_id)]
            if summaryread.exists(phase.path, plan_id):
                status = "done"
            elif "checkpoint-paused" in mine:
                status = "paused"
            elif mine:
                status = "failed"
            elif done_tasks:
                status = "in progress"
            else:
                status = "pending"
            plans.append({
                "plan": plan_id, "wave": graph.wave_of.get(plan_id), "status": status,
                "tasks": len(plan.tasks), "committed_tasks": done_tasks,
            })  # fmt: skip
        phases.append({
            "phase": phase.name,
            "done": sum(p["status"] == "done" for p in plans),
            "plans": plans,
        })  # fmt: skip
    return {"phases": phases, "blockers": blockers}


def render(status: dict[str, Any], fmt: str) -> str:
    import json

    if fmt == "json":
        return json.dumps(status, indent=2) + "\n"
    from gsd.output.views import table

    markdown = fmt == "markdown"
    out: list[str] = []
    for phase in status["phases"]:
        head = f"Phase {phase['phase']}: {phase['done']}/{plural(len(phase['plans']), 'plan')} done"
        out.append(f"## {head}" if markdown else head)
        rows = [
            {"plan": plan["plan"], "wave": plan["wave"], "status": plan["status"],
             "tasks committed": f"{len(plan['committed_tasks'])}/{plan['tasks']}"}
            for plan in phase["plans"]
        ]  # fmt: skip
        if markdown:
            out += ["", table(rows, markdown=True)] if rows else []
        else:
            out += [f"  {r['plan']}  wave {r['wave']}  {r['status']:<11}  "
                    f"tasks committed {r['tasks committed']}" for r in rows]  # fmt: skip
        out.append("")
    out.append("## Blockers" if markdown else "Blockers:")
    none = ["none"] if markdown else ["  none"]
    out += [b if markdown else f"  {b}" for b in status["blockers"]] or none
    return "\n".join(out) + "\n"
