"""STATE.md and ROADMAP.md computed from committed files, never counted up (SPEC 0).

Facts come from the files a commit carries, read the same way on every machine:
SUMMARY.md files (a plan is done when its SUMMARY.md is there; its `completed` date and
`duration`), the plans' logs (a failure a later attempt did not supersede is a blocker)
and `.planning/approvals.jsonl` (a plan paused at a checkpoint nobody answered is a
blocker). Dates written come from those files, never the clock: two checkouts of the
same commit derive the same bytes, whichever order branches were merged in.
`gsd sync` and `execute-phase` both write through `sync`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gsd.core import layout
from gsd.core.ids import phase_key
from gsd.core.models import Plan
from gsd.formats import errorlog
from gsd.formats.errorlog import ErrorRecord, parse_timestamp
from gsd.formats.files import load_text, save_text
from gsd.formats.planning import roadmap, summaryread
from gsd.io.plans import approvals, summaries
from gsd.io.plans.phases import Phase
from gsd.io.plans.project import Project
from gsd.run.statetext import (
    PAUSED,
    Blocker,
    Facts,
    PhaseFacts,
    PlanFacts,
    roadmap_text,
    state_text,
)

# events that show a plan moved on after a failure: a new attempt, a commit, a pause
_PROGRESS = frozenset({"spawn", "commit", "retry", "fallback", PAUSED, "plan-complete"})
_DURATION_RE = re.compile(
    r"(?:(?P<h>\d+(?:\.\d+)?)\s*h\w*)?\s*(?:(?P<m>\d+(?:\.\d+)?)\s*m\w*)?"
    r"\s*(?:(?P<s>\d+(?:\.\d+)?)\s*s\w*)?$",
    re.I,
)


@dataclass(frozen=True)
class Change:
    """One file `sync` wrote (or, checking, would write): its path and the lines that
    differ, `line N: old -> new`."""

    path: Path
    lines: tuple[str, ...]


# ----------------------------------------------------------------------------- facts


def gather(project: Project) -> Facts:
    """Every phase's plans as the files in the checkout say they stand."""
    events, errors, warnings = errorlog.read_logs(project.planning)
    road = project.planning / layout.ROADMAP_FILE
    road_text = load_text(road) if road.is_file() else ""
    days = {_day(e.get("ts")) for e in events} | {_day(r.timestamp) for r in errors}
    by_plan = _events_by_plan(events)
    failures_of = errorlog.by_plan(errors)
    titles = roadmap.phase_titles(road_text)
    phases = []
    whole = summaries.TaskSummaries(project.root)  # one `git log`, not one per phase
    for phase in project.phases():
        graph = project.phase_graph(phase)
        find = summaries.finder(phase.path, whole)
        plans = []
        for plan_id, plan in graph.plans.items():
            mine = by_plan.get(plan_id, [])
            facts = _plan_facts(project, find(plan.id), plan, mine, failures_of(plan_id))
            days.add(facts.day)
            plans.append(facts)
        key = phase_key(phase.number.strip())
        title = (titles.get(key) if key is not None else None) or _title(phase)
        phases.append(PhaseFacts(phase, title, tuple(plans)))
    last = max((d for d in days if d), default=None)
    keys = {phase_key(p.phase.number) for p in phases}
    listed = roadmap.listed_phases(road_text) | {k for k in keys if k is not None}
    # `Phase: 10 of 6` where folders or a collapsed milestone skip numbers: never N > M
    count = max([len(listed), *(key[0] for key in listed)])
    return Facts(tuple(phases), last, tuple(warnings), count)


def _events_by_plan(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each plan's events in their order, grouped in one pass: a plan's are those whose
    `plan` is its id (text; a log's other values name no plan)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        plan = event.get("plan")
        if isinstance(plan, str):
            grouped.setdefault(plan, []).append(event)
    return grouped


def _plan_facts(
    project: Project,
    found: Path | None,
    plan: Plan,
    events: list[dict[str, Any]],
    errors: list[ErrorRecord],
) -> PlanFacts:
    where = Path(plan.path)
    path = (where.relative_to(project.root) if where.is_absolute() else where).as_posix()
    base = PlanFacts(
        plan.id, path, len(plan.tasks), found is not None, active=bool(events or errors)
    )
    if found is None:
        return PlanFacts(**{**base.__dict__, "blocker": _blocker(project, plan, events, errors)})
    front = summaryread.load(found)
    key_files = front.get("key-files")
    files = 0
    if isinstance(key_files, dict):
        files = sum(len(v) for v in key_files.values() if isinstance(v, list))
    seconds = _seconds(str(front.get("duration", "")))
    minutes = None if seconds is None else max(1, round(seconds / 60))
    return PlanFacts(
        **{**base.__dict__, "day": _day(front.get("completed")), "minutes": minutes, "files": files}
    )


def _blocker(
    project: Project, plan: Plan, events: list[dict[str, Any]], errors: list[ErrorRecord]
) -> Blocker | None:
    """The failure or unanswered pause the plan's records end on, if any."""
    moved = [(_moment(e), n, e) for n, e in enumerate(events) if e.get("event") in _PROGRESS]
    last_move = max(moved, key=lambda m: m[:2])[2] if moved else None  # ties: file order
    failure = max(errors, key=lambda r: (r.moment, _position(r, events)), default=None)
    if failure is not None:
        at = _position(failure, events)
        if last_move is None or _moment(last_move) <= at:
            details = failure.details or failure.error_type
            return Blocker(failure.error_type, details, _day(failure.timestamp))
    if last_move is not None and last_move.get("event") == PAUSED:
        task = next((t for t in plan.tasks if t.index == last_move.get("task")), None)
        if task is not None and task.index not in approvals.answered(project, plan):
            what = approvals.what_to_check(task)
            details = (
                f"task {task.index} ({task.type}) waits for a person: {what} "
                f"(then `gsd approve {plan.id}`)"
            )
            return Blocker(PAUSED, details, _day(last_move.get("ts")))
    return None


def _position(record: ErrorRecord, events: list[dict[str, Any]]) -> datetime:
    """When a failure happened, as exactly as the logs know: its attempt's `result` event
    (or a merge's) is timed to the millisecond, the error record only to the second."""

    def same(event: dict[str, Any]) -> bool:
        if record.task == "-":
            return event.get("event") == "merge" and event.get("status") != "merged"
        same_try = str(event.get("task")) == record.task and event.get("attempt") == record.attempt
        return event.get("event") == "result" and same_try and not event.get("success")

    near = [e for e in events if same(e) and abs((_moment(e) - record.moment).total_seconds()) < 2]
    return max((_moment(e) for e in near), default=record.moment)


def _moment(event: dict[str, Any]) -> datetime:
    try:
        return parse_timestamp(str(event.get("ts")))
    except ValueError:
        return datetime.min.replace(tzinfo=parse_timestamp("2000-01-01").tzinfo)


def _day(value: object) -> str | None:
    """The UTC date of a timestamp or date as the files write it, or None."""
    if value is None:
        return None
    try:
        return parse_timestamp(str(value)).strftime("%Y-%m-%d")
    except (ValueError, IndexError):
        return None


def _seconds(text: str) -> float | None:
    """`3min`, `45s`, `1h 5m`, `12 min` as seconds; None when it does not read."""
    match = _DURATION_RE.match(text.strip()) if text.strip() else None
    if match is None or not any(match.groupdict().values()):
        return None
    hours, minutes, seconds = (float(match.group(k) or 0) for k in "hms")
    return hours * 3600 + minutes * 60 + seconds


def _title(phase: Phase) -> str:
    return phase.slug.replace("-", " ").replace("_", " ").title() if phase.slug else phase.name


OWNED = (layout.STATE_FILE, layout.ROADMAP_FILE)


def sync(
    project: Project,
    only: Phase | None = None,
    *,
    write: bool = True,
    files: tuple[str, ...] = OWNED,
    facts: Facts | None = None,
) -> list[Change]:
    """Derive STATE.md and ROADMAP.md (those of `files` that exist) and, with `write`,
    save the ones that changed; either way return what differs. Commits nothing."""
    facts = facts or gather(project)
    changes = []
    for name in files:
        path = project.planning / name
        if not path.is_file():
            continue
        before = load_text(path)
        derive = state_text if name == layout.STATE_FILE else roadmap_text
        after = derive(before, facts, only)
        if after != before:
            changes.append(Change(path, tuple(_differences(before, after))))
            if write:
                save_text(path, after, old=before)
    return changes


def _differences(before: str, after: str) -> list[str]:
    """`line N: old -> new` for each line that differs (`+ new`, `- old` alone)."""
    old, new = before.splitlines(), after.splitlines()
    found = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for kind, a0, a1, b0, b1 in matcher.get_opcodes():
        if kind == "equal":
            continue
        pairs = max(a1 - a0, b1 - b0)
        for k in range(pairs):
            was = old[a0 + k] if a0 + k < a1 else None
            now = new[b0 + k] if b0 + k < b1 else None
            line = (a0 if was is not None else b0) + k + 1
            if was is not None and now is not None:
                found.append(f"line {line}: {was.strip()!r} -> {now.strip()!r}")
            elif now is not None:
                found.append(f"line {line}: + {now.strip()!r}")
            elif was is not None:
                found.append(f"line {line}: - {was.strip()!r}")
    return found
