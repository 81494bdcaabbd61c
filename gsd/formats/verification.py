"""The `## Must-haves` section gsd adds to a complete plan's SUMMARY.md: `gsd verify`'s
checks, one table row each, and a line that says whether they all passed."""

from __future__ import annotations

from collections.abc import Sequence

from gsd.core.musthaves import Check
from gsd.formats.lines import one_line, table_row

HEADING = "## Must-haves"
MARKS = {"pass": "ok", "fail": "FAIL", "skip": "skip"}


def section(checks: Sequence[Check], failing: str) -> str:
    """The section; `failing` is `verification.must_haves` (warn or fail), said beside
    a failure so a reader knows whether the plan was allowed to complete with it."""
    failed = sum(c.failed for c in checks)
    if not checks:
        verdict = "Nothing to check: no artifacts, key links or @ references."
    elif failed:
        verdict = f"{failed} of {len(checks)} checks failed (verification.must_haves: {failing})."
    else:
        verdict = f"All {len(checks)} checks passed or were skipped (see gsd verify)."
    lines = [HEADING, "", verdict]
    if checks:
        lines += ["", table_row(["Check", "Subject", "Result", "Detail"]), table_row(["---"] * 4)]
        lines += [
            table_row([c.kind, one_line(c.subject), MARKS[c.status], one_line(c.detail)])
            for c in checks
        ]
    return "\n".join(lines) + "\n"
