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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

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
from gsd.io.plans.sources import WorkingTree
from gsd.run.derivecache import DeriveCache, Summary
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


def gather(project: Project, cache: DeriveCache | None = None) -> Facts:
    """Every phase's plans as the files in the checkout say they stand; with `cache`
    (execute-phase's, `gsd.run.derivecache`), a phase folder's plans and a SUMMARY's
    facts are taken from it while their files are as they were."""
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
        find = summaries.finder(phase.path, whole)

        def facts_of(key: str, plan: Plan | Listed, found: Path | None) -> PlanFacts:
            mine = by_plan.get(key, [])
            return _plan_facts(project, found, plan, mine, failures_of(key), cache)

        plans = _kept_plans(project, phase, find, facts_of, cache)
        if plans is None:
            graph = project.phase_graph(phase)
            plans = [facts_of(key, plan, find(plan.id)) for key, plan in graph.plans.items()]
            if cache is not None:
                _keep_plans(project, phase, graph.plans, cache)
        days.update(facts.day for facts in plans)
        key = phase_key(phase.number.strip())
        title = (titles.get(key) if key is not None else None) or _title(phase)
        phases.append(PhaseFacts(phase, title, tuple(plans)))
    last = max((d for d in days if d), default=None)
    keys = {phase_key(p.phase.number) for p in phases}
    listed = roadmap.listed_phases(road_text) | {k for k in keys if k is not None}
    # `Phase: 10 of 6` where folders or a collapsed milestone skip numbers: never N > M
    count = max([len(listed), *(key[0] for key in listed)])
    return Facts(tuple(phases), last, tuple(warnings), count)


class Listed(NamedTuple):
    """A plan as the cache keeps it: what a done plan's facts need of it."""

    id: str
    path: str
    tasks: int


def _plan_files(project: Project, phase: Phase) -> tuple[str, list[str]] | None:
    """The phase folder (repo-relative) and its plan files, as `phase_plans` lists them;
    None where the cache does not apply (plans read from git, or a folder elsewhere)."""
    if not isinstance(project.source, WorkingTree):
        return None
    try:
        rel = phase.path.relative_to(project.root).as_posix()
    except ValueError:
        return None
    return rel, list(project.plan_files(rel))


def _kept_plans(
    project: Project,
    phase: Phase,
    find: Callable[[str], Path | None],
    facts_of: Callable[[str, Plan | Listed, Path | None], PlanFacts],
    cache: DeriveCache | None,
) -> list[PlanFacts] | None:
    """The phase's plans' facts from the cache's listing, when it holds one for the
    folder as it is and every plan is done (a plan that is not may have a blocker, which
    needs the plan itself); else None (the phase graph is read)."""
    where = _plan_files(project, phase) if cache is not None else None
    kept = cache.folder(where[0], where[1], project.root) if cache and where else None
    if kept is None:
        return None
    plans = []
    for key, plan_id, path, tasks in kept:
        found = find(plan_id)
        if found is None:
            return None
        plans.append(facts_of(key, Listed(plan_id, path, tasks), found))
    return plans


def _keep_plans(project: Project, phase: Phase, graph: dict[str, Plan], cache: DeriveCache) -> None:
    where = _plan_files(project, phase)
    plans = [project.plan(path) for path in where[1]] if where else []
    if where is not None and all(plan.readable for plan in plans):
        listed = [(key, plan.id, plan.path, len(plan.tasks)) for key, plan in graph.items()]
        cache.keep_folder(where[0], where[1], project.root, listed)


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
    plan: Plan | Listed,
    events: list[dict[str, Any]],
    errors: list[ErrorRecord],
    cache: DeriveCache | None = None,
) -> PlanFacts:
    where = Path(plan.path)
    path = (where.relative_to(project.root) if where.is_absolute() else where).as_posix()
    tasks = plan.tasks if isinstance(plan, Listed) else len(plan.tasks)
    base = PlanFacts(plan.id, path, tasks, found is not None, active=bool(events or errors))
    if found is None:
        assert isinstance(plan, Plan)  # the cache lists done plans only
        return PlanFacts(**{**base.__dict__, "blocker": _blocker(project, plan, events, errors)})
    day, minutes, files = _summary_facts(project, found, cache)
    return PlanFacts(**{**base.__dict__, "day": day, "minutes": minutes, "files": files})


def _summary_facts(project: Project, found: Path, cache: DeriveCache | None) -> Summary:
    """(day, minutes, files) of a SUMMARY.md: its `completed` date, `duration` in whole
    minutes (at least 1), and how many key-files it lists."""
    rel = found.relative_to(project.root).as_posix() if cache is not None else ""
    kept = cache.summary(rel, found) if cache is not None else None
    if kept is not None:
        return kept
    front = summaryread.load(found)
    key_files = front.get("key-files")
    files = 0
    if isinstance(key_files, dict):
        files = sum(len(v) for v in key_files.values() if isinstance(v, list))
    seconds = _seconds(str(front.get("duration", "")))
    minutes = None if seconds is None else max(1, round(seconds / 60))
    facts = (_day(front.get("completed")), minutes, files)
    if cache is not None:
        cache.keep_summary(rel, found, facts)
    return facts


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
            if isinstance(last_move.get("proposal"), str):  # a plan-first task's proposal
                details = (
                    f"task {task.index} waits for approval of its proposal "
                    f"{last_move['proposal']} (then `gsd approve {plan.id} --task {task.index}`)"
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
        moment = parse_timestamp(str(value))
    except (ValueError, IndexError):
        return None
    # what strftime("%Y-%m-%d") writes, without its cost (10,000s of events); a year
    # before 1000 as strftime writes it (the C library's, unpadded here)
    return moment.date().isoformat() if moment.year >= 1000 else moment.strftime("%Y-%m-%d")


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
