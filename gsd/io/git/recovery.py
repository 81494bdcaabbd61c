"""Checkpoints a killed run left open: rolled back, dropped, or reported, never guessed at."""

from __future__ import annotations

from typing import NamedTuple

from gsd.core.errors import GsdError
from gsd.core.words import some
from gsd.io.git import guard as gitguard
from gsd.io.git import salvage
from gsd.io.git.checkpoint import Checkpoints
from gsd.io.git.checkpointrecord import CHECKPOINT_NAME, Checkpoint, CheckpointRecords
from gsd.io.git.commits import Commits
from gsd.io.git.observe import Observer
from gsd.io.git.repo import Git
from gsd.io.git.restore import ProtectedFiles


class Recovery(NamedTuple):
    """What `recover` did with the checkpoints a killed run left open."""

    rolled_back: list[str]  # tags rolled back
    dropped: list[str]  # tags removed without a rollback (task committed, nothing to undo)
    warnings: list[str]  # records ignored and things not put back, one line each


class OpenCheckpoints:
    """The checkpoints a killed run left open in one worktree, from their signed records."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.records = CheckpointRecords(git)
        self.checkpoints = Checkpoints(git)
        # tag rolled back by `recover` -> the salvage ref its spawn's changes are kept under
        self.salvaged: dict[str, str] = {}

    def recover(self, *, owned: bool) -> Recovery:
        """Settle every checkpoint a killed run left open here.

        In a gsd-owned worktree (`owned`) the signed record alone is enough (its tag may
        be gone): the half-done spawn is rolled back, unless its task was committed (the
        tag just goes) or later tasks were (nothing is rolled back; a warning says so);
        what a rolled-back spawn changed is kept under a salvage ref first.
        In the user's own checkout nothing is ever reset: a checkpoint with nothing
        changed since is dropped, anything else is a GsdError saying what to do. Changed
        .git internals are an error either way: gsd runs no git command over them.
        """
        found, warnings = self.records.load_all()
        rolled, dropped = [], []
        for cp in found:
            if not cp.confined:  # an agent that could write no .git changed none of it
                self._refuse_changed_internals(cp)  # before any git command
            mismatch = self._mismatch(cp)
            if mismatch:
                warnings.append(
                    f"ignored {self.records.path(cp.tag)}: {mismatch} (gsd acts "
                    "only on records it wrote)"
                )
                self.records.remove(cp.tag)
            elif not owned:
                self._settle_in_user_checkout(cp)
                dropped.append(cp.tag)
            elif self._committed_since(cp):
                self.checkpoints.drop(cp)  # killed after the task commit: the work stays
                dropped.append(cp.tag)
            elif self._tasks_after(cp):
                self.checkpoints.drop(cp)
                dropped.append(cp.tag)
                warnings.append(f"did not roll back {cp.name}: tasks were committed after it")
            else:
                kept, failed = self._salvage(cp)
                self.checkpoints.rollback(cp, recovery=True)
                rolled.append(cp.tag)
                self.salvaged.update({cp.tag: kept} if kept else {})
                warnings += [failed] if failed else []
                warnings += self._protected_warnings(cp)
        return Recovery(rolled_back=rolled, dropped=dropped, warnings=warnings)

    def _salvage(self, cp: Checkpoint) -> tuple[str | None, str]:
        """The killed spawn's changes kept under a salvage ref before its rollback (None:
        nothing to keep), or why they could not be ("" when they could): the rollback
        goes on either way. Kept ones are in `salvaged`."""
        try:
            return salvage.keep_killed(self.git, cp, Observer(self.git).changed_files(cp)), ""
        except (GsdError, OSError) as exc:
            return None, f"{cp.name}: {salvage.describe(exc)}"

    def drop(self) -> list[str]:
        """Forget every open checkpoint here without rolling anything back (`gsd
        checkpoints prune` in the user's checkout): tags and records go; returns the tags."""
        found, _ = self.records.load_all()
        for cp in found:
            self.checkpoints.drop(cp)
        return [cp.tag for cp in found]

    def _mismatch(self, cp: Checkpoint) -> str:
        """Why a signed record does not fit the repository ("" when it does)."""
        tip = self.git.out("rev-parse", "--verify", "-q", cp.tag, ok=(0, 1)).strip()
        if tip and tip not in (cp.head, cp.snapshot):
            return f"its tag {cp.name} points elsewhere"
        known = self.git.git("cat-file", "-e", f"{cp.head}^{{commit}}", ok=(0, 1, 128))
        if known.status != 0:
            return f"its commit {cp.head} is not in the repository"
        return ""

    def _refuse_changed_internals(self, cp: Checkpoint) -> None:
        roots = self.checkpoints.internal_roots()
        now = gitguard.digests(gitguard.save_tree(self.git.common_dir, roots))
        before = {rel: value for rel, value in cp.internals.items() if _within(rel, roots)}
        changed = sorted(rel for rel in set(now) | set(before) if now.get(rel) != before.get(rel))
        if changed:
            raise GsdError(
                f".git/{some(changed)} changed since checkpoint {cp.name} of an interrupted "
                f"run in {self.git.root}",
                hint="gsd cannot tell its agent's change from yours and runs no git command "
                "over them: check them, then run gsd checkpoints prune",
            )

    def _settle_in_user_checkout(self, cp: Checkpoint) -> None:
        status = self.git.status()
        changed = [] if status.head != cp.head else Observer(self.git).changed_files(cp)
        changed += self._protected_warnings(cp, paths_only=True)
        if status.head == cp.head and status.branch == cp.branch and not changed:
            self.checkpoints.drop(cp)
            return
        settled = (
            status.branch == cp.branch
            and status.head is not None
            and not status.changed
            and not changed
            and self.git.descends(status.head, cp.head)
        )
        if settled:  # the user committed what was there since (as gsd's error asked)
            self.checkpoints.drop(cp)
            return
        what = some(sorted(set(changed))) if changed else f"HEAD (no longer {cp.head[:12]})"
        raise GsdError(
            f"checkpoint {cp.name} of an interrupted run is still open in {self.git.root}: "
            f"{what} differ from it; they may be its agent's or yours, so gsd leaves them",
            hint=f"inspect them with git status and git diff, then drop them (git reset --hard "
            f"{cp.head}) or commit them, then run gsd checkpoints prune",
        )

    def _protected_warnings(self, cp: Checkpoint, *, paths_only: bool = False) -> list[str]:
        protected = ProtectedFiles(self.git)
        now = gitguard.digests(protected.save(protected.scan()))
        before = cp.protected
        changed = sorted(rel for rel in set(now) | set(before) if now.get(rel) != before.get(rel))
        if paths_only or not changed:
            return changed
        return [f"{some(changed)} (ignored) changed since {cp.name}; gsd kept no copy to restore"]

    def _committed_since(self, cp: Checkpoint) -> bool:
        """Whether the checkpoint's task was committed on top of it (gsd was killed between
        the task commit and the tag's removal)."""
        match = CHECKPOINT_NAME.match(cp.tag)
        if match is None or self.git.head() is None or not self.git.descends("HEAD", cp.head):
            return False
        task_id = f"{match['plan']}-{match['task']}"
        return task_id in Commits(self.git).committed_tasks(since=cp.head)

    def _tasks_after(self, cp: Checkpoint) -> bool:
        """Whether any task was committed on top of the checkpoint: an old record (copied
        back by an agent) must not rewind them."""
        head = self.git.head()
        return (
            head is not None
            and self.git.descends(head, cp.head)
            and bool(Commits(self.git).committed_tasks(since=cp.head))
        )


def _within(rel: str, roots: list[str]) -> bool:
    return any(rel == root or rel.startswith(root + "/") for root in roots)
