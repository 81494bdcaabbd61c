"""What `gsd show` and `gsd waves` print: plain data first, then text or Markdown."""

from __future__ import annotations

import json
from typing import Any

from gsd.graph import PhaseGraph
from gsd.models import Plan, Task


def task_view(task: Task) -> dict[str, Any]:
    return {
        "index": task.index,
        "type": task.type,
        "name": task.name,
        "specialist": task.specialist,
        "specialist_form": task.specialist_form,
        "files": task.files,
        "line": task.line,
    }


def plan_view(plan: Plan, graph: PhaseGraph | None = None) -> dict[str, Any]:
    fm = plan.frontmatter
    return {
        "id": plan.id,
        "path": plan.path,
        "phase": fm.get("phase"),
        "plan": fm.get("plan"),
        "type": fm.get("type"),
        "wave": plan.wave,
        "computed_wave": graph.wave_of.get(plan.id) if graph else None,
        "depends_on": plan.depends_on,
        "files_modified": plan.files_modified,
        "autonomous": plan.autonomous,
        "frontmatter": fm,
        "tasks": [task_view(t) for t in plan.tasks],
    }


def waves_view(phase: str, graph: PhaseGraph) -> dict[str, Any]:
    return {
        "phase": phase,
        "plans": len(graph.plans),
        "waves": [
            {
                "wave": number,
                "plans": wave,
                "sequential_groups": [g for g in graph.sequential_groups(wave) if len(g) > 1],
            }
            for number, wave in enumerate(graph.waves, 1)
        ],
        "critical_path": graph.critical_path,
        "cycles": graph.cycles,
    }


def github_matrix(phase: str, graph: PhaseGraph, wave: int | None = None) -> str:
    """`{"include": [{"phase", "plan", "wave"}, ...]}` on one line, for `fromJSON()`."""
    include = [
        {"phase": phase, "plan": pid, "wave": number}
        for number, plans in enumerate(graph.waves, 1)
        if wave is None or number == wave
        for pid in plans
    ]
    return json.dumps({"include": include}, separators=(",", ":")) + "\n"


def _table(rows: list[dict[str, Any]], markdown: bool) -> str:
    from tabulate import tabulate  # not on the validate hook path

    return str(tabulate(rows, headers="keys", tablefmt="github" if markdown else "simple"))


def render_plans(views: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"plans": views}, indent=2) + "\n"
    markdown = fmt == "markdown"
    out: list[str] = []
    for view in views:
        deps = ", ".join(view["depends_on"]) or "none"
        wave = view["computed_wave"] or view["wave"]
        head = f"Plan {view['id']} ({view['path']})"
        out.append(f"## {head}" if markdown else head)
        out.append(
            f"wave {wave}, depends on {deps}, autonomous {str(view['autonomous']).lower()}, "
            f"{len(view['tasks'])} task{'s' if len(view['tasks']) != 1 else ''}"
        )
        rows = [
            {
                "#": t["index"],
                "type": t["type"],
                "name": t["name"],
                "specialist": t["specialist"] or "-",
                "form": t["specialist_form"] or "-",
                "files": ", ".join(t["files"]) or "-",
                "line": t["line"],
            }
            for t in view["tasks"]
        ]
        out.append(_table(rows, markdown) if rows else "(no tasks)")
        out.append("")
    return "\n".join(out)


def render_waves(view: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(view, indent=2) + "\n"
    markdown = fmt == "markdown"
    title = f"Phase {view['phase']}: {view['plans']} plans in {len(view['waves'])} waves"
    rows = [
        {
            "wave": w["wave"],
            "plans": ", ".join(w["plans"]),
            "run one after another": "; ".join(" -> ".join(g) for g in w["sequential_groups"])
            or "-",
        }
        for w in view["waves"]
    ]
    out = [f"## {title}" if markdown else title, "", _table(rows, markdown), ""]
    path = view["critical_path"]
    out.append(f"Critical path: {' -> '.join(path)} ({len(path)} plans)" if path else "")
    for cycle in view["cycles"]:
        out.append(f"Cycle (not scheduled): {' -> '.join(cycle)}")
    return "\n".join(out).rstrip("\n") + "\n"
