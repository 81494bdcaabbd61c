"""`gsd show` and `gsd waves`: each plan's view with the agent each task resolves to, a
phase's schedule, and what a task's Context Chain would carry (`gsd mcp`); records the
Click commands and `gsd mcp`'s tools both render, so they cannot drift apart."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gsd.core import layout
from gsd.core.ids import is_plan_id, task_key

if TYPE_CHECKING:
    from gsd.core.graph import PhaseGraph
    from gsd.core.models import Plan, Task
    from gsd.io.plans.project import Project


Resolver = Callable[["Plan", "Task"], tuple[str, "str | None"]]  # -> (agent, fallback reason)


@dataclass(frozen=True)
class TaskView:
    """A task as `gsd show` lists it; `runner` and `model` as written in the plan
    (they override the agent's, SPEC 0)."""

    index: int
    type: str
    name: str
    specialist: str | None
    specialist_form: str | None
    agent: str | None
    fallback: str | None
    runner: str | None
    model: str | None
    files: list[str]
    line: int

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class PlanView:
    """A plan as `gsd show` lists it; `archived` (the milestone) only for an archived plan."""

    archived: str | None
    id: str
    path: str
    phase: object
    plan: object
    type: object
    wave: int | None
    computed_wave: int | None
    depends_on: list[str]
    files_modified: list[str]
    autonomous: bool | None
    frontmatter: dict[str, object]
    tasks: list[TaskView]

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        if not self.archived:
            del data["archived"]
        return data


@dataclass(frozen=True)
class WaveView:
    wave: int
    plans: list[str]
    sequential_groups: list[list[str]]  # only the groups of more than one plan


@dataclass(frozen=True)
class WavesView:
    """A phase's schedule; `archived` (the milestone) only for an archived phase."""

    archived: str | None
    phase: str
    plans: int
    waves: list[WaveView]
    critical_path: list[str]
    cycles: list[list[str]]

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        if not self.archived:
            del data["archived"]
        return data


def task_view(task: Task, agent: str | None = None, fallback: str | None = None) -> TaskView:
    return TaskView(
        index=task.index,
        type=task.type,
        name=task.name,
        specialist=task.specialist,
        specialist_form=task.specialist_form,
        agent=agent,
        fallback=fallback,
        runner=task.runner,
        model=task.model,
        files=task.files,
        line=task.line,
    )


def plan_view(
    plan: Plan, graph: PhaseGraph | None = None, resolve: Resolver | None = None
) -> PlanView:
    fm = plan.frontmatter
    return PlanView(
        archived=layout.archived_milestone(plan.path),
        id=plan.id,
        path=plan.path,
        phase=fm.get("phase"),
        plan=fm.get("plan"),
        type=fm.get("type"),
        wave=plan.wave,
        computed_wave=graph.wave_of.get(plan.id) if graph else None,
        depends_on=plan.depends_on,
        files_modified=plan.files_modified,
        autonomous=plan.autonomous,
        frontmatter=fm,
        tasks=[task_view(t, *(resolve(plan, t) if resolve else (None, None))) for t in plan.tasks],
    )


def waves_view(phase: str, graph: PhaseGraph, milestone: str | None = None) -> WavesView:
    return WavesView(
        archived=milestone or None,
        phase=phase,
        plans=len(graph.plans),
        waves=[
            WaveView(
                wave=number,
                plans=wave,
                sequential_groups=[g for g in graph.sequential_groups(wave) if len(g) > 1],
            )
            for number, wave in enumerate(graph.waves, 1)
        ],
        critical_path=graph.critical_path,
        cycles=graph.cycles,
    )


@dataclass(frozen=True)
class EarlierTask:
    """A task before the one asked about, and what it would carry (`downstream_context`)."""

    task: int
    name: str
    state: str  # committed | answered | waiting for a person | not run
    downstream_context: str | None


@dataclass(frozen=True)
class Dependency:
    plan: str
    summary: str | None  # None: not done


@dataclass(frozen=True)
class ContextChain:
    """What a task's delegation prompt would carry in its Context Chain (`gsd mcp`)."""

    plan: str
    task: int
    earlier_tasks: list[EarlierTask]
    dependencies: list[Dependency]
    context_chain: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def here() -> Project:
    """The project the current directory is in."""
    from gsd.io.plans.project import Project, find_root

    return Project(find_root(Path.cwd()))


def plan_views(target: str) -> tuple[list[PlanView], list[str]]:
    """`gsd show TARGET`: each plan's view (a plan file, a plan id or a phase), and the
    warnings of broken agent files."""
    from gsd.io.plans.sources import relative_to_root

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

    return [plan_view(p, project.graph_of(p.path), resolve) for p in plans], warnings


def context_chain(plan_id: str, task_number: int) -> ContextChain:
    """What the delegation prompt of task `task_number` of plan `plan_id` would carry in
    its Context Chain if the task started now: each earlier task's Downstream Context
    (committed tasks' reports are not kept; an answered checkpoint carries its answer;
    a task not run yet has nothing to carry), each dependency's SUMMARY.md, and the
    section itself as `gsd.formats.prompt.context_chain` renders it."""
    from gsd.core.errors import InputError
    from gsd.formats import prompt
    from gsd.io.git.commits import committed_tasks
    from gsd.io.plans import approvals

    project = here()
    plan = project.find_plan(plan_id)
    numbers = [t.index for t in plan.tasks]
    if task_number not in numbers:
        listed = ", ".join(map(str, numbers)) or "none"
        raise InputError(f"plan {plan.id} has no task {task_number}", hint=f"its tasks: {listed}")
    committed = committed_tasks(project.root, plan_branches=True)  # reads, needs no Git
    earlier: list[tuple[int, str | None]] = []
    shown: list[EarlierTask] = []
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
            EarlierTask(task=task.index, name=task.name, state=state, downstream_context=text)
        )
    summaries = project.dependency_summaries(plan)
    plan_text = (project.root / plan.path).read_text(encoding="utf-8")
    context = prompt.PromptContext(
        earlier=earlier,
        summaries=summaries,
        repo=str(project.root),
        plan_text=plan_text,
        resumed=frozenset(resumed),
    )
    section = prompt.context_chain(context, prompt.Templates.load(project.root))
    return ContextChain(
        plan=plan.id,
        task=task_number,
        earlier_tasks=shown,
        dependencies=[Dependency(plan=dep, summary=text) for dep, text in summaries],
        context_chain=section + "\n",
    )
