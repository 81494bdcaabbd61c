"""What `gsd status` prints: each phase's plans, the open blockers and STATE.md's position
beside gsd's, as text, Markdown or JSON."""

from __future__ import annotations

import json
from typing import Any

from gsd.core.words import plural
from gsd.output.views import table


def render(status: dict[str, Any], fmt: str) -> str:
    """`gsd.commands.progress.project_status`'s data for a terminal, a pull request or a program."""
    if fmt == "json":
        return json.dumps(status, indent=2) + "\n"
    markdown = fmt == "markdown"
    out: list[str] = []
    for phase in status["phases"]:
        head = f"Phase {phase['phase']}: {phase['done']}/{plural(len(phase['plans']), 'plan')} done"
        if "archived" in phase:
            head += f" (archived, milestone {phase['archived']})"
        out.append(f"## {head}" if markdown else head)
        rows = [
            {
                "plan": plan["plan"],
                "wave": plan["wave"],
                "status": plan["status"],
                "tasks committed": f"{len(plan['committed_tasks'])}/{plan['tasks']}",
            }
            for plan in phase["plans"]
        ]
        if markdown:
            out += ["", table(rows, markdown=True)] if rows else []
        else:
            out += [
                f"  {r['plan']}  wave {r['wave']}  {r['status']:<11}  "
                f"tasks committed {r['tasks committed']}"
                for r in rows
            ]
        out.append("")
    out.append("## Blockers" if markdown else "Blockers:")
    none = ["none"] if markdown else ["  none"]
    out += [b if markdown else f"  {b}" for b in status["blockers"]] or none
    if "position" in status:
        out += ["", *_position(status["position"], markdown)]
    return "\n".join(out) + "\n"


def _position(position: dict[str, Any], markdown: bool) -> list[str]:
    """STATE.md's Current Position and what gsd computes, then each disagreement."""
    recorded, computed = position["recorded"], position["computed"]
    percents = [
        f"{percent}% of the {what}"
        for percent, what in (
            (computed["phase_percent"], "phase"),
            (computed["project_percent"], "project"),
        )
        if percent is not None
    ]
    mine = {"phase": computed["phase"] or "-", "progress": ", ".join(percents) or "-"}
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
    for line in position["disagreements"]:
        out.append(f"- **Disagrees:** {line}" if markdown else f"  disagrees: {line}")
    return out
