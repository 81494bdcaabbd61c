"""`gsd status`: where each phase and plan stands, from SUMMARY files, commits and STATE.md."""

from __future__ import annotations

from typing import Any

from gsd.core import layout
from gsd.core.ids import parse_phase_name, phase_key, same_plan, task_key
from gsd.formats import state
from gsd.formats.files import load_text
from gsd.io import summaries
from gsd.io.commits import committed_tasks
from gsd.io.phases import Phase
from gsd.io.project import Project


def project_status(project: Project) -> dict[str, Any]:
    """Per phase (archived milestones' after the current ones): each plan's status (done,
    paused, failed, in progress, pending) and committed tasks; the open blockers of
    STATE.md; and STATE.md's current position beside what gsd computes."""
    committed = committed_tasks(project.root, plan_branches=True)  # {} without git
    state_path = project.planning / layout.STATE_FILE
    text = load_text(state_path) if state_path.exists() else ""
    failures = state.blocker_plans(text)  # gsd's own bullets, not people's notes
    phases = []
    for phase in project.phases() + project.archived_phases():
        plans = _plans(project, phase, committed, failures)
        phases.append(
            {
                "phase": phase.name,
                **({"archived": phase.milestone} if phase.archived else {}),
                "done": sum(p["status"] == "done" for p in plans),
                "plans": plans,
            }
        )
    status: dict[str, Any] = {"phases": phases, "blockers": state.blockers(text)}
    recorded = state.position(text)
    if recorded:
        current = [p for p in phases if "archived" not in p]
        # a project between milestones has only archived phases: STATE.md speaks of those
        status["position"] = compare_position(recorded, current or phases)
    return status


def _plans(
    project: Project, phase: Phase, committed: dict[str, Any], failures: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    graph = project.phase_graph(phase)
    plans = []
    for plan_id, plan in graph.plans.items():
        done_tasks = [t.index for t in plan.tasks if task_key(plan_id, t.index) in committed]
        mine = [kind for tag, kind in failures if same_plan(tag, plan_id)]
        if summaries.exists(phase.path, plan_id):
            status = "done"
        elif "checkpoint-paused" in mine:
            status = "paused"
        elif mine:
            status = "failed"
        elif done_tasks:
            status = "in progress"
        else:
            status = "pending"
        plans.append(
            {
                "plan": plan_id,
                "wave": graph.wave_of.get(plan_id),
                "status": status,
                "tasks": len(plan.tasks),
                "committed_tasks": done_tasks,
                # a SUMMARY.md and no Gsd-Task commit: done by upstream GSD or by hand
                "done_outside_gsd": status == "done" and not done_tasks,
            }
        )
    return plans


def compare_position(recorded: dict[str, str], phases: list[dict[str, Any]]) -> dict[str, Any]:
    """STATE.md's current position (`recorded`) beside what gsd computes from the current
    `phases`, and each disagreement in words.

    gsd's current phase is the first one not done (the last when all are); its progress
    is that phase's plans done, as `gsd sync` writes it. A STATE.md written by GSD itself
    counts the whole project's plans, so either percentage agrees.
    """
    current = next((p for p in phases if p["done"] < len(p["plans"])), None)
    current = current or (phases[-1] if phases else None)
    total = sum(len(p["plans"]) for p in phases)
    computed: dict[str, Any] = {
        "phase": _number(current["phase"]) if current else None,
        "phase_percent": _percent(current["done"], len(current["plans"])) if current else None,
        "project_percent": _percent(sum(p["done"] for p in phases), total),
    }
    disagreements = []
    said = recorded.get("phase", "").split()
    said_key = phase_key(said[0]) if said else None
    if said_key is not None and computed["phase"] and said_key != phase_key(computed["phase"]):
        disagreements.append(
            f"STATE.md says phase {said[0]}, gsd finds phase {computed['phase']} current"
        )
    percent = state.position_percent(recorded.get("progress", ""))
    mine = {computed["phase_percent"], computed["project_percent"]} - {None}
    if percent is not None and mine and percent not in mine:
        shown = " / ".join(f"{p}%" for p in sorted(mine))
        disagreements.append(f"STATE.md says {percent}% done, gsd computes {shown}")
    return {"recorded": recorded, "computed": computed, "disagreements": disagreements}


def _number(name: str) -> str:
    parsed = parse_phase_name(name)
    return parsed.number if parsed else name


def _percent(done: int, total: int) -> int | None:
    return state.percent_of(done / total) if total else None
