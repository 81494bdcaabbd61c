"""`gsd report`: a run's timeline, its totals per agent and per plan, and its tasks as
test cases, from the logs in .planning/logs/ (and an older .planning/execution-log.jsonl)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

# events shown as they are in the timeline (`result` rows also feed the totals)
TIMELINE = frozenset(
    {
        "run-start",
        "wave-start",
        "spawn",
        "rollback",
        "retry",
        "fallback",
        "commit",
        "merge",
        "plan-complete",
        "checkpoint-paused",
        "wave-end",
        "run-end",
    }
)


def build(events: Iterable[dict[str, Any]], last_run_only: bool = True) -> dict[str, Any]:
    """Timeline rows and totals; by default only the events of the last run."""
    events = _selected(events, last_run_only)
    timeline = []
    agents: dict[str, dict[str, Any]] = {}
    plans: dict[str, dict[str, Any]] = {}
    for e in events:
        kind = e.get("event")
        if kind in TIMELINE:
            timeline.append(_row(e))
        if kind != "result":
            continue
        timeline.append(_row(e))
        for key, table in ((str(e.get("agent", "?")), agents), (str(e.get("plan", "?")), plans)):
            row = table.setdefault(key, _empty())
            row["attempts"] += 1
            row["succeeded"] += bool(e.get("success"))
            row["failed"] += not e.get("success")
            row["seconds"] = round(row["seconds"] + float(e.get("duration_s") or 0), 1)
            for field in ("input_tokens", "output_tokens", "cost_usd"):
                value = e.get(field)
                if isinstance(value, (int, float)):
                    row[field] = round((row[field] or 0) + value, 6)
    retries = sum(1 for e in events if e.get("event") == "retry")
    return {
        "timeline": timeline,
        "retries": retries,
        "per_agent": [{"agent": k, **v} for k, v in agents.items()],
        "per_plan": [{"plan": k, **v} for k, v in plans.items()],
        "budgets": [delegation(e) for e in events if e.get("event") == "result"],
    }


def delegation(e: dict[str, Any]) -> dict[str, Any]:
    """One attempt against its token budget: tokens, cost, the budget and where it stood
    (within, over or aborted; None when it had no budget or its runner counted nothing)."""
    tokens = e.get("tokens")
    if tokens is None:  # a log written before budgets: its runner's own counts
        counts = [e.get(k) for k in ("input_tokens", "output_tokens")]
        known = [c for c in counts if isinstance(c, int)]
        tokens = sum(known) if known else None
    return {
        "plan": e.get("plan", ""),
        "task": e.get("task", ""),
        "agent": e.get("agent", ""),
        "attempt": e.get("attempt", ""),
        "tokens": tokens,
        "cost_usd": e.get("cost_usd"),
        "warn": e.get("budget_warn"),
        "abort": e.get("budget_abort"),
        "budget": e.get("budget"),
    }


def over_budget_warnings(events: Iterable[dict[str, Any]]) -> list[str]:
    """A line per attempt that went past its warn budget (`gsd errors` shows them as
    warnings: they are not failures)."""
    lines = []
    for e in events:
        if e.get("event") == "result" and e.get("budget") == "over":
            tokens, warn, abort = e.get("tokens"), e.get("budget_warn"), e.get("budget_abort")
            lines.append(
                f"{e.get('plan', '?')} task {e.get('task', '?')} ({e.get('agent', '?')}, "
                f"attempt {e.get('attempt', '?')}): {tokens:,} tokens, over its budget of "
                f"{warn:,} (stopped past {abort:,})"
            )
    return lines


def _selected(events: Iterable[dict[str, Any]], last_run_only: bool) -> list[dict[str, Any]]:
    """The events of the last run (from its `run-start`), or all of them."""
    events = list(events)
    if last_run_only:
        starts = [i for i, e in enumerate(events) if e.get("event") == "run-start"]
        events = events[starts[-1] :] if starts else events
    return events


def _empty() -> dict[str, Any]:
    return {
        "attempts": 0,
        "succeeded": 0,
        "failed": 0,
        "seconds": 0.0,
        "input_tokens": None,
        "output_tokens": None,
        "cost_usd": None,
    }


def _row(e: dict[str, Any]) -> dict[str, Any]:
    kind = e.get("event")
    what = {
        "result": "ok" if e.get("success") else str(e.get("error_type")),
        "commit": str(e.get("commit") or "")[:7] or "nothing to commit",
        "merge": f"{e.get('branch', '')} {e.get('status', '')}".strip(),
        "wave-start": f"wave {e.get('wave', '')}: {', '.join(map(str, e.get('plans') or []))}",
        "wave-end": f"wave {e.get('wave', '')} done",
    }.get(str(kind), "")
    if kind == "result" and e.get("soft_success"):
        what = "soft success"
    elif kind == "result" and e.get("success") and e.get("no_change"):
        what = "made no change"
    return {
        "time": e.get("ts", ""),
        "event": kind,
        "plan": e.get("plan", ""),
        "task": e.get("task", ""),
        "agent": e.get("agent", ""),
        "seconds": e.get("duration_s", ""),
        "outcome": what,
    }


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
    attempts: tuple[dict[str, Any], ...]  # its `result` events, in order
    seconds: float


PAUSED = "checkpoint-paused"


def task_cases(
    events: Iterable[dict[str, Any]],
    tasks_of: Callable[[str], list[PlannedTask]] = lambda _: [],
    last_run_only: bool = True,
) -> list[TaskCase]:
    """A case per task of every plan the run took up (its waves' plans and every plan an
    event names), in plan order: the plan file's tasks (`tasks_of`), then any task only
    the log knows. A task passes or fails by its last attempt; one with no attempt was
    skipped."""
    plans: dict[str, None] = {}
    seen: dict[tuple[str, str], list[dict[str, Any]]] = {}
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


def _case(
    plan: str, task: str, events: list[dict[str, Any]], planned: PlannedTask | None
) -> TaskCase:
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
    )


def timeline(events: Iterable[dict[str, Any]], last_run_only: bool = True) -> dict[str, Any]:
    """The run as bars for a picture (`gsd report --format html`): each attempt's plan,
    task, agent, outcome and span in seconds from the run's first event (it ends at its
    `result` event and lasted its `duration_s`), and each wave's span."""
    events = [e for e in _selected(events, last_run_only) if _moment(e) is not None]
    if not events:
        return {"start": "", "seconds": 0.0, "attempts": [], "waves": [], "plans": []}
    origin = min(m for e in events if (m := _moment(e)) is not None)

    def at(e: dict[str, Any]) -> float:
        return round((_moment(e) or origin) - origin, 1)

    attempts, waves, plans = [], {}, {}
    for e in events:
        kind = e.get("event")
        if kind == "wave-start":
            waves[str(e.get("wave", ""))] = {"wave": e.get("wave"), "start": at(e), "end": None}
            plans.update(dict.fromkeys(str(p) for p in e.get("plans") or []))
        elif kind == "wave-end" and str(e.get("wave", "")) in waves:
            waves[str(e.get("wave", ""))]["end"] = at(e)
        elif kind == "result":
            end = at(e)
            took = float(e.get("duration_s") or 0)
            plans.setdefault(str(e.get("plan", "?")))
            attempts.append(
                {
                    "plan": str(e.get("plan", "?")),
                    "task": str(e.get("task", "?")),
                    "attempt": e.get("attempt", ""),
                    "agent": str(e.get("agent", "?")),
                    "outcome": _row(e)["outcome"],
                    "start": round(max(end - took, 0.0), 1),
                    "end": max(end, round(took, 1)),
                }
            )
    seconds = max([at(e) for e in events] + [a["end"] for a in attempts])
    for wave in waves.values():
        wave["end"] = seconds if wave["end"] is None else wave["end"]
    start = next(str(e["ts"]) for e in events if _moment(e) == origin)
    return {
        "start": start,
        "seconds": seconds,
        "attempts": attempts,
        "waves": list(waves.values()),
        "plans": list(plans),
    }


def _moment(e: dict[str, Any]) -> float | None:
    """An event's `ts` in seconds since the epoch; None when it has none or a bad one."""
    from datetime import datetime

    from gsd.core.utc import as_utc

    try:
        return as_utc(
            datetime.fromisoformat(str(e.get("ts", "")).replace("Z", "+00:00"))
        ).timestamp()
    except ValueError:
        return None
