"""`gsd execute-phase --dry-run`: the phase's validation, then every task's dispatch with
its sandbox and limits, and the warnings for what a live run would refuse."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gsd.core import layout
from gsd.formats.gatesettings import HUMAN

if TYPE_CHECKING:
    from gsd.core.estimate import PhaseEstimate
    from gsd.core.graph import PhaseGraph
    from gsd.core.models import Plan
    from gsd.io.dispatch import Dispatcher, TaskDispatch
    from gsd.io.plans.phases import Phase
    from gsd.io.plans.project import Project


def phase_validation(project: Project, found_phase: Phase) -> tuple[str, list[str]]:
    """What a dry run says first: the phase's validation errors as `gsd validate` lists
    them ("" when none), and the warning that a live run would refuse the phase."""
    from gsd.core.words import plural
    from gsd.formats.diagnostics import listed_errors
    from gsd.io.plans.validate import validate

    folder = found_phase.path.relative_to(project.root).as_posix()
    report = validate(project, [folder])
    if not report.errors:
        return "", []
    return listed_errors(report), [
        f"{plural(report.errors, 'validation error')} in {folder}; a live run would "
        "refuse this phase"
    ]


def dry_run_tasks(
    project: Project,
    found_phase: Phase,
    warn: Callable[[list[str]], None],
    *,
    wave: int | None = None,
    plan_id: str | None = None,
    timeout: float | None = None,
) -> list[TaskDispatch]:
    """`execute-phase --dry-run`: every task's dispatch with its sandbox, the warnings of
    broken agent files handed to `warn`; a runner program that is missing (the fallback
    agent's too) is a warning and a note on each task that needs it: the live run
    refuses to start, the dry run shows the whole schedule all the same."""
    from gsd.run import preflight

    dispatcher, warnings = project.dispatcher(cli_timeout=timeout)
    warn(warnings)
    graph = project.phase_graph(found_phase)
    tasks, reviewers = with_reviewers(
        dispatcher, graph, dispatcher.phase(graph, wave=wave, plan_id=plan_id), warn
    )
    fallbacks = dispatcher.fallbacks(graph, tasks)
    missing = preflight.missing_programs([*tasks, *reviewers], project.root, os.environ, fallbacks)
    if missing:
        message, hint = preflight.missing_message(missing)
        warn([f"{message}; a live run would refuse to start ({hint})"])
    warn(uncommitted_warning(project, graph, [*tasks, *reviewers, *fallbacks]))
    return with_sandbox(project, preflight.marked(tasks, missing))


def with_reviewers(
    dispatcher: Dispatcher,
    graph: PhaseGraph,
    tasks: list[TaskDispatch],
    warn: Callable[[list[str]], None],
) -> tuple[list[TaskDispatch], list[TaskDispatch]]:
    """Each task with who reviews it (the review gate), and the reviewers' own dispatches;
    a reviewer that cannot run is a warning: the live run refuses to start."""
    shown, reviewers = [], []
    for task in tasks:
        plan = graph.plans[task.plan]
        found = None
        if task.argv:  # a person answers a checkpoint: nothing to review
            own = next(t for t in plan.tasks if t.index == task.task)
            found = dispatcher.reviewer(task.wave, plan, own, task)
        if isinstance(found, str):
            warn([f"{found}; a live run would refuse to start"])
        elif found is not None:
            reviewers.append(found[1])
            task = task._replace(review=f"{found[0].name} on {found[0].runner}, read-only")
        shown.append(task._replace(plan_first=plan_first(dispatcher, plan, task)))
    return shown, reviewers


def plan_first(dispatcher: Dispatcher, plan: Plan, task: TaskDispatch) -> str:
    """Who approves the task's proposal when it is gated plan-first ("": not gated)."""
    from gsd.run.taskgate import task_gated

    own = next((t for t in plan.tasks if t.index == task.task), None)
    gates = dispatcher.config.gates
    if own is None or not task_gated(dispatcher, plan, own, task.agent):
        return ""
    if gates.approver == HUMAN:
        return f"proposes read-only; a person approves (gsd approve {plan.id} --task {task.task})"
    return f"proposes read-only; {gates.approver} approves, read-only"


def uncommitted_warning(
    project: Project, graph: PhaseGraph, tasks: list[TaskDispatch]
) -> list[str]:
    """The dry run's warning for what a live run refuses before its first spawn: a
    detached HEAD, a plan or agent program that is not committed (plans run in worktrees
    made from the last commit); none in place (`workflow.use_worktrees` false)."""
    from gsd.core.errors import GsdError
    from gsd.io.git.repo import Git
    from gsd.run import preflight

    try:
        git = Git(project.root)
        if not project.config.workflow.use_worktrees:
            return []
        head = git.status()
    except GsdError:
        return []  # no repository or no usable config: the live run says so
    detached = preflight.detached_message(git, head)
    if detached is not None:
        return [f"{detached[0]}; a live run would refuse to start ({detached[1]})"]
    plans = [graph.plans[p].path for p in dict.fromkeys(t.plan for t in tasks)]
    found = preflight.uncommitted(git, preflight.files_read(project.root, git.root, plans, tasks))
    if not found:
        return []
    message, hint = preflight.committed_message(found)
    return [f"{message}; a live run would refuse to start ({hint})"]


def with_sandbox(project: Project, tasks: list[TaskDispatch]) -> list[TaskDispatch]:
    """Each task with what its agent may write when it runs (`gsd.io.confine.sandbox.describe`)."""
    import tempfile

    from gsd.core.errors import InputError
    from gsd.io.confine import limits, sandbox
    from gsd.io.git.repo import Git

    settings = project.sandbox()
    bounds = limits.describe(settings.limits or limits.Limits(None, None))
    tmpdir = Path(tempfile.gettempdir()) / "gsd-task-XXXXXX"
    try:  # one folder per repository, whichever of its worktrees this is
        git = Git(project.root)
        root, common = git.root, git.common_dir
    except InputError:  # not a repository (yet): as if `git init` made one here
        root, common = project.root, project.root / layout.GIT
    worktrees = project.worktrees_folder(root, common, os.environ)
    shown = []
    for task in tasks:
        if task.tier is None or task.runner is None:  # a person answers it: no agent
            shown.append(task)
            continue
        place = project.root
        if not settings.in_place:  # where worktree.Worktrees puts the plan's worktree
            place = layout.plan_worktree(worktrees, task.plan)
        confined = settings.confine(
            tier=task.tier, runner=task.runner, worktree=place, tmpdir=tmpdir, environ=os.environ
        )
        shown.append(task._replace(sandbox=sandbox.describe(confined), limits=bounds))
    return shown


def over_budget(
    project: Project, total: PhaseEstimate, usd: float | None, tokens: int | None
) -> list[str]:
    """The dry run's warning when the phase's estimate is past the run's budget
    (`--budget-usd`/`--budget-tokens`, else config.json `budget`): the live run would
    stop before its end."""
    from gsd.core.errors import GsdError
    from gsd.run.runbudget import decide

    try:
        budget = decide(project.config, usd, tokens)
    except GsdError:
        return []  # config.json does not load: the live run says why
    past = []
    if budget.usd is not None and total.cost_usd is not None and total.cost_usd > budget.usd:
        past.append(
            f"${total.cost_usd:,.2f}, past the budget of ${budget.usd:,.2f} ({budget.usd_source})"
        )
    if budget.tokens is not None and total.tokens is not None and total.tokens > budget.tokens:
        past.append(
            f"{round(total.tokens):,} tokens, past the budget of {budget.tokens:,} "
            f"({budget.tokens_source})"
        )
    return [f"the phase's estimate is {p}: a live run would stop before its end" for p in past]
