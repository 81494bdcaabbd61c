"""Checkpoints: a tag and a record before each spawn, rolled back or deleted after it."""

from __future__ import annotations

import os
import secrets
from datetime import datetime, timedelta, timezone
from pathlib import Path

from gsd.core.errors import GsdError
from gsd.core.ids import is_plan_id
from gsd.core.words import one_line, some
from gsd.formats import nofollow
from gsd.io import records
from gsd.io.git import guard as gitguard
from gsd.io.git import indexflags
from gsd.io.git.branches import Branches
from gsd.io.git.checkpointrecord import (
    CHECKPOINT_NAME,
    CHECKPOINT_PREFIX,
    STAMP,
    Checkpoint,
    CheckpointRecords,
    CheckpointTag,
    Kept,
)
from gsd.io.git.command import first_reason, split
from gsd.io.git.observe import Observer
from gsd.io.git.repo import REFS, Git, Status
from gsd.io.git.restore import PROTECTED_SCAN, STASH_LOG, ProtectedFiles, RefRestorer
from gsd.io.plans import specialfiles

TAG_TRIES = 20  # checkpoint tag names tried before giving up


class _TagTaken(GsdError):
    """A ref already has the checkpoint tag's name: another name is tried."""


class Checkpoints:
    """The checkpoints of one repository (or linked worktree)."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.records = CheckpointRecords(git)

    def create(
        self, plan_id: str, task: int, *, allow_dirty: bool = False, confined: bool = False
    ) -> Checkpoint:
        """Tag the current state before a spawn; never adds a commit to any branch.

        A dirty tree is refused unless `allow_dirty`; then the uncommitted work (index
        included) goes into a `git stash create` commit that only the tag points at. The
        .git internals, index flags, the stash list and ignored protected files are saved
        too (the internals for every spawn open in this process at once). `confined`: the
        agent cannot write any git directory (Landlock), so refs and internals are the
        user's to change meanwhile and are neither watched nor put back.
        """
        self._check_tag_name(plan_id, task)
        mark = self.git.ledger.now()
        special, named = specialfiles.walk(self.git.root)
        # git's listing of ignored protected files holds only paths with a protected name
        # in them: in a tree the walk found none in, it is empty, and not run
        sides = (PROTECTED_SCAN, REFS) if named else (REFS,)
        with self.git.side(*sides) as side:
            status = self.git.status()
            *listed, listing = side.results()
        scan = split(listed[0]) if listed else []
        refs = self.git.ref_table(listing)
        protected = ProtectedFiles(self.git).save(scan)
        head, snapshot = self._snapshot(status, f"{plan_id} task {task}", allow_dirty)
        refs["HEAD"] = f"ref: refs/heads/{status.branch}" if status.branch else head
        kept = Kept(
            protected=protected,
            stash_log=gitguard.save(self.git.common_dir, STASH_LOG),
            index_stamp=indexflags.index_stamp(self.git.index),
            special=special,
        )
        flags, foreign = self.git.index_flags(), tuple(sorted(self._foreign_branches()))
        tag = self._tag_name(plan_id, task)
        checkpoint = Checkpoint(
            tag=tag,
            head=head,
            branch=status.branch,
            snapshot=snapshot,
            untracked=tuple(sorted(status.untracked)),
            refs=refs,
            flags=flags,
            foreign=foreign,
            internals={},
            protected=gitguard.digests(protected),
            root=str(self.git.root),
            mark=mark,
            kept=kept,
            confined=confined,
        )
        for _ in range(TAG_TRIES):
            checkpoint = self._entered(checkpoint)
            try:
                self._record_and_tag(checkpoint, snapshot or head)
                return checkpoint
            except _TagTaken:  # a ref of that name already: another name, as good
                checkpoint = checkpoint._replace(tag=self._tag_name(plan_id, task))
        raise GsdError(f"cannot find a free checkpoint tag name for {plan_id} task {task}")

    def _entered(self, checkpoint: Checkpoint) -> Checkpoint:
        """The checkpoint with its .git internals watched under its tag (not when the
        agent is confined: then they are the user's to change)."""
        if checkpoint.confined:
            return checkpoint
        saved = gitguard.guard(self.git.common_dir).enter(checkpoint.tag, self.internal_roots())
        return checkpoint._replace(internals=gitguard.digests(saved))

    def _record_and_tag(self, checkpoint: Checkpoint, target: str) -> None:
        """The record before the tag: a run killed between the two leaves a record (the
        next run settles it; its tag may be gone), never a tag with no record."""
        try:
            self.records.save(checkpoint)
        except BaseException:  # a full disk leaves nothing behind
            self.delete(checkpoint)
            raise
        try:
            self._create_tag(checkpoint.tag, target)
        except GsdError:  # not ours to delete: the record goes
            self.records.remove(checkpoint.tag)
            gitguard.guard(self.git.common_dir).leave(checkpoint.tag)
            raise

    def _snapshot(self, status: Status, what: str, allow_dirty: bool) -> tuple[str, str | None]:
        """HEAD, and the uncommitted work as a `git stash create` commit (None: none); a
        repository without commits, or a dirty tree without `allow_dirty`, refused."""
        head = status.head
        if head is None:
            raise GsdError(
                f"the repository has no commits yet: {self.git.root}",
                hint="make an initial commit first",
            )
        self._refuse_dirt(status, allow_dirty)
        if not status.changed:
            return head, None
        message = f"gsd checkpoint {what}"
        return head, self.git.out("stash", "create", message).strip() or None

    def _refuse_dirt(self, status: Status, allow_dirty: bool) -> None:
        operation = self.git.operation_in_progress()
        if operation:
            raise GsdError(
                f"a {operation} is in progress in {self.git.root}", hint="finish or abort it first"
            )
        dirty = sorted(status.changed)
        if dirty and not allow_dirty:
            raise GsdError(
                f"working tree has uncommitted changes: {some(dirty)} in {self.git.root}",
                hint="commit or stash them, or pass --allow-dirty",
            )

    def rollback(self, cp: Checkpoint, *, recovery: bool = False) -> None:
        """Put branch, HEAD, refs, index and working tree back as they were at `cp`.

        Commits the agent made leave the branch, files it created are removed, tracked
        files revert, and a snapshot's uncommitted work is re-applied with its index.
        Every ref is put back (a branch checked out in another worktree only when it was
        deleted), the stash list too, index flags the agent set are cleared, .git
        internals and ignored protected files are restored exactly. Other ignored files
        are never touched, nor are untracked files that predate the checkpoint. On
        failure the tag is kept for a manual restore. In a `recovery` (after a killed
        run) refs are only re-created, never moved: the user may have worked since.
        """
        try:
            gitguard.guard(self.git.common_dir).changes(cp.tag)  # internals first: no hook runs
            Observer(self.git).clear_flags(cp)
            self.git.quit_operations()
            if cp.branch:
                own = f"refs/heads/{cp.branch}"
                self.git.git("update-ref", "-m", f"gsd rollback to {cp.tag}", own, cp.head)
                self.git.ledger.wrote(own, cp.head)
                self.git.git("symbolic-ref", "-m", f"gsd rollback to {cp.tag}", "HEAD", own)
            else:
                self.git.git("update-ref", "--no-deref", "HEAD", cp.head)
            RefRestorer(self.git).restore(cp, recovery=recovery)
            saved = self._save_untracked_in_index(cp)
            self.git.git("reset", "--hard", "-q", cp.head)
            self.git.remove_new_untracked(cp.untracked)
            for rel, kept in saved.items():
                _write_back(self.git.root / rel, kept)
            if cp.kept is not None:
                ProtectedFiles(self.git).restore(cp.kept.protected)
                specialfiles.remove(
                    self.git.root, specialfiles.new_since(self.git.root, cp.kept.special)
                )
            if cp.snapshot:
                self.git.git("stash", "apply", "--index", "-q", cp.snapshot)
        except (GsdError, OSError) as exc:
            raise GsdError(
                f"rollback to {cp.tag} failed: {one_line(str(exc))}",
                hint=f"the tag is kept; restore by hand with git reset --hard {cp.head}"
                + (f" && git stash apply --index {cp.snapshot}" if cp.snapshot else ""),
                details=getattr(exc, "details", ""),
            ) from exc
        self.delete(cp)

    def delete(self, cp: Checkpoint) -> None:
        """Remove the checkpoint tag and its record (a missing tag is not an error)."""
        self.git.ledger.wrote(cp.tag, "")  # first: no other task's watch blames an agent
        self.git.git("update-ref", "-d", cp.tag)
        self.records.remove(cp.tag)
        gitguard.guard(self.git.common_dir).leave(cp.tag)

    def drop(self, cp: Checkpoint) -> None:
        """Forget a checkpoint a killed run left open: its tag and record go, nothing
        is rolled back (its .git internals were never entered in this process)."""
        self.git.ledger.wrote(cp.tag, "")
        self.git.git("update-ref", "-d", cp.tag)
        self.records.remove(cp.tag)

    def squash_agent_commits(self, cp: Checkpoint) -> bool:
        """Commits the agent made on the checkpoint's branch become staged changes again
        (`reset --soft`), so gsd's one task commit carries all the work; True if any."""
        if cp.branch is None or self.git.symbolic_head() != f"refs/heads/{cp.branch}":
            return False
        head = self.git.current_head()  # no process in the common case
        if head is None or head == cp.head or not self.git.descends(head, cp.head):
            return False
        self.git.git("reset", "--soft", "-q", cp.head)
        self.git.ledger.wrote(f"refs/heads/{cp.branch}", cp.head)
        return True

    def tags(self) -> list[CheckpointTag]:
        """The checkpoint tags in the repository, oldest first; odd names are skipped."""
        found = []
        for ref, sha in self._checkpoint_refs():
            match = CHECKPOINT_NAME.match(ref)
            if match:
                created = datetime.strptime(match["stamp"], STAMP).replace(tzinfo=timezone.utc)
                found.append(
                    CheckpointTag(
                        tag=ref,
                        plan_id=match["plan"],
                        task=int(match["task"]),
                        created=created,
                        sha=sha,
                    )
                )
        return sorted(found, key=lambda cp: (cp.created, cp.tag))

    def prune(self, older_than: timedelta | None = None) -> list[str]:
        """Delete checkpoint tags (all, or those older than `older_than`); returns them.
        Their records stay: a gsd-owned worktree is still rolled back from its record."""
        if older_than is None:
            doomed = [ref for ref, _ in self._checkpoint_refs()]
        else:
            cutoff = datetime.now(timezone.utc) - older_than
            doomed = [cp.tag for cp in self.tags() if cp.created < cutoff]
        Branches(self.git).delete_refs(doomed, "gsd checkpoints prune")
        return doomed

    def _check_tag_name(self, plan_id: str, task: int) -> None:
        probe = f"{CHECKPOINT_PREFIX}{plan_id}/{task}-x"
        ordinary = is_plan_id(plan_id)  # 01-02, 02.1-01, 12A-03
        if not ordinary and self.git.git("check-ref-format", probe, ok=(0, 1)).status != 0:
            raise GsdError(
                f"plan id {plan_id!r} cannot be part of a git tag name",
                hint="use plan ids like 01-02",
            )

    def _tag_name(self, plan_id: str, task: int) -> str:
        """A checkpoint tag name (its time and 24 random bits). Not looked up: creating
        the tag fails when a ref has the name (`_create_tag`), and another is tried."""
        stamp = datetime.now(timezone.utc).strftime(STAMP)
        return f"{CHECKPOINT_PREFIX}{plan_id}/{task}-{stamp}-{secrets.token_hex(3)}"

    def _create_tag(self, tag: str, target: str) -> None:
        # In the ledger first: no other task's watch ever sees it as an agent's tag.
        self.git.ledger.wrote(tag, target)
        # An empty old value makes update-ref fail if the tag exists: no race.
        done = self.git.git("update-ref", "-m", "gsd checkpoint", tag, target, "", ok=(0, 128))
        if done.status != 0:
            self.git.ledger.forget(tag)
            if self.git.git("rev-parse", "--verify", "-q", tag, ok=(0, 1)).status == 0:
                raise _TagTaken(f"checkpoint tag {tag} exists")
            raise GsdError(
                f"cannot create checkpoint tag {tag}: {first_reason(done.stderr)}",
                hint="check that the repository is writable",
                details=done.stderr,
            )

    def _checkpoint_refs(self) -> list[tuple[str, str]]:
        out = self.git.out(
            "for-each-ref", "--format=%(refname)%00%(objectname)", "refs/tags/checkpoint/"
        )
        return [
            (name, sha)
            for name, _, sha in (line.partition("\0") for line in out.splitlines())
            if name
        ]

    def internal_roots(self) -> list[str]:
        """The internals to watch, relative to the common dir: its hooks, config and info/,
        and this worktree's own config.worktree."""
        roots = list(gitguard.INTERNALS)
        git_dir, common_dir = self.git.git_dir, self.git.common_dir
        if git_dir != common_dir and common_dir in git_dir.parents:
            roots.append(f"{git_dir.relative_to(common_dir).as_posix()}/config.worktree")
        return roots

    def _foreign_branches(self) -> set[str]:
        """Branches checked out in other worktrees of this repository (full ref names).

        Read from the worktrees' HEAD files, not `git worktree list`, which fails while
        another thread is adding a worktree (its folder is not complete yet)."""
        heads = [self.git.common_dir / "HEAD"]
        admin = self.git.common_dir / "worktrees"
        if records.safe_dir(admin):
            heads += [entry / "HEAD" for entry in admin.iterdir()]
        branches: set[str] = set()
        for head in heads:
            if head.parent == self.git.git_dir:
                continue  # this worktree's own
            text = (records.read_private(head, limit=4096) or b"").decode("utf-8", "replace")
            if text.startswith("ref: refs/heads/"):
                branches.add(text[len("ref: ") :].strip())
        return branches

    def _save_untracked_in_index(self, cp: Checkpoint) -> dict[str, gitguard.Saved]:
        """Pre-existing untracked files the agent staged; `reset --hard` would delete them."""
        indexed = set(split(self.git.out("ls-files", "-z", "--cached")))
        return {
            rel: saved
            for rel in cp.untracked
            if rel in indexed
            for saved in [gitguard.save(self.git.root, rel, cap=1 << 40)]
            if saved.kind in ("file", "link")
        }


def _write_back(path: Path, saved: gitguard.Saved) -> None:
    """An untracked file the agent staged, as it was (unless something is there now)."""
    if os.path.lexists(path) or saved.data is None:
        return
    try:  # no link an agent left on the way is followed (gsd.formats.nofollow)
        if saved.kind == "link":
            nofollow.symlink_new(path, os.fsdecode(saved.data))
        else:
            nofollow.write_new(path, saved.data, saved.mode)
    except nofollow.LinkInPath:
        return  # a link where the file was: the file is not written through it
