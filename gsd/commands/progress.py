"""`gsd status`: where each phase and plan stands, from SUMMARY files, commits and STATE.md."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gsd.core import layout
from gsd.core.ids import parse_phase_name, phase_key, same_plan, task_key
from gsd.formats.files import load_text
from gsd.formats.planning import state
from gsd.io.git.commits import committed_tasks
from gsd.io.plans import summaries
from gsd.io.plans.phases import Phase
from gsd.io.plans.project import Project


@dataclass(frozen=True)
class PlanStatus:
    """A plan's status (done, paused, failed, in progress, pending) and its task commits;
    `done_outside_gsd`: a SUMMARY.md and no Gsd-Task commit (upstream GSD's or by hand)."""

    plan: str
    wave: int | None
    status: str
    tasks: int
    committed_tasks: list[int]
    done_outside_gsd: bool


@dataclass(frozen=True)
class PhaseStatus:
    """A phase's plans; `archived`: its milestone, only for an archived phase."""

    phase: str
    archived: str | None
    done: int
    plans: list[PlanStatus]

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        if self.archived is None:
            del data["archived"]
        return data


@dataclass(frozen=True)
class Computed:
    """What gsd computes: the current phase's number and the percentages done."""

    phase: str | None
    phase_percent: int | None
    project_percent: int | None


@dataclass(frozen=True)
class Position:
    """STATE.md's current position (`recorded`), gsd's, and each disagreement in words."""

    recorded: dict[str, str]
    computed: Computed
    disagreements: list[str]


@dataclass(frozen=True)
class ProjectStatus:
    """`gsd status`'s data; `position` only when STATE.md records one."""

    phases: list[PhaseStatus]
    blockers: list[str]
    position: Position | None

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "phases": [p.to_json() for p in self.phases],
            "blockers": self.blockers,
        }
        if self.position is not None:
            data["position"] = asdict(self.position)
        return data


def project_status(project: Project) -> ProjectStatus:
    """Per phase (archived milestones' after the current ones): each plan's status (done,
    paused, failed, in progress, pending) and committed tasks; the open blockers of
    STATE.md; and STATE.md's current position beside what gsd computes."""
    committed = committed_tasks(project.root, plan_branches=True)  # {} without git
    state_path = project.planning / layout.STATE_FILE
    text = load_text(state_path) if state_path.exists() else ""
    failures = state.blocker_plans(text)  # gsd's own bullets, not people's notes
    phases = []
    for phase in project.phases() + project.archived_phases():
        plans = _plans(project, phase, committed, failures)
        phases.append(
            PhaseStatus(
                phase=phase.name,
                archived=phase.milestone,
                done=sum(p.status == "done" for p in plans),
                plans=plans,
            )
        )
    recorded = state.position(text)
    position = None
    if recorded:
        current = [p for p in phases if p.archived is None]
        # a project between milestones has only archived phases: STATE.md speaks of those
        position = compare_position(recorded, current or phases)
    return ProjectStatus(phases=phases, blockers=state.blockers(text), position=position)


def _plans(
    project: Project, phase: Phase, committed: dict[str, str], failures: list[tuple[str, str]]
) -> list[PlanStatus]:
    graph = project.phase_graph(phase)
    plans = []
    for plan_id, plan in graph.plans.items():
        done_tasks = [t.index for t in plan.tasks if task_key(plan_id, t.index) in committed]
        mine = [kind for tag, kind in failures if same_plan(tag, plan_id)]
        if summaries.exists(phase.path, plan_id):
            status = "done"
        elif "checkpoint-paused" in mine:
            status = "paused"
        elif mine:
            status = "failed"
        elif done_tasks:
            status = "in progress"
        else:
            status = "pending"
        plans.append(
            PlanStatus(
                plan=plan_id,
                wave=graph.wave_of.get(plan_id),
                status=status,
                tasks=len(plan.tasks),
                committed_tasks=done_tasks,
                done_outside_gsd=status == "done" and not done_tasks,
            )
        )
    return plans


def compare_position(recorded: dict[str, str], phases: list[PhaseStatus]) -> Position:
    """STATE.md's current position (`recorded`) beside what gsd computes from the current
    `phases`, and each disagreement in words.

    gsd's current phase is the first one not done (the last when all are); its progress
    is that phase's plans done, as `gsd sync` writes it. A STATE.md written by GSD itself
    counts the whole project's plans, so either percentage agrees.
    """
    current = next((p for p in phases if p.done < len(p.plans)), None)
    current = current or (phases[-1] if phases else None)
    total = sum(len(p.plans) for p in phases)
    computed = Computed(
        phase=_number(current.phase) if current else None,
        phase_percent=_percent(current.done, len(current.plans)) if current else None,
        project_percent=_percent(sum(p.done for p in phases), total),
    )
    disagreements = []
    said = recorded.get("phase", "").split()
    said_key = phase_key(said[0]) if said else None
    if said_key is not None and computed.phase and said_key != phase_key(computed.phase):
        disagreements.append(
            f"STATE.md says phase {said[0]}, gsd finds phase {computed.phase} current"
        )
    percent = state.position_percent(recorded.get("progress", ""))
    mine = {p for p in (computed.phase_percent, computed.project_percent) if p is not None}
    if percent is not None and mine and percent not in mine:
        shown = " / ".join(f"{p}%" for p in sorted(mine))
        disagreements.append(f"STATE.md says {percent}% done, gsd computes {shown}")
    return Position(recorded=recorded, computed=computed, disagreements=disagreements)


def _number(name: str) -> str:
    parsed = parse_phase_name(name)
    return parsed.number if parsed else name


def _percent(done: int, total: int) -> int | None:
    return state.percent_of(done / total) if total else None
