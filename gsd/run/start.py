"""A run's start, before its first spawn (SPEC 7 steps 1 and 2).

What a killed run left open is rolled back, the phase validated, the plans asked for
found ready, and what must hold before an agent starts checked.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gsd.core.errors import GsdError, InputError
from gsd.core.graph import PhaseGraph
from gsd.core.words import plural
from gsd.formats.diagnostics import listed_errors
from gsd.io.confine import sandbox
from gsd.io.git import salvage
from gsd.io.git.recovery import OpenCheckpoints
from gsd.io.git.repo import Git
from gsd.io.git.worktree import Worktrees
from gsd.io.live import Console
from gsd.io.plans import summaries
from gsd.io.plans.phases import Phase
from gsd.io.plans.project import Project
from gsd.io.plans.validate import validate
from gsd.run import preflight, taskgate, taskreview
from gsd.run.context import RunOptions
from gsd.run.phaserun import PhaseRun


def recover(git: Git, folder: Path, say: Callable[[str], None]) -> Worktrees:
    """Roll back what a killed run left open, tidy the plan worktrees; returns them
    (`folder`: where this run puts them, `Project.worktrees_folder`)."""
    # A run killed during a spawn left a checkpoint open. In the user's checkout (the
    # in-place opt-in) nothing is reset: what changed since may be the user's, and a
    # one-line error says what to do; plan worktrees are gsd's and are rolled back.
    recovery = OpenCheckpoints(git).recover(owned=False)
    for tag in recovery.rolled_back:
        say(f"rolled back {tag}, left open by an interrupted run")
    for line in recovery.warnings:
        say(f"warning: {line}")
    worktrees = Worktrees(git, folder)
    for line in worktrees.tidy():
        say(line)
    return worktrees


def prune_salvage(project: Project, git: Git, say: Callable[[str], None]) -> None:
    """Delete the salvage refs older than config `salvage.keep_days` (none when unset; a
    config.json that does not load is validation's to report, not this step's)."""
    from datetime import timedelta

    try:
        days = project.config.salvage.keep_days
    except GsdError:
        return
    if days is None:
        return
    pruned = salvage.prune(git, timedelta(days=days))
    if pruned:
        say(f"deleted {plural(len(pruned), 'salvage ref')} older than {days:g} days")


def validated_graph(
    project: Project, phase: Phase, options: RunOptions, console: Console
) -> PhaseGraph:
    """The phase's plan graph, once the phase validates and the plan or wave asked for
    is ready to run; a validation error stops the run before anything starts."""
    folder = phase.path.relative_to(project.root).as_posix()
    report = validate(project, [folder])
    if report.errors:
        console.stream.write(listed_errors(report))  # what it refuses on, first
        raise GsdError(
            f"{folder} has {plural(report.errors, 'validation error')}; nothing was run",
            hint=f"fix them and run again; `gsd validate --phase {phase.number}` lists them all",
        )
    graph = project.phase_graph(phase)
    if options.only_plan is not None:
        _check_plan_ready(project, phase, graph, options.only_plan, alone=True)
    if options.only_wave is not None:
        if not 1 <= options.only_wave <= len(graph.waves):
            raise InputError(
                f"{phase.name} has {plural(len(graph.waves), 'wave')}; no wave {options.only_wave}"
            )
        for plan_id in graph.waves[options.only_wave - 1]:
            _check_plan_ready(project, phase, graph, plan_id, alone=False)
    return graph


def check_before_spawning(run: PhaseRun) -> None:
    """What must hold before the first spawn: one line and exit 2, no agent started;
    a run without a sandbox is warned about."""
    git, options, say = run.repo.git, run.options, run.effects.console.say
    preflight.check_tree(git, in_place=run.policy.in_place, allow_dirty=options.allow_dirty)
    preflight.check_index_lock(git)
    preflight.check_identity(git)
    spawned = run.to_spawn()
    fallbacks = run.read.dispatcher.fallbacks(run.read.graph, spawned)
    judges = [
        *taskreview.reviewers(run.read.dispatcher, run.read.graph, spawned),
        *taskgate.approvers(run.read.dispatcher, run.read.graph, spawned),
    ]
    spawned = [*spawned, *judges]
    if not run.policy.in_place:  # in place, agents read the checkout as it is
        plans = [run.read.graph.plans[p].path for p in dict.fromkeys(d.plan for d in spawned)]
        read = preflight.files_read(run.read.project.root, git.root, plans, [*spawned, *fallbacks])
        preflight.check_committed(git, read)
    preflight.check_runners(spawned, run.read.project.root, run.read.environ, fallbacks)
    if not run.read.sandbox.enabled:
        say("warning: sandbox disabled in config.json: agents are held by gsd's git checks only")
    elif sandbox.landlock_abi() == 0:
        say(
            f"warning: no sandbox: {sandbox.unavailable_reason()}; agents are held by gsd's "
            "git checks only"
        )


def _check_plan_ready(
    project: Project, phase: Phase, graph: PhaseGraph, plan_id: str, *, alone: bool
) -> None:
    """A plan runs once what it waits for is done (its SUMMARY.md is there): every plan
    it depends on, in whichever phase, and, when it runs `alone` (`execute-plan`), the
    plans before it in its overlap group, which modify the same files and run first."""
    plan = graph.plans.get(plan_id)
    if plan is None:
        known = ", ".join(graph.plans) or "none"
        raise GsdError(f"no plan {plan_id} in {phase.name} (plans: {known})")
    waiting = [d for d in dict.fromkeys(plan.depends_on) if project.summary_of(d) is None]
    if waiting:
        raise GsdError(
            f"plan {plan_id} depends on {', '.join(waiting)}, not done yet",
            hint=f"run those first, or `gsd execute-phase {phase.number}`",
        )
    if not alone:
        return
    before = _group_before(graph, plan_id)
    first = next((p for p in before if not summaries.exists(phase.path, p)), None)
    if first is not None:
        shared = sorted(set(graph.plans[first].files_modified) & set(plan.files_modified))
        raise GsdError(
            f"plan {plan_id} waits for {first}, not done yet: it runs after {first} in "
            f"their overlap group (both modify {', '.join(shared[:3]) or 'the same files'})",
            hint=f"run {first} first: `gsd execute-plan {first}`",
        )


def _group_before(graph: PhaseGraph, plan_id: str) -> list[str]:
    """The plans before `plan_id` in its wave's overlap group (GSD044), in order."""
    wave = graph.wave_of.get(plan_id)
    if wave is None:
        return []
    for group in graph.sequential_groups(graph.waves[wave - 1]):
        if plan_id in group:
            return group[: group.index(plan_id)]
    return []
