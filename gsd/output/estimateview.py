"""How estimates are said (issue 25): a task's line and the phase's total in the dry run,
its Markdown table, and `gsd report`'s estimate against actual."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

from gsd.core.words import plural
from gsd.output.views import Added, Row, render_dispatch, table

if TYPE_CHECKING:
    from gsd.commands.estimate import PhaseEstimates, Versus
    from gsd.core.estimate import Estimate, PhaseEstimate, Spread
    from gsd.io.dispatch import TaskDispatch


def render(phase: str, tasks: list[TaskDispatch], fmt: str, found: PhaseEstimates) -> str:
    """The dry run with its estimates: each task's (JSON: its `estimate` key, null for a
    task a person answers) and the phase's total (JSON: the top-level `estimate`)."""
    if fmt == "markdown":
        return markdown(phase, found)
    added = Added(
        fields=[{"estimate": e.estimate.to_json() if e.estimate else None} for e in found.tasks],
        lines=[
            [f"  estimate: {task_line(e.estimate, e.agent, e.runner)}"] if e.estimate else []
            for e in found.tasks
        ],
        body={"estimate": found.total.to_json()},
        footer=["", f"Phase {phase} {total_line(found.total)}"],
    )
    return render_dispatch(phase, tasks, fmt, added)


def tokens(value: float) -> str:
    return f"{round(value):,}"


def dollars(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.01 or value == 0 else f"${value:.4f}"


def seconds(value: float) -> str:
    return f"{_number(value)} s"


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _figure(spread: Spread, show: Callable[[float], str], unit: str = "") -> str:
    return f"{show(spread.median)}{unit} ({show(spread.low)}-{show(spread.high)})"


def task_line(found: Estimate, agent: str, runner: str | None) -> str:
    """`3,000 tokens (2,000-4,000), $0.12 ($0.10-$0.15), 41 s (30-60); median of 5
    runs of AGENT on RUNNER, range min-max`, or `no history` and why."""
    if found.no_history:
        return f"no history (no successful run of {agent} on {runner} in .planning/logs/)"
    parts = []
    if found.tokens:
        parts.append(_figure(found.tokens, tokens, " tokens"))
    if found.cost_usd:
        parts.append(_figure(found.cost_usd, dollars))
    if found.seconds:
        parts.append(_figure(found.seconds, _number, " s"))
    kind = next(s.kind for s in (found.tokens, found.cost_usd, found.seconds) if s) if parts else ""
    said = ", ".join(parts) or "no figures reported"
    ranged = f", range {kind}" if kind else ""
    return f"{said}; median of {plural(found.runs, 'run')} of {agent} on {runner}{ranged}"


def total_line(total: PhaseEstimate) -> str:
    """The phase's total: the sum of its tasks' medians, and how many have no history."""
    parts = []
    if total.tokens is not None:
        parts.append(f"{tokens(total.tokens)} tokens")
    if total.cost_usd is not None:
        parts.append(dollars(total.cost_usd))
    if total.seconds is not None:
        parts.append(seconds(total.seconds))
    said = ", ".join(parts) or "nothing to go on"
    missing = ""
    if total.no_history:
        missing = (
            f"; {plural(total.no_history, 'task')} of {total.tasks} with no history, not counted"
        )
    counted = plural(total.tasks - total.no_history, "task")
    return f"estimate: {said} (sum of the medians of {counted}){missing}"


def markdown(phase: str, found: PhaseEstimates) -> str:
    """The dry run as Markdown: a row per task with its estimate, then the total."""
    rows: list[Row] = []
    for t in found.tasks:
        e = t.estimate
        rows.append(
            {
                "plan": t.plan,
                "task": t.task,
                "agent": t.agent if t.runner else "(a person)",
                "runner": t.runner or "-",
                "runs": e.runs if e else "-",
                "tokens": _median(e.tokens if e else None, tokens),
                "cost": _median(e.cost_usd if e else None, dollars),
                "seconds": _median(e.seconds if e else None, _number),
            }
        )
    head = f"## Phase {phase}: dry run, {plural(len(rows), 'task')}"
    return f"{head}\n\n{table(rows, True)}\n\n{total_line(found.total)}\n"


def _median(spread: Spread | None, show: Callable[[float], str]) -> str:
    if spread is None:
        return "no history"
    return f"{show(spread.median)} ({show(spread.low)}-{show(spread.high)})"


def versus_rows(rows: list[Versus]) -> list[dict[str, object]]:
    """`gsd report`'s rows (text, Markdown): an estimate with no run before it says so."""
    shown = []
    for row in rows:
        data = asdict(row)
        if row.runs == 0:
            data.update(
                dict.fromkeys(
                    ("tokens_estimate", "cost_estimate", "seconds_estimate"), "no history"
                )
            )
        shown.append(data)
    return shown


VERSUS_TITLE = "Estimate against actual (median of the runs logged before each run)"
