"""Cost known before a run (issue 25): each task's estimate from the history of its agent
on its runner (`gsd.core.estimate`, read by `gsd.io.plans.history`), for `execute-phase
--dry-run` (and any caller: `phase_estimate` needs only the project and the phase), and
`gsd report`'s estimate against what each task of a run used."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gsd.core import estimate as figures
from gsd.core.estimate import Estimate, PhaseEstimate, Sample

if TYPE_CHECKING:
    from gsd.formats.execlog import LogEvent
    from gsd.io.dispatch import TaskDispatch
    from gsd.io.plans.phases import Phase
    from gsd.io.plans.project import Project


@dataclass(frozen=True)
class TaskEstimate:
    """One task's estimate (None for a human checkpoint: no agent runs it)."""

    wave: int
    plan: str
    task: int
    agent: str
    runner: str | None
    estimate: Estimate | None


@dataclass(frozen=True)
class PhaseEstimates:
    """A phase's tasks with their estimates, the total and the warnings of bad log lines."""

    tasks: list[TaskEstimate]
    total: PhaseEstimate
    warnings: list[str]

    def to_json(self) -> dict[str, object]:
        return {
            "tasks": [
                {
                    "plan": t.plan,
                    "task": t.task,
                    "agent": t.agent,
                    "runner": t.runner,
                    "estimate": t.estimate.to_json() if t.estimate else None,
                }
                for t in self.tasks
            ],
            "estimate": self.total.to_json(),
        }


def estimates(project: Project, tasks: Sequence[TaskDispatch]) -> PhaseEstimates:
    """Each task's estimate from this repository's logs, and the phase's total (the
    tasks a person answers have none and are not counted)."""
    from gsd.io.plans import history

    samples, _, warnings = history.read(project.planning)
    found = [
        TaskEstimate(
            wave=t.wave,
            plan=t.plan,
            task=t.task,
            agent=t.agent,
            runner=t.runner,
            estimate=None if t.runner is None else figures.estimate(samples, t.agent, t.runner),
        )
        for t in tasks
    ]
    total = figures.phase_total([t.estimate for t in found if t.estimate is not None])
    return PhaseEstimates(tasks=found, total=total, warnings=warnings)


def phase_estimate(
    project: Project, found_phase: Phase, *, wave: int | None = None, plan_id: str | None = None
) -> PhaseEstimates:
    """`estimates` of a phase's tasks (a wave's, a plan's), each dispatched as a run
    would: the call for any front end (`gsd mcp`'s dry run) that has no dispatches yet."""
    dispatcher, _ = project.dispatcher()
    graph = project.phase_graph(found_phase)
    return estimates(project, dispatcher.phase(graph, wave=wave, plan_id=plan_id))


@dataclass(frozen=True)
class Versus:
    """One task of a run: what it used (every attempt of it in that run added) against
    its estimate, the median of its agent's successful runs on its runner logged before
    that run started (None: no such run, or nothing reported)."""

    plan: str
    task: int
    agent: str
    runner: str | None
    attempts: int
    runs: int  # the history the estimate rests on
    tokens_estimate: float | None
    tokens: float | None
    cost_estimate: float | None
    cost_usd: float | None
    seconds_estimate: float | None
    seconds: float


def versus(events: Sequence[LogEvent], last_run_only: bool = True) -> list[Versus]:
    """`gsd report`'s estimate against actual, a row per task of the last run (or of
    every run), in the order their first attempts ended."""
    from gsd.io.plans.history import samples

    start = ""  # the run an event belongs to starts at the last `run-start` before it
    runs: dict[tuple[str, str, object], list[LogEvent]] = {}
    for e in events:
        if e.get("event") == "run-start":
            start = str(e.get("ts") or "")
            if last_run_only:
                runs.clear()
        elif e.get("event") == "result":
            runs.setdefault((start, str(e.get("plan", "")), e.get("task")), []).append(e)
    past = _Past(samples(events))
    return [_row(past, key[0] or _first(rows), rows) for key, rows in runs.items()]


class _Past:
    """The history in time order, each estimate worked out once per run start, agent
    and runner (a report of every run asks the same many times)."""

    def __init__(self, history: list[Sample]) -> None:
        self.history = sorted(history, key=lambda s: s.ts)
        self.moments = [s.ts for s in self.history]
        self.known: dict[tuple[str, str, str | None], Estimate] = {}

    def estimate(self, moment: str, agent: str, runner: str | None) -> Estimate:
        key = (moment, agent, runner)
        if key not in self.known:
            before = self.history[: bisect.bisect_left(self.moments, moment)]
            self.known[key] = figures.estimate(before, agent, runner)
        return self.known[key]


def _first(rows: list[LogEvent]) -> str:
    """When a run with no `run-start` on record began: its first attempt's end, at the
    latest (an older log)."""
    return min(str(e.get("ts") or "") for e in rows)


def _row(past: _Past, moment: str, attempts: list[LogEvent]) -> Versus:
    """One task of a run: its attempts added up, against the estimate its agent on its
    runner had at `moment` (the run's start)."""
    from gsd.io.plans.history import sample

    used = [sample(e) for e in attempts]
    first = used[0]
    found = past.estimate(moment, first.agent, first.runner)
    return Versus(
        plan=first.plan,
        task=first.task,
        agent=first.agent,
        runner=first.runner,
        attempts=len(used),
        runs=found.runs,
        tokens_estimate=found.tokens.median if found.tokens else None,
        tokens=_sum(s.tokens for s in used),
        cost_estimate=found.cost_usd.median if found.cost_usd else None,
        cost_usd=_sum(s.cost_usd for s in used),
        seconds_estimate=found.seconds.median if found.seconds else None,
        seconds=round(sum(s.seconds or 0.0 for s in used), 1),
    )


def _sum(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known), 6) if known else None
