"""What `gsd verify` prints: a table of checks per plan, JSON, Markdown or JUnit XML."""

from __future__ import annotations

import json
from collections.abc import Sequence

from gsd.core.musthaves import Check
from gsd.io.plans.verify import PlanChecks
from gsd.output.views import table

MARKS = {"pass": "ok", "fail": "FAIL", "skip": "skip"}


def counts(checks: Sequence[Check]) -> dict[str, int]:
    return {s: sum(c.status == s for c in checks) for s in ("pass", "fail", "skip")}


def summary_line(plans: Sequence[PlanChecks]) -> str:
    """`12 checks: 10 passed, 1 failed, 1 skipped`, over every plan."""
    every = [c for p in plans for c in p.checks]
    n = counts(every)
    return f"{len(every)} checks: {n['pass']} passed, {n['fail']} failed, {n['skip']} skipped"


def as_dict(plans: Sequence[PlanChecks]) -> dict[str, object]:
    every = [c for p in plans for c in p.checks]
    return {
        "passed": not any(c.failed for c in every),
        "counts": counts(every),
        "plans": [
            {
                "plan": p.plan_id,
                "path": p.path,
                "passed": not any(c.failed for c in p.checks),
                "checks": [c._asdict() for c in p.checks],
            }
            for p in plans
        ],
    }


def render(plans: Sequence[PlanChecks], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(as_dict(plans), indent=2) + "\n"
    if fmt == "junit":
        return junit(plans)
    markdown = fmt == "markdown"
    out: list[str] = []
    for plan in plans:
        head = f"Plan {plan.plan_id or '?'} ({plan.path})"
        out.append(f"## {head}\n" if markdown else head)
        if not plan.checks:
            out.append("no must_haves to check and no @ references\n")
            continue
        rows = [_row(c) for c in plan.checks]
        out.append(table(rows, markdown) + "\n")
    out.append(summary_line(plans))
    return "\n".join(out) + "\n"


def _row(check: Check) -> dict[str, str]:
    return {
        "check": check.kind,
        "subject": check.subject,
        "result": MARKS[check.status],
        "detail": check.detail,
    }


def junit(plans: Sequence[PlanChecks]) -> str:
    """A test suite per plan, a test case per check: failed or skipped with its detail."""
    from gsd.formats.junit import Case, Failure, Suite, document  # lxml: only for junit

    suites = []
    for plan in plans:
        cases = [
            Case(
                name=f"{c.kind} {c.subject}",
                classname=f"gsd.verify.{plan.plan_id or plan.path}",
                failure=Failure(c.detail, c.kind, c.detail) if c.failed else None,
                skipped=c.detail if c.status == "skip" else None,
                output="" if c.failed or c.status == "skip" else c.detail,
            )
            for c in plan.checks
        ]
        suites.append(Suite(plan.plan_id or plan.path, cases))
    return document("gsd verify", suites)
