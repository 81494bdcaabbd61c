"""The data behind the read-only commands, each with the warnings the command prints: the
Click commands and `gsd mcp`'s tools both call these, so they cannot drift apart."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gsd.core import layout
from gsd.core.ids import is_plan_id, task_key

if TYPE_CHECKING:
    from gsd.core.graph import PhaseGraph
    from gsd.core.models import Plan, Task
    from gsd.formats.errorlog import ErrorRecord
    from gsd.io.dispatch import TaskDispatch
    from gsd.io.phases import Phase
    from gsd.io.project import Project


def here() -> Project:
    """The project the current directory is in."""
    from gsd.io.project import Project, find_root

    return Project(find_root(Path.cwd()))


def plan_views(target: str) -> tuple[list[dict[str, Any]], list[str]]:
    """`gsd show TARGET`: each plan's view (a plan file, a plan id or a phase), and the
    warnings of broken agent files."""
    from gsd.io.sources import relative_to_root
    from gsd.output import views

    project = here()
    if os.path.isfile(target):
        paths = project.plans_under(relative_to_root(project.root, target))
        plans = [project.plan(p) for p in paths]
    elif is_plan_id(target):
        plans = [project.find_plan(target)]
    else:
        plans = project.phase_plans(project.phase(target))
    dispatcher, warnings = project.dispatcher()

    def resolve(plan: Plan, task: Task) -> tuple[str, str | None]:
        if task.is_checkpoint:
            return "(human)", None
        resolution = dispatcher.resolve(plan, task)
        return resolution.agent, resolution.fallback_reason

    return [views.plan_view(p, project.graph_of(p.path), resolve) for p in plans], warnings


def error_records(
    *,
    phase: str | None = None,
    plan_id: str | None = None,
    specialist: str | None = None,
    error_type: str | None = None,
    since: str | None = None,
) -> tuple[list[ErrorRecord], list[str]]:
    """`gsd errors`: the failed attempts the filters keep, and a warning per bad log line."""
    from gsd.core.ids import parse_phase_name
    from gsd.formats import errorlog
    from gsd.io.project import find_root

    root = find_root(Path.cwd())
    named = parse_phase_name(phase) if phase is not None else None
    events, records, warnings = errorlog.read_logs(root / layout.PLANNING)
    if phase is not None and (
        (named is not None and named.slug)  # `01-nope` is not phase 01
        or not errorlog.filter_records(records, phase=phase)  # a phase gone keeps its log
    ):
        from gsd.io.phases import resolve_phase

        resolve_phase(root / layout.PLANNING, phase)
    if plan_id is not None and not errorlog.filter_records(records, phase=phase, plan=plan_id):
        _known_plan(root, plan_id, phase)
    if error_type is None:  # a delegation past its warn budget: a warning, not a failure
        from gsd.commands.report import over_budget_warnings

        over = over_budget_warnings(e for e in events if _wanted(e, plan_id, specialist))
        warnings = [*warnings, *over]
    kept = errorlog.filter_records(
        records,
        phase=phase,
        plan=plan_id,
        specialist=specialist,
        error_type=error_type,
        since=errorlog.parse_since(since) if since else None,
    )
    return kept, warnings


def _known_plan(root: Path, plan_id: str, phase: str | None) -> None:
    """Refuse `gsd errors --plan` naming a plan no phase holds and no failure names, as
    every command refuses a plan that is not there; matched as `gsd errors` matches."""
    from gsd.core.errors import UsageError
    from gsd.core.ids import split_plan_id
    from gsd.core.words import did_you_mean
    from gsd.formats.errorlog import ErrorRecord, filter_records
    from gsd.io.project import Project

    ids = sorted(Project(root).all_plan_ids)
    plans = [
        ErrorRecord(phase=p, plan=n, task="", specialist="", error_type="unknown")
        for p, n in map(split_plan_id, ids)
    ]
    if filter_records(plans, phase=phase, plan=plan_id):
        return
    where = f" in phase {phase}" if phase is not None else ""
    raise UsageError(
        f"no plan {plan_id}{where} under {root / layout.PLANNING / layout.PHASES}, and no "
        "recorded failure names it",
        hint=did_you_mean(plan_id, ids) or "name a plan by its id, such as 01-02",
    )


def run_report(every_run: bool) -> tuple[dict[str, Any], list[str]]:
    """`gsd report`: the last run (or every run) built from the logs, and their warnings."""
    from gsd.commands import report
    from gsd.formats import execlog
    from gsd.io.project import find_root

    events, warnings = execlog.read_all(find_root(Path.cwd()) / layout.PLANNING)
    return report.build(events, last_run_only=not every_run), warnings


def phase_validation(project: Project, found_phase: Phase) -> tuple[str, list[str]]:
    """What a dry run says first: the phase's validation errors as `gsd validate` lists
    them ("" when none), and the warning that a live run would refuse the phase."""
    from gsd.core.words import plural
    from gsd.formats.diagnostics import listed_errors
    from gsd.io.validate import validate

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
    tasks = dispatcher.phase(graph, wave=wave, plan_id=plan_id)
    fallbacks = dispatcher.fallbacks(graph, tasks)
    missing = preflight.missing_programs(tasks, project.root, os.environ, fallbacks)
    if missing:
        message, hint = preflight.missing_message(missing)
        warn([f"{message}; a live run would refuse to start ({hint})"])
    warn(uncommitted_warning(project, graph, [*tasks, *fallbacks]))
    return with_sandbox(project, preflight.marked(tasks, missing))


def uncommitted_warning(
    project: Project, graph: PhaseGraph, tasks: list[TaskDispatch]
) -> list[str]:
    """The dry run's warning for what a live run refuses before its first spawn: a
    detached HEAD, a plan or agent program that is not committed (plans run in worktrees
    made from the last commit); none in place (`workflow.use_worktrees` false)."""
    from gsd.core.errors import GsdError
    from gsd.io.git import Git
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
    """Each task with what its agent may write when it runs (`gsd.io.sandbox.describe`)."""
    import tempfile

    from gsd.core.errors import InputError
    from gsd.io import limits, sandbox
    from gsd.io.git import Git

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


def context_chain(plan_id: str, task_number: int) -> dict[str, Any]:
    """What the delegation prompt of task `task_number` of plan `plan_id` would carry in
    its Context Chain if the task started now: each earlier task's Downstream Context
    (committed tasks' reports are not kept; an answered checkpoint carries its answer;
    a task not run yet has nothing to carry), each dependency's SUMMARY.md, and the
    section itself as `gsd.formats.prompt.context_chain` renders it."""
    from gsd.core.errors import InputError
    from gsd.formats import prompt
    from gsd.io import approvals
    from gsd.io.commits import committed_tasks
    from gsd.run.tasks import dependency_summaries

    project = here()
    plan = project.find_plan(plan_id)
    numbers = [t.index for t in plan.tasks]
    if task_number not in numbers:
        listed = ", ".join(map(str, numbers)) or "none"
        raise InputError(f"plan {plan.id} has no task {task_number}", hint=f"its tasks: {listed}")
    committed = committed_tasks(project.root, plan_branches=True)  # reads, needs no Git
    earlier: list[tuple[int, str | None]] = []
    shown: list[dict[str, Any]] = []
    resumed: set[int] = set()
    for task in plan.tasks[: numbers.index(task_number)]:
        text, state = None, "not run"
        if task_key(plan.id, task.index) in committed:
            state = "committed"
            resumed.add(task.index)
        elif task.is_checkpoint:
            answer = approvals.answer(project, plan.id, task, auto=False)
            state = "waiting for a person" if answer is None else "answered"
            text = None if answer is None else f"- Human checkpoint answered: {answer}"
        earlier.append((task.index, text))
        shown.append(
            {"task": task.index, "name": task.name, "state": state, "downstream_context": text}
        )
    summaries = dependency_summaries(project, plan)
    plan_text = (project.root / plan.path).read_text(encoding="utf-8")
    context = prompt.PromptContext(
        earlier=earlier,
        summaries=summaries,
        repo=str(project.root),
        plan_text=plan_text,
        resumed=frozenset(resumed),
    )
    section = prompt.context_chain(context, prompt.Templates.load(project.root))
    return {
        "plan": plan.id,
        "task": task_number,
        "earlier_tasks": shown,
        "dependencies": [{"plan": dep, "summary": text} for dep, text in summaries],
        "context_chain": section + "\n",
    }


def _wanted(event: dict[str, object], plan_id: str | None, specialist: str | None) -> bool:
    """Whether `gsd errors --plan/--specialist` keeps an event (a plan as `02` or `01-02`)."""
    plan = str(event.get("plan", ""))
    if plan_id is not None and plan != plan_id and not plan.endswith(f"-{plan_id}"):
        return False
    return specialist is None or event.get("agent") == specialist
