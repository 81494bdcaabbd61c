"""`gsd challenge PHASE` (issue 24): a read-only agent challenges a phase's plans before
they run, and gsd writes its Challenge Report next to them as `NN-CHALLENGE.md`,
uncommitted (the user reviews and commits it, as after `gsd sync`).

The agent runs as a reviewer does (`gsd.run.taskreview`): through `spawn_agent`, with
the read-only tier, under the supervisor and the sandbox, no terminal; here in a
throwaway worktree at HEAD (`gsd/NN-challenge`, removed after), under the run lock. Its
run is checked for changes as a reviewer's is (`taskreview.fingerprint`): an agent that
changed anything is an error, its changes put back, no report written; so is one that
crashed, timed out or answered no readable report.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from gsd.core import layout
from gsd.core.errors import EXIT_FINDINGS, GsdError, InputError, UsageError
from gsd.core.models import RUNNERS, Plan, Task
from gsd.core.specialists import EXECUTOR
from gsd.core.words import plural, some, suggested
from gsd.formats import challengereport as cr
from gsd.formats.agents import Agent
from gsd.formats.files import load_text, write_atomic
from gsd.formats.prompt import Templates
from gsd.io.dispatch import Dispatcher, TaskDispatch
from gsd.io.git.checkpoint import Checkpoints
from gsd.io.git.repo import Git
from gsd.io.git.worktree import Worktrees
from gsd.io.lock import RunLock
from gsd.io.plans.phases import Phase
from gsd.io.plans.project import Project
from gsd.io.process.signals import Interruption
from gsd.run import preflight
from gsd.run.execute import confined_hooks
from gsd.run.taskreview import answer, changed_between, fingerprint
from gsd.run.taskspawn import Guards, Job, prepare, running_registry, spawn_agent

DEFAULT_AGENT = "code-reviewer"  # gsd's bundled read-only reviewer
_TASK = Task(0, "auto", {}, 1, [])  # the one spawn of a challenge: task 0 of its scope


class ChallengeFailed(GsdError):
    """The challenge ran but gave no report (the agent crashed, timed out, changed a file
    or answered unreadably): exit 1, nothing written."""

    exit_code = EXIT_FINDINGS


class ChallengeOptions(NamedTuple):
    runner: str | None = None  # --runner
    agent: str | None = None  # --agent
    timeout: float | None = None  # --timeout


class Challenged(NamedTuple):
    """What `gsd challenge` did: the file it wrote (uncommitted), and what it holds."""

    path: Path
    report: cr.ChallengeReport
    agent: str
    runner: str
    plans: list[str]  # repo-relative paths of the plans challenged


class _Scope(Plan):
    """The phase as the job of one spawn: `NN-challenge`, task 0 (its run folder, its
    worktree's branch `gsd/NN-challenge`, its checkpoint tag)."""

    __slots__ = ("scope_id",)

    def __init__(self, path: str, scope_id: str) -> None:
        super().__init__(path)
        self.scope_id = scope_id

    @property
    def id(self) -> str:
        return self.scope_id


def challenge_phase(
    project: Project,
    phase: Phase,
    options: ChallengeOptions,
    environ: Mapping[str, str] = os.environ,
    say: Callable[[str], None] = lambda line: None,
) -> Challenged:
    """Run the phase's challenge and write `NN-CHALLENGE.md` (see the module)."""
    plans = [p for p in project.phase_plans(phase) if p.id]
    folder = phase.path.relative_to(project.root).as_posix()
    if not plans:
        raise InputError(
            f"{folder}: no plans to challenge", hint="write the phase's NN-MM-*-PLAN.md first"
        )
    scope = _Scope(f"{folder}/{cr.file_name(phase.number)}", f"{phase.number}-challenge")
    dispatcher, warnings = project.dispatcher(cli_timeout=options.timeout, environ=environ)
    for warning in warnings:
        say(f"warning: {warning}")
    agent, dispatch = challenger(dispatcher, scope, options)
    git = Git(project.root)
    with (
        Interruption() as stop,
        RunLock(git.common_dir, running_registry(git)),
        confined_hooks(project, git, environ),
    ):
        _keep_unsaved(git, f"{folder}/{cr.file_name(phase.number)}")
        head = _checked(project, git, [p.path for p in plans], dispatch, environ)
        worktrees = Worktrees(git, project.worktrees_folder(git.root, git.common_dir, environ))
        place, _ = worktrees.open(scope.id, head)
        try:
            say(f"challenge of {phase.name}: {agent.name} on {agent.runner}, read-only")
            paths = [p.path for p in plans]
            job = _job(project, phase, scope, place, (agent, dispatch), paths, environ)
            report = _spawn(job._replace(cancel=stop.event), stop.event)
        finally:
            worktrees.close(scope.id)
            worktrees.delete_branch(scope.id)
        stop.check("during the challenge")
        _keep_unsaved(git, f"{folder}/{cr.file_name(phase.number)}")
        return _written(project, phase, report, agent, [p.path for p in plans])


def _job(
    project: Project,
    phase: Phase,
    scope: Plan,
    place: Git,
    found: tuple[Agent, TaskDispatch],
    plans: list[str],
    environ: Mapping[str, str],
) -> Job:
    """The challenge's one spawn: its agent in the throwaway worktree `place`, its prompt
    (each plan as that worktree holds it: as committed), its run folder under the user's
    `.git/gsd/runs/` (kept for a look after)."""
    agent, dispatch = found
    texts = [(path, load_text(place.root / path)) for path in plans]
    templates = Templates.load(project.root)
    prompt = cr.challenge_prompt(
        agent, phase.name, texts, repo=str(place.root), templates=templates
    )
    return Job(
        git=place,
        plan=scope,
        task=_TASK,
        agent=agent,
        dispatch=dispatch,
        prompt=prompt,
        attempt=1,
        environ=environ,
        cancel=None,
        # in a worktree whatever `workflow.use_worktrees` says: the user's checkout is
        # out of the agent's reach, or watched and put back where no sandbox keeps it out
        sandbox=project.sandbox()._replace(in_place=False),
        run_dir=layout.run_dir(Git(project.root).git_dir, scope.id, 0),
    )


def _keep_unsaved(git: Git, path: str) -> None:
    """Refuse to write over an `NN-CHALLENGE.md` git does not hold as it is (an earlier
    challenge's, or one the user edited, not committed): it may be the user's work."""
    status = git.status([path])
    if path in status.untracked or path in status.changed:
        raise UsageError(
            f"{path} has changes that are not committed; nothing was run",
            hint="commit it, or delete it, and run again",
        )


def _checked(
    project: Project, git: Git, plans: list[str], dispatch: TaskDispatch, environ: Mapping[str, str]
) -> str:
    """HEAD, once what the throwaway worktree must hold is committed there (the plans, a
    command agent's program) and the agent's program is installed; else one line."""
    read = preflight.files_read(project.root, git.root, plans, [dispatch])
    preflight.check_committed(git, read)
    preflight.check_runners([dispatch], project.root, environ, [])
    head = git.head()
    if head is None:
        raise InputError(f"{git.root}: no commit yet", hint="commit the plans first")
    return head


def challenger(
    dispatcher: Dispatcher, scope: Plan, options: ChallengeOptions
) -> tuple[Agent, TaskDispatch]:
    """The challenge's agent, read-only, and how it runs: `--agent`, else config's
    `review.agent`, else gsd's bundled `code-reviewer` (else gsd-executor); on `--runner`,
    else config's `review.runner`, else the agent's own."""
    runner = options.runner
    if runner is not None and runner not in RUNNERS:
        raise UsageError(
            f"--runner {runner!r} is not a runner" + suggested(runner, RUNNERS),
            hint=f"name one of {', '.join(RUNNERS)}",
        )
    review = dispatcher.config.review
    if options.agent:
        named = (options.agent, "--agent")
    elif review.agent:
        named = (review.agent, f"{layout.CONFIG_FILE}: review.agent")
    else:
        default = DEFAULT_AGENT if DEFAULT_AGENT in dispatcher.agents else EXECUTOR
        named = (default, f"gsd's default challenger {default}")
    # no author whose runner to avoid: the agent's own runner unless one is named
    nobody = TaskDispatch(
        wave=0,
        plan=scope.id,
        task=0,
        name="challenge",
        type="auto",
        specialist=None,
        specialist_form=None,
        agent="",
        fallback_reason=None,
        tier=None,
        runner=None,
        model=None,
        argv=[],
        timeout_s=0.0,
        timeout_source="",
        grace_s=0.0,
    )
    found = dispatcher.read_only(0, scope, _TASK, nobody, named, runner or review.runner)
    if isinstance(found, str):
        raise InputError(f"{found}; nothing was run")
    return found


def _spawn(job: Job, cancel: threading.Event) -> cr.ChallengeReport:
    """The agent run in the throwaway worktree from a checkpoint, which is rolled back when
    the agent changed anything (or gsd stops midway) and deleted otherwise."""
    guards = prepare(job, allow_dirty=False)
    if not isinstance(guards, Guards):
        raise ChallengeFailed(f"the challenge could not start: {guards.details}")
    place, checkpoint = job.git, guards.checkpoint
    who = f"{job.agent.name} ({job.agent.runner})"
    put_back = True
    try:
        before = fingerprint(place, checkpoint)
        spawn = spawn_agent(job, guards)
        changed = changed_between(before, fingerprint(place, checkpoint))
        changed += spawn.gitfile_changed + spawn.in_user_checkout
        if changed:
            raise ChallengeFailed(
                f"the challenge agent {who} changed {some(changed)}, read-only as it runs: "
                "put back, no report written",
                hint="check the agent's tools and tier; its output is in " + str(job.run_dir or ""),
            )
        put_back = cancel.is_set()
        if put_back:
            return cr.ChallengeReport()  # stopped: the caller raises Interrupted
        report = answer(
            job.agent, spawn.run, spawn.result_text, job.dispatch.timeout_s, cr.parse_challenge
        )
        if isinstance(report, str):
            raise ChallengeFailed(
                f"the challenge agent {who} gave no Challenge Report: {report}; nothing written",
                hint=f"its output is in {job.run_dir}",
            )
        return report
    finally:
        if put_back:
            Checkpoints(place).rollback(checkpoint)
        else:
            Checkpoints(place).delete(checkpoint)


def _written(
    project: Project, phase: Phase, report: cr.ChallengeReport, agent: Agent, plans: list[str]
) -> Challenged:
    """`NN-CHALLENGE.md` written next to the plans (never committed)."""
    path = phase.path / cr.file_name(phase.number)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = cr.render_file(
        report, phase=phase.name, agent=agent.name, runner=agent.runner, when=when, plans=plans
    )
    write_atomic(path, text)
    return Challenged(path=path, report=report, agent=agent.name, runner=agent.runner, plans=plans)


def summary_line(done: Challenged, root: Path) -> str:
    """What the command says last: the file, its items, and that it is not committed."""
    rel = done.path.relative_to(root).as_posix()
    return (
        f"wrote {rel} ({plural(done.report.total, 'item')}); not committed: review it, "
        f"then `git add {rel} && git commit`"
    )
