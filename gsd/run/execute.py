"""`gsd execute-phase N`: SPEC section 7's steps, in order, over the modules below them.

The start (recovery, validation, the checks before a spawn) is `gsd.run.start`; one
wave, its plans side by side in worktrees, `gsd.run.waves`; one plan, `gsd.run.plans`;
its tasks and their retry ladder, `gsd.run.tasks`; one task, `gsd.run.taskrun`; the
merge back, `gsd.run.merge`; the books (logs, STATE.md, ROADMAP.md), `gsd.run.bookkeeping`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from gsd.core.errors import EXIT_OK
from gsd.core.verdict.outcomes import TaskOutcome
from gsd.formats import prompt
from gsd.io.git.repo import Git
from gsd.io.live import Console
from gsd.io.lock import RunLock
from gsd.io.plans import summaries
from gsd.io.plans.phases import Phase
from gsd.io.plans.project import Project
from gsd.io.process.signals import Interruption
from gsd.run.context import RunInputs, RunOptions, RunRepo
from gsd.run.phaserun import PhaseRun
from gsd.run.start import check_before_spawning, prune_salvage, recover, validated_graph
from gsd.run.taskspawn import running_registry
from gsd.run.waves import run_wave


class RunResult(NamedTuple):
    exit_code: int
    outcomes: list[TaskOutcome]
    message: str
    plans: dict[str, str] | None = None  # plan id -> how it ended in this run, in order


def execute_phase(
    project: Project,
    phase: Phase,
    options: RunOptions,
    environ: Mapping[str, str] = os.environ,
    console: Console | None = None,
) -> RunResult:
    git = Git(project.root)
    console = console or Console()
    try:
        # 1. one live run per repository (every worktree of it); a dead run's lock and
        # processes are taken over. SIGINT, SIGTERM and SIGHUP from here on end the
        # agents, roll back, then stop.
        with (
            Interruption() as stop,
            RunLock(git.common_dir, running_registry(git)),
            confined_hooks(project, git, environ),
        ):
            folder = project.worktrees_folder(git.root, git.common_dir, environ)
            worktrees = recover(git, folder, console.say)
            prune_salvage(project, git, console.say)
            read = _read(project, phase, options, environ, console)
            repo = RunRepo.open(git, worktrees)
            return _execute(PhaseRun.start(options, read, repo, console, stop))
    finally:
        console.close()


def confined_hooks(
    project: Project, git: Git, environ: Mapping[str, str]
) -> contextlib.AbstractContextManager[None]:
    """The user's git hooks run in the agents' sandbox for the whole run (every commit,
    merge and checkout gsd makes: their trees hold what agents wrote); read before any
    git command of the run, so no agent can point them elsewhere. A config.json that
    does not load keeps the sandbox on here (validation says what is wrong with it)."""
    from gsd.core.errors import GsdError
    from gsd.io.confine import sandbox
    from gsd.io.git import hookjail

    try:
        settings = project.sandbox()
    except GsdError:
        settings = sandbox.Settings(True, (), project.root, False)
    configured = git.out("config", "--get", "core.hooksPath", ok=(0, 1))
    home = Path(environ.get("HOME") or Path.home())
    hooks_path = hookjail.user_hooks_path(configured, git.common_dir, home)
    return hookjail.confined(settings, hooks_path, environ)


def _read(
    project: Project,
    phase: Phase,
    options: RunOptions,
    environ: Mapping[str, str],
    console: Console,
) -> RunInputs:
    """2. config, roster, plans (a run refuses to start on validation errors), then the
    agents each task is dispatched to (the roster's warnings said), the templates."""
    graph = validated_graph(project, phase, options, console)
    dispatcher, warnings = project.dispatcher(cli_timeout=options.timeout, environ=environ)
    for warning in warnings:
        console.say(f"warning: {warning}")
    return RunInputs(
        project=project,
        phase=phase,
        graph=graph,
        dispatcher=dispatcher,
        templates=prompt.Templates.load(project.root),
        sandbox=project.sandbox(),
        environ=environ,
    )


def _execute(run: PhaseRun) -> RunResult:
    """SPEC 7's run once the lock is held and the run has read what it needs: the
    checks, the waves, the books."""
    check_before_spawning(run)
    run.effects.stop.check("before the run started")
    run.effects.journal.event("run-start", phase=run.read.phase.name)
    for number, wave in enumerate(run.read.graph.waves, 1):
        # 4. waves in order
        if run.options.only_wave not in (None, number):
            continue
        stopped = _run_wave(run, number, wave)
        if stopped is not None:
            return stopped
    return _finish(run)


def _run_wave(run: PhaseRun, number: int, wave: list[str]) -> RunResult | None:
    """One wave's plans not done yet (3. a SUMMARY.md says done); the run's result when
    the wave stopped it (a failure or a pause), else None."""
    say, phase, graph = run.effects.console.say, run.read.phase, run.read.graph
    pending = []
    for plan_id in run.pending(wave):
        if summaries.exists(phase.path, plan_id):  # 3. what is already done
            say(f"plan {plan_id}: done (SUMMARY.md exists), skipped")
            run.ended[plan_id] = "done before"
            continue
        pending.append(graph.plans[plan_id])
    stopped = run_wave(run, number, pending) if pending else None
    if run.effects.stop.requested:
        run.interrupted(f"in wave {number}")
    if stopped is None:
        return None
    code, message, end = stopped
    run.effects.journal.event("run-end", status="stopped")
    with run.effects.books.looking():
        run.effects.books.derive()  # the failure or pause is in the logs now: a blocker
        run.effects.books.commit(f"docs({end.plan.id}): run stopped")
    return RunResult(
        exit_code=code, outcomes=run.sorted_outcomes(), message=message, plans=run.ended
    )


def _finish(run: PhaseRun) -> RunResult:
    """The run's end once every wave is through: the books derived and committed, or,
    when nothing happened at all, the journal discarded."""
    options, phase = run.options, run.read.phase
    # `execute-plan` ran one plan: what it says and records is about that plan
    what = f"plan {options.only_plan}" if options.only_plan else f"phase {phase.name}"
    if not run.outcomes and set(run.ended.values()) <= {"done before"}:  # nothing happened
        run.effects.journal.discard()
        return RunResult(
            exit_code=EXIT_OK,
            outcomes=run.outcomes,
            message=f"{what}: already complete",
            plans=run.ended,
        )
    run.effects.journal.event("run-end", status="complete")
    scope = options.only_plan or phase.number
    with run.effects.books.looking():
        run.effects.books.derive()
        run.effects.books.commit(f"docs({scope}): {what.split()[0]} run complete")
    return RunResult(
        exit_code=EXIT_OK,
        outcomes=run.sorted_outcomes(),
        message=f"{what} complete",
        plans=run.ended,
    )
