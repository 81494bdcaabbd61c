"""STATE.md and ROADMAP.md as the facts say (pure): the facts `gsd.run.derive` gathers
from the committed files, and the lines gsd owns in each file made from them, the rest
of the user's text kept."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gsd.core.ids import same_plan, short_phase_number, split_plan_id
from gsd.formats.planning import metrics, roadmap, state
from gsd.io.plans.phases import Phase

PAUSED = "checkpoint-paused"  # a blocker that waits for a person, not a failure


@dataclass(frozen=True)
class Blocker:
    """Why a plan stands still: a failure's error type, or `checkpoint-paused`."""

    kind: str
    details: str
    day: str | None  # the date it was recorded, YYYY-MM-DD


@dataclass(frozen=True)
class PlanFacts:
    id: str
    path: str  # the PLAN.md, relative to the project root
    tasks: int
    done: bool
    day: str | None = None  # SUMMARY's `completed` date
    minutes: int | None = None  # SUMMARY's `duration`, whole minutes (at least 1)
    files: int = 0  # SUMMARY's key-files
    blocker: Blocker | None = None
    active: bool = False  # the logs hold records of it


@dataclass(frozen=True)
class PhaseFacts:
    phase: Phase
    title: str
    plans: tuple[PlanFacts, ...]

    @property
    def done(self) -> int:
        return sum(p.done for p in self.plans)

    @property
    def complete(self) -> bool:
        return bool(self.plans) and self.done == len(self.plans)

    @property
    def active(self) -> bool:
        return any(p.done or p.active or p.blocker for p in self.plans)

    @property
    def day(self) -> str | None:
        """The day its last plan completed, once all have."""
        return max((p.day for p in self.plans if p.day), default=None) if self.complete else None


@dataclass(frozen=True)
class Facts:
    phases: tuple[PhaseFacts, ...]
    last_day: str | None  # the latest date any of the files records
    warnings: tuple[str, ...] = field(default=())
    phase_count: int = 0  # phases there are: folders, and the roadmap's not planned yet


def _current(facts: Facts) -> PhaseFacts | None:
    """The phase work is in: the last one anything happened in, else the first."""
    active = [p for p in facts.phases if p.active]
    return active[-1] if active else next(iter(facts.phases), None)


def _number(phase: Phase) -> str:
    """`01` as `1`, `02.1` as `2.1`, as STATE.md says `Phase: 2.1 of 5`."""
    return short_phase_number(phase.number)


def _minutes(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") + "min"


def _blocked(facts: Facts) -> list[PlanFacts]:
    return [p for ph in facts.phases for p in ph.plans if p.blocker and not p.done]


def _status(current: PhaseFacts) -> str:
    kinds = [p.blocker.kind for p in current.plans if p.blocker and not p.done]
    if current.complete:
        return "Phase complete"
    if any(kind != PAUSED for kind in kinds):
        return "Blocked"
    if kinds:
        return "Paused at a human checkpoint"
    if current.active:
        return "In progress"
    return "Ready to execute" if current.plans else "Ready to plan"


def _latest(facts: Facts) -> tuple[str, str] | None:
    """(day, what) of the last thing that happened: a blocker, else a completed plan."""
    stops = [
        (p.blocker.day, p.id, p.blocker.kind)
        for p in _blocked(facts)
        if p.blocker and p.blocker.day
    ]
    done = [(p.day, p.id) for ph in facts.phases for p in ph.plans if p.done and p.day]
    # the first blocker of the latest day, else the last plan (in plan order) completed on
    # the latest day: the same whichever order the plans were merged in
    stop = max(stops, key=lambda s: s[0], default=None)
    last_day = max((day for day, _ in done), default=None)
    if stop is not None and (last_day is None or stop[0] >= last_day):
        return stop[0], f"{stop[1]} {stop[2]}"
    if last_day is not None:
        return last_day, f"Completed {[i for d, i in done if d == last_day][-1]}-PLAN.md"
    return None


def _stopped_at(facts: Facts, current: PhaseFacts) -> tuple[str, str]:
    """Session Continuity's Stopped at and Resume file."""
    blocked = _blocked(facts)
    if blocked:
        plan = blocked[0]
        assert plan.blocker is not None
        return f"{plan.id} {plan.blocker.kind}", plan.path
    if current.complete:
        return f"Phase {_number(current.phase)} complete", "None"
    done = [p for p in current.plans if p.done]
    waiting = [p for p in current.plans if not p.done]
    if not waiting:
        return f"Phase {_number(current.phase)} has no plans yet", "None"
    nxt = waiting[0]
    how = "in progress" if nxt.active else "not started"
    head = f"Completed {done[-1].id}-PLAN.md; " if done else ""
    return f"{head}{nxt.id} {how}", nxt.path


def state_text(text: str, facts: Facts, only: Phase | None = None) -> str:
    """STATE.md with every line gsd owns derived from `facts`; `only` limits the
    per-phase parts (By Phase and plan rows, blockers) to one phase."""
    current = _current(facts)
    if current is None:
        return text
    scope = [p for p in facts.phases if only is None or p.phase == only]
    shipped = _milestone_shipped(text, current)
    if not shipped:
        text = _position(text, facts, current)
    done = [p for ph in facts.phases for p in ph.plans if p.done]
    timed = [p.minutes for p in done if p.minutes is not None]
    text = (
        text
        if shipped
        else metrics.set_counters(
            text,
            {
                "Total plans completed": str(len(done)),
                "Average duration": _minutes(sum(timed) / len(timed)) if timed else "-",
                "Total execution time": f"{sum(timed) / 60:.2f}".rstrip("0").rstrip(".") + " hours",
            },
        )
    )
    text = _phase_rows(text, scope)
    if facts.last_day is not None and not shipped:
        stopped, resume = _stopped_at(facts, current)
        text = state.set_session(
            text, last_session=facts.last_day, stopped_at=stopped, resume_file=resume
        )
    return text


def _milestone_shipped(text: str, current: PhaseFacts) -> bool:
    """STATE.md says a milestone is done (`Status: Milestone shipped`, `Phase: v1.0
    complete`, as upstream GSD writes on shipping one) and nothing has moved since: the
    phase gsd finds current is complete. Its position, counters and session are then
    upstream's words, kept as written; work on a new phase brings gsd's back."""
    said = state.position(text)
    phase, status = said.get("phase", ""), said.get("status", "")
    milestone = "milestone" in status.lower() or bool(phase) and not phase[0].isdigit()
    return milestone and current.complete


def _position(text: str, facts: Facts, current: PhaseFacts) -> str:
    """`## Current Position`'s lines, as the facts say."""
    total = len(current.plans)
    latest = _latest(facts)
    count = max(facts.phase_count, len(facts.phases))
    return state.set_position(
        text,
        phase=f"{_number(current.phase)} of {count} ({current.title})",
        plan=f"{current.done} of {total} in current phase",
        status=_status(current),
        last_activity=f"{latest[0]} - {latest[1]}" if latest else None,
        progress=current.done / total if total else None,
    )


def _phase_rows(text: str, scope: list[PhaseFacts]) -> str:
    """The phases' By Phase rows, their plans' blockers, then every done plan's row, each
    kind in one pass; plans named without their phase, whose rows might read as a
    phase's, phase by phase as before."""
    plans = [plan for phase in scope for plan in phase.plans if plan.done]
    if any(not split_plan_id(plan.id)[0] for plan in plans):
        for phase in scope:
            text = _metric_rows(_phase_metrics(text, [phase]), phase.plans)
            text = _blockers(text, [phase])
        return text
    return _metric_rows(_blockers(_phase_metrics(text, scope), scope), plans)


def _phase_metrics(text: str, scope: list[PhaseFacts]) -> str:
    rows, done = [], []
    for phase in scope:
        finished = [p for p in phase.plans if p.done]
        timed = [p.minutes for p in finished if p.minutes is not None]
        total = _minutes(sum(timed)) if timed else "-"
        average = _minutes(sum(timed) / len(timed)) if timed else "-"
        rows.append((phase.phase.number, len(finished), total, average))
        done.append(bool(finished))
    return metrics.record_phase_metrics(text, rows, done)


def _metric_rows(text: str, plans: Iterable[PlanFacts]) -> str:
    rows = [
        (plan.id, f"{plan.minutes}min" if plan.minutes is not None else "-", plan.tasks, plan.files)
        for plan in plans
        if plan.done
    ]
    return metrics.record_metrics(text, rows)


def _blockers(text: str, scope: list[PhaseFacts]) -> str:
    """The plans' blocker bullets: added for a plan that stands blocked, removed for the
    others (where gsd wrote one for them: the bullets are read once, again only after a
    change)."""
    tagged: Callable[[str], bool] | None = None
    for plan in (plan for phase in scope for plan in phase.plans):
        if plan.blocker and not plan.done:
            line = state.blocker_line(plan.id, plan.blocker.kind, plan.blocker.details, 300)
            text, tagged = state.add_blocker(text, line), None
            continue
        if tagged is None:
            tags = [tag for tag, _ in state.blocker_plans(text)]
            tagged = lambda plan_id, tags=tags: any(same_plan(t, plan_id) for t in tags)  # noqa: E731
        if tagged(plan.id):
            text, tagged = state.remove_blockers(text, plan.id), None
    return text


def roadmap_text(text: str, facts: Facts, only: Phase | None = None) -> str:
    """ROADMAP.md with plan ticks, phase ticks and progress rows derived from `facts`,
    each kind in one pass (they are different lines)."""
    scope = [p for p in facts.phases if (only is None or p.phase == only) and p.plans]
    text = roadmap.check_plans(text, [(plan.id, plan.done) for ph in scope for plan in ph.plans])
    text = roadmap.check_phases(text, [(ph.phase.number, ph.complete) for ph in scope])
    return roadmap.set_progresses(text, [_progress(ph) for ph in scope])


def _progress(phase: PhaseFacts) -> roadmap.Progress:
    status = "Complete" if phase.complete else "In Progress" if phase.active else "Not started"
    return phase.phase.number, phase.done, len(phase.plans), status, phase.day


# ------------------------------------------------------------------------------ files
