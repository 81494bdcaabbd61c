"""`gsd status`: where each phase and plan stands, from SUMMARY files, commits and STATE.md."""

from __future__ import annotations

from typing import Any

from gsd.core.ids import same_plan
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
