"""`gsd report`: a run's timeline, its totals per agent and per plan, and its tasks as
test cases, from the logs in .planning/logs/ (and an older .planning/execution-log.jsonl)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from gsd.commands.estimate import Versus, versus
from gsd.commands.reportbars import Bar, Bars, WaveSpan, marked
from gsd.commands.reportreviews import ReviewRow, outcome, proposal_outcome, review_rows
from gsd.formats.execlog import soft_words, step_of

if TYPE_CHECKING:
    from gsd.formats.execlog import LogEvent
    from gsd.io.plans.project import Project

# events shown as they are in the timeline (`result` rows also feed the totals)
TIMELINE = frozenset(
    "run-start wave-start proposal spawn rollback review retry fallback commit merge "
    "plan-complete checkpoint-paused wave-end run-end".split()
)


@dataclass(frozen=True)
class TimelineRow:
    """An event of the run as `gsd report` lists it (values as the log has them)."""

    time: object
    event: object
    plan: object
    task: object
    agent: object
    seconds: object
    outcome: str


@dataclass(frozen=True)
class Totals:
    """One agent's or one plan's attempts, seconds, tokens and cost (None: not reported)."""

    name: str
    attempts: int = 0
    succeeded: int = 0
    failed: int = 0
    seconds: float = 0.0
    input_tokens: float | None = None
    output_tokens: float | None = None
    cost_usd: float | None = None

    def to_json(self, key: str) -> dict[str, object]:
        """The row with its name under `key` (`agent` or `plan`) first."""
        data = asdict(self)
        return {key: data.pop("name"), **data}


@dataclass(frozen=True)
class Delegation:
    """One attempt against its token budget: tokens, cost, the budget and where it stood
    (within, over or aborted; None when it had no budget or its runner counted nothing)."""

    plan: object
    task: object
    agent: object
    attempt: object
    tokens: object
    cost_usd: object
    warn: object
    abort: object
    budget: object


@dataclass(frozen=True)
class RunReport:
    """`gsd report`'s data: the timeline, the retries, the totals, the budgets and the
    reviews."""

    timeline: list[TimelineRow]
    retries: int
    per_agent: list[Totals]
    per_plan: list[Totals]
    budgets: list[Delegation]
    reviews: list[ReviewRow] = field(default_factory=list)
    estimates: list[Versus] = field(default_factory=list)  # each task's, against what it used

    def to_json(self) -> dict[str, object]:
        return {
            "timeline": [asdict(r) for r in self.timeline],
            "retries": self.retries,
            "per_agent": [t.to_json("agent") for t in self.per_agent],
            "per_plan": [t.to_json("plan") for t in self.per_plan],
            "budgets": [asdict(b) for b in self.budgets],
            "reviews": [asdict(r) for r in self.reviews],
            "estimates": [asdict(v) for v in self.estimates],
        }


def build(events: Iterable[LogEvent], last_run_only: bool = True) -> RunReport:
    """Timeline rows and totals; by default only the events of the last run."""
    events = _selected(everything := list(events), last_run_only)  # estimates read it all
    timeline = []
    agents: dict[str, Totals] = {}
    plans: dict[str, Totals] = {}
    for e in events:
        kind = e.get("event")
        if kind in TIMELINE:
            timeline.append(_row(e))
        if kind != "result":
            continue
        timeline.append(_row(e))
        for key, table in ((str(e.get("agent", "?")), agents), (str(e.get("plan", "?")), plans)):
            table[key] = _added(table.get(key) or Totals(key), e)
    retries = sum(1 for e in events if e.get("event") == "retry")
    return RunReport(
        timeline=timeline,
        retries=retries,
        per_agent=list(agents.values()),
        per_plan=list(plans.values()),
        budgets=[delegation(e) for e in events if e.get("event") == "result"],
        reviews=review_rows(events),
        estimates=versus(everything, last_run_only),
    )


def _added(row: Totals, e: LogEvent) -> Totals:
    """`row` with one more attempt, the `result` event `e`."""

    def plus(total: float | None, field: str) -> float | None:
        value = e.get(field)
        return round((total or 0) + value, 6) if isinstance(value, (int, float)) else total

    return replace(
        row,
        attempts=row.attempts + 1,
        succeeded=row.succeeded + bool(e.get("success")),
        failed=row.failed + (not e.get("success")),
        seconds=round(row.seconds + float(e.get("duration_s") or 0), 1),
        input_tokens=plus(row.input_tokens, "input_tokens"),
        output_tokens=plus(row.output_tokens, "output_tokens"),
        cost_usd=plus(row.cost_usd, "cost_usd"),
    )


def delegation(e: LogEvent) -> Delegation:
    """One attempt against its token budget (`Delegation`)."""
    tokens = e.get("tokens")
    if tokens is None:  # a log written before budgets: its runner's own counts
        counts = [e.get(k) for k in ("input_tokens", "output_tokens")]
        known = [c for c in counts if isinstance(c, int)]
        tokens = sum(known) if known else None
    return Delegation(
        plan=e.get("plan", ""),
        task=e.get("task", ""),
        agent=e.get("agent", ""),
        attempt=e.get("attempt", ""),
        tokens=tokens,
        cost_usd=e.get("cost_usd"),
        warn=e.get("budget_warn"),
        abort=e.get("budget_abort"),
        budget=e.get("budget"),
    )


def _selected(events: Iterable[LogEvent], last_run_only: bool) -> list[LogEvent]:
    """The events of the last run (from its `run-start`), or all of them."""
    events = list(events)
    if last_run_only:
        starts = [i for i, e in enumerate(events) if e.get("event") == "run-start"]
        events = events[starts[-1] :] if starts else events
    return events


def _row(e: LogEvent) -> TimelineRow:
    kind = e.get("event")
    what = {
        "result": "ok" if e.get("success") else str(e.get("error_type")),
        "commit": str(e.get("commit") or "")[:7] or "nothing to commit",
        "merge": f"{e.get('branch', '')} {e.get('status', '')}".strip(),
        "wave-start": f"wave {e.get('wave', '')}: {', '.join(map(str, e.get('plans') or []))}",
        "wave-end": f"wave {e.get('wave', '')} done",
        "rollback": f"kept under {e.get('salvage')}" if e.get("salvage") else "",
        **dict.fromkeys(("spawn", "retry", "fallback"), step_of(e)),  # the ladder's step
        "review": outcome(e) if kind == "review" else "",
        "proposal": proposal_outcome(e),
        "checkpoint-paused": f"{e['proposal']} waits for approval" if e.get("proposal") else "",
    }.get(str(kind), "")
    if kind == "result" and e.get("soft_success"):
        what = soft_words(e)
    elif kind == "result" and e.get("success") and e.get("no_change"):
        what = "made no change"
    return TimelineRow(
        time=e.get("ts", ""),
        event=kind,
        plan=e.get("plan", ""),
        task=e.get("task", ""),
        agent=e.get("agent", e.get("reviewer", "")),
        seconds=e.get("duration_s", ""),
        outcome=what,
    )


class PlannedTask(NamedTuple):
    """A task as its plan file has it: how a task the run never reached is still listed."""

    number: int
    name: str
    checkpoint: bool


class TaskCase(NamedTuple):
    """One task of the run and how it ended: "passed", "failed" (`why`: the last
    attempt's error type) or "skipped" (`why`: why it did not run)."""

    plan: str
    task: str
    name: str
    outcome: str
    why: str
    attempts: tuple[LogEvent, ...]  # its `result` events, in order
    seconds: float
    reviews: tuple[LogEvent, ...] = ()  # its `review` events, in order


PAUSED = "checkpoint-paused"


def task_cases(
    events: Iterable[LogEvent],
    tasks_of: Callable[[str], list[PlannedTask]] = lambda _: [],
    last_run_only: bool = True,
) -> list[TaskCase]:
    """A case per task of every plan the run took up (its waves' plans and every plan an
    event names), in plan order: the plan file's tasks (`tasks_of`), then any task only
    the log knows. A task passes or fails by its last attempt; one with no attempt was
    skipped."""
    plans: dict[str, None] = {}
    seen: dict[tuple[str, str], list[LogEvent]] = {}
    for e in _selected(events, last_run_only):
        if e.get("event") == "wave-start":
            plans.update(dict.fromkeys(str(p) for p in e.get("plans") or []))
        if e.get("plan") is None:
            continue
        plans.setdefault(str(e["plan"]))
        if e.get("task") is not None:
            seen.setdefault((str(e["plan"]), str(e["task"])), []).append(e)
    cases = []
    for plan in plans:
        planned = {str(t.number): t for t in tasks_of(plan)}
        logged = [task for (p, task) in seen if p == plan and task not in planned]
        for task in [*planned, *logged]:
            cases.append(_case(plan, task, seen.get((plan, task), []), planned.get(task)))
    return cases


def _case(plan: str, task: str, events: list[LogEvent], planned: PlannedTask | None) -> TaskCase:
    attempts = tuple(e for e in events if e.get("event") == "result")
    seconds = round(sum(float(e.get("duration_s") or 0) for e in attempts), 1)
    kinds = {e.get("event") for e in events}
    if attempts and attempts[-1].get("success"):
        outcome, why = "passed", ""
    elif attempts:
        outcome, why = "failed", str(attempts[-1].get("error_type") or "failed")
    elif PAUSED in kinds:
        outcome, why = "skipped", "paused at a human checkpoint: answer it with gsd approve"
    elif "spawn" in kinds:
        outcome, why = "skipped", "started, but the run stopped before its result"
    elif planned is not None and planned.checkpoint:
        outcome, why = "skipped", "a human checkpoint: no agent runs it"
    else:
        outcome, why = "skipped", "not run"
    name = planned.name if planned else ""
    return TaskCase(
        plan=plan,
        task=task,
        name=name,
        outcome=outcome,
        why=why,
        attempts=attempts,
        seconds=seconds,
        reviews=tuple(e for e in events if e.get("event") == "review"),
    )


def timeline(events: Iterable[LogEvent], last_run_only: bool = True) -> Bars:
    """The run as bars for a picture (`gsd report --format html`): each attempt's plan,
    task, agent, outcome and span in seconds from the run's first event (it ends at its
    `result` event and lasted its `duration_s`), and each wave's span."""
    events = [e for e in _selected(events, last_run_only) if _moment(e) is not None]
    if not events:
        return Bars(start="", seconds=0.0, attempts=[], waves=[], plans=[])
    origin = min(m for e in events if (m := _moment(e)) is not None)

    def at(e: LogEvent) -> float:
        return round((_moment(e) or origin) - origin, 1)

    attempts: list[Bar] = []
    starts: dict[str, tuple[object, float]] = {}  # by wave: its number and start
    ends: dict[str, float] = {}
    plans: dict[str, None] = {}
    for e in events:
        kind, key = e.get("event"), str(e.get("wave", ""))
        if kind == "wave-start":
            starts[key] = (e.get("wave"), at(e))
            ends.pop(key, None)
            plans.update(dict.fromkeys(str(p) for p in e.get("plans") or []))
        elif kind == "wave-end" and key in starts:
            ends[key] = at(e)
        elif kind == "result":
            end = at(e)
            took = float(e.get("duration_s") or 0)
            plans.setdefault(str(e.get("plan", "?")))
            attempts.append(
                Bar(
                    plan=str(e.get("plan", "?")),
                    task=str(e.get("task", "?")),
                    attempt=e.get("attempt", ""),
                    agent=str(e.get("agent", "?")),
                    outcome=_row(e).outcome,
                    start=round(max(end - took, 0.0), 1),
                    end=max(end, round(took, 1)),
                    step=step_of(e),
                )
            )
    seconds = max([at(e) for e in events] + [a.end for a in attempts])
    waves = [WaveSpan(wave, begun, ends.get(key, seconds)) for key, (wave, begun) in starts.items()]
    start = next(str(e["ts"]) for e in events if _moment(e) == origin)
    attempts = marked(attempts, events)
    return Bars(start=start, seconds=seconds, attempts=attempts, waves=waves, plans=list(plans))


def _moment(e: LogEvent) -> float | None:
    """An event's `ts` in seconds since the epoch; None when it has none or a bad one."""
    from datetime import datetime

    from gsd.core.utc import as_utc

    try:
        return as_utc(
            datetime.fromisoformat(str(e.get("ts", "")).replace("Z", "+00:00"))
        ).timestamp()
    except ValueError:
        return None


def run_report(every_run: bool) -> tuple[RunReport, list[str]]:
    """`gsd report`: the last run (or every run) built from the logs, and their warnings."""
    from pathlib import Path

    from gsd.core import layout
    from gsd.formats import execlog
    from gsd.io.plans.project import find_root

    events, warnings = execlog.read_all(find_root(Path.cwd()) / layout.PLANNING)
    return build(events, last_run_only=not every_run), warnings


def planned_tasks(project: Project) -> Callable[[str], list[PlannedTask]]:
    """The tasks of a plan as its file has them; none for a plan gone or unreadable."""
    from gsd.core.errors import GsdError

    def tasks_of(plan_id: str) -> list[PlannedTask]:
        try:
            plan = project.find_plan(plan_id)
        except GsdError:
            return []
        return [PlannedTask(t.index, t.name, t.is_checkpoint) for t in plan.tasks]

    return tasks_of
