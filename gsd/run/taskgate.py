"""Plan-first gates (issue 24): a gated task proposes before it works.

Step 1: its specialist runs read-only (the spawn path, sandbox and tier a reviewer
gets) and answers with a Proposal (`gsd.formats.proposal`); gsd commits it as
`NN-MM-T<task>-PROPOSAL.md` in the plan's phase folder, on the branch the plan runs
on. Step 2: a person approves it (`gsd approve PLAN --task N`, bound to the file's
blob: the plan pauses, exit 4, until then), or the agent `gates.approver` names does
(a Review Report: `changes` asks for a new proposal, `reject` fails the task). Step 3
is the task's own run (`gsd.run.tasks`), its prompt carrying the approved proposal and
its scope the proposal's Files (`gsd.run.taskassess`). A committed proposal is not
proposed again: the next run after an approval goes straight to the work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from gsd.core import layout
from gsd.core.errors import InputError
from gsd.core.graph import PhaseGraph
from gsd.core.models import Plan, Task
from gsd.core.verdict import planfirst
from gsd.core.verdict.outcomes import TaskOutcome
from gsd.core.verdict.review import Review
from gsd.core.words import some
from gsd.formats import errorlog, execlog, proposal
from gsd.formats.agents import Agent
from gsd.formats.files import write_atomic
from gsd.formats.gatesettings import HUMAN
from gsd.formats.proposal import Proposal
from gsd.formats.reviewreport import parse_review
from gsd.io.dispatch import Dispatcher, TaskDispatch
from gsd.io.git.checkpoint import Checkpoints
from gsd.io.git.commits import Commits
from gsd.io.git.observe import Observer
from gsd.io.git.repo import Git
from gsd.io.plans import approvals
from gsd.run import taskreview
from gsd.run.phaserun import PhaseRun, PlanEnd
from gsd.run.taskspawn import Guards, Job, prepare, spawn_agent

if TYPE_CHECKING:
    from gsd.run.tasks import TaskAt

_Report = TypeVar("_Report")
PAUSED = "checkpoint-paused"  # the plan's event and end: a person is waited for


def gated(run: PhaseRun, at: TaskAt) -> bool:
    """Whether the task runs plan-first (its `plan-first=`, else `gates.plan_first`)."""
    task = at.task
    if task.is_checkpoint or (task.plan_first is None and not run.read.project.config.gates.when()):
        return False
    agent = task.specialist or run.read.dispatcher.task(at.wave, at.plan, task).agent
    return task_gated(run.read.dispatcher, at.plan, task, agent)


def task_gated(dispatcher: Dispatcher, plan: Plan, task: Task, agent: str) -> bool:
    """Whether `task` of `plan`, run by `agent` unless it names a specialist, is gated."""
    return not task.is_checkpoint and planfirst.gated(
        task.plan_first,
        dispatcher.config.gates.when(),
        specialist=task.specialist or agent,
        files=task.files,
        plan_domains=planfirst.domains_of(plan),
    )


def approvers(
    dispatcher: Dispatcher, graph: PhaseGraph, dispatches: Iterable[TaskDispatch]
) -> list[TaskDispatch]:
    """The approver agent of each gated task the run may start (`gates.approver` names
    one), for the checks before the first spawn; one that cannot run is an InputError
    there, before any proposal is made."""
    name = dispatcher.config.gates.approver
    if name == HUMAN:
        return []
    found = []
    for dispatch in dispatches:
        plan = graph.plans[dispatch.plan]
        task = next(t for t in plan.tasks if t.index == dispatch.task)
        if not dispatch.argv or not task_gated(dispatcher, plan, task, dispatch.agent):
            continue
        where = f"{layout.CONFIG_FILE}: gates.approver"
        approver = dispatcher.read_only(
            dispatch.wave, plan, task, dispatch, (name, where), dispatcher.config.gates.runner
        )
        if isinstance(approver, str):
            raise InputError(f"{approver}; nothing was run")
        found.append(approver[1])
    return found


def gate(
    run: PhaseRun, at: TaskAt, attempts: list[TaskOutcome], started: datetime
) -> TaskAt | PlanEnd:
    """The task `at` with its approved proposal in its prompt context, ready for its work;
    or how the plan ends here: paused for a person, or failed (no usable proposal, a
    rejection)."""
    plan, task = at.plan, at.task
    rel = planfirst.proposal_file(plan, task.index)
    dispatch = run.read.dispatcher.task(at.wave, plan, task)
    found = committed(at.place, rel)
    findings: tuple[str, ...] = ()
    rounds = 0
    while True:
        if found is None:
            made = _propose(run, at, dispatch, rel, findings)
            if isinstance(made, TaskOutcome):
                return _failed(run, at, made, attempts, started)
            found = made
        blob, said = found
        if isinstance(said, str):  # a person's edit gsd cannot read
            why = f"{rel}: {said}; fix the file, or delete it to have a new proposal made"
            failed = _failure(at, dispatch.agent, planfirst.PROPOSAL_FAILED, why)
            return _failed(run, at, failed, attempts, started)
        approver = run.read.project.config.gates.approver
        if approver == HUMAN:
            if not approvals.proposal_approved(run.read.project, plan.id, task.index, blob):
                return _paused(run, at, rel, attempts, started)
            run.effects.journal.plan_event(
                plan.id, "proposal", task=task.index, file=rel, blob=blob, approved="a person"
            )
            run.effects.say(f"{at.label}: proposal {rel} approved by a person (gsd approve)")
            return _approved(at, said, rel)
        rounds += 1
        verdict = _judged(run, at, dispatch, (approver, said), rounds)
        if verdict.verdict == "approve":
            return _approved(at, said, rel)
        if verdict.verdict == "changes" and rounds < run.read.project.config.review.max_rounds:
            found, findings = None, verdict.findings
            continue
        failed = _failure(at, approver, verdict.error_type or "unknown", verdict.details())
        return _failed(run, at, failed, attempts, started)


def committed(place: Git, rel: str) -> tuple[str, Proposal | str] | None:
    """The proposal committed at `place`'s HEAD: its blob and what it says (or why it
    cannot be read); None when there is none."""
    blob = place.out("rev-parse", "--verify", "-q", f"HEAD:{rel}", ok=(0, 1, 128)).strip()
    if not blob:
        return None
    text = place.out("cat-file", "blob", blob)
    return blob, proposal.parse_proposal(text)


def _approved(at: TaskAt, said: Proposal, rel: str) -> TaskAt:
    context = at.context._replace(approved=proposal.approved_section(said, rel), scope=said.paths)
    return at._replace(context=context)


def _propose(
    run: PhaseRun, at: TaskAt, dispatch: TaskDispatch, rel: str, findings: tuple[str, ...]
) -> tuple[str, Proposal | str] | TaskOutcome:
    """Step 1: the specialist, read-only, proposes; its proposal written and committed
    (a gsd docs commit on the plan's branch) and logged. A failed step is the outcome."""
    plan, task = at.plan, at.task
    where = f"{plan.path}:{task.line}: task {task.index}"
    found = run.read.dispatcher.read_only(
        at.wave, plan, task, dispatch, (dispatch.agent, where), dispatch.runner
    )
    if isinstance(found, str):
        return _failure(at, dispatch.agent, planfirst.PROPOSAL_FAILED, found)
    agent, spec = found
    text = proposal.proposal_prompt(
        agent,
        plan,
        task,
        repo=str(at.place.root),
        templates=run.read.templates,
        findings=findings,
        plan_text=at.context.plan_text,
    )
    run.effects.say(f"{at.label}: {agent.name} proposes (read-only, plan-first)")
    said = read_only_run(run, at, agent, spec, text, "proposal", proposal.parse_proposal)
    if isinstance(said, str):
        failed = _failure(at, agent.name, planfirst.PROPOSAL_FAILED, f"{agent.name}: {said}")
        run.effects.journal.plan_event(
            plan.id, "proposal", task=task.index, agent=agent.name, problem=said
        )
        return failed
    write_atomic(at.place.root / rel, proposal.render(said, plan, task, agent))
    Commits(at.place).commit_docs(f"docs({plan.id}): task {task.index} proposal", [rel])
    blob = at.place.out("rev-parse", f"HEAD:{rel}").strip()
    run.effects.journal.plan_event(
        plan.id, "proposal", task=task.index, agent=agent.name, file=rel, blob=blob
    )
    run.effects.say(f"{at.label}: proposal {rel} committed ({some(said.paths)})")
    return blob, said


def _judged(
    run: PhaseRun, at: TaskAt, author: TaskDispatch, what: tuple[str, Proposal], round: int
) -> Review:
    """Step 2 by an agent: `gates.approver` reads the proposal read-only and answers with
    a Review Report; a crash, a timeout, an unreadable answer or a write is no approval."""
    name, said = what
    found = run.read.dispatcher.read_only(
        at.wave,
        at.plan,
        at.task,
        author,
        (name, f"{layout.CONFIG_FILE}: gates.approver"),
        run.read.project.config.gates.runner,
    )
    if isinstance(found, str):
        return Review(reviewer=name, runner="?", round=round, verdict=None, problem=found)
    agent, spec = found
    text = proposal.approver_prompt(
        agent, at.plan, at.task, said, repo=str(at.place.root), templates=run.read.templates
    )
    report = read_only_run(run, at, agent, spec, text, "approval", parse_review)
    review = Review(reviewer=agent.name, runner=agent.runner, round=round, verdict=None)
    if isinstance(report, str):
        review = review._replace(problem=report)
    else:
        review = review._replace(verdict=report.verdict, findings=report.findings)
    fields = review.event()
    run.effects.journal.plan_event(
        at.plan.id, "review", task=at.task.index, proposal=True, **fields
    )
    run.effects.say(f"{at.label}: proposal {review.line()}")
    return review


def read_only_run(
    run: PhaseRun,
    at: TaskAt,
    agent: Agent,
    spec: TaskDispatch,
    prompt: str,
    folder: str,
    parse: Callable[[str], _Report | str],
) -> _Report | str:
    """A read-only agent run in the task's place under a checkpoint of its own: its
    answer as `parse` reads it, or one line saying why there is none (it could not
    start, timed out, exited non-zero, answered unreadably, or changed something: all
    rolled back; `taskreview.answer`, the reviewer's reading)."""
    job = Job(
        git=at.place,
        plan=at.plan,
        task=at.task,
        agent=agent,
        dispatch=spec,
        prompt=prompt,
        attempt=1,
        environ=run.read.environ,
        cancel=run.effects.cancel,
        sandbox=run.read.sandbox,
        run_dir=layout.run_dir(at.place.git_dir, at.plan.id, at.task.index) / folder,
    )
    guards = prepare(job, run.policy.allow_dirty)
    if isinstance(guards, TaskOutcome):
        return guards.details
    try:
        spawn = spawn_agent(job, guards)
        changed = _left(at.place, guards, spawn.gitfile_changed + spawn.in_user_checkout)
    except BaseException:
        Checkpoints(at.place).rollback(guards.checkpoint)
        raise
    if changed:
        Checkpoints(at.place).rollback(guards.checkpoint)
        return f"it changed {some(changed)} (read-only); rolled back"
    Checkpoints(at.place).delete(guards.checkpoint)
    return taskreview.answer(agent, spawn.run, spawn.result_text, spec.timeout_s, parse)


def _left(place: Git, guards: Guards, put_back: list[str]) -> list[str]:
    """What a read-only run changed: files, refs, .git internals, index flags."""
    seen = Observer(place).observe(guards.checkpoint)
    return [*seen.changed, *seen.changed_refs, *seen.internals, *seen.flags, *put_back]


def _failure(at: TaskAt, agent: str, error_type: str, details: str) -> TaskOutcome:
    return TaskOutcome.failed_early(
        at.plan.id, at.task.index, agent, 1, error_type=error_type, details=details
    )


def _failed(
    run: PhaseRun, at: TaskAt, outcome: TaskOutcome, attempts: list[TaskOutcome], started: datetime
) -> PlanEnd:
    """The plan stopped at a gate that failed: logged (`gsd errors`), said, its end; a
    step a signal ended is nobody's failure (rolled back, not recorded)."""
    plan = at.plan
    if run.effects.cancel.is_set():
        message = f"{at.label}: interrupted"
        return PlanEnd(plan, "interrupted", message, attempts=tuple(attempts), started=started)
    attempts.append(outcome)
    run.outcomes.append(outcome)
    record = errorlog.ErrorRecord(
        phase=plan.phase,
        plan=plan.number,
        task=str(at.task.index),
        specialist=outcome.agent,
        error_type=outcome.error_type or "unknown",
        details=outcome.details,
        attempt=outcome.attempt,
    )
    errorlog.append(run.effects.journal.plan_errors(plan.id), record)
    message = f"{at.label}: {outcome.error_type}: {outcome.details.splitlines()[0]}"
    run.effects.say(message)
    return PlanEnd(
        plan=plan,
        status="failed",
        message=message,
        error_type=outcome.error_type or "unknown",
        details=outcome.details,
        attempts=tuple(attempts),
        started=started,
    )


def _paused(
    run: PhaseRun, at: TaskAt, rel: str, attempts: list[TaskOutcome], started: datetime
) -> PlanEnd:
    """The plan paused for a person to approve the task's proposal (exit 4)."""
    plan, task = at.plan, at.task
    message = (
        f"{at.label}: its proposal {rel} waits for approval "
        f"(read it, then `gsd approve {plan.id} --task {task.index}`)"
    )
    run.effects.journal.plan_event(plan.id, PAUSED, task=task.index, proposal=rel)
    run.effects.say(message)
    return PlanEnd(
        plan=plan,
        status="paused",
        message=message,
        error_type=PAUSED,
        details=message,
        attempts=tuple(attempts),
        started=started,
    )


def summary_lines(run: PhaseRun, plan_id: str) -> str:
    """A SUMMARY.md's `## Proposals`: each plan-first task's proposal and who approved
    it, one line each, from the plan's log ("" when no task of it proposed)."""
    events, _warnings = execlog.read(run.effects.journal.plan_errors(plan_id))
    said: dict[int, str] = {}
    for e in events:
        task, file = e.get("task"), e.get("file")
        if not isinstance(task, int):
            continue
        if e.get("event") == "proposal" and file and e.get("approved"):
            said[task] = f"`{file}` approved by {e['approved']} (gsd approve)"
        elif e.get("event") == "proposal" and file:
            said.setdefault(task, f"`{file}`")
        elif e.get("event") == "review" and e.get("proposal") and e.get("verdict") == "approve":
            found = said.get(task, "its proposal")
            said[task] = f"{found} approved by {e.get('reviewer')} ({e.get('runner')})"
    if not said:
        return ""
    lines = [f"- Task {task}: {what}" for task, what in sorted(said.items())]
    return "\n".join(["## Proposals", "", *lines, ""]) + "\n"
