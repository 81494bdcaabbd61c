"""What `gsd report` prints: a run's timeline and totals as text, Markdown or JSON, its
tasks as JUnit XML."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from gsd.formats.execlog import soft_words, step_of
from gsd.output.estimateview import VERSUS_TITLE, versus_rows
from gsd.output.views import Row, render_rows

if TYPE_CHECKING:
    from gsd.commands.report import RunReport, TaskCase
    from gsd.formats.execlog import LogEvent


def render(report: RunReport, fmt: str) -> str:
    """`gsd.commands.report.build`'s timeline and totals, a table each (`(none)` for none)."""
    if fmt == "json":
        return json.dumps(report.to_json(), indent=2) + "\n"

    def table(rows: list[Row]) -> str:
        shown = [{k: ("not reported" if v is None else v) for k, v in r.items()} for r in rows]
        return render_rows(shown, fmt, "rows") if shown else "(none)\n"

    heading = "## {}" if fmt == "markdown" else "{}"
    sections = [
        ("Timeline", [asdict(r) for r in report.timeline]),
        (f"Per agent (retries: {report.retries})", [t.to_json("agent") for t in report.per_agent]),
        ("Per plan", [t.to_json("plan") for t in report.per_plan]),
        ("Token budgets", [asdict(b) for b in report.budgets]),
    ]
    if report.estimates:  # issue 25: each task's estimate against what it used
        sections.append((VERSUS_TITLE, versus_rows(report.estimates)))
    if report.reviews:  # the review gate's verdicts (issue 24), a row per review
        sections.append(("Reviews", [asdict(r) for r in report.reviews]))
    return "\n".join(
        line for title, rows in sections for line in (heading.format(title), "", table(rows))
    )


def junit(cases: list[TaskCase]) -> str:
    """`gsd report --format junit`: a test suite per plan, a test case per task; each
    attempt is a line of its output, a failed task's last attempt is its failure."""
    from gsd.commands.reportreviews import failure_details
    from gsd.formats.junit import Case, Failure, Suite, document  # lxml: only for junit

    suites: dict[str, list[Case]] = {}
    for case in cases:
        title = f"task {case.task}" + (f": {case.name}" if case.name else "")
        lines = "".join(line + "\n" for line in _case_lines(case))
        failure = None
        if case.outcome == "failed":
            last = case.attempts[-1]
            message = f"{case.why} (attempt {last.get('attempt', len(case.attempts))})"
            said = failure_details(case.why, case.reviews)  # a failed review: what it said
            failure = Failure(message + (f": {said}" if said else ""), case.why, lines)
        skipped = case.why if case.outcome == "skipped" else None
        seconds = case.seconds if case.attempts else None
        suites.setdefault(case.plan, []).append(
            Case(
                name=title,
                classname=f"plan {case.plan}",
                failure=failure,
                skipped=skipped,
                output=lines,
                seconds=seconds,
            )
        )
    return document("gsd report", [Suite(f"plan {plan}", found) for plan, found in suites.items()])


def _case_lines(case: TaskCase) -> list[str]:
    """A line per attempt, each after the lines of its reviews (logged before it)."""
    from gsd.commands.reportreviews import review_line

    reviews = list(case.reviews)
    lines = []
    for e in case.attempts:
        mine = [r for r in reviews if r.get("attempt") == e.get("attempt")][:1]
        reviews = [r for r in reviews if r not in mine]
        lines += [review_line(r) for r in mine] + [_attempt_line(e)]
    return lines + [review_line(r) for r in reviews]


def _attempt_line(e: LogEvent) -> str:
    """`attempt 2 (fallback): gsd-executor: timeout (12.5 s)`: the retry ladder's step
    in brackets, when the log has one."""
    how = "ok" if e.get("success") else str(e.get("error_type"))
    if e.get("success") and e.get("soft_success"):
        how = soft_words(e)
    seconds = e.get("duration_s")
    took = f" ({seconds} s)" if isinstance(seconds, (int, float)) else ""
    step = step_of(e)
    shown = f" ({step})" if step else ""
    return f"attempt {e.get('attempt', '?')}{shown}: {e.get('agent', '?')}: {how}{took}"
