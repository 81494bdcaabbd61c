"""`gsd errors`: the failed attempts of past runs that the filters keep, and the warnings
that go with them (bad log lines, delegations past their warn budget)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from gsd.core import layout

if TYPE_CHECKING:
    from gsd.formats.errorlog import ErrorRecord
    from gsd.formats.execlog import LogEvent


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
    from gsd.io.plans.project import find_root

    root = find_root(Path.cwd())
    named = parse_phase_name(phase) if phase is not None else None
    events, records, warnings = errorlog.read_logs(root / layout.PLANNING)
    if phase is not None and (
        (named is not None and named.slug)  # `01-nope` is not phase 01
        or not errorlog.filter_records(records, phase=phase)  # a phase gone keeps its log
    ):
        from gsd.io.plans.phases import resolve_phase

        resolve_phase(root / layout.PLANNING, phase)
    if plan_id is not None and not errorlog.filter_records(records, phase=phase, plan=plan_id):
        _known_plan(root, plan_id, phase)
    if error_type is None:  # a delegation past its warn budget: a warning, not a failure
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
    from gsd.io.plans.project import Project

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


def _wanted(event: LogEvent, plan_id: str | None, specialist: str | None) -> bool:
    """Whether `gsd errors --plan/--specialist` keeps an event (a plan as `02` or `01-02`)."""
    plan = str(event.get("plan", ""))
    if plan_id is not None and plan != plan_id and not plan.endswith(f"-{plan_id}"):
        return False
    return specialist is None or event.get("agent") == specialist


def over_budget_warnings(events: Iterable[LogEvent]) -> list[str]:
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
