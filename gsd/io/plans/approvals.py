"""Answers to human checkpoints (SPEC 7 step 6): `gsd approve` records them in
.planning/approvals.jsonl, signed; the next run reads the ones that count
(`gsd.io.plans.approvalsign`), or `--auto` / `mode: yolo` answers."""

from __future__ import annotations

import json
from collections.abc import Callable

from gsd.core import layout
from gsd.core.errors import UsageError
from gsd.core.models import Plan, Task
from gsd.core.utc import utc_stamp
from gsd.core.verdict import planfirst
from gsd.formats.files import append_line, json_line, jsonl_objects, read_lines_file
from gsd.io.git import command as gitexec
from gsd.io.plans import approvalsign
from gsd.io.plans.project import Project

DECISION = "checkpoint:decision"


def record(
    project: Project, plan_id: str, task: int, option: str | None, proposal: str | None = None
) -> None:
    """Append one answer to one checkpoint task, or one approval of a plan-first task's
    proposal (`proposal`: the blob of the file approved) (a locked, single-write append:
    never a torn record). STATE.md is left to the run that continues past the
    checkpoint: it may hold the user's own uncommitted edits, and that run takes the
    Blockers line out."""
    fields = {"ts": utc_stamp(), "plan": plan_id, "task": task, "option": option}
    line = approvalsign.signed({**fields, **({"proposal": proposal} if proposal else {})})
    append_line(project.root / layout.APPROVALS, json_line(line, json.dumps))  # ASCII, as ever


def read(project: Project) -> list[dict[str, object]]:
    """The answers `gsd approve` appended (a torn or broken line is skipped, and so is
    one `gsd approve` did not make: `gsd.io.plans.approvalsign`, with a note)."""
    text = read_lines_file(project.root / layout.APPROVALS, "approvals") or ""
    return approvalsign.trusted(project.root, list(jsonl_objects(text, layout.APPROVALS)[0]))


def answered(project: Project, plan: Plan) -> dict[int, dict[str, object]]:
    """The recorded answer of each answered checkpoint task of `plan`, by task number;
    a later answer to the same task replaces an earlier one.

    A record without a task (written before approvals named one) answers the plan's
    first checkpoint task only.
    """
    first = next((t.index for t in plan.tasks if t.is_checkpoint), None)
    found: dict[int, dict[str, object]] = {}
    for entry in read(project):
        if entry.get("plan") != plan.id:
            continue
        task = entry.get("task")
        if task is None and first is not None:
            found[first] = entry
        elif isinstance(task, int) and not isinstance(task, bool):
            found[task] = entry
    return found


def answer(project: Project, plan_id: str, task: Task, *, auto: bool) -> str | None:
    """How the human checkpoint `task` of the plan was answered, or None: it still waits
    for a person. Only an approval of that very task answers it.

    `auto` (`--auto` or `"mode": "yolo"`) approves a human-verify and takes a decision's
    first option; a human-action and `gate="blocking-human"` always wait for a person.
    """
    found = answered(project, project.find_plan(plan_id)).get(task.index)
    if found is not None:
        option = found.get("option")
        return f"approved{f', option {option}' if option else ''} by gsd approve"
    always = task.type == "checkpoint:human-action" or task.attrs.get("gate") == "blocking-human"
    if always or not auto:
        return None
    if task.type == DECISION:
        choices = option_ids(task)
        return f"auto: first option {choices[0] if choices else '?'}"
    return "auto"


def proposal_approved(project: Project, plan_id: str, task: int, blob: str) -> bool:
    """Whether a person approved this very content (`blob`) of the task's proposal: an
    approval of the file before it changed approves nothing (and `--auto` never does)."""
    return any(
        e.get("plan") == plan_id and e.get("task") == task and e.get("proposal") == blob
        for e in read(project)
    )


def proposal_of(project: Project, plan: Plan, task: Task) -> tuple[str, str]:
    """The task's committed proposal a person approves: its path and blob, from the
    plan's branch (gsd/PLAN, or gsd/PLAN-run) or else the checkout's HEAD; a usage
    error when there is none yet."""
    rel = planfirst.proposal_file(plan, task.index)
    for ref in (f"refs/heads/gsd/{plan.id}-run", f"refs/heads/gsd/{plan.id}", "HEAD"):
        found = gitexec.call(
            ["rev-parse", "--verify", "-q", f"{ref}:{rel}"], cwd=project.root, read_only=True
        )
        if found.status == 0 and found.stdout.strip():
            return rel, found.stdout.strip()
    raise UsageError(
        f"--task {task.index}: task {task.index} of plan {plan.id} is {task.type}, not a "
        f"checkpoint, and has no proposal ({rel}) yet",
        hint=f"run `gsd execute-phase {plan.phase}` first: a plan-first task proposes before "
        f"it works; {_checkpoints_of(plan)}",
    )


def option_ids(task: Task) -> list[str]:
    """The ids of a checkpoint:decision's `<option id=...>` elements, in order."""
    element = task.child("options")
    choices = [c for c in element.children if c.tag == "option"] if element else []
    return [c.attrs.get("id", "?") for c in choices]


def checkpoint_task(
    plan: Plan, index: int, *, plan_first: Callable[[Task], bool] = lambda task: False
) -> Task:
    """Task `index` of `plan`, which must be a checkpoint (a usage error otherwise), or a
    task gated `plan_first` (its proposal is looked for next: `proposal_of`)."""
    found = next((t for t in plan.tasks if t.index == index), None)
    if found is None:
        raise UsageError(
            f"--task {index}: plan {plan.id} has no task {index}", hint=_checkpoints_of(plan)
        )
    if not found.is_checkpoint and not plan_first(found):
        raise UsageError(
            f"--task {index}: task {index} of plan {plan.id} is {found.type}, not a checkpoint",
            hint=_checkpoints_of(plan),
        )
    return found


def first_waiting(project: Project, plan: Plan) -> Task:
    """The plan's first checkpoint task that has no answer yet (a usage error if none)."""
    done = answered(project, plan)
    checkpoints = [t for t in plan.tasks if t.is_checkpoint]
    for task in checkpoints:
        if task.index not in done:
            return task
    if not checkpoints:
        raise UsageError(f"plan {plan.id} has no checkpoint task: nothing to approve")
    raise UsageError(
        f"every checkpoint of plan {plan.id} is answered already",
        hint="name one with --task N to answer it again",
    )


def check_option(plan: Plan, task: Task, option: str | None) -> None:
    """`option` must be one of a decision's options, and a decision needs one."""
    where = f"task {task.index} of plan {plan.id}"
    choices = option_ids(task)
    if task.type != DECISION or not choices:
        if option is not None:
            raise UsageError(
                f"--option {option}: {where} is {task.type}, which has no options",
                hint="leave --option out",
            )
        return
    if option not in choices:
        said = f"--option {option}: not an option of {where}" if option else where
        raise UsageError(f"{said} ({DECISION})", hint=f"choose --option {' or '.join(choices)}")


def _checkpoints_of(plan: Plan) -> str:
    numbers = [str(t.index) for t in plan.tasks if t.is_checkpoint]
    if not numbers:
        return f"plan {plan.id} has no checkpoint task"
    return f"its checkpoint tasks: {', '.join(numbers)}"


def what_to_check(task: Task) -> str:
    """What the person is asked to look at, on one line."""
    text = (
        task.child_text("how-to-verify")
        or task.child_text("decision")
        or task.child_text("instructions")
        or task.name
    )
    return " ".join(text.split())[:200]


def approve(project: Project, plan_id: str, task_index: int | None, option_id: str | None) -> str:
    """`gsd approve` in `project`, whoever asks (the command, `gsd mcp --allow-run`'s
    approve tool): the answer recorded, or a GsdError saying why not; returns the line
    that says what was approved."""
    from gsd.io.lock import repo_lock

    plan = project.find_plan(plan_id)  # a usage error when there is no such plan
    named = None
    if task_index is not None:
        gates = project.config.gates.when()

        def gated(task: Task) -> bool:  # by config or attribute, or proposed already
            return planfirst.gated(
                task.plan_first,
                gates,
                specialist=task.specialist,
                files=task.files,
                plan_domains=planfirst.domains_of(plan),
            ) or _proposed(project, plan, task)

        named = checkpoint_task(plan, task_index, plan_first=gated)
    proposal = None
    if named is not None and not named.is_checkpoint:
        if option_id is not None:
            raise UsageError(
                f"--option {option_id}: a proposal has no options", hint="leave it out"
            )
        proposal = proposal_of(project, plan, named)
    with repo_lock(project.root):  # a live run reads the answers: not under its feet
        task = named or first_waiting(project, plan)
        check_option(plan, task, option_id)
        record(project, plan_id, task.index, option_id, proposal and proposal[1])
    if proposal is not None:
        return f"approved {plan_id} task {task.index}: its proposal {proposal[0]} as it is now"
    chosen = f" (option {option_id})" if option_id else ""
    return f"approved {plan_id} task {task.index}: {task.type}{chosen}"


def _proposed(project: Project, plan: Plan, task: Task) -> bool:
    """A proposal of the task is committed (the run gated it by its resolved agent,
    which the task's attributes alone may not name)."""
    try:
        proposal_of(project, plan, task)
    except UsageError:
        return False
    return True
