"""`gsd verify` on a plan that has just completed (SPEC 7 step 7, before its SUMMARY.md):
the checks go into the summary; with `verification.must_haves: fail` a failed check
fails the plan.

The error type is `validation-failed`: the tasks ran and a check of their result failed,
as when a task's `<verify>` command fails; it is final (gsd.core.outcomes.FINAL), which is
right because running the same plan again would meet the same missing file. A new type
would have to be taught to the error log's readers (`gsd errors --type`, SPEC 6) for no
difference in what gsd does next.
"""

from __future__ import annotations

from pathlib import Path

from gsd.formats import verification
from gsd.io.artifacts import PlanChecks, Tree, check_plan, plan_text
from gsd.io.git import Git
from gsd.run.phaserun import PhaseRun, PlanEnd

ERROR_TYPE = "validation-failed"


def check_complete_plan(run: PhaseRun, end: PlanEnd, place: Git) -> tuple[PlanEnd, str]:
    """The plan's end (failed when its must_haves fail and that is set to fail) and the
    `## Must-haves` section for its SUMMARY.md; `place` is where its work is checked out."""
    plan = end.plan
    tree = Tree(place.root, Path.home() if run.policy.outside_references == "check" else None)
    checked = check_plan(tree, plan, plan_text(place.root, plan))
    text = verification.section(checked.checks, run.policy.must_haves)
    if not checked.failed:
        return end, text
    said = _failures(checked)
    if run.policy.must_haves != "fail":
        run.effects.say(f"warning: plan {plan.id}: must_haves: {said} (see SUMMARY.md)")
        return end, text
    message = f"plan {plan.id}: must_haves not met: {said}"
    hint = "fix the work, or set verification.must_haves to warn in .planning/config.json"
    run.effects.journal.error(plan.phase, plan.id, ERROR_TYPE, f"{message}; {hint}", "verify")
    failed = end._replace(status="failed", message=message, error_type=ERROR_TYPE, details=text)
    return failed, text


def _failures(checked: PlanChecks) -> str:
    """`2 failed: src/a.py (file not found); ...`, the first three named."""
    failed = checked.failed
    named = "; ".join(f"{c.subject} ({c.detail})" for c in failed[:3])
    more = f"; {len(failed) - 3} more" if len(failed) > 3 else ""
    return f"{len(failed)} failed: {named}{more}"
