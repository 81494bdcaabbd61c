"""One task, start to finish: checkpoint, spawn, result, verify, enforce, commit or roll back."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from gsd.core import enforce, result
from gsd.core.errors import GsdError, logged
from gsd.core.models import Plan, Task
from gsd.core.outcomes import TaskOutcome
from gsd.core.words import plural
from gsd.formats import errorlog, runners
from gsd.formats.agents import Agent
from gsd.formats.config import env_flag
from gsd.formats.prompt import allowed_files, automated_commands
from gsd.io import proc, userguard
from gsd.io.checkpoint import Checkpoints
from gsd.io.checkpointrecord import Checkpoint
from gsd.io.commits import Commits
from gsd.io.dispatch import TaskDispatch, run_files
from gsd.io.git import Git
from gsd.io.observe import Observation, Observer
from gsd.io.records import ANY_SIZE, read_private
from gsd.io.sandbox import Confinement, Settings, landlock_abi, make_state_folders

OUTPUT_TAIL = 4 * 1024 * 1024  # results and reports are read from the end of the output
STDERR_TAIL = 64 * 1024  # what of a runner's stderr is read (its error JSON, its last words)
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
) -> TaskOutcome:
    """Run one attempt; the branch ends committed or exactly as it was, never in between.

    Its steps: prepare (the checkpoint), spawn (the agent), assess (verdict, checks,
    policy), settle (commit, or roll back to the checkpoint) and record (a failure's
    line in the error log).

    With `sandbox`, the agent and everything it starts write only what its confinement
    allows (Landlock, where the kernel has it): see `gsd.io.sandbox`.

    A failure is appended to `error_log` (default: the legacy shared
    .planning/specialist-errors.jsonl, for callers of this function alone; the
    orchestrator passes the plan's journal, so the work tree stays clean between tasks).
    Setting `cancel` ends the agent (exit 130) and the attempt is rolled back.
    """
    error_log = error_log or errorlog.log_path(git.root)
    job = _Job(git=git, plan=plan, task=task, agent=agent, dispatch=dispatch, prompt=prompt,
               attempt=attempt, environ=environ, cancel=cancel, sandbox=sandbox)  # fmt: skip
    guards = _prepare(job, allow_dirty)
    if isinstance(guards, TaskOutcome):  # no checkpoint: nothing ran, nothing to undo
        _record(error_log, job, guards, None)
        return guards
    with _rolled_back_on_crash(git, guards.checkpoint):
        if cancel is not None and cancel.is_set():  # interrupted before the spawn
            Checkpoints(git).delete(guards.checkpoint)
            return _failed(job, error_type="unknown",
                           details="interrupted before the agent started")  # fmt: skip
        spawn = _spawn(job, guards)
        assessed = _assess(job, guards.checkpoint, spawn, scope)
    outcome, rollback_failed = _settle(job, guards.checkpoint, assessed)
    if not outcome.success and not (cancel is not None and cancel.is_set()):
        _record(error_log, job, outcome, guards.checkpoint)  # an interruption is nobody's
    if rollback_failed is not None:
        raise rollback_failed
    return outcome


class _Job(NamedTuple):
    """One attempt at a task: what every step of it needs."""

    git: Git
    plan: Plan
    task: Task
    agent: Agent
    dispatch: TaskDispatch
    prompt: str
    attempt: int
    environ: Mapping[str, str]
    cancel: threading.Event | None
    sandbox: Settings | None


class _Guards(NamedTuple):
    """What was kept before the spawn, to be put back after it."""

    checkpoint: Checkpoint
    gitfile: bytes | None  # a linked worktree's `.git` file
    user: Git | None  # the user's checkout, when no sandbox keeps the agent out of it


class _Spawned(NamedTuple):
    """What the spawn step left: the supervised run, and what had to be put back."""

    run: proc.Spawned
    result_text: str | None  # the result file the agent wrote, if it wrote one
    gitfile_changed: list[str]  # ["worktree .git file"] when the agent rewrote it
    in_user_checkout: list[str]  # what the agent changed in the user's checkout


class _Assessed(NamedTuple):
    """What an attempt came to, before it is settled (committed, or rolled back)."""

    spawned: proc.Spawned
    verdict: result.Verdict
    output: runners.RunnerOutput
    report: result.TaskReport | None
    error_type: str | None
    details: str
    changed: list[str]
    deviations: list[str]


def _prepare(job: _Job, allow_dirty: bool) -> _Guards | TaskOutcome:
    """Take the checkpoint and keep what the agent must not change (a worktree's `.git`
    file, an unconfined user checkout); a checkpoint that cannot be taken fails the
    attempt before anything runs."""
    git, sandbox = job.git, job.sandbox
    gitfile = _read_gitfile(git.root)
    # without Landlock, the user's checkout beside a plan's worktree is within an agent's
    # reach: its state is kept for the spawn and put back after (gsd.io.userguard)
    user = _unconfined_user_checkout(git, sandbox)
    confined = sandbox is not None and sandbox.enabled and bool(landlock_abi())
    try:
        checkpoint = Checkpoints(git).create(job.plan.id, job.task.index,
                                           allow_dirty=allow_dirty, confined=confined)  # fmt: skip
    except GsdError as exc:
        return _failed(job, error_type="checkpoint-failed", details=logged(exc))
    return _Guards(checkpoint=checkpoint, gitfile=gitfile, user=user)


@contextlib.contextmanager
def _rolled_back_on_crash(git: Git, checkpoint: Checkpoint) -> Iterator[None]:
    """A full disk, a read-only folder, ...: the tree goes back before the error goes on."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(GsdError, OSError):
            Checkpoints(git).rollback(checkpoint)
        raise


def _spawn(job: _Job, guards: _Guards) -> _Spawned:
    """Run the agent, then put back at once what it must not have changed: a worktree's
    `.git` file and the user's checkout (when no sandbox kept the agent out of it)."""
    git, user = job.git, guards.user
    kept = userguard.take(user) if user is not None else None
    try:
        spawned, result_text = _launch(job)
        _warn_survivors(spawned, f"{job.plan.id} task {job.task.index}")
        # before any git command: a worktree's `.git` file an agent rewrote would point
        # every command that follows at a repository of its choosing
        gitfile_changed = _restore_gitfile(git.root, guards.gitfile)
        in_user_checkout = userguard.put_back(user, kept) if user and kept else []
    finally:
        if user is not None and kept is not None:
            userguard.release(user, kept)
    return _Spawned(run=spawned, result_text=result_text, gitfile_changed=gitfile_changed,
                    in_user_checkout=in_user_checkout)  # fmt: skip


def _assess(job: _Job, checkpoint: Checkpoint, spawn: _Spawned, scope: str) -> _Assessed:
    """Decide what the attempt came to: SPEC 5's verdict on the agent's output, then the
    `<automated>` checks, then the change policy on everything that changed; the first
    failure is the attempt's error."""
    git, plan, task, agent = job.git, job.plan, job.task, job.agent
    spawned = spawn.run
    output, report = _read_output(agent, spawned, spawn.result_text)
    verdict, seen = _judge(git, checkpoint, spawned, output, report)
    if verdict.soft_success:
        sys.stderr.write(
            f"gsd: warning: {plan.id} task {task.index}: timed out after a complete success "
            "Task Report; accepted as a soft success\n"
        )
    error_type, details = verdict.error_type, verdict.reason
    if verdict.success:
        error_type, details = _verify(git, task, job.dispatch, job.environ, job.cancel,
                                      job.sandbox)  # fmt: skip
    # after the checks: a tracked file a check changed is the task's, seen and enforced
    observed = Observer(git).observe(checkpoint)
    seen = seen.then(observed) if seen else observed
    violations = enforce.check(
        tier=agent.tier, changed=seen.changed, allowed=allowed_files(plan, task), scope=scope,
        changed_refs=seen.changed_refs,
        git_internals_changed=[*spawn.gitfile_changed, *seen.internals], flags=seen.flags,
        ignored_protected=seen.protected, user_checkout=spawn.in_user_checkout,
    )  # fmt: skip
    fatal = [v for v in violations if v.fatal]
    if fatal and error_type is None:
        error_type, details = "policy-violation", "; ".join(v.detail for v in fatal)
    return _Assessed(spawned=spawned, verdict=verdict, output=output, report=report,
                     error_type=error_type, details=details or "", changed=seen.changed,
                     deviations=[v.detail for v in violations if not v.fatal])  # fmt: skip


def _read_output(
    agent: Agent, spawned: proc.Spawned, result_text: str | None
) -> tuple[runners.RunnerOutput, result.TaskReport | None]:
    """The runner's output and the agent's Task Report, from the end of what it printed."""
    stdout = _tail(spawned.stdout_path)
    stderr = _tail(spawned.stderr_path, STDERR_TAIL) if agent.runner == "gemini" else ""
    output = runners.parse_output(agent.runner, stdout, result_text, stderr)
    report = result.parse_task_report(output.text)
    if report is None and output.text != stdout:  # raw stdout is the text: read it once
        report = result.parse_task_report(stdout)
    return output, report


def _settle(
    job: _Job, checkpoint: Checkpoint, done: _Assessed
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
    stderr = _tail(spawned.stderr_path, STDERR_TAIL) if error_type is not None else ""
    if error_type is not None:
        details = _with_stderr(details, stderr)
    rollback_failed: GsdError | None = None
    if error_type is None:
        Checkpoints(git).delete(checkpoint)
    else:
        try:
            Checkpoints(git).rollback(checkpoint)
        except GsdError as exc:  # the tree is not restored: log the failure, then stop
            rollback_failed = exc
            details = f"{details}; {logged(exc)}"  # the kept tag, how to restore by hand
    failed = error_type is not None
    outcome = TaskOutcome(
        plan=job.plan.id, task=job.task.index, agent=job.agent.name, success=not failed,
        soft_success=done.verdict.soft_success and not failed, error_type=error_type,
        details=details, commit=commit, changed=done.changed,
        deviations=done.deviations, exit_code=spawned.exit_code,
        duration_s=round(spawned.duration_s, 1), input_tokens=done.output.input_tokens,
        output_tokens=done.output.output_tokens, cost_usd=done.output.cost_usd,
        attempt=job.attempt, checkpoint=checkpoint.tag, report=done.report,
        rate_limited=failed and result.rate_limited(
            done.verdict, done.output, stderr if job.agent.runner != "command" else ""),
        output=str(spawned.stdout_path) if _printed(spawned.stdout_path) else None,
    )  # fmt: skip
    return outcome, rollback_failed


def _judge(
    git: Git,
    checkpoint: Checkpoint,
    spawned: proc.Spawned,
    output: runners.RunnerOutput,
    report: result.TaskReport | None,
) -> tuple[result.Verdict, Observation | None]:
    """SPEC 5's verdict. Only its last tier (evidence: a non-empty diff) needs to know
    what changed: git is asked then alone, and the observation returned (else None)."""

    def verdict(changed: bool) -> result.Verdict:
        return result.judge(exit_code=spawned.exit_code, timed_out=spawned.timed_out,
                            output=output, report=report, changed_files=changed)  # fmt: skip

    without = verdict(False)
    if without.success or verdict(True) == without:
        return without, None
    seen = Observer(git).observe(checkpoint)
    return verdict(bool(seen.changed)), seen


def _commit(
    job: _Job, checkpoint: Checkpoint, changed: list[str]
) -> tuple[str | None, str | None, str]:
    """The task's one commit (the agent's own commits folded in): (sha or None when
    nothing changed, error type, details)."""
    commits, plan, task, agent = Commits(job.git), job.plan, job.task, job.agent
    try:
        Checkpoints(job.git).squash_agent_commits(checkpoint)
        if not changed:
            return None, None, ""  # nothing to commit: no empty commit
        # nothing else was staged (no snapshot): the quick way
        commit = commits.commit_paths if checkpoint.snapshot is None else commits.commit_task
        return commit(plan.id, task.index, task.name, agent.name, changed), None, ""
    except GsdError as exc:  # a failing pre-commit hook, no identity, ...
        return None, "unknown", f"task commit failed: {logged(exc)}"


def _launch(job: _Job) -> tuple[proc.Spawned, str | None]:
    """Start the agent in `git.root` under the supervisor, in its sandbox, with a private
    temporary folder (TMPDIR) that also holds its result file; returns what became of it
    and the result file's text (a file the agent wrote: read without following links)."""
    git, plan, task, agent = job.git, job.plan, job.task, job.agent
    prompt_file = run_files(git.git_dir, plan.id, task.index)[0]
    prompt_file.parent.mkdir(parents=True, exist_ok=True)
    prompt_file.write_text(job.prompt, encoding="utf-8")
    extra = _write_runner_files(agent, prompt_file.parent, job.environ)
    with tempfile.TemporaryDirectory(prefix="gsd-task-") as tmp:
        tmpdir = Path(tmp)
        result_file = tmpdir / "result.json"
        env = {
            **job.environ,
            **runners.run_env(
                agent.name, repo=str(git.root), prompt_file=str(prompt_file),
                result_file=str(result_file), phase=plan.phase, plan=plan.id, task=task.index,
            ),
            **_private_tmp(tmpdir),
            **extra.env,
        }  # fmt: skip
        confinement = None
        if job.sandbox is not None:
            if job.sandbox.enabled:
                make_state_folders(agent.runner, env)
            confinement = job.sandbox.confine(
                tier=agent.tier, runner=agent.runner, worktree=git.root, tmpdir=tmpdir, environ=env
            )
        spawned = proc.supervise(
            [*job.dispatch.argv, *extra.argv],
            cwd=git.root,
            env=env,
            stdin_path=prompt_file,
            stdout_path=prompt_file.parent / "stdout",
            stderr_path=prompt_file.parent / "stderr",
            timeout_s=job.dispatch.timeout_s,
            grace_s=job.dispatch.grace_s,
            registry=running_registry(git),
            cancel=job.cancel,
            confinement=confinement,
        )
        data = read_private(result_file, limit=ANY_SIZE)
    return spawned, None if data is None else data.decode("utf-8", "replace")


def _write_runner_files(
    agent: Agent, run_dir: Path, environ: Mapping[str, str]
) -> runners.RunnerFiles:
    """Write the files the runner reads (gemini's policy and settings) into the spawn's
    run folder, which only gsd's user may write; the sandbox lets everyone read."""
    system_settings = None
    if agent.runner == "gemini" and agent.max_turns is not None:
        # an administrator's file (often a link into configuration management): the
        # settings gsd's copy must keep
        with contextlib.suppress(OSError, UnicodeDecodeError):
            system_settings = Path(runners.gemini_system_settings(environ)).read_text("utf-8")
    extra = runners.runner_files(agent, run_dir, system_settings=system_settings)
    for name, text in extra.files.items():
        path = run_dir / name
        path.unlink(missing_ok=True)  # never write through what an agent left there
        path.write_text(text, encoding="utf-8")
    return extra


def _printed(path: Path) -> bool:
    """Whether the agent printed anything: an attempt that printed nothing (a program
    that never started) leaves the RESULT file of an earlier one as it was."""
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


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


def _private_tmp(folder: Path) -> dict[str, str]:
    """The variables that point programs at a temporary folder (the sandbox lets them
    write there, not in /tmp)."""
    return {"TMPDIR": str(folder), "TMP": str(folder), "TEMP": str(folder)}


def running_registry(git: Git) -> Path:
    """Where supervised groups are recorded: one folder for the main worktree and every
    linked one, so the run lock can reap whatever a killed run left anywhere."""
    return git.common_dir / "gsd" / "running"


def _verify(
    git: Git,
    task: Task,
    dispatch: TaskDispatch,
    environ: Mapping[str, str],
    cancel: threading.Event | None = None,
    sandbox: Settings | None = None,
) -> tuple[str | None, str]:
    """Run `<automated>` checks under the supervisor; their leftovers are not the task's.

    They are the plan author's commands, but they run what the agent just wrote: in the
    sandbox they may write the worktree and a private temporary folder, nothing else."""
    commands = automated_commands(task)
    if not commands:
        return None, "no automated verification"
    if env_flag("SKIP_VERIFICATION"):
        sys.stderr.write(
            f"gsd: warning: SKIP_VERIFICATION=true: {plural(len(commands), '<automated> check')} "
            f"of task {task.index} not run\n"
        )
        return None, "verification skipped (SKIP_VERIFICATION)"
    before = git.untracked_files()
    run_dir = run_files(git.git_dir, "verify", task.index)[0].parent
    with tempfile.TemporaryDirectory(prefix="gsd-verify-") as tmp:
        env = {**environ, **_private_tmp(Path(tmp))}
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
            return _checks(git, task, commands, run_dir, dispatch, env, cancel, confinement)
        finally:
            git.remove_new_untracked(before)  # caches, reports, ...


def _checks(
    git: Git,
    task: Task,
    commands: list[str],
    run_dir: Path,
    dispatch: TaskDispatch,
    env: dict[str, str],
    cancel: threading.Event | None,
    confinement: Confinement | None,
) -> tuple[str | None, str]:
    """The `<automated>` commands one by one; the first that fails fails the task."""
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
            cancel=cancel,
            confinement=confinement,
        )
        _warn_survivors(done, f"task {task.index} check `{command}`")
        if done.exit_code != 0:
            last = _tail(done.stdout_path, 2000).strip().splitlines()[-3:]
            return "validation-failed", (
                f"`{command}` exited {done.exit_code}" + (f": {' | '.join(last)}" if last else "")
            )
    return None, f"{plural(len(commands), 'automated check')} passed"


def _unconfined_user_checkout(git: Git, sandbox: Settings | None) -> Git | None:
    """The user's checkout when a plan runs in a worktree beside it and no Landlock
    sandbox keeps the agent out of it; else None."""
    if sandbox is None or sandbox.in_place or git.root == sandbox.root:
        return None
    if sandbox.enabled and landlock_abi():
        return None
    return Git(sandbox.root)


def _read_gitfile(root: Path) -> bytes | None:
    """A linked worktree's `.git` file (`gitdir: ...`); None in a main checkout."""
    path = root / ".git"
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()


def _restore_gitfile(root: Path, saved: bytes | None) -> list[str]:
    """Put a worktree's `.git` file back as it was (a folder or link in its place goes);
    returns ["worktree .git file"] when it had to."""
    if saved is None:
        return []
    path = root / ".git"
    if not path.is_symlink() and path.is_file() and path.read_bytes() == saved:
        return []
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    path.write_bytes(saved)
    return ["worktree .git file"]


def _warn_survivors(spawned: proc.Spawned, what: str) -> None:
    if spawned.survivors:
        sys.stderr.write(
            f"gsd: warning: {what}: {plural(spawned.survivors, 'process')} of group {spawned.pid} "
            "still alive after SIGKILL (stuck in the kernel?); gsd stopped waiting for them\n"
        )


def _tail(path: Path, limit: int = OUTPUT_TAIL) -> str:
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _failed(job: _Job, *, error_type: str, details: str) -> TaskOutcome:
    """An attempt that failed before the agent ran: nothing changed, nothing to report."""
    return TaskOutcome(
        plan=job.plan.id, task=job.task.index, agent=job.agent.name, success=False,
        soft_success=False, error_type=error_type, details=details, commit=None, changed=[],
        deviations=[], exit_code=None, duration_s=0.0, input_tokens=None, output_tokens=None,
        cost_usd=None, attempt=job.attempt, checkpoint=None, report=None,
    )  # fmt: skip


def _record(path: Path, job: _Job, outcome: TaskOutcome, checkpoint: Checkpoint | None) -> None:
    """Append a failed attempt to the error log: the line `gsd errors` and the retry
    ladder read (which checkpoint, which runner, how it ended)."""
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
        ),
    )
