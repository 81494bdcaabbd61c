"""What `gsd doctor` prints: each finding on its line under the project, then the verdict."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gsd.commands.doctor import PROBLEM

if TYPE_CHECKING:
    from gsd.commands.doctor import Diagnosis


def render(diagnosis: Diagnosis, fmt: str) -> str:
    """`gsd.commands.doctor.diagnose`'s findings for a terminal, or as JSON for a program."""
    if fmt == "json":
        return json.dumps(diagnosis.to_dict(), indent=2) + "\n"
    if diagnosis.project is None:
        head = "gsd doctor: not in a gsd project (no .planning/ here or above): machine checks only"
    else:
        head = f"gsd doctor: {diagnosis.project}"
    lines = [head, *(f"  {f.status:<8} {f.message}" for f in diagnosis.findings)]
    problems = sum(f.status == PROBLEM for f in diagnosis.findings)
    if problems:
        lines.append(
            f"{problems} problem{'s' if problems != 1 else ''}: a run needs "
            f"{'it' if problems == 1 else 'them'} fixed first"
        )
    else:
        lines.append("nothing a run needs is missing")
    return "\n".join(lines) + "\n"
