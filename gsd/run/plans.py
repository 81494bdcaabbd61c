"""One plan run in its own worktree, or in the user's checkout (the opt-in).

When it completes, its SUMMARY.md is written and committed (SPEC 7 step 7).
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from pathlib import Path

from gsd.core.errors import GsdError
from gsd.core.models import Plan
from gsd.formats.planning import attempts, summary
from gsd.io.git.branches import Branches
from gsd.io.git.commits import Commits
from gsd.io.git.repo import Git
from gsd.io.plans import verify as artifacts
from gsd.run import taskgate
from gsd.run.phaserun import PhaseRun, PlanEnd
from gsd.run.tasks import run_tasks


def run_in_place(run: PhaseRun, plan: Plan, wave: int) -> PlanEnd:
    """A plan run in the user's checkout itself (`workflow.use_worktrees: false`, the
    opt-in), its bookkeeping committed when it ends."""
    git, books, phase = run.repo.git, run.effects.books, run.read.phase
    end = run_tasks(run, plan, wave, git, run.repo.committed)
    if end.status == "complete":
        end, checked = check_complete_plan(run, end, git)
    if end.status == "complete":
        # 7. SUMMARY.md, then STATE.md and ROADMAP.md derived from it (a plan is done
        # when its SUMMARY is there), all in one docs commit
        text = plan_summary(run, end, git) + "\n" + checked
        summary.write(phase.path / f"{plan.id}-SUMMARY.md", text)
        written = phase.path / f"{plan.id}-SUMMARY.md"
        books.written.add(written.relative_to(run.read.project.root).as_posix())
        run.effects.journal.plan_event(plan.id, "plan-complete")
        books.derive()
        books.commit(f"docs({plan.id}): complete plan")
        run.effects.say(f"plan {plan.id}: complete")
    return end


def run_in_worktree(
    run: PhaseRun,
    plan: Plan,
    wave: int,
    start: str,
    slot: AbstractContextManager[object] | None = None,
) -> PlanEnd:
    """A plan run in its own worktree; when complete, its SUMMARY.md is committed on
    its branch, and STATE.md and ROADMAP.md wait for the merge (`merge_plan`). Its
    tasks run holding `slot` (one of the wave's agents at once), the worktree made
    before and the SUMMARY.md committed after, while other plans' agents run."""
    worktrees, journal = run.repo.worktrees, run.effects.journal
    try:
        place, recovered = worktrees.open(plan.id, start)
    except GsdError as exc:  # logged: STATE.md's blocker is derived from the log
        journal.error(plan.phase, plan.id, "unknown", str(exc), "worktree")
        return PlanEnd(
            plan=plan,
            status="failed",
            message=f"plan {plan.id}: {exc}",
            error_type="unknown",
            details=str(exc),
        )
    for tag in recovered:
        run.effects.say(f"rolled back {tag}, left open by an interrupted run")
    with slot or contextlib.nullcontext():
        end = run_tasks(run, plan, wave, place, Commits(place).committed_tasks())
    if end.status == "complete":
        end, checked = check_complete_plan(run, end, place)
    if end.status == "complete":
        end = end._replace(summary=plan_summary(run, end, place) + "\n" + checked)
        if run.policy.commit_docs:  # else it is written after the merge (`merge_plan`)
            _commit_plan_docs(run, end, place)
    else:  # its lines are the run's to commit: its branch carries none of them
        journal.hand_over(plan.id)
    # the branch keeps the work; the folder goes now, while other plans still run
    worktrees.close(plan.id)
    if end.status != "complete" and worktrees.tip(plan.id) == start:
        worktrees.delete_branch(plan.id)  # nothing on it yet: leave nothing
    elif end.status != "complete" and worktrees.on_checkout(plan.id):
        _keep_on_checkout(run, plan)
    return end


def _keep_on_checkout(run: PhaseRun, plan: Plan) -> None:
    """A plan paused or failed in a checkout of its own branch gsd/{plan} (a CI job):
    its committed tasks go onto that branch (a fast-forward), which the job pushes and
    the next run there continues. gsd/{plan}-run keeps them when that cannot be."""
    run_branch = run.repo.worktrees.branch(plan.id)
    if Branches(run.repo.git).fast_forward(run_branch):
        run.repo.worktrees.delete_branch(plan.id)
    else:
        run.effects.say(
            f"warning: plan {plan.id}: its committed tasks stay on {run_branch}: "
            f"{run.repo.worktrees.here} could not be fast-forwarded to it"
        )


def plan_summary(run: PhaseRun, end: PlanEnd, place: Git) -> str:
    """The SUMMARY.md of a complete plan, from its whole history: the attempts of
    earlier runs in the logs, this run's, and its task commits on `place`'s branch."""
    plan = end.plan
    planning_rel = run.read.project.planning.relative_to(run.read.project.root)
    earlier = attempts.logged_attempts(
        plan.id, dict.fromkeys([run.read.project.planning, place.root / planning_rel])
    )
    outcomes, created = attempts.with_commits(
        plan.id, [*earlier, *end.attempts], Commits(place).plan_task_commits(plan.id)
    )
    now = datetime.now(timezone.utc)
    started, finished = end.started or now, end.finished or now
    before = sum(o.duration_s for o in earlier)  # agent time of earlier runs
    text = summary.render(
        phase_dir=run.read.phase.name,
        plan_id=plan.id,
        plan_frontmatter=plan.frontmatter,
        outcomes=outcomes,
        task_names={t.index: t.name for t in plan.tasks},
        started=started,
        finished=finished,
        created=created,
        seconds=(finished - started).total_seconds() + before,
    )
    proposals = taskgate.summary_lines(run, plan.id)  # plan-first tasks' proposals
    return f"{text}\n{proposals}" if proposals else text


def _commit_plan_docs(run: PhaseRun, end: PlanEnd, place: Git) -> None:
    """The plan's docs commit on its branch: its SUMMARY.md, its RESULT file and its
    own log lines, nothing else (a file the user's branch changed since the plan's
    branch left it stays for the merge: both changing it would conflict)."""
    plan = end.plan
    run.effects.journal.plan_event(plan.id, "plan-complete")
    tip = place.head() or "HEAD"
    changed = Branches(run.repo.git).changed_since_fork(
        tip,
        [
            run.effects.journal.plan_log(plan.id),
            *(
                t
                for t in run.effects.journal.kept_targets()
                if t.endswith(f"/{plan.id}-RESULT.txt")
            ),
        ],
    )
    paths = run.effects.journal.flush_plan(plan.id, place.root, lambda t: t not in changed)
    written = _summary_folder(run, place.root) / f"{plan.id}-SUMMARY.md"
    summary.write(written, end.summary)
    Commits(place).commit_docs(
        f"docs({plan.id}): plan summary", [written.relative_to(place.root).as_posix(), *paths]
    )


def _summary_folder(run: PhaseRun, root: Path) -> Path:
    """The phase folder in a checkout at `root` (the repository or a worktree)."""
    return root / run.read.phase.path.relative_to(run.read.project.root)


# gsd verify on a plan that has just completed (SPEC 7 step 7, before its SUMMARY.md):
# the checks go into the summary; with `verification.must_haves: fail` a failed check
# fails the plan. The error type is `validation-failed`, as when a task's `<verify>`
# command fails: final (gsd.core.verdict.outcomes.FINAL), since running the same plan again would
# meet the same missing file.
ERROR_TYPE = "validation-failed"


def check_complete_plan(run: PhaseRun, end: PlanEnd, place: Git) -> tuple[PlanEnd, str]:
    """The plan's end (failed when its must_haves fail and that is set to fail) and the
    `## Must-haves` section for its SUMMARY.md; `place` is where its work is checked out."""
    plan = end.plan
    tree = artifacts.Tree(
        place.root, Path.home() if run.policy.outside_references == "check" else None
    )
    checked = artifacts.check_plan(tree, plan, artifacts.plan_text(place.root, plan))
    text = artifacts.section(checked.checks, run.policy.must_haves)
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


def _failures(checked: artifacts.PlanChecks) -> str:
    """`2 failed: src/a.py (file not found); ...`, the first three named."""
    failed = checked.failed
    named = "; ".join(f"{c.subject} ({c.detail})" for c in failed[:3])
    more = f"; {len(failed) - 3} more" if len(failed) > 3 else ""
    return f"{len(failed)} failed: {named}{more}"
