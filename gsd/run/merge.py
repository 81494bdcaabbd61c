"""A complete plan's branch merged back `--no-ff` (SPEC 7 step 4).

STATE.md and ROADMAP.md are updated in the merge commit itself; a merge that cannot be
made leaves the plan complete on its branch and says why.
"""

from __future__ import annotations

import os

from gsd.core.errors import GsdError, logged
from gsd.formats.planning import summary
from gsd.io.git.branches import Branches, MergeRefused
from gsd.run.phaserun import PhaseRun, PlanEnd


def merge_plan(run: PhaseRun, end: PlanEnd) -> PlanEnd:
    """Merge a complete plan's branch back `--no-ff`, STATE.md and ROADMAP.md updated
    in the merge commit itself: a run killed before it commits merges again. The
    user's uncommitted files are never overwritten: such a merge does not start."""
    # one look at the files the bookkeeping may write, for the merge alone; the user's
    # other uncommitted files git itself keeps: a merge that would overwrite one never starts
    with run.effects.books.looking():
        return _merge(run, end)


def _merge(run: PhaseRun, end: PlanEnd) -> PlanEnd:
    journal, git = run.effects.journal, run.repo.git
    plan = end.plan
    branch = run.repo.worktrees.branch(plan.id)
    message = f"Merge branch '{branch}': plan {plan.id} complete\n"
    present = [
        p for p in Branches(git).added_by(branch) if os.path.lexists(run.read.project.root / p)
    ]
    ignored = sorted(set(present) - git.tracked_among(present)) if present else []
    if ignored:  # git would overwrite them (and an undone merge delete them)
        return _unmerged(
            run,
            end,
            branch,
            (
                f"it adds {', '.join(ignored[:5])}, which your checkout has as files git "
                "ignores: move them away"
            ),
        )
    try:
        conflicts = Branches(git).start_merge(branch, message)
    except MergeRefused as refused:
        return _unmerged(run, end, branch, _refusal(run, refused.paths))
    if conflicts:
        details = (
            f"merging {branch} conflicts in {', '.join(conflicts[:5])}; the branch is "
            f"kept: merge it by hand (git merge {branch}), then run again"
        )
        return _unmerged(run, end, branch, details, conflicts)
    try:
        sha = _commit_merge(run, end, branch, message)
    except GsdError as exc:  # a failing pre-commit hook, no identity, ...
        journal.event("merge", plan=plan.id, branch=branch, status="failed")
        journal.error(plan.phase, plan.id, "unknown", logged(exc), branch)
        return end._replace(
            status="failed",
            error_type="unknown",
            details=logged(exc),
            message=f"plan {plan.id}: merge failed: {exc}",
        )
    run.repo.worktrees.delete_branch(plan.id)  # merged: nothing left on it
    run.effects.say(f"plan {plan.id}: complete, merged {branch} ({sha[:7]})")
    return end


def _commit_merge(run: PhaseRun, end: PlanEnd, branch: str, message: str) -> str:
    """STATE.md and ROADMAP.md, the log lines, then the merge commit that carries them.
    Whatever fails on the way (a hook, an unwritable .planning/, a full disk, a signal
    that is not gsd's to handle), the merge is undone first: the user's checkout is
    never left half merged, and the plan's branch still holds its work."""
    books, journal, git = run.effects.books, run.effects.journal, run.repo.git
    plan = end.plan
    unmerged = run.read.phase.path / f"{plan.id}-SUMMARY.md"
    try:
        journal.event("merge", plan=plan.id, branch=branch, status="merged")
        # what changed is known: no `git status` over the tree for it
        books.pending()  # the log lines, flushed once (`unflush` takes them back)
        if not run.policy.commit_docs:  # the SUMMARY.md no commit on the branch carried
            summary.write(unmerged, end.summary)
        books.derive(flush=False)  # from the merged tree: its SUMMARY.md counts
        pending = sorted(books.written)
        paths = pending if run.policy.commit_docs else []
        sha = Branches(git).finish_merge(message, paths)
    except BaseException:
        if not run.policy.commit_docs:
            unmerged.unlink(missing_ok=True)  # not merged: the plan is not done here
        Branches(git).abort_merge()  # which also undoes the log lines flushed for it
        journal.unflush()
        books.undo(git)
        raise
    if paths:
        books.committed()
    return sha


def _refusal(run: PhaseRun, paths: list[str]) -> str:
    """Why git would not merge: the user's staged changes (a merge commit would take
    them in), or uncommitted or untracked files where the plan's branch writes."""
    staged = [p for p in run.repo.git.staged_paths() if p in paths]
    if staged:
        return (
            f"you have staged changes ({', '.join(staged[:5])}) that its merge "
            "commit would take in: commit or unstage them"
        )
    more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
    return (
        f"it would overwrite your uncommitted changes to {', '.join(paths[:5])}{more}: "
        "commit or stash them"
    )


def _unmerged(
    run: PhaseRun, end: PlanEnd, branch: str, why: str, conflicts: list[str] | None = None
) -> PlanEnd:
    """The plan is complete on its branch and stays there: one line says why and what
    to do; logged as gsd's merge failure, never against a specialist."""
    plan = end.plan
    details = (
        why
        if conflicts
        else (
            f"plan {plan.id} is complete on branch {branch} but not merged: {why}, then run "
            f"`gsd execute-phase {run.read.phase.number}` again (or `git merge --no-ff {branch}`)"
        )
    )
    run.effects.journal.event(
        "merge",
        plan=plan.id,
        branch=branch,
        status="conflict" if conflicts else "blocked",
        files=conflicts or [],
    )
    run.effects.journal.error(plan.phase, plan.id, "merge-conflict", details, branch)
    run.effects.say(f"plan {plan.id}: merge-conflict: {details}")
    return end._replace(
        status="failed",
        error_type="merge-conflict",
        details=details,
        message=f"plan {plan.id}: merge-conflict: {details}",
    )
