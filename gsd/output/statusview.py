"""What `gsd status` prints: each phase's plans and the open blockers, as text, Markdown or JSON."""

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
