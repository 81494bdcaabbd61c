"""An attempt assessed: the agent's verdict, the `<automated>` checks, the change policy.

SPEC 5's verdict on the agent's output comes first, then whether git agrees the task
is done, then the plan's checks, then the policy on everything that changed; the first
failure is the attempt's error.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from gsd.core.flags import env_flag
from gsd.core.models import RunnerOutput, TaskReport
from gsd.core.safety import enforce
from gsd.core.safety.budget import Budget, BudgetStatus, budget_status
from gsd.core.verdict import done, judge, planfirst
from gsd.core.verdict.review import Review
from gsd.core.words import plural, some
from gsd.formats import taskreport
from gsd.formats.agents import Agent
from gsd.formats.prompt import allowed_files, automated_commands
from gsd.formats.runners import invocation as runners
from gsd.formats.runners import output as runneroutput
from gsd.io.confine.sandbox import Confinement
from gsd.io.dispatch import TaskDispatch, run_files
from gsd.io.git import leftfiles
from gsd.io.git.checkpointrecord import Checkpoint
from gsd.io.git.observe import Observation, Observer
from gsd.io.git.repo import Git
from gsd.io.plans import specialfiles
from gsd.io.process import proc
from gsd.run import taskdone
from gsd.run.taskdone import Checks
from gsd.run.taskspawn import AgentRun, Job, private_tmp, running_registry, warn_survivors

OUTPUT_TAIL = 4 * 1024 * 1024  # results and reports are read from the end of the output
STDERR_TAIL = 64 * 1024  # what of a runner's stderr is read (its error JSON, its last words)


class Assessed(NamedTuple):
    """What an attempt came to, before it is settled (committed, or rolled back)."""

    spawned: proc.Spawned
    verdict: judge.Verdict
    output: RunnerOutput
    report: TaskReport | None
    error_type: str | None
    details: str
    changed: list[str]
    deviations: list[str]
    tokens: int | None = None  # input + output, against the budget
    budget: BudgetStatus | None = None  # within, over (the warn budget) or aborted
    no_change: bool = False  # a writing tier's success that changed and claimed nothing
    review: Review | None = None  # what its reviewer said, when it was reviewed
    verify_output: str | None = None  # the failed `<automated>` check's output file


def assess(
    job: Job, checkpoint: Checkpoint, spawn: AgentRun, scope: str, large_file_mb: float = 10.0
) -> Assessed:
    """Decide what the attempt came to: SPEC 5's verdict, its budget and limits, whether
    git agrees it is done (`gsd.run.taskdone`), the `<automated>` checks, the change
    policy; the first failure is its error, but a fatal policy violation wins over not done."""
    git, plan, task, agent = job.git, job.plan, job.task, job.agent
    spawned = spawn.run
    output, report = _read_output(agent, spawned, spawn.result_text)
    verdict, seen = _judge(git, checkpoint, spawned, output, report)
    error_type, details = verdict.error_type, verdict.reason
    tokens, budget, over = against_budget(
        job.dispatch, spawned, output, spawn.streamed_tokens, spawn.streamed_estimated
    )
    notes: list[str] = []
    checks = Checks(None, "")  # none ran since `seen` was taken: nothing they changed
    if over:
        error_type, details = "budget-exceeded", over
    elif spawned.limit:
        error_type, details = "resource-limit", over_limit(spawned, "the agent")
    elif verdict.success or taskdone.verifiable(job, verdict):  # git agrees, checks pass
        seen = seen or Observer(git).observe(checkpoint)
        verdict, done_is = taskdone.checked(job, verdict, output, report, seen.changed, _verify)
        error_type, details, notes, checks = done_is
    # after the checks: a tracked file a check changed is the task's, seen and enforced.
    # With no check run since `seen` was taken (the agent's group ended before it, gsd
    # only read since), a second look would see the same: it is not taken again.
    if seen is None or checks.ran:
        observed = Observer(git).observe(checkpoint)
        seen = seen.then(observed) if seen else observed
    violations = _nested(git, seen.changed) + _enforce(job, checkpoint, spawn, seen, scope)
    fatal = [v for v in violations if v.fatal]
    if fatal and (error_type is None or error_type in taskdone.TYPES):
        error_type, details = "policy-violation", "; ".join(v.detail for v in fatal)
    outside = _outside_proposal(job, seen.changed)
    if outside and (error_type is None or error_type in taskdone.TYPES):
        error_type, details = planfirst.SCOPE_VIOLATION, outside
    no_change = error_type is None and done.made_no_change(agent.tier, bool(seen.changed), report)
    _warn(f"{plan.id} task {task.index}", output, verdict, accepted=error_type is None)
    if error_type is None:
        notes += _large(job, seen.changed, large_file_mb)
    return Assessed(
        spawned=spawned,
        verdict=verdict,
        output=output,
        report=report,
        error_type=error_type,
        details=details or "",
        changed=seen.changed,
        deviations=[*output.notes, *notes, *(v.detail for v in violations if not v.fatal)],
        tokens=tokens,
        budget=budget,
        no_change=no_change,
        verify_output=checks.output if error_type is not None else None,
    )


def _enforce(
    job: Job, checkpoint: Checkpoint, spawn: AgentRun, seen: Observation, scope: str
) -> list[enforce.Violation]:
    """The change policy on everything the attempt changed, as git and the disk see it."""
    kept = checkpoint.kept.special if checkpoint.kept is not None else None
    return enforce.check(
        tier=job.agent.tier,
        changed=seen.changed,
        allowed=allowed_files(job.plan, job.task),
        scope=scope,
        changed_refs=seen.changed_refs,
        git_internals_changed=[*spawn.gitfile_changed, *seen.internals],
        flags=seen.flags,
        ignored_protected=seen.protected,
        user_checkout=spawn.in_user_checkout,
        own_files=job.task.files,
        special=specialfiles.after_spawn(job.git.root, kept, seen.changed),
    )


def _outside_proposal(job: Job, changed: list[str]) -> str:
    """A plan-first task's change outside its approved proposal's Files, said ("": none)."""
    if job.proposal_files is None:
        return ""
    outside = planfirst.outside_proposal(changed, job.proposal_files)
    if not outside:
        return ""
    name = planfirst.proposal_name(job.plan.id, job.task.index)
    return f"changed {some(outside)} outside the Files of its approved proposal {name}"


def against_budget(
    dispatch: TaskDispatch,
    spawned: proc.Spawned,
    output: RunnerOutput,
    streamed: int | None,
    estimated: bool = False,
) -> tuple[int | None, BudgetStatus | None, str]:
    """The attempt's tokens (its runner's final count, or what its stream had reported
    when it was stopped before one), where they stand against its budget, and why it is
    a `budget-exceeded` failure ("" when it is not): stopped by the watch, or past the
    abort threshold by the final count, or its cost past what the run's budget had left
    (`_past_usd`). A stopped gemini had reported no usage yet:
    its figure is the stream's estimate (`estimated`), and the reason says so."""
    counted = runneroutput.total([output.input_tokens, output.output_tokens])
    known = [t for t in (counted, streamed) if t is not None]
    tokens = max(known) if known else None
    costly = _past_usd(dispatch, output.cost_usd)
    abort = dispatch.budget_abort
    if abort is None or dispatch.budget_warn is None:
        return tokens, None, costly  # its status is the tokens' (none here); its reason the cost
    budget = Budget(warn=dispatch.budget_warn, abort=abort, source=dispatch.budget_source)
    aborted = spawned.stopped or (tokens is not None and tokens > abort)
    status = budget_status(tokens, budget, aborted=aborted)
    if not aborted:
        return tokens, status, costly
    how = "stopped at" if spawned.stopped else "used"
    guess = spawned.stopped and estimated and counted is None
    what = f"{tokens or 0:,} tokens" + (
        " (from its stream; its runner reports usage only at the end)" if guess else ""
    )
    how = "stopped at an estimated" if guess else how
    return (
        tokens,
        status,
        (
            f"{how} {what}, past the abort threshold of {abort:,} "
            f"({budget.source}); raise it there if the task needs more"
        ),
    )


def _past_usd(dispatch: TaskDispatch, cost: float | None) -> str:
    """Why an attempt's cost fails it: past the dollars its run's budget had left (its
    runner's final count: no stream reports a cost as it goes); "" when it is not."""
    limit = dispatch.budget_usd
    if limit is None or cost is None or cost <= limit:
        return ""
    return (
        f"cost ${cost:,.4f}, past the ${limit:,.4f} left of {dispatch.budget_usd_source}; "
        "raise it there if the task needs more"
    )


def _warn(label: str, output: RunnerOutput, verdict: judge.Verdict, *, accepted: bool) -> None:
    """Warnings on the terminal: figures of the output refused, a soft success on its
    Task Report (when it is `accepted`: no later rule failed it; one accepted on its
    checks is said with its commit, after its review: `gsd.run.tasks`)."""
    for note in output.notes:  # figures refused: neither counted nor shown
        sys.stderr.write(f"gsd: warning: {label}: {note}\n")
    if verdict.soft_success and accepted and verdict.reason != judge.VERIFIED_SOFT:
        sys.stderr.write(
            f"gsd: warning: {label}: timed out after a complete success "
            "Task Report; accepted as a soft success\n"
        )


def _nested(git: Git, changed: list[str]) -> list[enforce.Violation]:
    """A repository of its own the agent made in the worktree: a policy violation
    (committed, it would be a bare gitlink without .gitmodules or any of its files)."""
    nested = leftfiles.nested_repositories(git.root, changed)
    if not nested:
        return []
    what = f"created {', '.join(nested[:5])}: a git repository of its own (a .git inside)"
    detail = f"{what}, which git would commit as a bare gitlink without its files; removed"
    return [enforce.Violation("nested-repository", detail, fatal=True)]


def _large(job: Job, changed: list[str], limit_mb: float) -> list[str]:
    """A warning on the terminal (and a SUMMARY note) for each file over `limit_mb`
    (config `specialists.large_file_mb`) outside the task's files, about to be committed."""
    outside = enforce.outside_scope(changed, allowed_files(job.plan, job.task))
    notes = []
    for path, size in leftfiles.large_files(job.git.root, outside, limit_mb):
        notes.append(
            f"{path} is {leftfiles.megabytes(size)}, outside the task's files "
            f"(over specialists.large_file_mb, {limit_mb:g} MB); committed: check it belongs in git"
        )
        sys.stderr.write(f"gsd: warning: {job.plan.id} task {job.task.index}: {notes[-1]}\n")
    return notes


def _read_output(
    agent: Agent, spawned: proc.Spawned, result_text: str | None
) -> tuple[RunnerOutput, TaskReport | None]:
    """The runner's output and the agent's Task Report, from the end of what it printed."""
    stdout = tail(spawned.stdout_path)
    stderr = tail(spawned.stderr_path, STDERR_TAIL) if agent.runner == "gemini" else ""
    output = runners.parse_output(agent.runner, stdout, result_text, stderr)
    report = taskreport.parse_task_report(output.text)
    if report is None and output.text != stdout:  # raw stdout is the text: read it once
        report = taskreport.parse_task_report(stdout)
    return output, report


def _judge(
    git: Git,
    checkpoint: Checkpoint,
    spawned: proc.Spawned,
    output: RunnerOutput,
    report: TaskReport | None,
) -> tuple[judge.Verdict, Observation | None]:
    """SPEC 5's verdict. Only its last tier (evidence: a non-empty diff) needs to know
    what changed: git is asked then alone, and the observation returned (else None)."""
    found = taskreport.markers(output.text)  # read once, for up to three verdicts

    def verdict(changed: bool) -> judge.Verdict:
        return judge.judge(
            exit_code=spawned.exit_code,
            timed_out=spawned.timed_out,
            output=output,
            report=report,
            markers=found,
            changed_files=changed,
        )

    without = verdict(False)
    if without.success or verdict(True) == without:
        return without, None
    seen = Observer(git).observe(checkpoint)
    return verdict(bool(seen.changed)), seen


def _verify(job: Job) -> Checks:
    """Run `<automated>` checks under the supervisor; their leftovers are not the task's.

    They are the plan author's commands, but they run what the agent just wrote: in the
    sandbox they may write the worktree and a private temporary folder, nothing else."""
    git, task, sandbox = job.git, job.task, job.sandbox
    commands = automated_commands(task)
    if not commands:
        return Checks(None, "no automated verification")
    if env_flag("SKIP_VERIFICATION"):
        sys.stderr.write(
            f"gsd: warning: SKIP_VERIFICATION=true: {plural(len(commands), '<automated> check')} "
            f"of task {task.index} not run\n"
        )
        return Checks(None, "verification skipped (SKIP_VERIFICATION)")
    before = git.untracked_files()
    run_dir = run_files(git.git_dir, "verify", task.index)[0].parent
    with tempfile.TemporaryDirectory(prefix="gsd-verify-") as tmp:
        env = {**job.environ, **private_tmp(Path(tmp))}
        confinement = None
        if sandbox is not None:
            confinement = sandbox.confine(
                tier="read+write",
                runner="command",
                worktree=git.root,
                tmpdir=Path(tmp),
                environ=env,
            )
        try:
            return _checks(job, commands, run_dir, env, confinement)
        finally:
            git.remove_new_untracked(before)  # caches, reports, ...


def _checks(
    job: Job,
    commands: list[str],
    run_dir: Path,
    env: dict[str, str],
    confinement: Confinement | None,
) -> Checks:
    """The `<automated>` commands one by one (in `run_dir`, with `env`, confined); the
    first that fails fails the task."""
    git, task, dispatch = job.git, job.task, job.dispatch
    for number, command in enumerate(commands, 1):
        # `<automated>` is by definition a shell command line the plan author wrote
        # (SPEC 2), run like a Makefile recipe; no other plan text reaches a shell.
        done = proc.supervise(
            ["/bin/sh", "-c", command],
            cwd=git.root,
            env=env,
            stdout_path=run_dir / f"verify-{number}.out",
            stderr_path=run_dir / f"verify-{number}.out",
            timeout_s=dispatch.timeout_s,
            grace_s=dispatch.grace_s,
            registry=running_registry(git),
            cancel=job.cancel,
            confinement=confinement,
        )
        warn_survivors(done, f"task {task.index} check `{command}`")
        if done.limit:
            return Checks("resource-limit", over_limit(done, f"`{command}`"), ran=True)
        if done.exit_code != 0:
            last = tail(done.stdout_path, 2000).strip().splitlines()[-3:]
            said = f": {' | '.join(last)}" if last else ""
            failed = f"`{command}` exited {done.exit_code}{said}"
            output = str(run_dir / f"verify-{number}.out")
            return Checks("validation-failed", failed, ran=True, output=output)
    return Checks(None, f"{plural(len(commands), 'automated check')} passed", ran=True)


def over_limit(spawned: proc.Spawned, what: str) -> str:
    """Why a program its warden ended at a limit failed, with the setting to change."""
    key, words = ("memory", "memory") if spawned.limit == "memory" else ("processes", "process")
    return (
        f"{what} went over its {words} limit and was ended with all it started "
        f"(config.json sandbox.{key} sets it)"
    )


def tail(path: Path, limit: int = OUTPUT_TAIL) -> str:
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
