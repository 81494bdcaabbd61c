"""A plan's tasks in order (SPEC 7 steps 5 and 6), each through the retry ladder.

Each attempt is run, its report kept and said; then a retry, the fallback or the end,
as `gsd.core.verdict.outcomes` decides. A human checkpoint pauses the plan until it is answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from gsd.core.ids import task_key
from gsd.core.models import Plan, Task
from gsd.core.specialists import EXECUTOR
from gsd.core.verdict import review
from gsd.core.verdict.judge import VERIFIED_SOFT
from gsd.core.verdict.outcomes import TaskOutcome, next_step
from gsd.core.verdict.review import Review
from gsd.formats import prompt, reviewreport
from gsd.formats.agents import Agent
from gsd.formats.lesson import OUTPUT_CHARS, Lesson, with_lesson
from gsd.io.dispatch import TaskDispatch
from gsd.io.git.repo import Git
from gsd.io.plans import approvals
from gsd.run import runbudget, taskgate, taskreview
from gsd.run.phaserun import PhaseRun, PlanEnd
from gsd.run.taskassess import tail
from gsd.run.taskreview import Reviewer
from gsd.run.taskrun import run_task

OUTPUT_BYTES = 4 * OUTPUT_CHARS  # a character is up to 4 bytes of UTF-8


class TaskAt(NamedTuple):
    """One task being run: its plan and wave, the checkout it runs in (the repository
    or the plan's worktree), how its progress lines start, what its prompt is built from."""

    plan: Plan
    task: Task
    wave: int
    place: Git
    label: str  # `phase 1 wave 1/2 plan 01-02 task 3`
    context: prompt.PromptContext


def run_tasks(
    run: PhaseRun, plan: Plan, wave: int, place: Git, committed: Mapping[str, str]
) -> PlanEnd:
    """Tasks of one plan in order (SPEC 7 step 5), in `place` (the repository or the
    plan's worktree); stops at the first failure or unanswered human checkpoint."""
    project, phase = run.read.project, run.read.phase
    started = datetime.now(timezone.utc)
    plan_text = (project.root / plan.path).read_text(encoding="utf-8")
    summaries = project.dependency_summaries(plan)
    earlier: list[tuple[int, str | None]] = []
    resumed: set[int] = set()  # tasks an earlier run committed: their reports are gone
    attempts: list[TaskOutcome] = []
    for task in plan.tasks:
        label = (
            f"phase {phase.number} wave {wave}/{run.read.waves} plan {plan.id} task {task.index}"
        )
        context = prompt.PromptContext(
            earlier=list(earlier),
            summaries=summaries,
            repo=str(place.root),
            plan_text=plan_text,
            resumed=frozenset(resumed),
        )
        at = TaskAt(plan=plan, task=task, wave=wave, place=place, label=label, context=context)
        if run.effects.cancel.is_set():  # a signal: no new attempt starts
            return _interrupted(plan, label, attempts, started)
        if task_key(plan.id, task.index) in committed:
            run.effects.say(f"{label}: already committed, skipped")
            earlier.append((task.index, None))
            resumed.add(task.index)
            continue
        if (spent := runbudget.stopped(run.spend, run.effects, plan, task.index)) is not None:
            return _failed(at, spent, attempts, started)  # the run's budget is spent
        if task.is_checkpoint:
            answer = _human_checkpoint(run, at)
            if answer is None:
                return _paused(run, at, attempts, started)
            earlier.append((task.index, f"- Human checkpoint answered: {answer}"))
            continue
        if taskgate.gated(run, at):  # plan-first: a proposal approved before the work
            gated = taskgate.gate(run, at, attempts, started)
            if isinstance(gated, PlanEnd):
                return gated
            at = gated
        outcome = _climb(run, at, attempts)
        run.outcomes.append(outcome)
        if not outcome.success and run.effects.cancel.is_set():  # rolled back; nobody's failure
            return _interrupted(plan, label, attempts, started)
        if not outcome.success:
            return _failed(at, outcome, attempts, started)
        report = outcome.report
        earlier.append((task.index, report.downstream if report else None))
    return PlanEnd(
        plan=plan,
        status="complete",
        message=f"plan {plan.id}: complete",
        attempts=tuple(attempts),
        started=started,
        finished=datetime.now(timezone.utc),
    )


def _human_checkpoint(run: PhaseRun, at: TaskAt) -> str | None:
    """6. A human checkpoint's answer (`gsd approve`), said; None while nobody has."""
    plan, task, label = at.plan, at.task, at.label
    answer = approvals.answer(run.read.project, plan.id, task, auto=run.policy.auto)
    if answer is not None:
        run.effects.say(f"{label}: {task.type} approved ({answer})")
    return answer


def _paused(run: PhaseRun, at: TaskAt, attempts: list[TaskOutcome], started: datetime) -> PlanEnd:
    """The plan paused at an unanswered human checkpoint: the run waits for a person."""
    plan, task, label = at.plan, at.task, at.label
    message = (
        f"{label}: {task.type} waits for a person: {approvals.what_to_check(task)} "
        f"(then `gsd approve {plan.id}`)"
    )
    run.effects.journal.plan_event(plan.id, "checkpoint-paused", task=task.index)
    run.effects.say(message)
    return PlanEnd(
        plan=plan,
        status="paused",
        message=message,
        error_type="checkpoint-paused",
        details=message,
        attempts=tuple(attempts),
        started=started,
    )


def _climb(run: PhaseRun, at: TaskAt, tried: list[TaskOutcome]) -> TaskOutcome:
    """The retry ladder: after each failed attempt, the next step of `run.policy.ladder`
    that fits the failure (`gsd.core.verdict.outcomes.next_step` decides): `immediate`
    the same prompt again, `with_context` the prompt with what went wrong
    (gsd.formats.lesson), `fallback` gsd-executor; none left, the failure is the task's.
    A reviewed task's `changes` runs it again with the findings (step `review-changes`,
    outside the ladder), up to `review.max_rounds` reviews; a rejection or a failed review
    is final (`gsd.run.taskreview`)."""
    plan, task, label = at.plan, at.task, at.label
    say, journal = run.effects.say, run.effects.journal
    dispatch = run.read.dispatcher.task(at.wave, plan, task)
    if dispatch.fallback_reason:  # SPEC 3: every fallback to gsd-executor is a warning
        say(
            f"warning: {label}: {dispatch.agent} instead of {dispatch.specialist!r}: "
            f"{dispatch.fallback_reason}"
        )
    found = run.read.dispatcher.reviewer(at.wave, plan, task, dispatch)
    if isinstance(found, str):  # no reviewer to run: the author's work could not be accepted
        return _unreviewable(run, at, dispatch, found, tried)
    step: str = "first"
    used, attempt, lesson = 0, 0, None
    asked: Review | None = None  # the last review's changes, for the next attempt's prompt
    while True:
        attempt += 1
        earlier = [o for o in tried if o.task == task.index]
        reviewer = taskreview.next_reviewer(found, run.read.templates, earlier)
        agent, outcome = _attempt(run, at, dispatch, attempt, (step, lesson), reviewer, asked)
        tried.append(outcome)
        _report(run, at, agent, outcome)
        if outcome.success or run.effects.cancel.is_set():
            return outcome
        if outcome.error_type == review.CHANGES and outcome.review is not None:
            mine = [o.error_type for o in tried if o.task == task.index]
            if review.rounds_used(mine) >= run.read.project.config.review.max_rounds:
                return outcome  # the reviewer still asks for changes: the task fails
            step, lesson, asked = review.CHANGES, None, outcome.review
            journal.plan_event(plan.id, "retry", task=task.index, reason=step, step=step)
            continue
        then, used = next_step(outcome, run.policy.ladder, used, on_fallback=agent.name == EXECUTOR)
        if then is None:
            return outcome
        step, lesson = then, lesson_of(outcome) if then == "with_context" else None
        if then != "fallback":
            journal.plan_event(plan.id, "retry", task=task.index, step=then)
            continue
        # gsd-executor is always installed
        journal.plan_event(plan.id, "fallback", task=task.index, agent=EXECUTOR, step=then)
        dispatch = run.read.dispatcher.task(
            at.wave, plan, task, fallback=f"{agent.name} failed: {outcome.error_type}"
        )
        say(f"warning: {label}: {EXECUTOR} takes over: {dispatch.fallback_reason}")


def lesson_of(failed: TaskOutcome) -> Lesson:
    """What the failed attempt `failed` tells the next one (a `with_context` step): its
    error and details, the end of its failed check's output and the files it changed
    (rolled back since)."""
    output = tail(Path(failed.verify_output), OUTPUT_BYTES) if failed.verify_output else ""
    return Lesson(
        attempt=failed.attempt,
        agent=failed.agent,
        error_type=failed.error_type or "unknown",
        details=failed.details,
        verify_output=output,
        touched=tuple(failed.changed),
    )


def _unreviewable(
    run: PhaseRun, at: TaskAt, dispatch: TaskDispatch, why: str, tried: list[TaskOutcome]
) -> TaskOutcome:
    """A task whose reviewer cannot run: it fails before its author runs (no work lost)."""
    outcome = TaskOutcome.failed_early(
        at.plan.id, at.task.index, dispatch.agent, 1, error_type=review.FAILED, details=why
    )
    tried.append(outcome)
    _report(run, at, run.read.dispatcher.agent_for(dispatch), outcome)
    taskreview.record_unreviewable(
        run.effects.journal.plan_errors(at.plan.id), at.plan, at.task, dispatch, why
    )
    return outcome


def _attempt(
    run: PhaseRun,
    at: TaskAt,
    dispatch: TaskDispatch,
    attempt: int,
    learned: tuple[str, Lesson | None],
    reviewer: Reviewer | None = None,
    asked: Review | None = None,
) -> tuple[Agent, TaskOutcome]:
    """One rung of the ladder: the prompt built for the agent `dispatch` names (with the
    findings of a review that `asked` for changes, and on a `with_context` step the
    lesson of the attempt before: `learned` is the ladder's step and that lesson), the
    spawn journalled, the task run in its place (reviewed by `reviewer`); the agent and
    what became of it."""
    step, lesson = learned
    plan, task, label = at.plan, at.task, at.label
    agent = run.read.dispatcher.agent_for(dispatch)  # on the task's runner=, if set
    text = prompt.build_prompt(agent, plan, task, at.context, run.read.templates)
    if asked is not None:
        text += "\n" + reviewreport.findings_section(asked) + "\n"
    if lesson is not None:
        text = with_lesson(text, lesson)
    how = "" if step in ("first", "immediate") else f", {step}"
    run.effects.say(
        f"{label}: {agent.name} (attempt {attempt}{how}, timeout {dispatch.timeout_s:g} s)"
    )
    run.effects.journal.plan_event(
        plan.id, "spawn", task=task.index, agent=agent.name, attempt=attempt, step=step
    )
    with run.effects.console.running(f"plan {plan.id} task {task.index} {agent.name}"):
        outcome = run_task(
            git=at.place,
            plan=plan,
            task=task,
            agent=agent,
            dispatch=run.spend.bounded(dispatch),  # no more than the run's budget has left
            prompt=text,
            attempt=attempt,
            allow_dirty=run.policy.allow_dirty,
            scope=run.policy.scope,
            environ=run.read.environ,
            error_log=run.effects.journal.plan_errors(plan.id),
            cancel=run.effects.cancel,
            sandbox=run.read.sandbox,
            large_file_mb=run.policy.large_file_mb,
            reviewer=reviewer,
            step=step,
            proposal_files=at.context.scope,
            accept_timeout=run.policy.accept_timeout,
        )
    return agent, outcome._replace(step=step)


def _report(run: PhaseRun, at: TaskAt, agent: Agent, outcome: TaskOutcome) -> None:
    """An attempt's output kept (SPEC 1's RESULT file), its result journalled, counted
    (the run's budget) and said: the commit of a success, the error and rollback of a failure."""
    plan, task, label = at.plan, at.task, at.label
    journal, say = run.effects.journal, run.effects.say
    run.spend.add(outcome)
    if outcome.review is not None:  # every verdict in the plan's log, and said
        fields = outcome.review.event()
        journal.plan_event(plan.id, "review", task=task.index, attempt=outcome.attempt, **fields)
        say(f"{label}: {outcome.review.line()}")
    if outcome.output:  # SPEC 1: NN-MM-RESULT.txt, the last agent run's output
        result_file = run.read.phase.path / f"{plan.id}-RESULT.txt"
        journal.keep_output(
            result_file.relative_to(run.read.project.root).as_posix(), Path(outcome.output)
        )
    journal.plan_event(
        plan.id,
        "result",
        task=task.index,
        agent=agent.name,
        runner=agent.runner,
        attempt=outcome.attempt,
        step=outcome.step,
        success=outcome.success,
        soft_success=outcome.soft_success,
        error_type=outcome.error_type,
        duration_s=outcome.duration_s,
        input_tokens=outcome.input_tokens,
        output_tokens=outcome.output_tokens,
        cost_usd=outcome.cost_usd,
        tokens=outcome.tokens,
        budget=outcome.budget,
        budget_warn=outcome.budget_warn,
        budget_abort=outcome.budget_abort,
        **({"no_change": True} if outcome.no_change else {}),
        **({"soft_reason": outcome.soft_reason} if outcome.soft_success else {}),
    )
    if outcome.success:
        journal.plan_event(plan.id, "commit", task=task.index, commit=outcome.commit)
        say(f"{label}: {_success_line(outcome)}")
        return
    if run.effects.cancel.is_set():
        say(f"{label}: interrupted; the attempt is rolled back")
    else:
        say(f"{label}: {outcome.error_type}: {_first_line(outcome.details)}")
    if outcome.salvage:
        say(f"{label}: its changes are kept under {outcome.salvage} (gsd salvage show)")
    if outcome.checkpoint:  # run_task put the tree back to it
        kept = {"salvage": outcome.salvage} if outcome.salvage else {}
        journal.plan_event(
            plan.id, "rollback", task=task.index, checkpoint=outcome.checkpoint, **kept
        )


def _success_line(outcome: TaskOutcome) -> str:
    """How a success is said: its commit, or that it made no change (a writing tier
    that changed no file and claimed none), or that a read-only task had none to make."""
    if outcome.commit:
        soft = f"; {outcome.soft_reason}" if outcome.soft_reason == VERIFIED_SOFT else ""
        return f"committed {outcome.commit[:7]}{soft}"
    if outcome.no_change:
        return (
            f"made no change: {outcome.agent} changed no file and its report claims "
            "none (nothing committed)"
        )
    return "done, nothing to commit"


def _failed(
    at: TaskAt, outcome: TaskOutcome, attempts: list[TaskOutcome], started: datetime
) -> PlanEnd:
    """A plan stopped by its task's failure (the retry ladder's last rung)."""
    return PlanEnd(
        plan=at.plan,
        status="failed",
        message=f"{at.label}: {failure_line(outcome, attempts)}",
        error_type=outcome.error_type or "unknown",
        details=outcome.details,
        attempts=tuple(attempts),
        started=started,
    )


def _interrupted(plan: Plan, label: str, attempts: list[TaskOutcome], started: datetime) -> PlanEnd:
    """A plan a signal stopped at `label`: its attempt rolled back, nobody's failure."""
    return PlanEnd(
        plan=plan,
        status="interrupted",
        message=f"{label}: interrupted",
        attempts=tuple(attempts),
        started=started,
    )


def failure_line(last: TaskOutcome, attempts: list[TaskOutcome]) -> str:
    """How a task's failure is said: its own agent's failure first, then what the
    fallback agent (gsd-executor) made of it, when the task was handed over."""
    said = f"{last.error_type}: {_first_line(last.details)}"
    if last.agent != EXECUTOR:
        return said
    own = [
        a
        for a in attempts
        if (a.plan, a.task) == (last.plan, last.task) and a.agent != EXECUTOR and not a.success
    ]
    if not own:
        return said  # gsd-executor was the task's own agent
    first = own[-1]
    return (
        f"{first.agent} failed: {first.error_type}: {_first_line(first.details)}; "
        f"{EXECUTOR} took over and failed too: {said}"
    )


def _first_line(details: str) -> str:
    """What a progress line shows of a failure's details (the log keeps them whole)."""
    return details.splitlines()[0] if details else details
