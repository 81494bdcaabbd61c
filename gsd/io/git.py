"""One repository as gsd drives it: checkpoints, rollback, task commits, worktrees, merges."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple

from gsd.core.enforce import PROTECTED_PATTERNS
from gsd.core.errors import GsdError, InputError
from gsd.core.ids import is_plan_id
from gsd.core.outcomes import TaskCommit
from gsd.io import gitguard, gitread, indexflags, records, refledger
from gsd.io.gitread import parse_task_log, task_log_args

try:
    import git  # noqa: F401 - its import is the check that git runs (see below)
except ImportError as exc:  # GitPython refuses to import when it finds no git executable
    _said = str(exc).strip()
    raise GsdError(
        f"cannot use git: {_said.splitlines()[0] if _said else type(exc).__name__}",
        hint="install git, or point GIT_PYTHON_GIT_EXECUTABLE at it",
        details=_said,
    ) from exc

# GitPython's import found git (honouring GIT_PYTHON_GIT_EXECUTABLE) and checked that it
# runs; every command is then started by gsd.io.gitread (the same program), which drops the
# GIT_* variables a parent git exports and ends a command that outlives its timeout
# (GitPython's launcher only adds to the environment and waits for ever).

CHECKPOINT_PREFIX = "refs/tags/checkpoint/"
PLAN_BRANCH_PREFIX = "refs/heads/gsd/"
_STAMP = "%Y%m%dT%H%M%SZ"
_CHECKPOINT_NAME = re.compile(
    r"^refs/tags/checkpoint/(?P<plan>.+)/(?P<task>\d+)-(?P<stamp>\d{8}T\d{6}Z)-[0-9a-z]+$"
)
# State files of an operation that stops half way; checkpoints refuse to start inside one.
_OPERATIONS = {
    "rebase-merge": "rebase",
    "rebase-apply": "rebase or am",
    "MERGE_HEAD": "merge",
    "CHERRY_PICK_HEAD": "cherry-pick",
    "REVERT_HEAD": "revert",
}
_NOT_DESCENDANT = "moved to a commit that does not descend from the checkpoint"
_SHA_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")

# Commands that only read: with GIT_OPTIONAL_LOCKS=0 their index refresh takes no
# index.lock, so gsd's own `git status` never makes another git (or gsd) fail.
_READ_ONLY = {"status", "diff", "diff-tree", "ls-files", "for-each-ref", "rev-parse", "log",
              "merge-base", "cat-file", "rev-list"}  # fmt: skip
_LOCKED = re.compile(r"Unable to create '(?P<path>[^']*\.lock)': File exists")
LOCK_WAIT_S = 10.0  # how long a command waits, in all, for another git's index.lock
_PROTECTED_SCAN = (
    "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--",
    *(f":(glob)**/{pattern}" for pattern in PROTECTED_PATTERNS),
)  # fmt: skip
_STASH_LOG = "logs/refs/stash"


class Kept(NamedTuple):
    """What a checkpoint keeps byte for byte in this process only (never in its record)."""

    protected: dict[str, gitguard.Saved]  # ignored .env*, *.pem, *.key files
    stash_log: gitguard.Saved  # the stash list (refs/stash's reflog)
    index_stamp: tuple[int, int, int, int] | None  # the index file's stamp: same stamp, same flags


class Checkpoint(NamedTuple):
    """Everything needed to put a repository back exactly as it was before a spawn."""

    tag: str  # full ref name under refs/tags/checkpoint/
    head: str  # the commit HEAD pointed at
    branch: str | None  # short branch name, None when HEAD was detached
    snapshot: str | None  # stash-like commit of uncommitted work (--allow-dirty), or None
    untracked: tuple[str, ...]  # untracked, non-ignored paths that predate the checkpoint
    refs: dict[str, str]  # snapshot_refs() at checkpoint time
    flags: dict[str, str]  # index entries flagged assume-unchanged/skip-worktree (the user's)
    foreign: tuple[str, ...]  # branches then checked out in other worktrees (full names)
    internals: dict[str, str]  # fingerprints of .git hooks, config, info/ (for recovery)
    protected: dict[str, str]  # fingerprints of ignored .env*, *.pem, *.key files
    root: str  # the worktree it belongs to
    mark: int = 0  # gsd's own ref writes after this point are not the agent's
    kept: Kept | None = None  # byte copies, in the process that made the checkpoint
    # the agent ran in a Landlock sandbox that lets it write no git directory: whatever
    # happens to refs and .git internals meanwhile is the user's (or gsd's), never undone
    confined: bool = False

    @property
    def name(self) -> str:
        """The tag as `git tag` lists it, SPEC 6's `git_state`: `checkpoint/01-02/...`."""
        return self.tag.removeprefix("refs/tags/")


class CheckpointTag(NamedTuple):
    """A checkpoint tag found in the repository (`gsd checkpoints list`)."""

    tag: str
    plan_id: str
    task: int
    created: datetime
    sha: str


class Status(NamedTuple):
    """One `git status --porcelain=v2 --branch` pass: HEAD, branch, changes, untracked."""

    head: str | None  # None before the first commit
    branch: str | None  # short name, None when detached
    changed: frozenset[str]  # tracked paths changed in the index or the working tree
    untracked: frozenset[str]  # untracked, non-ignored


class Observation(NamedTuple):
    """What a spawn did, seen from git and from .git itself."""

    changed: list[str]  # paths changed, staged, created or committed (gsd commits these)
    changed_refs: list[str]  # refs rewritten, one line each
    internals: list[str]  # .git hooks/config/info files changed (already put back)
    flags: list[str]  # index flags the agent set (already cleared), "flag on path"
    protected: list[str]  # ignored .env*/*.pem/*.key files created, changed or deleted

    def then(self, later: Observation) -> Observation:
        """This observation followed by a later one of the same checkpoint (after the
        task's checks ran): the later changed paths, and every finding of both (what
        the first one put back or cleared, the second no longer sees)."""

        def both(a: list[str], b: list[str]) -> list[str]:
            return [*a, *(x for x in b if x not in a)]

        return Observation(later.changed, both(self.changed_refs, later.changed_refs),
                           both(self.internals, later.internals), both(self.flags, later.flags),
                           both(self.protected, later.protected))  # fmt: skip


class MergeRefused(GsdError):
    """`git merge` would overwrite the user's uncommitted or untracked files (or take in
    staged ones), and changed nothing: `paths` are the files git named."""

    def __init__(self, branch: str, paths: list[str]) -> None:
        super().__init__(f"merging {branch} would overwrite {_some(paths)}")
        self.paths = paths


class Recovery(NamedTuple):
    """What `recover` did with the checkpoints a killed run left open."""

    rolled_back: list[str]  # tags rolled back
    dropped: list[str]  # tags removed without a rollback (task committed, nothing to undo)
    warnings: list[str]  # records ignored and things not put back, one line each


class _Result(NamedTuple):
    status: int
    out: str
    err: str


class Git:
    """One repository (or linked worktree) as gsd uses it."""

    def __init__(self, root: Path) -> None:
        where = Path(root)
        asked = ["rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-common-dir",
                 "--show-toplevel"]  # fmt: skip
        done = gitread.run(asked, cwd=where, read_only=True)
        if done.status == gitread.EXIT_NOT_FOUND and not done.out:
            if where.is_dir():
                raise GsdError("git is not installed or not on PATH", hint="install git")
            raise InputError(f"not a git repository: {where}", hint="run git init")
        lines = done.stdout.splitlines()
        if done.status != 0 or len(lines) != 4:
            if lines[:1] == ["true"]:
                raise InputError(
                    f"bare git repository: {where}", hint="run gsd in a clone with a working tree"
                )
            raise InputError(f"not a git repository: {where}", hint="run git init")
        self._root = Path(lines[3]).resolve()
        self._git_dir = Path(lines[1]).resolve()
        self._common_dir = (where / lines[2]).resolve()
        self._hash_size = 20
        # The index file's stamp when it last had no flagged entry: gsd's own add and
        # commit keep it so (`_carry_no_flags`), and the next checkpoint need not read it.
        self._no_flags_at: tuple[int, int, int, int] | None = None
        self._ledger = refledger.ledger(self._common_dir)

    @property
    def root(self) -> Path:
        """The top directory of the working tree."""
        return self._root

    @property
    def git_dir(self) -> Path:
        """This worktree's git directory (HEAD, index, rebase state); absolute."""
        return self._git_dir

    @property
    def common_dir(self) -> Path:
        """The directory shared by all worktrees (objects, refs, config); absolute."""
        return self._common_dir

    # -- state -------------------------------------------------------------------------

    def head(self) -> str | None:
        """The commit HEAD points at, or None before the first commit."""
        done = self._run("rev-parse", "--verify", "-q", "HEAD^{commit}", ok=(0, 1))
        return done.out.strip() or None

    def untracked_files(self) -> set[str]:
        """Untracked, non-ignored files (a nested repository shows as "dir/")."""
        return set(self._untracked())

    def remove_new_untracked(self, keep: Iterable[str]) -> list[str]:
        """Delete every untracked, non-ignored file not in `keep` (the untracked files
        that were there before); returns them. One listing of the untracked files."""
        return self._delete(sorted(self.untracked_files() - set(keep)))

    def _delete(self, doomed: list[str]) -> list[str]:
        """Delete these untracked files (a nested repository: "dir/") and emptied folders."""
        for rel in doomed:
            path = self._root / rel.rstrip("/")
            if not records.safe_dir(path.parent, under=self._root):
                continue  # under a symlinked folder: never delete through it
            if rel.endswith("/") and path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)  # a nested repository
            elif path.is_symlink() or path.exists():
                path.unlink()
            parent = path.parent
            while parent != self._root and self._root in parent.parents:
                try:
                    parent.rmdir()
                except OSError:
                    break
                parent = parent.parent
        return doomed

    def status(self) -> Status:
        """HEAD, branch, tracked changes and untracked files in one pass over the tree."""
        return _parse_status(self._run(*_STATUS).out)

    def dirty_among(self, paths: Iterable[str]) -> set[str]:
        """Those of `paths` that are changed (staged or not) or untracked: the user's."""
        specs = [_literal(p) for p in paths]
        if not specs:
            return set()
        out = self._run("status", "--porcelain=v1", "-z", "--untracked-files=all",
                        "--no-renames", "--", *specs).out  # fmt: skip
        return {entry[3:] for entry in out.split("\0") if len(entry) > 3}

    def staged_paths(self) -> list[str]:
        """Paths whose staged content differs from HEAD (a merge refuses to start then)."""
        return _split(self._run("diff", "--cached", "--name-only", "-z", "--no-renames").out)

    def added_by(self, branch: str) -> list[str]:
        """Files `branch` adds since its merge base with HEAD (one a user's checkout has
        untracked or ignored would be overwritten by merging it)."""
        out = self._run("diff", "--name-only", "-z", "--no-renames", "--diff-filter=A",
                        f"HEAD...{branch}").out  # fmt: skip
        return _split(out)

    def tracked_among(self, paths: list[str]) -> set[str]:
        """Those of `paths` that git tracks (in the index)."""
        out = self._run("ls-files", "-z", "--", *(_literal(p) for p in paths)).out
        return set(_split(out))

    def unstaged_paths(self) -> set[str]:
        """Tracked paths whose working-tree file differs from the index."""
        return set(_split(self._run("diff", "--name-only", "-z", "--no-renames").out))

    def snapshot_refs(self) -> dict[str, str]:
        """Every ref and its sha, plus "HEAD" ("ref: refs/heads/x" or a sha)."""
        refs = self._ref_table()
        symbolic = self._run("symbolic-ref", "-q", "HEAD", ok=(0, 1)).out.strip()
        refs["HEAD"] = f"ref: {symbolic}" if symbolic else (self.head() or "")
        return refs

    def _ref_table(self, out: str | None = None) -> dict[str, str]:
        """Every ref under refs/ and its sha (from `for-each-ref`, or its output `out`)."""
        if out is None:
            out = self._run(*_REFS).out
        refs: dict[str, str] = {}
        for line in out.splitlines():
            name, _, sha = line.partition("\0")
            if name:
                refs[name] = sha
        return refs

    def index_lock_held(self) -> Path | None:
        """This worktree's index.lock when another git process holds it (a precondition
        to check before any agent runs), else None."""
        lock = self.git_dir / "index.lock"
        return lock if os.path.lexists(lock) else None

    # -- checkpoints -------------------------------------------------------------------

    def create_checkpoint(
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
        mark = self._ledger.now()
        with _Side(self, _PROTECTED_SCAN, _REFS) as side:
            status = self.status()
            scan, listing = side.results()
        refs = self._ref_table(listing)
        protected = self._save_protected(_split(scan))
        head = status.head
        if head is None:
            raise GsdError(
                f"the repository has no commits yet: {self._root}",
                hint="make an initial commit first",
            )
        self._hash_size = len(head) // 2
        self._refuse_dirt(status, allow_dirty)
        snapshot = None
        if status.changed:
            message = f"gsd checkpoint {plan_id} task {task}"
            snapshot = self._run("stash", "create", message).out.strip() or None
        refs["HEAD"] = f"ref: refs/heads/{status.branch}" if status.branch else head
        kept = Kept(protected, gitguard.save(self.common_dir, _STASH_LOG),
                    indexflags.index_stamp(self._index))  # fmt: skip
        flags, foreign = self._index_flags(), tuple(sorted(self._foreign_branches()))
        tag = self._create_tag(plan_id, task, snapshot or head)
        internals = (
            {} if confined else gitguard.guard(self.common_dir).enter(tag, self._internal_roots())
        )
        checkpoint = Checkpoint(
            tag, head, status.branch, snapshot, tuple(sorted(status.untracked)), refs, flags,
            foreign, gitguard.digests(internals), gitguard.digests(protected), str(self._root),
            mark, kept, confined,
        )  # fmt: skip
        try:
            self._save_record(checkpoint)
        except BaseException:  # no tag without its record: a full disk leaves nothing behind
            self.delete_checkpoint(checkpoint)
            raise
        return checkpoint

    def _refuse_dirt(self, status: Status, allow_dirty: bool) -> None:
        operation = self.operation_in_progress()
        if operation:
            raise GsdError(
                f"a {operation} is in progress in {self._root}", hint="finish or abort it first"
            )
        dirty = sorted(status.changed)
        if dirty and not allow_dirty:
            raise GsdError(
                f"working tree has uncommitted changes: {_some(dirty)} in {self._root}",
                hint="commit or stash them, or pass --allow-dirty",
            )

    def rollback(self, cp: Checkpoint) -> None:
        """Put branch, HEAD, refs, index and working tree back as they were at `cp`.

        Commits the agent made leave the branch, files it created are removed, tracked
        files revert, and a snapshot's uncommitted work is re-applied with its index.
        Every ref is put back (a branch checked out in another worktree only when it was
        deleted), the stash list too, index flags the agent set are cleared, .git
        internals and ignored protected files are restored exactly. Other ignored files
        are never touched, nor are untracked files that predate the checkpoint. On
        failure the tag is kept for a manual restore.
        """
        self._rollback(cp, recovery=False)

    def _rollback(self, cp: Checkpoint, *, recovery: bool) -> None:
        try:
            gitguard.guard(self.common_dir).changes(cp.tag)  # internals first: no hook runs
            self._clear_flags(cp)
            self._quit_operations()
            if cp.branch:
                own = f"refs/heads/{cp.branch}"
                self._run("update-ref", "-m", f"gsd rollback to {cp.tag}", own, cp.head)
                self._ledger.wrote(own, cp.head)
                self._run("symbolic-ref", "-m", f"gsd rollback to {cp.tag}", "HEAD", own)
            else:
                self._run("update-ref", "--no-deref", "HEAD", cp.head)
            self._restore_refs(cp, recovery=recovery)
            saved = self._save_untracked_in_index(cp)
            self._run("reset", "--hard", "-q", cp.head)
            self.remove_new_untracked(cp.untracked)
            for rel, kept in saved.items():
                _write_back(self._root / rel, kept)
            if cp.kept is not None:
                self._restore_protected(cp.kept.protected)
            if cp.snapshot:
                self._run("stash", "apply", "--index", "-q", cp.snapshot)
        except (GsdError, OSError) as exc:
            raise GsdError(
                f"rollback to {cp.tag} failed: {_one_line(str(exc))}",
                hint=f"the tag is kept; restore by hand with git reset --hard {cp.head}"
                + (f" && git stash apply --index {cp.snapshot}" if cp.snapshot else ""),
                details=getattr(exc, "details", ""),
            ) from exc
        self.delete_checkpoint(cp)

    def delete_checkpoint(self, cp: Checkpoint) -> None:
        """Remove the checkpoint tag and its record (a missing tag is not an error)."""
        self._ledger.wrote(cp.tag, "")  # first: no other task's watch blames an agent
        self._run("update-ref", "-d", cp.tag)
        self._remove_record(cp.tag)
        gitguard.guard(self.common_dir).leave(cp.tag)

    def squash_agent_commits(self, cp: Checkpoint) -> bool:
        """Commits the agent made on the checkpoint's branch become staged changes again
        (`reset --soft`), so gsd's one task commit carries all the work; True if any."""
        if cp.branch is None or self._symbolic_head() != f"refs/heads/{cp.branch}":
            return False
        head = self._head_from_files() or self.head()  # no process in the common case
        if head is None or head == cp.head or not self._descends(head, cp.head):
            return False
        self._run("reset", "--soft", "-q", cp.head)
        self._ledger.wrote(f"refs/heads/{cp.branch}", cp.head)
        return True

    def reset_owned_worktree(self, branch: str | None = None) -> None:
        """Put a gsd-owned worktree exactly at its branch's tip (on `branch` if given):
        operations quit, index flags cleared, tracked files reset, untracked (not
        ignored) files removed. Never for the user's own checkout."""
        self._quit_operations()
        if branch is not None:
            self._run("symbolic-ref", "HEAD", f"refs/heads/{branch}")
        flagged = self._index_flags()
        if flagged:
            self._unflag(flagged)
        self._run("reset", "--hard", "-q", "HEAD")
        self._run("clean", "-ffdq")

    # -- records: what a killed run needs, signed, never followed through a link ---------

    @property
    def _records(self) -> Path:
        return self.git_dir / "gsd" / "checkpoints"

    def _record_path(self, tag: str) -> Path:
        name = tag.removeprefix(CHECKPOINT_PREFIX).replace("/", "_")
        return self._records / f"{name}.json"

    def _save_record(self, cp: Checkpoint) -> None:
        """Everything `rollback` needs but the byte copies, signed, kept while the tag
        lives: a run killed during a spawn is rolled back by the next one (`recover`)."""
        data: dict[str, Any] = cp._asdict()
        for field in ("mark", "kept"):
            data.pop(field)
        data["untracked"], data["foreign"] = list(cp.untracked), list(cp.foreign)
        records.private_dir(self._records, under=self.git_dir)
        records.write_private(self._record_path(cp.tag), records.sign(data).encode())

    def _remove_record(self, tag: str) -> None:
        if records.safe_dir(self._records, under=self.git_dir):
            self._record_path(tag).unlink(missing_ok=True)

    def _open_records(self) -> tuple[list[Checkpoint], list[str]]:
        """The records gsd wrote and signed here, newest first; every other file in the
        folder is reported once (and removed): gsd never acts on a record it did not write."""
        folder = self._records
        if not os.path.lexists(folder):
            return [], []
        if not records.safe_dir(folder, under=self.git_dir):
            return [], [f"ignored {folder}: a symlink or not a folder (gsd does not follow it)"]
        found, warnings = [], []
        for path in sorted(folder.iterdir(), reverse=True):
            if path.name.startswith("."):  # a temporary file of a write cut short
                path.unlink(missing_ok=True)
                continue
            cp, reason = self._load_record(path)
            if cp is None:
                warnings.append(f"ignored {path}: {reason} (gsd acts only on records it wrote)")
                path.unlink(missing_ok=True)
            else:
                found.append(cp)
        return found, warnings

    def _load_record(self, path: Path) -> tuple[Checkpoint | None, str]:
        text = records.read_private(path)
        if text is None:
            return None, "a symlink, not a regular file, or too big"
        data = records.verify(text)
        if data is None:
            return None, "not signed by gsd (or damaged)"
        cp = _checkpoint_from(data)
        if cp is None or self._record_path(cp.tag) != path:
            return None, "signed, but not a checkpoint record of this name"
        if Path(cp.root) != self._root:
            return None, f"a record of another worktree ({cp.root})"
        return cp, ""

    def _mismatch(self, cp: Checkpoint) -> str:
        """Why a signed record does not fit the repository ("" when it does)."""
        tip = self._run("rev-parse", "--verify", "-q", cp.tag, ok=(0, 1)).out.strip()
        if tip and tip not in (cp.head, cp.snapshot):
            return f"its tag {cp.name} points elsewhere"
        known = self._run("cat-file", "-e", f"{cp.head}^{{commit}}", ok=(0, 1, 128))
        if known.status != 0:
            return f"its commit {cp.head} is not in the repository"
        return ""

    def recover(self, *, owned: bool) -> Recovery:
        """Settle every checkpoint a killed run left open here.

        In a gsd-owned worktree (`owned`) the signed record alone is enough (its tag may
        be gone): the half-done spawn is rolled back, unless its task was committed (the
        tag just goes) or later tasks were (nothing is rolled back; a warning says so).
        In the user's own checkout nothing is ever reset: a checkpoint with nothing
        changed since is dropped, anything else is a GsdError saying what to do. Changed
        .git internals are an error either way: gsd runs no git command over them.
        """
        found, warnings = self._open_records()
        rolled, dropped = [], []
        for cp in found:
            if not cp.confined:  # an agent that could write no .git changed none of it
                self._refuse_changed_internals(cp)  # before any git command
            mismatch = self._mismatch(cp)
            if mismatch:
                warnings.append(f"ignored {self._record_path(cp.tag)}: {mismatch} (gsd acts "
                                "only on records it wrote)")  # fmt: skip
                self._remove_record(cp.tag)
            elif not owned:
                self._settle_in_user_checkout(cp)
                dropped.append(cp.tag)
            elif self._committed_since(cp):
                self._drop(cp)  # killed after the task commit: the work stays
                dropped.append(cp.tag)
            elif self._tasks_after(cp):
                self._drop(cp)
                dropped.append(cp.tag)
                warnings.append(f"did not roll back {cp.name}: tasks were committed after it")
            else:
                self._rollback(cp, recovery=True)
                rolled.append(cp.tag)
                warnings += self._protected_warnings(cp)
        return Recovery(rolled, dropped, warnings)

    def drop_open_records(self) -> list[str]:
        """Forget every open checkpoint here without rolling anything back (`gsd
        checkpoints prune` in the user's checkout): tags and records go; returns the tags."""
        found, _ = self._open_records()
        for cp in found:
            self._drop(cp)
        return [cp.tag for cp in found]

    def _drop(self, cp: Checkpoint) -> None:
        self._ledger.wrote(cp.tag, "")
        self._run("update-ref", "-d", cp.tag)
        self._remove_record(cp.tag)

    def _refuse_changed_internals(self, cp: Checkpoint) -> None:
        roots = self._internal_roots()
        now = gitguard.digests(gitguard.save_tree(self.common_dir, roots))
        before = {rel: value for rel, value in cp.internals.items() if _within(rel, roots)}
        changed = sorted(rel for rel in set(now) | set(before) if now.get(rel) != before.get(rel))
        if changed:
            raise GsdError(
                f".git/{_some(changed)} changed since checkpoint {cp.name} of an interrupted "
                f"run in {self._root}",
                hint="gsd cannot tell its agent's change from yours and runs no git command "
                "over them: check them, then run gsd checkpoints prune",
            )

    def _settle_in_user_checkout(self, cp: Checkpoint) -> None:
        status = self.status()
        changed = [] if status.head != cp.head else self.changed_files(cp)
        changed += self._protected_warnings(cp, paths_only=True)
        if status.head == cp.head and status.branch == cp.branch and not changed:
            self._drop(cp)
            return
        settled = (status.branch == cp.branch and status.head is not None and not status.changed
                   and not changed and self._descends(status.head, cp.head))  # fmt: skip
        if settled:  # the user committed what was there since (as gsd's error asked)
            self._drop(cp)
            return
        what = _some(sorted(set(changed))) if changed else f"HEAD (no longer {cp.head[:12]})"
        raise GsdError(
            f"checkpoint {cp.name} of an interrupted run is still open in {self._root}: "
            f"{what} differ from it; they may be its agent's or yours, so gsd leaves them",
            hint=f"inspect them with git status and git diff, then drop them (git reset --hard "
            f"{cp.head}) or commit them, then run gsd checkpoints prune",
        )

    def _protected_warnings(self, cp: Checkpoint, *, paths_only: bool = False) -> list[str]:
        scan = _split(self._run(*_PROTECTED_SCAN).out)
        now = gitguard.digests(self._save_protected(scan))
        before = cp.protected
        changed = sorted(rel for rel in set(now) | set(before) if now.get(rel) != before.get(rel))
        if paths_only or not changed:
            return changed
        return [f"{_some(changed)} (ignored) changed since {cp.name}; gsd kept no copy to restore"]

    def _committed_since(self, cp: Checkpoint) -> bool:
        """Whether the checkpoint's task was committed on top of it (gsd was killed between
        the task commit and the tag's removal)."""
        match = _CHECKPOINT_NAME.match(cp.tag)
        if match is None or self.head() is None or not self._descends("HEAD", cp.head):
            return False
        task_id = f"{match['plan']}-{match['task']}"
        return task_id in self.committed_tasks(since=cp.head)

    def _tasks_after(self, cp: Checkpoint) -> bool:
        """Whether any task was committed on top of the checkpoint: an old record (copied
        back by an agent) must not rewind them."""
        head = self.head()
        return (
            head is not None
            and self._descends(head, cp.head)
            and bool(self.committed_tasks(since=cp.head))
        )

    def list_checkpoints(self) -> list[CheckpointTag]:
        """The checkpoint tags in the repository, oldest first; odd names are skipped."""
        found = []
        for ref, sha in self._checkpoint_refs():
            match = _CHECKPOINT_NAME.match(ref)
            if match:
                created = datetime.strptime(match["stamp"], _STAMP).replace(tzinfo=timezone.utc)
                found.append(CheckpointTag(ref, match["plan"], int(match["task"]), created, sha))
        return sorted(found, key=lambda cp: (cp.created, cp.tag))

    def prune_checkpoints(self, older_than: timedelta | None = None) -> list[str]:
        """Delete checkpoint tags (all, or those older than `older_than`); returns them.
        Their records stay: a gsd-owned worktree is still rolled back from its record."""
        if older_than is None:
            doomed = [ref for ref, _ in self._checkpoint_refs()]
        else:
            cutoff = datetime.now(timezone.utc) - older_than
            doomed = [cp.tag for cp in self.list_checkpoints() if cp.created < cutoff]
        for ref in doomed:
            self._run("update-ref", "-d", ref)
            self._ledger.wrote(ref, "")
        return doomed

    # -- what the spawn did ------------------------------------------------------------

    def observe(self, cp: Checkpoint) -> Observation:
        """Everything a spawn did. First, before any git command: .git internals put back
        and index flags the agent set cleared (so a hidden edit shows). Then one `status`,
        `for-each-ref` and protected-file listing, run side by side; the full
        `changed_files` only when HEAD or its branch moved (or with a snapshot)."""
        internals = gitguard.guard(self.common_dir).changes(cp.tag)
        flags = self._clear_flags(cp)
        with _Side(self, _PROTECTED_SCAN, _REFS) as side:
            status = self.status()
            scan, listing = side.results()
        now = self._ref_table(listing)
        protected = self._protected_changes(cp, _split(scan))
        now["HEAD"] = f"ref: refs/heads/{status.branch}" if status.branch else (status.head or "")
        if cp.snapshot is None and status.head == cp.head and status.branch == cp.branch:
            changed = sorted(status.changed | (status.untracked - set(cp.untracked)))
        else:
            changed = self.changed_files(cp)
        return Observation(changed, self._ref_notes(cp, now, status.head), internals, flags,
                           protected)  # fmt: skip

    def changed_files(self, cp: Checkpoint) -> list[str]:
        """Every path the spawn changed: tracked, staged, new untracked and committed.

        Ignored files are not seen; untracked files that predate the checkpoint count
        only when the agent staged or committed them.
        """
        base = cp.snapshot or cp.head
        index_base = f"{cp.snapshot}^2" if cp.snapshot else cp.head
        names = ("--name-only", "-z", "--no-renames")
        paths = set(_split(self._run("diff", *names, base).out))
        paths.update(_split(self._run("diff", "--cached", *names, index_base).out))
        paths.update(set(self._untracked()) - set(cp.untracked))
        revs = self._agent_revs(cp)
        if revs:
            # -m --first-parent: a merge the agent made counts with what it brought in.
            log = self._run("log", *names, "--format=", "-m", "--first-parent", *revs)
            paths.update(_split(log.out))
        return sorted(path for path in paths if path)

    def changed_refs(self, before: dict[str, str], cp: Checkpoint) -> list[str]:
        """What the agent did to refs since `before` (usually `cp.refs`), one line each.

        Reported: any ref deleted or moved (tags, branches, the stash list, notes,
        remote-tracking branches), a checkpoint tag gsd did not make, HEAD switched or
        detached, HEAD or its branch on a commit that does not descend from the
        checkpoint; a branch checked out in another worktree only when deleted or moved
        off its line. Not reported: new commits on the branch (`changed_files` sees them),
        other refs the agent created (rollback deletes them) and gsd's own ref writes.
        """
        return self._ref_notes(cp._replace(refs=before), self.snapshot_refs(), self.head())

    def _ref_notes(self, cp: Checkpoint, now: dict[str, str], head: str | None) -> list[str]:
        notes = self._moved_refs(cp, now)
        own = f"refs/heads/{cp.branch}" if cp.branch else None
        symbolic = now.get("HEAD", "")
        current = (
            symbolic.removeprefix("ref: refs/heads/") if symbolic.startswith("ref: ") else None
        )
        if current != cp.branch:
            notes.append(f"HEAD switched to branch {current}" if current else "HEAD detached")
        if head is None:
            notes.append(f"HEAD on branch {current}, which has no commits")
        elif head != cp.head and not self._descends(head, cp.head):
            notes.append(f"HEAD {_NOT_DESCENDANT}")
        if own and current != cp.branch:
            if own not in now:
                notes.append(f"branch {cp.branch} deleted")
            elif now[own] != cp.head and not self._descends(now[own], cp.head):
                notes.append(f"branch {cp.branch} {_NOT_DESCENDANT}")
        return notes

    def _moved_refs(self, cp: Checkpoint, now: dict[str, str]) -> list[str]:
        """Refs deleted, moved or (checkpoint tags) created other than by gsd itself."""
        if cp.confined:
            return []  # the agent could not write a ref: the user may, meanwhile
        own = f"refs/heads/{cp.branch}" if cp.branch else None
        ours = self._ledger.since(cp.mark)
        notes = []
        for ref in sorted((set(cp.refs) | set(now)) - {"HEAD", own}):
            old, new = cp.refs.get(ref), now.get(ref)
            if old == new or (new or "") in ours.get(ref, ()) or ref == "refs/stash":
                continue
            if self._gsds_tag(ref, new):
                continue
            kind, name = _kind(ref)
            if ref in cp.foreign:
                if new is None:
                    notes.append(f"{kind} {name} (checked out in another worktree) deleted")
                elif old is not None and not self._descends(new, old):
                    notes.append(f"{kind} {name} (checked out in another worktree) moved to "
                                 "a commit that does not descend from its tip")  # fmt: skip
            elif old is None:
                if ref.startswith(CHECKPOINT_PREFIX):
                    notes.append(f"checkpoint tag {name} created, not by gsd")
            else:
                notes.append(f"{kind} {name} {'deleted' if new is None else 'moved'}")
        if self._stash_changed(cp, now):
            notes.append("stash list changed")
        return notes

    def _stash_changed(self, cp: Checkpoint, now: dict[str, str]) -> bool:
        """Whether stashes the user had were lost: refs/stash gone, or an entry taken out
        of its reflog (the stash list: `git stash clear` or `drop`). A stash pushed
        meanwhile only adds an entry: the user's, or harmless, and left as it is."""
        if cp.refs.get("refs/stash") is None or cp.kept is None:
            return False
        if "refs/stash" not in now:
            return True
        return self._stash_entries_lost(cp) is not None

    def _stash_entries_lost(self, cp: Checkpoint) -> bytes | None:
        """The stash list to put back when entries of the checkpoint's were taken out:
        its entries, then any pushed since; None when none was lost."""
        assert cp.kept is not None
        before = cp.kept.stash_log.data or b""
        now = gitguard.save(self.common_dir, _STASH_LOG).data or b""
        if now.startswith(before):
            return None
        known = {line.split(b" ")[1] for line in before.splitlines() if b" " in line}
        added = [line for line in now.splitlines(keepends=True)
                 if b" " in line and line.split(b" ")[1] not in known]  # fmt: skip
        return before + b"".join(added)

    # -- index flags, ignored protected files -----------------------------------------

    @property
    def _index(self) -> Path:
        return self.git_dir / "index"

    def _index_flags(self) -> dict[str, str]:
        """path -> "assume-unchanged", "skip-worktree" or both, comma separated; read from
        the index file itself (no process) unless it is split or sparse."""
        stamp = indexflags.index_stamp(self._index)
        if stamp is not None and stamp == self._no_flags_at:
            return {}
        found = indexflags.index_flags(self._index, self._hash_size)
        if found is None:
            found = indexflags.parse_ls_files_v(self._run("ls-files", "-v", "-z").out)
        self._no_flags_at = None if found else stamp
        return found

    def _carry_no_flags(self, before: tuple[int, int, int, int] | None) -> None:
        """After gsd's own `add` and `commit`: an index with no flags still has none."""
        if before is not None and before == self._no_flags_at:
            self._no_flags_at = indexflags.index_stamp(self._index)

    def _clear_flags(self, cp: Checkpoint) -> list[str]:
        """Clear the flags the agent set (the user's stay); returns "flag on path" lines."""
        if cp.kept is not None and indexflags.index_stamp(self._index) == cp.kept.index_stamp:
            return []  # the index file was not rewritten: no flag changed
        added: dict[str, str] = {}
        for path, kinds in self._index_flags().items():
            before = set(cp.flags.get(path, "").split(","))
            new = [kind for kind in kinds.split(",") if kind not in before]
            if new:
                added[path] = ",".join(new)
        if added:
            self._unflag(added)
        return [f"{kind} on {path}" for path, kinds in sorted(added.items())
                for kind in kinds.split(",")]  # fmt: skip

    def _unflag(self, flagged: dict[str, str]) -> None:
        for kind in (indexflags.ASSUME_UNCHANGED, indexflags.SKIP_WORKTREE):
            paths = [path for path, kinds in flagged.items() if kind in kinds.split(",")]
            if paths:  # one option per run: update-index applies only the first it is given
                self._run("update-index", f"--no-{kind}", "--", *paths)

    def _save_protected(self, paths: list[str]) -> dict[str, gitguard.Saved]:
        """Ignored protected files, kept byte for byte (bigger ones: their stamp)."""
        return {rel: gitguard.save(self._root, rel) for rel in paths if not rel.endswith("/")}

    def _protected_changes(self, cp: Checkpoint, scan: list[str]) -> list[str]:
        if cp.kept is None:
            return []
        before = cp.kept.protected
        now = self._save_protected(sorted(set(scan) | set(before)))
        return gitguard.differences(before, now)

    def stash_create(self) -> str:
        """`git stash create`: a commit of the uncommitted tracked changes (its second
        parent holds the index) that no ref points at; "" when there are none. (Right
        after files were replaced behind its back git can answer 1 without a word; asked
        again, on the index that first call refreshed, it answers.)"""
        done = self._run("stash", "create", ok=(0, 1))
        if done.status == 1 and not done.err.strip():  # once more, on a refreshed index
            done = self._run("stash", "create", ok=(0, 1))
        if done.status == 1 and done.err.strip():
            raise GsdError(f"git stash create failed in {self._root}: {_reason(done.err)}",
                           details=done.err)  # fmt: skip
        return done.out.strip()

    def paths_differing(self, commit: str) -> list[str]:
        """Tracked paths whose working-tree file differs from `commit`'s tree."""
        return _split(self._run("diff", "--name-only", "-z", "--no-renames", commit).out)

    def staged_differing(self, commit: str) -> list[str]:
        """Paths whose staged content differs from `commit`'s tree."""
        out = self._run("diff", "--cached", "--name-only", "-z", "--no-renames", commit).out
        return _split(out)

    def restore_paths(self, source: str, paths: list[str], *, staged: bool) -> None:
        """`paths` of the working tree (or, `staged`, of the index) as `source` has them;
        a path `source` does not hold is removed."""
        where = "--staged" if staged else "--worktree"
        self._run("restore", f"--source={source}", where, "--",
                  *(_literal(p) for p in paths))  # fmt: skip

    def keep_protected(self) -> dict[str, gitguard.Saved]:
        """This checkout's ignored `.env*`, `*.pem`, `*.key` files, kept byte for byte:
        the user's secrets beside a plan's worktree, where no sandbox holds the agent."""
        return self._save_protected(_split(self._run(*_PROTECTED_SCAN).out))

    def put_back_protected(self, before: dict[str, gitguard.Saved]) -> list[str]:
        """Those files as `keep_protected` found them; returns the ones that had changed."""
        scan = _split(self._run(*_PROTECTED_SCAN).out)
        now = self._save_protected(sorted(set(scan) | set(before)))
        changed = gitguard.differences(before, now)
        if changed:
            self._restore_protected(before)
        return changed

    def _restore_protected(self, before: dict[str, gitguard.Saved]) -> None:
        scan = _split(self._run(*_PROTECTED_SCAN).out)
        now = self._save_protected(sorted(set(scan) | set(before)))
        changed = gitguard.differences(before, now)
        gitguard.restore(self._root, before, changed)  # never through a symlinked folder
        for rel in changed:  # folders emptied by removing a file the agent made
            parent = (self._root / rel).parent
            while before.get(rel, gitguard.MISSING).kind == "missing" and parent != self._root:
                try:
                    parent.rmdir()
                except OSError:
                    break
                parent = parent.parent

    # -- task commits ------------------------------------------------------------------

    def commit_task(
        self, plan_id: str, task: int, name: str, agent: str, paths: list[str]
    ) -> str | None:
        """Commit a task's changes to `paths`; None if none of them changed.

        Message: `feat({plan_id}): {name}`, a blank line, then the `Gsd-Task` and
        `Gsd-Specialist` trailers. Other staged changes stay staged.
        """
        if self.head() is None:
            raise GsdError(
                f"the repository has no commits yet: {self._root}",
                hint="make an initial commit first",
            )
        specs = [_literal(p) for p in paths]
        listed = self._run("ls-files", "-z", "--cached", "--", *specs).out if specs else ""
        indexed = set(_split(listed))
        present = [p for p in paths if p in indexed or os.path.lexists(self._root / p)]
        if present:
            self._run("add", "-A", "--", *(_literal(p) for p in present))
        staged = []
        if paths:
            diff = self._run(
                "diff", "--cached", "--name-only", "-z", "--no-renames", "HEAD", "--", *specs
            )
            staged = _split(diff.out)
        if not staged:
            return None
        # --only commits just these paths; whatever else was staged stays staged.
        only = ["--only", "--", *(_literal(p) for p in staged)]
        message = _task_message(plan_id, task, name, agent)
        self._run("commit", "-q", "--cleanup=verbatim", "-m", message, *only)
        sha = self.head()
        assert sha is not None
        self._note_head(sha)
        return sha

    def commit_paths(self, plan_id: str, task: int, name: str, agent: str, paths: list[str]) -> str:
        """`commit_task` for an index that held nothing staged before the task (no
        --allow-dirty snapshot): stage the paths, commit the index: two processes (three
        when a path is gone from disk: `add` refuses one `git rm` took out of the index)."""
        index = indexflags.index_stamp(self._index)
        present = [p for p in paths if os.path.lexists(self._root / p)]
        gone = [p for p in paths if p not in present]
        if gone:
            self._run("rm", "--cached", "-q", "--ignore-unmatch", "--",
                      *(_literal(p) for p in gone))  # fmt: skip
        if present:
            self._run("add", "-A", "--", *(_literal(p) for p in present))
        self._run(
            "commit", "-q", "--cleanup=verbatim", "-m", _task_message(plan_id, task, name, agent)
        )
        sha = self._head_from_files() or self.head()
        assert sha is not None
        self._note_head(sha)
        self._carry_no_flags(index)
        return sha

    def _head_from_files(self) -> str | None:
        """HEAD's sha read from .git/HEAD and the loose ref a commit just wrote (no
        process); None when the repository does not store it that way."""
        symbolic = self._symbolic_head()
        if symbolic is None:
            head = (records.read_private(self.git_dir / "HEAD", limit=4096) or b"").decode()
            return head.strip() if _SHA_RE.fullmatch(head.strip()) else None
        sha = (records.read_private(self.common_dir / symbolic, limit=4096) or b"").decode()
        return sha.strip() if _SHA_RE.fullmatch(sha.strip()) else None

    def _symbolic_head(self) -> str | None:
        """The ref .git/HEAD names ("refs/heads/x"), read from the file; None if detached."""
        text = (records.read_private(self.git_dir / "HEAD", limit=4096) or b"").decode()
        return text.strip()[5:] if text.startswith("ref: refs/") else None

    def _note_head(self, sha: str) -> None:
        """Enter a commit gsd made on the current branch in the ledger."""
        ref = self._symbolic_head()
        if ref is not None:
            self._ledger.wrote(ref, sha)

    def commit_docs(self, message: str, paths: list[str]) -> str | None:
        """gsd's own bookkeeping (SUMMARY, STATE, ROADMAP, logs): only these paths."""
        specs = [_literal(p) for p in paths]
        if not specs:
            return None
        self._run("add", "-A", "--", *specs)
        if self._run("diff", "--cached", "--quiet", "--", *specs, ok=(0, 1)).status == 0:
            return None
        self._run("commit", "-q", "--cleanup=verbatim", "-m", message, "--", *specs)
        sha = self._head_from_files() or self.head()
        if sha:
            self._note_head(sha)
        return sha

    def committed_tasks(
        self, since: str | None = None, *, plan_branches: bool = False
    ) -> dict[str, str]:
        """`Gsd-Task` trailer value -> newest commit carrying it, reachable from HEAD
        (and, with `plan_branches`, from the `gsd/*` branches of plans not merged yet)."""
        if self.head() is None:
            return {}
        out = self._run("log", *task_log_args(since, plan_branches=plan_branches)).out
        return parse_task_log(out)

    def plan_task_commits(self, plan_id: str) -> dict[int, TaskCommit]:
        """The plan's task commits reachable from HEAD, by task (the newest carrying each
        `Gsd-Task` trailer), each with its agent and the files it added and changed."""
        if self.head() is None:
            return {}
        out = self._run("log", "--format=%H%x00%(trailers:key=Gsd-Task,valueonly,unfold)"
                        "%x00%(trailers:key=Gsd-Specialist,valueonly,unfold)%x1e",
                        "--fixed-strings", f"--grep=Gsd-Task: {plan_id}-", "HEAD").out  # fmt: skip
        found: dict[int, TaskCommit] = {}
        for record in out.split("\x1e"):
            sha, _, rest = record.strip().partition("\0")
            values, _, agent = rest.partition("\0")
            for value in values.splitlines():
                head, dash, number = value.strip().rpartition("-")
                if head != plan_id or not dash or not number.isdigit():
                    continue
                if int(number) not in found:
                    found[int(number)] = self._task_commit(int(number), sha, agent.strip())
        return dict(sorted(found.items()))

    def _task_commit(self, task: int, sha: str, agent: str) -> TaskCommit:
        out = self._run("diff-tree", "-r", "--no-commit-id", "--name-status", "-z",
                        "--no-renames", "--root", sha).out  # fmt: skip
        fields = [f for f in out.split("\0") if f]
        pairs = list(zip(fields[0::2], fields[1::2], strict=False))
        return TaskCommit(task, sha, agent, tuple(p for s, p in pairs if s == "A"),
                          tuple(p for _, p in pairs))  # fmt: skip

    def changed_since_fork(self, tip: str, paths: list[str]) -> set[str]:
        """Those of `paths` HEAD changed since it and `tip` parted (a branch at `tip` that
        changes one too would conflict with HEAD when merged)."""
        base = self._run("merge-base", "HEAD", tip, ok=(0, 1)).out.strip()
        if not base or not paths:
            return set(paths) if not base else set()
        out = self._run("diff", "--name-only", "-z", "--no-renames", base, "HEAD", "--",
                        *(_literal(p) for p in paths)).out  # fmt: skip
        return set(_split(out))

    # -- worktrees and merges (parallel plans, SPEC 7 step 4) ---------------------------

    def branch_tip(self, branch: str) -> str | None:
        """The commit a local branch points at, or None when there is no such branch."""
        done = self._run("rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}",
                         ok=(0, 1))  # fmt: skip
        return done.out.strip() or None

    def plan_branches(self) -> dict[str, str]:
        """gsd's plan branches (`gsd/{plan}`), short name -> the commit each points at."""
        return {
            ref.removeprefix("refs/heads/"): sha
            for ref, sha in self._ref_table().items()
            if ref.startswith(PLAN_BRANCH_PREFIX)
        }

    def head_contains(self, sha: str) -> bool:
        """Whether `sha` is HEAD or one of its ancestors (a merged branch's tip is)."""
        head = self.head()
        return head is not None and self._descends(head, sha)

    def worktrees(self) -> dict[Path, str | None]:
        """Linked and main worktrees of this repository: path -> branch (None: detached)."""
        found: dict[Path, str | None] = {}
        path: Path | None = None
        for line in self._run("worktree", "list", "--porcelain").out.splitlines():
            if line.startswith("worktree "):
                path = Path(line[len("worktree ") :]).resolve()
                found[path] = None
            elif line.startswith("branch refs/heads/") and path is not None:
                found[path] = line[len("branch refs/heads/") :]
        return found

    def add_worktree(self, path: Path, branch: str, start: str) -> None:
        """Check `branch` out at `path`; the branch is created at `start` if it is new.
        Not beside another `add_worktree`: git reads the other worktrees' folders."""
        if self.branch_tip(branch) is None:
            if _SHA_RE.fullmatch(start):
                self._ledger.wrote(f"refs/heads/{branch}", start)
            self._run("worktree", "add", "-q", "-b", branch, str(path), start)
        else:
            self._run("worktree", "add", "-q", str(path), branch)

    def remove_worktree(self, path: Path) -> None:
        """Remove a linked worktree and its folder (a missing one is not an error)."""
        self._run("worktree", "remove", "--force", str(path), ok=(0, 128))

    def prune_worktrees(self) -> None:
        """Forget linked worktrees whose folder is gone."""
        self._run("worktree", "prune")

    def delete_branch(self, branch: str) -> None:
        self._ledger.wrote(f"refs/heads/{branch}", "")
        self._run("update-ref", "-m", "gsd: plan merged", "-d", f"refs/heads/{branch}")

    def merge_head(self) -> str | None:
        """The commit being merged when a merge stopped half way, else None."""
        text = records.read_private(self.git_dir / "MERGE_HEAD", limit=4096) or b""
        first = text.decode("ascii", "replace").split()[:1]
        return first[0] if first else None

    def start_merge(self, branch: str, message: str) -> list[str]:
        """`git merge --no-ff --no-commit`: [] when it applied cleanly (the commit is
        `finish_merge`'s), else the conflicted paths, with the merge already aborted.
        Another git's index.lock is waited for, then a GsdError: never a conflict."""
        argv = ("merge", "--no-ff", "--no-commit", "-q", "-m", message, branch)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            self._wait_for_index_lock(deadline, argv)
            done = self._run(*argv, ok=(0, 1, 2))
            if done.status == 0:
                return []
            refused = _overwritten(done.err)
            if done.status == 2 and refused:  # git refused before changing anything
                raise MergeRefused(branch, refused)
            if done.status == 2:
                raise GsdError(f"git merge {branch} failed in {self._root}: "
                               f"{_reason(done.err) or 'exit status 2'}",
                               details=_details(argv, done))  # fmt: skip
            if "Unable to write index" not in done.err:
                break
            # Another git took index.lock under the merge, which then stopped half set
            # up (and says "fix conflicts"): undo it, and merge again once the lock goes.
            self.abort_merge()
        conflicted = _split(self._run("diff", "--name-only", "-z", "--diff-filter=U").out)
        self.abort_merge()
        return conflicted or [_reason(done.err) or "merge failed"]

    def finish_merge(self, message: str, paths: list[str]) -> str:
        """Commit the merge `start_merge` prepared, with `paths` (gsd's bookkeeping) added."""
        if paths:
            self._run("add", "-A", "--", *(_literal(p) for p in paths))
        self._run("commit", "-q", "--cleanup=verbatim", "-m", message)
        sha = self._head_from_files() or self.head()
        assert sha is not None
        self._note_head(sha)
        return sha

    def abort_merge(self) -> None:
        self._run("merge", "--abort", ok=(0, 128))

    def fast_forward(self, branch: str) -> bool:
        """Move the checked-out branch up to `branch` (`git merge --ff-only`): False, with
        nothing changed, when that is not a fast-forward or would overwrite a file."""
        done = self._run("merge", "--ff-only", "-q", f"refs/heads/{branch}",
                         ok=(0, 1, 2, 128))  # fmt: skip
        if done.status != 0:
            return False
        sha = self._head_from_files() or self.head()
        if sha:
            self._note_head(sha)
        return True

    # -- running git -------------------------------------------------------------------

    def _run(
        self, command: str, *args: str, ok: tuple[int, ...] = (0,), input: str | None = None
    ) -> _Result:
        """Run `git COMMAND ARGS` in the worktree; a status outside `ok` is a GsdError
        whose `details` hold git's whole stderr. Another git's index.lock is waited for."""
        return self._finish(self._start(command, *args, input=input), (command, *args), ok,
                            input)  # fmt: skip

    def _start(self, command: str, *args: str, input: str | None = None) -> subprocess.Popen[bytes]:
        """Start a git command (its result is `_finish`'s): two can run side by side."""
        guard = gitguard.active_guard(self._common_dir)
        if guard is not None:
            guard.check()  # a hook or config an agent planted meanwhile goes before git runs
        try:
            return gitread.start((command, *args), cwd=self._root, stdin=input is not None,
                                 read_only=command in _READ_ONLY)  # fmt: skip
        except OSError as exc:
            raise GsdError("git is not installed or not on PATH", hint="install git") from exc

    def _finish(
        self,
        process: subprocess.Popen[bytes],
        argv: tuple[str, ...],
        ok: tuple[int, ...] = (0,),
        input: str | None = None,
    ) -> _Result:
        data = input.encode() if input is not None else None
        result = self._wait(process, argv, data)
        waited, delay = 0.0, 0.05
        while result.status != 0 and _LOCKED.search(result.err):
            if waited >= LOCK_WAIT_S:
                raise self._lock_error(argv, result)
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, max(LOCK_WAIT_S - waited, 0.01))
            result = self._wait(self._start(*argv, input=input), argv, data)
        if result.status not in ok:
            raise self._error(argv, result)
        return result

    def _wait(
        self, process: subprocess.Popen[bytes], argv: tuple[str, ...], data: bytes | None
    ) -> _Result:
        """A started command's result; past `gitread.git_timeout()` (a hung hook) git and
        its hooks are ended and a one-line GsdError names the command."""
        done = gitread.finish(process, argv, cwd=self._root, input=data)
        return _Result(done.status, done.stdout, done.stderr)

    def _error(self, argv: tuple[str, ...], result: _Result) -> GsdError:
        command, args = argv[0], argv[1:]
        what = " ".join([command, *[a for a in args[:1] if not a.startswith("-")]])
        reason = _reason(result.err) or f"exit status {result.status}"
        hint = "the log has git's whole message"
        if "identity unknown" in result.err or "tell me who you are" in result.err:
            hint = "set git config user.name and user.email"
        return GsdError(f"git {what} failed in {self._root}: {reason}", hint=hint,
                        details=_details(argv, result))  # fmt: skip

    def _wait_for_index_lock(self, deadline: float, argv: tuple[str, ...]) -> None:
        """Wait (with backoff) until no other git holds this worktree's index.lock."""
        delay = 0.05
        while self.index_lock_held() is not None:
            if time.monotonic() >= deadline:
                held = f"{self.git_dir / 'index.lock'} still there after {LOCK_WAIT_S:g} s"
                raise self._lock_error(argv, _Result(128, "", held))
            time.sleep(min(delay, max(deadline - time.monotonic(), 0.01)))
            delay *= 2

    def _lock_error(self, argv: tuple[str, ...], result: _Result) -> GsdError:
        match = _LOCKED.search(result.err)
        lock = match["path"] if match else str(self.git_dir / "index.lock")
        return GsdError(
            f"another git process holds {lock}; gsd waited {LOCK_WAIT_S:g} s for it",
            hint="let it finish (an editor's git status?), or delete the file if no git is "
            "running, then run gsd again",
            details=_details(argv, result),
        )

    def current_branch(self) -> str | None:
        """The branch HEAD is on (short name), None when detached."""
        ref = self._run("symbolic-ref", "-q", "HEAD", ok=(0, 1)).out.strip()
        return ref.removeprefix("refs/heads/") or None

    def _untracked(self) -> list[str]:
        return _split(self._run("ls-files", "-z", "--others", "--exclude-standard").out)

    def _descends(self, sha: str, ancestor: str) -> bool:
        return self._run("merge-base", "--is-ancestor", ancestor, sha, ok=(0, 1)).status == 0

    def operation_in_progress(self) -> str | None:
        """A merge, rebase, cherry-pick or revert stopped half way in this worktree."""
        git_dir = self.git_dir
        for name, label in _OPERATIONS.items():
            if (git_dir / name).exists():
                return label
        return None

    def _quit_operations(self) -> None:
        """Forget a rebase or cherry-pick the agent left half done (reset clears merges)."""
        git_dir = self.git_dir
        if (git_dir / "rebase-apply" / "applying").exists():
            self._run("am", "--quit", ok=(0, 1, 128))
        if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
            self._run("rebase", "--quit", ok=(0, 1, 128))
        if (git_dir / "sequencer").exists():
            self._run("cherry-pick", "--quit", ok=(0, 1, 128))

    def _check_tag_name(self, plan_id: str, task: int) -> None:
        probe = f"{CHECKPOINT_PREFIX}{plan_id}/{task}-x"
        ordinary = is_plan_id(plan_id)  # 01-02, 02.1-01, 12A-03
        if not ordinary and self._run("check-ref-format", probe, ok=(0, 1)).status != 0:
            raise GsdError(
                f"plan id {plan_id!r} cannot be part of a git tag name",
                hint="use plan ids like 01-02",
            )

    def _create_tag(self, plan_id: str, task: int, target: str) -> str:
        for _ in range(20):
            stamp = datetime.now(timezone.utc).strftime(_STAMP)
            tag = f"{CHECKPOINT_PREFIX}{plan_id}/{task}-{stamp}-{secrets.token_hex(3)}"
            # In the ledger first: no other task's watch ever sees it as an agent's tag.
            self._ledger.wrote(tag, target)
            # An empty old value makes update-ref fail if the tag exists: no race.
            done = self._run("update-ref", "-m", "gsd checkpoint", tag, target, "", ok=(0, 128))
            if done.status == 0:
                return tag
            self._ledger.forget(tag)
            if self._run("rev-parse", "--verify", "-q", tag, ok=(0, 1)).status != 0:
                raise GsdError(
                    f"cannot create checkpoint tag {tag}: {_reason(done.err)}",
                    hint="check that the repository is writable",
                    details=done.err,
                )
        raise GsdError(f"cannot find a free checkpoint tag name for {plan_id} task {task}")

    def _checkpoint_refs(self) -> list[tuple[str, str]]:
        out = self._run(
            "for-each-ref", "--format=%(refname)%00%(objectname)", "refs/tags/checkpoint/"
        )
        return [
            (name, sha)
            for name, _, sha in (line.partition("\0") for line in out.out.splitlines())
            if name
        ]

    def _internal_roots(self) -> list[str]:
        """The internals to watch, relative to the common dir: its hooks, config and info/,
        and this worktree's own config.worktree."""
        roots = list(gitguard.INTERNALS)
        if self.git_dir != self.common_dir and self.common_dir in self.git_dir.parents:
            roots.append(f"{self.git_dir.relative_to(self.common_dir).as_posix()}/config.worktree")
        return roots

    def _foreign_branches(self) -> set[str]:
        """Branches checked out in other worktrees of this repository (full ref names).

        Read from the worktrees' HEAD files, not `git worktree list`, which fails while
        another thread is adding a worktree (its folder is not complete yet)."""
        heads = [self.common_dir / "HEAD"]
        admin = self.common_dir / "worktrees"
        if records.safe_dir(admin):
            heads += [entry / "HEAD" for entry in admin.iterdir()]
        branches: set[str] = set()
        for head in heads:
            if head.parent == self.git_dir:
                continue  # this worktree's own
            text = (records.read_private(head, limit=4096) or b"").decode("utf-8", "replace")
            if text.startswith("ref: refs/heads/"):
                branches.add(text[len("ref: ") :].strip())
        return branches

    def _agent_revs(self, cp: Checkpoint) -> list[str]:
        """rev-list arguments for commits new since `cp` on HEAD or its branch."""
        tips = ["HEAD"] if self.head() else []
        if cp.branch:
            own = f"refs/heads/{cp.branch}"
            if self._run("rev-parse", "--verify", "-q", own, ok=(0, 1)).status == 0:
                tips.append(own)
        if not tips:
            return []
        known = {cp.head, *(sha for ref, sha in cp.refs.items() if ref != "HEAD" and sha)}
        return [*tips, "--not", *sorted(known)]

    def _gsds_tag(self, ref: str, now: str | None) -> bool:
        """A checkpoint tag as gsd itself left it (another plan's, made or removed while
        this spawn ran): not the agent's doing, whatever the moment it was seen. One an
        agent made, or one of gsd's that an agent removed, is not."""
        return ref.startswith(CHECKPOINT_PREFIX) and self._ledger.ever(ref, now or "")

    def _restore_refs(self, cp: Checkpoint, *, recovery: bool) -> None:
        """Every ref back as it was at `cp`, in one transaction. gsd's own writes since
        stay; a branch checked out in another worktree (and, in a recovery, every ref:
        the user may have worked since the crash) is only re-created, never moved."""
        if cp.confined:
            return  # the agent wrote no ref: what moved meanwhile is the user's, and stays
        with refledger.ref_lock(self.common_dir):  # the refs as they are, one writer at once
            self._restore_refs_locked(cp, recovery=recovery)
            if not recovery and cp.kept is not None and cp.refs.get("refs/stash"):
                self._restore_stash_list(cp)

    def _restore_stash_list(self, cp: Checkpoint) -> None:
        """The stashes the agent took out put back, those pushed meanwhile kept."""
        merged = self._stash_entries_lost(cp)
        if merged is None:
            return
        path = self.common_dir / _STASH_LOG
        newest = merged.splitlines()[-1].split(b" ")[1].decode() if merged.strip() else ""
        if newest:  # first: moving the ref appends a line of its own to the reflog
            self._run("update-ref", "--no-deref", "refs/stash", newest)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(merged)

    def _restore_refs_locked(self, cp: Checkpoint, *, recovery: bool) -> None:
        now = self._ref_table()
        own = f"refs/heads/{cp.branch}" if cp.branch else None
        ours = self._ledger.since(cp.mark)
        lines = []
        for ref in sorted((set(cp.refs) | set(now)) - {"HEAD", own}):
            old, new = cp.refs.get(ref), now.get(ref)
            if old == new or (new or "") in ours.get(ref, ()) or self._gsds_tag(ref, new):
                continue
            if recovery and ref.startswith(CHECKPOINT_PREFIX):
                continue  # the killed gsd removed other tasks' tags as they ended
            if new is None and old:  # deleted: back where gsd last put it (another plan's
                # branch has moved on since the checkpoint), else where it was then
                lines.append(f"create {ref} {self._ledger.last(ref, cp.mark) or old}")
            elif recovery or ref in cp.foreign or new is None or ref == "refs/stash":
                continue  # (the stash list is put back on its own, entries pushed kept)
            elif old is None:
                if not ref.startswith(CHECKPOINT_PREFIX):
                    continue  # a new branch or tag may be the user's: left, never deleted
                lines.append(f"delete {ref} {new}")
            elif not ref.startswith("refs/tags/") and self._moved_on(new, old):
                continue  # a branch moved forward: nothing lost, maybe the user's doing
            else:
                lines.append(f"update {ref} {old} {new}")
            self._ledger.wrote(ref, old or "")
        if lines:
            self._run("update-ref", "-m", f"gsd rollback to {cp.tag}", "--stdin",
                      input="\n".join(lines) + "\n")  # fmt: skip

    def _moved_on(self, new: str, old: str) -> bool:
        """Whether `new` descends from `old` (commits; anything else: no)."""
        done = self._run("merge-base", "--is-ancestor", old, new, ok=(0, 1, 128))
        return done.status == 0

    def _save_untracked_in_index(self, cp: Checkpoint) -> dict[str, gitguard.Saved]:
        """Pre-existing untracked files the agent staged; `reset --hard` would delete them."""
        indexed = set(_split(self._run("ls-files", "-z", "--cached").out))
        return {
            rel: saved
            for rel in cp.untracked
            if rel in indexed
            for saved in [gitguard.save(self._root, rel, cap=1 << 40)]
            if saved.kind in ("file", "link")
        }


class _Side:
    """Git commands run beside the current one (`with`): their outputs, in order, from
    `results()`; on an error they are ended and waited for, never left behind."""

    def __init__(self, git: Git, *commands: tuple[str, ...]) -> None:
        self._git = git
        self._commands = commands
        self._started: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> _Side:
        self._started = [self._git._start(*argv) for argv in self._commands]
        return self

    def results(self) -> list[str]:
        done = [
            self._git._finish(p, argv).out
            for p, argv in zip(self._started, self._commands, strict=True)
        ]
        self._started = []
        return done

    def __exit__(self, *exc: object) -> None:
        for process in self._started:
            if process.returncode is None:
                process.kill()
            try:
                process.communicate()
            except (OSError, ValueError):  # already read to the end
                pass


def _within(rel: str, roots: list[str]) -> bool:
    return any(rel == root or rel.startswith(root + "/") for root in roots)


_STATUS = ("status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames")
_REFS = ("for-each-ref", "--format=%(refname)%00%(objectname)")


def _parse_status(out: str) -> Status:
    head: str | None = None
    branch: str | None = None
    changed: set[str] = set()
    untracked: set[str] = set()
    for record in out.split("\0"):
        if record.startswith("# branch.oid "):
            oid = record[13:]
            head = None if oid == "(initial)" else oid
        elif record.startswith("# branch.head "):
            name = record[14:]
            branch = None if name == "(detached)" else name
        elif record.startswith("? "):
            untracked.add(record[2:])
        elif record.startswith(("1 ", "u ")):
            # `1 XY sub mH mI mW hH hI path`; `u` has three more fields before the path
            fields = 8 if record[0] == "1" else 10
            changed.add(record.split(" ", fields)[fields])
    return Status(head, branch, frozenset(changed), frozenset(untracked))


def _checkpoint_from(data: dict[str, Any]) -> Checkpoint | None:
    """A record's data as a Checkpoint, or None when a field is missing or mistyped."""
    try:
        cp = Checkpoint(
            tag=str(data["tag"]), head=str(data["head"]), branch=data["branch"],
            snapshot=data["snapshot"], untracked=tuple(data["untracked"]),
            refs=dict(data["refs"]), flags=dict(data["flags"]),
            foreign=tuple(data["foreign"]), internals=dict(data["internals"]),
            protected=dict(data["protected"]), root=str(data["root"]),
            confined=bool(data.get("confined", False)),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError):
        return None
    texts = [*cp.untracked, *cp.refs, *cp.refs.values(), *cp.flags, *cp.foreign]
    fine = (
        cp.tag.startswith(CHECKPOINT_PREFIX)
        and _SHA_RE.fullmatch(cp.head) is not None
        and (cp.snapshot is None or _SHA_RE.fullmatch(str(cp.snapshot)) is not None)
        and (cp.branch is None or isinstance(cp.branch, str))
        and all(isinstance(text, str) for text in texts)
    )
    return cp if fine else None


def _kind(ref: str) -> tuple[str, str]:
    for prefix, kind in (
        ("refs/heads/", "branch"),
        ("refs/tags/", "tag"),
        ("refs/remotes/", "remote-tracking branch"),
        ("refs/notes/", "notes"),
    ):
        if ref.startswith(prefix):
            return kind, ref.removeprefix(prefix)
    return "ref", ref


def _write_back(path: Path, saved: gitguard.Saved) -> None:
    if os.path.lexists(path) or saved.data is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if saved.kind == "link":
        path.symlink_to(os.fsdecode(saved.data))
    else:
        path.write_bytes(saved.data)
        path.chmod(saved.mode)


def _split(out: str) -> list[str]:
    """NUL-separated git output (`-z`) as a list, without empty entries."""
    return [item.strip("\n") for item in out.split("\0") if item.strip("\n")]


def _literal(path: str) -> str:
    return f":(literal){path}"


def _task_message(plan_id: str, task: int, name: str, agent: str) -> str:
    return (
        f"feat({_one_line(plan_id)}): {_one_line(name)}\n\n"
        f"Gsd-Task: {_one_line(plan_id)}-{task}\nGsd-Specialist: {_one_line(agent)}\n"
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _overwritten(stderr: str) -> list[str]:
    """The files `git merge` lists when it refuses to overwrite local changes or untracked
    files ("... would be overwritten by merge:" and an indented line per file)."""
    paths: list[str] = []
    listing = False
    for line in stderr.splitlines():
        if "would be overwritten by merge" in line:
            listing = True
        elif listing and line[:1] in ("\t", " ") and line.strip():
            paths.append(line.strip())
        else:
            listing = False
    return paths


_reason = gitread.first_reason
_details = gitread.details


def _some(paths: Iterable[str], limit: int = 3) -> str:
    items = list(paths)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
