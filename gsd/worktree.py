"""Where the plans of a parallel wave run (SPEC 7 step 4): one `git worktree` per plan,
on branch `gsd/{plan}`, kept under .git/gsd/worktrees/ until the plan is merged back."""

from __future__ import annotations

import shutil
import sys
import threading
from pathlib import Path

from gsd.git import Git


def branch_of(plan_id: str) -> str:
    """`gsd/{phase}-{plan}`: plan ids already read `01-02`."""
    return f"gsd/{plan_id}"


class Worktrees:
    """The plan worktrees of one repository; safe to use from the threads of a wave."""

    def __init__(self, git: Git) -> None:
        self.git = git  # the main worktree, where plans are merged back
        self.folder = git.common_dir / "gsd" / "worktrees"
        self._lock = threading.Lock()  # worktrees are added and removed one at a time

    def has_branch(self, plan_id: str) -> bool:
        """A branch an earlier run left for this plan (its work continues there), other
        than the one checked out here (a CI job runs `execute-plan` on gsd/{plan})."""
        branch = branch_of(plan_id)
        with self._lock:
            if self.git.current_branch() == branch:
                return False
            return self.git.branch_tip(branch) is not None

    def path(self, plan_id: str) -> Path:
        """Where the plan's worktree is (or would be)."""
        return self.folder / plan_id

    def tip(self, plan_id: str) -> str | None:
        """The commit the plan's branch points at (None: no branch)."""
        with self._lock:
            return self.git.branch_tip(branch_of(plan_id))

    def open(self, plan_id: str, start: str) -> tuple[Git, list[str]]:
        """The plan's worktree: reused if it exists, else added on its branch (created at
        `start` when new). A checkpoint a killed run left open in it is rolled back first;
        the second value lists such checkpoints."""
        where = self.path(plan_id)
        # one `git worktree add` at a time: it reads the other worktrees' folders, and
        # fails on one being added; `worktree list` would too (so: no listing here)
        with self._lock:
            if not (where / ".git").is_file():
                if where.exists():  # a folder git no longer knows: ours, and stale
                    shutil.rmtree(where)
                where.parent.mkdir(parents=True, exist_ok=True)
                self.git.add_worktree(where, branch_of(plan_id), start)
        place = Git(where)
        recovery = place.recover(owned=True)
        for line in recovery.warnings:
            sys.stderr.write(f"gsd: warning: {line}\n")
        return place, recovery.rolled_back

    def close(self, plan_id: str) -> None:
        """Remove the plan's worktree folder; its branch keeps the work."""
        with self._lock:
            if self.path(plan_id).exists():
                self.git.remove_worktree(self.path(plan_id))

    def delete_branch(self, plan_id: str) -> None:
        """Delete the plan's branch (merged, or with nothing on it)."""
        with self._lock:
            self.git.delete_branch(branch_of(plan_id))

    def tidy(self) -> list[str]:
        """What a killed run left behind, put straight: checkpoints open in plan
        worktrees are rolled back, a half-done merge of a plan branch is aborted (the
        merge runs again), and worktrees and branches with nothing left to merge are
        removed. Returns one line per thing done."""
        done = []
        self.git.prune_worktrees()  # folders removed by hand
        for path, branch in self.git.worktrees().items():
            if branch is not None and branch.startswith("gsd/") and path != self.git.root:
                recovery = Git(path).recover(owned=True)  # a spawn a killed run left in it
                for tag in recovery.rolled_back:
                    done.append(f"rolled back {tag} in {branch}, left open by an interrupted run")
                done += recovery.warnings
        branches = self.git.plan_branches()
        here = self.git.current_branch()  # a CI job runs `execute-plan` on gsd/{plan}
        branches.pop(here or "", None)
        merging = self.git.merge_head()
        if merging is not None and merging in branches.values():
            self.git.abort_merge()
            done.append(f"aborted the merge of {_name_of(branches, merging)} a killed run left")
        for branch, tip in sorted(branches.items()):
            if self.git.head_contains(tip):
                self.close(branch.removeprefix("gsd/"))
                self.delete_branch(branch.removeprefix("gsd/"))
                done.append(f"removed {branch}: nothing on it left to merge")
        return done


def _name_of(branches: dict[str, str], sha: str) -> str:
    return next(name for name, tip in branches.items() if tip == sha)
