"""An attempt's first two steps: prepare (the checkpoint) and spawn (the agent).

Prepare takes the checkpoint and keeps what the agent must not change; spawn runs the
agent under the supervisor in its sandbox, then puts back what it must not have changed.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gsd.core import layout
from gsd.core.errors import GsdError, logged
from gsd.core.ids import task_key
from gsd.core.models import Plan, Task
from gsd.core.safety.policy import with_extra
from gsd.core.verdict.outcomes import TaskOutcome
from gsd.core.words import plural
from gsd.formats import nofollow
from gsd.formats.agents import Agent
from gsd.formats.files import write_atomic
from gsd.formats.runners import agenthooks, clisettings, codex
from gsd.formats.runners import invocation as runners
from gsd.formats.runners.usage import STREAMS_USAGE
from gsd.io.confine import clihome, userguard
from gsd.io.confine.sandbox import Settings, landlock_abi, make_state_folders
from gsd.io.dispatch import TaskDispatch, run_files
from gsd.io.git.checkpoint import Checkpoints
from gsd.io.git.checkpointrecord import Checkpoint
from gsd.io.git.repo import Git
from gsd.io.process import proc
from gsd.io.process.budgetwatch import BudgetWatch
from gsd.io.records import ANY_SIZE, read_private


class Job(NamedTuple):
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
    run_dir: Path | None = None  # where its prompt and output go; None: the task's own
    proposal_files: tuple[str, ...] | None = (
        None  # a plan-first task's approved Files (None: no gate)
    )
    # a timeout whose `<automated>` checks pass is accepted as a soft success
    # (`salvage.accept_timeout_when_verified`)
    accept_timeout: bool = False


class Guards(NamedTuple):
    """What was kept before the spawn, to be put back after it."""

    checkpoint: Checkpoint
    gitfile: bytes | None  # a linked worktree's `.git` file
    user: Git | None  # the user's checkout, when no sandbox keeps the agent out of it


class AgentRun(NamedTuple):
    """What the spawn step left: the supervised run, and what had to be put back."""

    run: proc.Spawned
    result_text: str | None  # the result file the agent wrote, if it wrote one
    gitfile_changed: list[str]  # ["worktree .git file"] when the agent rewrote it
    in_user_checkout: list[str]  # what the agent changed in the user's checkout
    streamed_tokens: int | None = None  # what its stream reported (None: not watched)
    streamed_estimated: bool = False  # streamed_tokens is an estimate (gemini, codex mid-run)


def prepare(job: Job, allow_dirty: bool) -> Guards | TaskOutcome:
    """Take the checkpoint and keep what the agent must not change (a worktree's `.git`
    file, an unconfined user checkout); a checkpoint that cannot be taken fails the
    attempt before anything runs."""
    git, sandbox = job.git, job.sandbox
    gitfile = _read_gitfile(git.root)
    # without Landlock, the user's checkout beside a plan's worktree is within an agent's
    # reach: its state is kept for the spawn and put back after (gsd.io.confine.userguard)
    user = _unconfined_user_checkout(git, sandbox)
    confined = sandbox is not None and sandbox.enabled and bool(landlock_abi())
    try:
        checkpoint = Checkpoints(git).create(
            job.plan.id, job.task.index, allow_dirty=allow_dirty, confined=confined
        )
    except GsdError as exc:
        return failed_before_spawn(job, error_type="checkpoint-failed", details=logged(exc))
    return Guards(checkpoint=checkpoint, gitfile=gitfile, user=user)


def failed_before_spawn(job: Job, *, error_type: str, details: str) -> TaskOutcome:
    """An attempt that failed before the agent ran: nothing changed, nothing to report."""
    return TaskOutcome.failed_early(
        job.plan.id,
        job.task.index,
        job.agent.name,
        job.attempt,
        error_type=error_type,
        details=details,
    )


def spawn_agent(job: Job, guards: Guards) -> AgentRun:
    """Run the agent, then put back at once what it must not have changed: a worktree's
    `.git` file and the user's checkout (when no sandbox kept the agent out of it)."""
    git, user = job.git, guards.user
    kept = userguard.take(user) if user is not None else None
    try:
        spawned, result_text, streamed, estimated = _launch(job)
        warn_survivors(spawned, f"{job.plan.id} task {job.task.index}")
        # before any git command: a worktree's `.git` file an agent rewrote would point
        # every command that follows at a repository of its choosing
        gitfile_changed = _restore_gitfile(git.root, guards.gitfile)
        in_user_checkout = userguard.put_back(user, kept) if user and kept else []
    finally:
        if user is not None and kept is not None:
            userguard.release(user, kept)
    return AgentRun(
        run=spawned,
        result_text=result_text,
        gitfile_changed=gitfile_changed,
        in_user_checkout=in_user_checkout,
        streamed_tokens=streamed,
        streamed_estimated=estimated,
    )


def _launch(job: Job) -> tuple[proc.Spawned, str | None, int | None, bool]:
    """Start the agent in `git.root` under the supervisor, in its sandbox, with a private
    temporary folder (TMPDIR) that also holds its result file; returns what became of it
    and the result file's text (a file the agent wrote: read without following links),
    and the tokens its stream reported when a budget watched it (and whether that
    figure is an estimate)."""
    git, plan, task, agent = job.git, job.plan, job.task, job.agent
    prompt_file = run_files(git.git_dir, plan.id, task.index)[0]
    if job.run_dir is not None:  # a reviewer's: the author's output stays as it was
        prompt_file = job.run_dir / "prompt.md"
    # in the git folder: no link followed; not synced: a crash ends the attempt, and the
    # next one writes its own prompt
    write_atomic(prompt_file, job.prompt, sync=False)
    extra = _write_runner_files(job, prompt_file.parent)
    with tempfile.TemporaryDirectory(prefix="gsd-task-") as tmp:
        tmpdir = Path(tmp)
        result_file = tmpdir / "result.json"
        env = _spawn_env(job, prompt_file, result_file, tmpdir, extra.env)
        confinement = None
        if job.sandbox is not None:
            if job.sandbox.enabled:
                make_state_folders(agent.runner, env)
            confinement = job.sandbox.confine(
                tier=agent.tier, runner=agent.runner, worktree=git.root, tmpdir=tmpdir, environ=env
            )
        stdout_path = prompt_file.parent / "stdout"
        watch = _budget_watch(job, stdout_path)
        with _private_home(job, env) as home:
            env.update(home)
            spawned = proc.supervise(
                [*job.dispatch.argv, *extra.argv, *_codex_argv(job, env)],
                cwd=git.root,
                env=env,
                stdin_path=prompt_file,
                stdout_path=stdout_path,
                stderr_path=prompt_file.parent / "stderr",
                timeout_s=job.dispatch.timeout_s,
                grace_s=job.dispatch.grace_s,
                registry=running_registry(git),
                cancel=job.cancel,
                confinement=confinement,
                watch=watch,
            )
        data = read_private(result_file, limit=ANY_SIZE)
    if watch is not None:
        watch()  # what it printed after the last look
    text = None if data is None else data.decode("utf-8", "replace")
    if watch is None:
        return spawned, text, None, False
    return spawned, text, watch.tokens, watch.estimated


def _spawn_env(
    job: Job, prompt_file: Path, result_file: Path, tmpdir: Path, runner_env: Mapping[str, str]
) -> dict[str, str]:
    """The agent's environment: the run's, gsd's variables (SPEC 5), its private TMPDIR
    and what its runner's files need."""
    git, plan = job.git, job.plan
    variables = runners.run_env(
        job.agent.name,
        repo=str(git.root),
        prompt_file=str(prompt_file),
        result_file=str(result_file),
        phase=plan.phase,
        plan=plan.id,
        task=job.task.index,
    )
    return {**job.environ, **variables, **private_tmp(tmpdir), **runner_env}


def _codex_argv(job: Job, env: Mapping[str, str]) -> list[str]:
    """What a codex spawn adds to its argv: the user's `gsd mcp` server made required."""
    return clihome.mcp_overrides(env) if job.agent.runner == "codex" else []


def _private_home(
    job: Job, env: Mapping[str, str]
) -> contextlib.AbstractContextManager[dict[str, str]]:
    """The runner's private home, when it needs one (gsd.io.confine.clihome): codex's holds gsd's
    policy as exec-policy rules; gemini's, for an agent with a turn limit or a project
    with gsd's hooks, its user settings with those added. None for the others."""
    name = f"{task_key(job.plan.id, job.task.index)}-{os.getpid()}"
    if job.agent.runner == "codex":
        rules = codex.exec_rules(with_extra(list(job.dispatch.policy_extra)))
        return clihome.codex_home(env, name, rules)
    if job.agent.runner == "gemini":
        hooks = gemini_hooks(job)
        if hooks or job.agent.max_turns is not None:
            return clihome.gemini_home(env, name, job.agent.max_turns, hooks)
    return contextlib.nullcontext({})


def _budget_watch(job: Job, stdout_path: Path) -> BudgetWatch | None:
    """A watch on the agent's streamed usage when its dispatch has an abort threshold and
    its runner streams usage (claude, gemini, codex)."""
    abort = job.dispatch.budget_abort
    if abort is None or job.agent.runner not in STREAMS_USAGE:
        return None
    return BudgetWatch(stdout_path, job.agent.runner, abort)


def _write_runner_files(job: Job, run_dir: Path) -> runners.RunnerFiles:
    """Write the files the runner reads (gemini's policy) into the spawn's
    run folder, which only gsd's user may write; the sandbox lets everyone read."""
    extra = runners.runner_files(
        job.agent,
        run_dir,
        policy=with_extra(list(job.dispatch.policy_extra)),
        worktree=job.git.root,
        subagents=job.dispatch.subagents,
    )
    for name, text in extra.files.items():
        path = run_dir / name
        path.unlink(missing_ok=True)  # never write through what an agent left there
        path.write_text(text, encoding="utf-8")
    return extra


def gemini_hooks(job: Job) -> dict[str, Any] | None:
    """gsd's gemini hooks, run by this gsd, when `gsd hooks install --gemini` put them in
    the project's `.gemini/settings.json` (the user's checkout; gemini itself ignores that
    file in a folder it did not trust at start). Only the fact that they are installed
    is read from the file: the commands are gsd's own, never a command written there."""
    root = job.sandbox.root if job.sandbox is not None else job.git.root
    try:
        settings, _indent = clisettings.load(root / clisettings.SETTINGS["gemini"])
    except GsdError:
        return None
    if not any(" hooks run gemini-" in hook for hook in clisettings.ours(settings)):
        return None
    return agenthooks.hook_groups("gemini", shlex.join([sys.executable, "-m", "gsd"]))


def private_tmp(folder: Path) -> dict[str, str]:
    """The variables that point programs at a temporary folder (the sandbox lets them
    write there, not in /tmp)."""
    return {"TMPDIR": str(folder), "TMP": str(folder), "TEMP": str(folder)}


def running_registry(git: Git) -> Path:
    """Where supervised groups are recorded: one folder for the main worktree and every
    linked one, so the run lock can reap whatever a killed run left anywhere."""
    return layout.running_dir(git.common_dir)


def warn_survivors(spawned: proc.Spawned, what: str) -> None:
    """Say what the program left running: ended (`leftovers`), or not even by SIGKILL."""
    if spawned.leftovers:
        sys.stderr.write(
            f"gsd: note: {what}: ended {plural(spawned.leftovers, 'process')} it left running\n"
        )
    if spawned.survivors:
        sys.stderr.write(
            f"gsd: warning: {what}: {plural(spawned.survivors, 'process')} of group {spawned.pid} "
            "still alive after SIGKILL (stuck in the kernel?); gsd stopped waiting for them\n"
        )


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
    nofollow.write_new(path, saved)  # no link put there meanwhile is written through
    return ["worktree .git file"]
