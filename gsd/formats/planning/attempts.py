"""A plan's attempts, as its SUMMARY.md tells them: from the plan's logs, with what git
says of each committed task."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gsd.core.verdict.outcomes import TaskCommit, TaskOutcome
from gsd.core.verdict.review import Review
from gsd.formats import errorlog
from gsd.formats.errorlog import ErrorRecord


def logged_attempts(plan_id: str, plannings: Iterable[Path]) -> list[TaskOutcome]:
    """Every attempt at the plan's tasks that its logs in these `.planning/` folders
    record (a line two checkouts both hold counts once), in time order: the `result`
    events, with the details and exit code of the matching error record and the verdict
    of the attempt's `review` event."""
    events: dict[str, dict[str, Any]] = {}
    records: dict[str, ErrorRecord] = {}
    for planning in plannings:
        found, errors, _ = errorlog.read_logs(planning)  # each log read once
        for event in found:
            if event.get("plan") == plan_id and event.get("event") in ("result", "review"):
                events.setdefault(json.dumps(event, sort_keys=True), event)
        for record in errorlog.filter_records(errors, plan=plan_id):
            records.setdefault(errorlog.to_line(record), record)
    failures = {(r.task, r.attempt, r.specialist, r.error_type): r for r in records.values()}
    ordered = sorted(events.values(), key=lambda e: str(e.get("ts", "")))
    attempts: list[TaskOutcome] = []
    reviews: dict[tuple[str, int], Review] = {}  # logged just before its attempt's result
    for event in ordered:
        if event.get("event") == "review":
            reviews[_key(event)] = Review.from_event(event)
        else:
            said = reviews.pop(_key(event), None)
            attempts.append(_attempt(plan_id, event, failures)._replace(review=said))
    return attempts


def _key(event: Mapping[str, Any]) -> tuple[str, int]:
    """The task and attempt an event is of: a `review` event's and its `result`'s."""
    return str(event.get("task")), _int(event.get("attempt")) or 1


def _attempt(
    plan_id: str, event: dict[str, Any], failures: Mapping[tuple[str, int, str, str], Any]
) -> TaskOutcome:
    task, attempt = _int(event.get("task")), _int(event.get("attempt")) or 1
    agent, error_type = str(event.get("agent") or "?"), event.get("error_type")
    record = failures.get((str(task), attempt, agent, str(error_type)))
    return TaskOutcome.blank(plan_id, task, agent, attempt)._replace(
        success=bool(event.get("success")),
        soft_success=bool(event.get("soft_success")),
        error_type=str(error_type) if error_type else None,
        details=record.details if record else "",
        exit_code=record.exit_code if record else None,
        duration_s=float(event.get("duration_s") or 0),
        input_tokens=_count(event, "input_tokens"),
        output_tokens=_count(event, "output_tokens"),
        cost_usd=_cost(event),
        no_change=event.get("no_change") is True,
        step=str(event.get("step") or "first"),
        soft_reason=str(event["soft_reason"]) if event.get("soft_reason") else None,
    )


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _count(event: Mapping[str, Any], key: str) -> int | None:
    value = event.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _cost(event: Mapping[str, Any]) -> float | None:
    value = event.get("cost_usd")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def with_commits(
    plan_id: str, outcomes: list[TaskOutcome], commits: Mapping[int, TaskCommit]
) -> tuple[list[TaskOutcome], list[str]]:
    """The attempts with what git says of each committed task (`Gsd-Task` trailers): the
    task's last successful attempt gets its commit and the files it changed; a task
    committed with no attempt on record (its log lost) gets one from the commit. Also the
    files the task commits created."""
    result = list(outcomes)
    for number, commit in commits.items():
        last = max(
            (i for i, o in enumerate(result) if o.task == number and o.success), default=None
        )
        if last is None:
            result.append(TaskOutcome.from_commit(plan_id, commit))
        else:
            result[last] = result[last]._replace(commit=commit.sha, changed=list(commit.changed))
    created = sorted({path for commit in commits.values() for path in commit.added})
    return result, created
