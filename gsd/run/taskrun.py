"""One task attempt, start to finish: prepare, spawn, assess, settle, record.

The first three steps are `gsd.run.taskspawn` and `gsd.run.taskassess`; here the
attempt is settled (its commit, or the rollback to its checkpoint) and a failure is
recorded in the error log.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from gsd.core import layout
from gsd.core.errors import GsdError, logged
from gsd.core.models import Plan, Task
from gsd.core.verdict import judge
from gsd.core.verdict.outcomes import TaskOutcome
from gsd.formats import errorlog
from gsd.formats.agents import Agent
from gsd.io.confine.sandbox import Settings
from gsd.io.dispatch import TaskDispatch
from gsd.io.git import salvage
from gsd.io.git.checkpoint import Checkpoints
from gsd.io.git.checkpointrecord import Checkpoint
from gsd.io.git.commits import Commits
from gsd.io.git.repo import Git
from gsd.run import taskreview
from gsd.run.taskassess import STDERR_TAIL, Assessed, assess, tail
from gsd.run.taskreview import Reviewer
from gsd.run.taskspawn import Guards, Job, failed_before_spawn, prepare, spawn_agent

STDERR_LINES = 5  # a failure's details end with this many of the agent's stderr lines
STDERR_CHARS = 600  # ... and no more characters than this


def run_task(
    *,
    git: Git,
    plan: Plan,
    task: Task,
    agent: Agent,
    dispatch: TaskDispatch,
    prompt: str,
    attempt: int = 1,
    allow_dirty: bool = False,
    scope: str = "warn",
    environ: Mapping[str, str] = os.environ,
    error_log: Path | None = None,
    cancel: threading.Event | None = None,
    sandbox: Settings | None = None,
    large_file_mb: float = 10.0,
    step: str = "first",
    reviewer: Reviewer | None = None,
    proposal_files: tuple[str, ...] | None = None,
    accept_timeout: bool = False,
) -> TaskOutcome:
    """Run one attempt; the branch ends committed or exactly as it was, never in between.

    Its steps: prepare (the checkpoint), spawn (the agent), assess (verdict, checks,
    policy; with `reviewer`, a success that changed something is then reviewed:
    `gsd.run.taskreview`), settle (commit, or roll back to the checkpoint) and record
    (a failure's line in the error log).

    With `sandbox`, the agent writes only what its confinement allows (gsd.io.confine.sandbox).
    A failure is appended to `error_log` (default: the plan's log, for callers of this
    function alone; the orchestrator passes the plan's journal), with its `step` (the retry
    ladder's). Setting `cancel` ends the agent (exit 130) and the attempt is rolled back.
    With `accept_timeout` (config `salvage.accept_timeout_when_verified`) a timed-out
    attempt whose `<automated>` checks pass is a soft success (gsd.run.taskassess).
    """
    error_log = error_log or layout.plan_log(git.root / layout.PLANNING, plan.id)
    job = Job(
        git=git,
        plan=plan,
        task=task,
        agent=agent,
        dispatch=dispatch,
        prompt=prompt,
        attempt=attempt,
        environ=environ,
        cancel=cancel,
        sandbox=sandbox,
        proposal_files=proposal_files,
        accept_timeout=accept_timeout,
    )
    return _steps(job, allow_dirty, scope, large_file_mb, error_log, reviewer, step)


def _steps(
    job: Job,
    allow_dirty: bool,
    scope: str,
    large_file_mb: float,
    error_log: Path,
    reviewer: Reviewer | None,
    step: str,
) -> TaskOutcome:
    """`run_task`'s steps, for its `job` (made by the retry ladder's `step`)."""
    git, cancel = job.git, job.cancel
    guards = prepare(job, allow_dirty)
    if isinstance(guards, TaskOutcome):  # no checkpoint: nothing ran, nothing to undo
        _record(error_log, job, guards, None, step)
        return guards
    with _rolled_back_on_crash(git, guards.checkpoint):
        if cancel is not None and cancel.is_set():  # interrupted before the spawn
            Checkpoints(git).delete(guards.checkpoint)
            return failed_before_spawn(
                job, error_type="unknown", details="interrupted before the agent started"
            )
        spawn = spawn_agent(job, guards)
        assessed = _reviewed(
            job, guards, assess(job, guards.checkpoint, spawn, scope, large_file_mb), reviewer
        )
    outcome, rollback_failed = _settle(job, guards.checkpoint, assessed)
    if not outcome.success and not (cancel is not None and cancel.is_set()):
        _record(error_log, job, outcome, guards.checkpoint, step)  # an interruption: nobody's
    if rollback_failed is not None:
        raise rollback_failed
    return outcome


def _reviewed(job: Job, guards: Guards, assessed: Assessed, reviewer: Reviewer | None) -> Assessed:
    """A success that changed something, as its reviewer judged it (when it has one)."""
    if reviewer is None or assessed.error_type is not None or not assessed.changed:
        return assessed  # a failure, or nothing to accept: nothing to review
    if job.cancel is not None and job.cancel.is_set():
        return assessed  # interrupted: the caller rolls it back
    return taskreview.review(job, guards, assessed, reviewer)


@contextlib.contextmanager
def _rolled_back_on_crash(git: Git, checkpoint: Checkpoint) -> Iterator[None]:
    """A full disk, a read-only folder, ...: the tree goes back before the error goes on."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(GsdError, OSError):
            Checkpoints(git).rollback(checkpoint)
        raise


def _settle(
    job: Job, checkpoint: Checkpoint, done: Assessed
) -> tuple[TaskOutcome, GsdError | None]:
    """Commit a success (the task's one commit) and delete its checkpoint; roll a failure
    (a failed commit too) back to the checkpoint. Returns the outcome and, when the
    rollback itself failed (the tree not restored), its error to raise once the failure
    is recorded."""
    git, error_type, details, spawned = job.git, done.error_type, done.details, done.spawned
    commit = None
    if error_type is None:
        with _rolled_back_on_crash(git, checkpoint):
            commit, error_type, details = _commit(job, checkpoint, done.changed)
    stderr = tail(spawned.stderr_path, STDERR_TAIL) if error_type is not None else ""
    if error_type is not None and done.review is None:  # the reviewer's words are enough
        details = _with_stderr(details, stderr)
    rollback_failed: GsdError | None = None
    kept = None
    if error_type is None:
        Checkpoints(git).delete(checkpoint)
    else:
        kept, details = _salvaged(job, checkpoint, error_type, done.changed, details)
        try:
            Checkpoints(git).rollback(checkpoint)
        except GsdError as exc:  # the tree is not restored: log the failure, then stop
            rollback_failed = exc
            details = f"{details}; {logged(exc)}"  # the kept tag, how to restore by hand
    failed = error_type is not None
    outcome = TaskOutcome.blank(job.plan.id, job.task.index, job.agent.name, job.attempt)
    outcome = outcome._replace(
        success=not failed,
        soft_success=done.verdict.soft_success and not failed,
        error_type=error_type,
        details=details,
        commit=commit,
        changed=done.changed,
        deviations=done.deviations,
        exit_code=spawned.exit_code,
        duration_s=round(spawned.duration_s, 1),
        input_tokens=done.output.input_tokens,
        output_tokens=done.output.output_tokens,
        cost_usd=done.output.cost_usd,
        checkpoint=checkpoint.tag,
        report=done.report,
        rate_limited=failed
        and judge.rate_limited(
            done.verdict, done.output, stderr if job.agent.runner != "command" else ""
        ),
        output=str(spawned.stdout_path) if _printed(spawned.stdout_path) else None,
        tokens=done.tokens,
        budget=done.budget,
        budget_warn=job.dispatch.budget_warn,
        budget_abort=job.dispatch.budget_abort,
        no_change=done.no_change and not failed,
        verify_output=done.verify_output,
        review=done.review,
        salvage=kept,
        soft_reason=done.verdict.reason if done.verdict.soft_success and not failed else None,
    )
    return outcome, rollback_failed


def _salvaged(
    job: Job, checkpoint: Checkpoint, error_type: str, changed: list[str], details: str
) -> tuple[str | None, str]:
    """The attempt's changes kept under a salvage ref before its rollback (an interrupted
    attempt's too: its work is worth keeping), and the details; a salvage that fails is
    said in the details, and the rollback goes on."""
    users = set(checkpoint.untracked)  # in place: the user's untracked files are never kept
    changed = [path for path in changed if path not in users]
    if not changed:
        return None, details
    where = (job.plan.id, job.task.index, job.attempt)
    try:
        base = checkpoint.snapshot or checkpoint.head
        return salvage.keep(job.git, base, where, error_type, changed), details
    except (GsdError, OSError) as exc:
        return None, f"{details}; {salvage.describe(exc)}"


def _commit(
    job: Job, checkpoint: Checkpoint, changed: list[str]
) -> tuple[str | None, str | None, str]:
    """The task's one commit (the agent's own commits folded in): (sha or None when
    nothing changed, error type, details)."""
    git, plan, task, agent = job.git, job.plan, job.task, job.agent
    try:
        Checkpoints(git).squash_agent_commits(checkpoint)
        if not changed:
            return None, None, ""  # nothing to commit: no empty commit
        # nothing else was staged (no snapshot): the quick way
        commits = Commits(git)
        commit = commits.commit_paths if checkpoint.snapshot is None else commits.commit_task
        return commit(plan.id, task.index, task.name, agent.name, changed), None, ""
    except GsdError as exc:  # a failing pre-commit hook, no identity, ...
        return None, "unknown", f"task commit failed: {logged(exc)}"


# a frame of a backtrace (Rust `12: <unknown>`, `at src/x.rs:3`; Node `at file:///...`):
# the lines that say what went wrong come before them
_STACK_FRAME = re.compile(r"(?:\d+: (?:<unknown>|0x[0-9a-f]+|\S+::)|at [\w<(./]|at$)")


def _with_stderr(details: str, stderr: str) -> str:
    """`details` ending with the last lines of the agent's own stderr (bounded), so the
    error log says what the program said, not only what gsd concluded."""
    lines = [" ".join(line.split()) for line in stderr.splitlines()]
    lines = [line for line in lines if line and not _STACK_FRAME.match(line)][-STDERR_LINES:]
    if not lines:
        return details
    said = " | ".join(lines)
    if len(said) > STDERR_CHARS:
        said = "..." + said[-(STDERR_CHARS - 3) :]
    if said in details:
        return details
    return f"{details}; stderr: {said}"


def _printed(path: Path) -> bool:
    """Whether the agent printed anything: an attempt that printed nothing (a program
    that never started) leaves the RESULT file of an earlier one as it was."""
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _record(
    path: Path, job: Job, outcome: TaskOutcome, checkpoint: Checkpoint | None, step: str
) -> None:
    """Append a failed attempt to the error log: the line `gsd errors` and the retry
    ladder read (which checkpoint, which runner, how it ended, the ladder's step)."""
    plan, agent = job.plan, job.agent
    errorlog.append(
        path,
        errorlog.ErrorRecord(
            phase=plan.phase,
            plan=plan.number,
            task=str(outcome.task),
            specialist=agent.name,
            error_type=outcome.error_type or "unknown",
            details=outcome.details,
            git_state=checkpoint.name if checkpoint else "",
            exit_code=outcome.exit_code,
            attempt=outcome.attempt,
            runner=agent.runner,
            duration_s=outcome.duration_s,
        ).model_copy(
            update={"step": step, **({"salvage": outcome.salvage} if outcome.salvage else {})}
        ),  # kept as an unknown key: SPEC 6's order
    )
