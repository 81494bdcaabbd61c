"""Answers to human checkpoints (SPEC 7 step 6): `gsd approve` records them in
.planning/approvals.jsonl; the next run reads them, or `--auto` / `mode: yolo` answers."""

from __future__ import annotations

import json

from gsd.files import append_line, jsonl_objects, read_lines_file
from gsd.models import Task
from gsd.project import Project
from gsd.utc import utc_stamp

APPROVALS = ".planning/approvals.jsonl"


def record(project: Project, plan_id: str, task: int | None, option: str | None) -> None:
    """Append one answer (a locked, single-write append: never a torn record). STATE.md
    is left to the run that continues past the checkpoint: it may hold the user's own
    uncommitted edits, and the next run takes the plan's Blockers line out itself."""
    line = {
        "ts": utc_stamp(),
        "plan": plan_id,
        "task": task,
        "option": option,
    }
    append_line(project.root / APPROVALS, (json.dumps(line) + "\n").encode())


def read(project: Project) -> list[dict[str, object]]:
    """The answers `gsd approve` appended (a torn or broken line is skipped)."""
    text = read_lines_file(project.root / APPROVALS, "approvals") or ""
    return list(jsonl_objects(text, APPROVALS)[0])


def answer(project: Project, plan_id: str, task: Task, *, auto: bool) -> str | None:
    """How a human checkpoint was answered, or None: it still waits for a person.

    `auto` (`--auto` or `"mode": "yolo"`) approves a human-verify and takes a decision's
    first option; a human-action and `gate="blocking-human"` always wait for a person.
    """
    for found in read(project):
        if found.get("plan") == plan_id and found.get("task") in (None, task.index):
            option = found.get("option")
            return f"approved{f', option {option}' if option else ''} by gsd approve"
    always = task.type == "checkpoint:human-action" or task.attrs.get("gate") == "blocking-human"
    if always or not auto:
        return None
    if task.type == "checkpoint:decision":
        element = task.child("options")
        choices = [c for c in element.children if c.tag == "option"] if element else []
        first = choices[0].attrs.get("id", "?") if choices else "?"
        return f"auto: first option {first}"
    return "auto"


def what_to_check(task: Task) -> str:
    """What the person is asked to look at, on one line."""
    text = (
        task.child_text("how-to-verify")
        or task.child_text("decision")
        or task.child_text("instructions")
        or task.name
    )
    return " ".join(text.split())[:200]
