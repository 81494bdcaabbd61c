"""Checkpoints, exact rollback and task commits: the only module that imports GitPython."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from gsd.errors import GsdError, InputError
from gsd.models import is_plan_id

try:
    import git
except ImportError as exc:  # GitPython refuses to import when it finds no git executable
    _first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    raise GsdError(
        f"cannot use git: {_first}", hint="install git, or point GIT_PYTHON_GIT_EXECUTABLE at it"
    ) from exc

CHECKPOINT_PREFIX = "refs/tags/checkpoint/"
# Plan branches of other worktrees move while a task runs: never reported, never restored.
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


class Checkpoint(NamedTuple):
    """Everything needed to put a repository back exactly as it was before a spawn."""

    tag: str  # full ref name under refs/tags/checkpoint/
    head: str  # the commit HEAD pointed at
    branch: str | None  # short branch name, None when HEAD was detached
    snapshot: str | None  # stash-like commit of uncommitted work (--allow-dirty), or None
    untracked: tuple[str, ...]  # untracked, non-ignored paths that predate the checkpoint
    refs: dict[str, str]  # snapshot_refs() at checkpoint time

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
    """What a spawn did, seen from git: changed paths and rewritten refs."""

    changed: list[str]
    changed_refs: list[str]


class _Result(NamedTuple):
    status: int
    out: str
    err: str


class _Saved(NamedTuple):
    content: bytes | Path  # a symlink's target as a Path
    mode: int


class Git:
    """One repository (or linked worktree) as gsd uses it."""

    def __init__(self, root: Path) -> None:
        try:
            self._repo = git.Repo(root, search_parent_directories=True)
        except (git.exc.InvalidGitRepositoryError, git.exc.NoSuchPathError) as exc:
            raise InputError(f"not a git repository: {root}", hint="run git init") from exc
        if self._repo.bare or self._repo.working_tree_dir is None:
            raise InputError(
                f"bare git repository: {root}", hint="run gsd in a clone with a working tree"
            )
        self._root = Path(self._repo.working_tree_dir)  # until git itself says (below)
        self._root = Path(self._run("rev-parse", "--show-toplevel").out.strip()).resolve()

    @property
    def root(self) -> Path:
        """The top directory of the working tree."""
        return self._root

    @cached_property
    def git_dir(self) -> Path:
        """This worktree's git directory (HEAD, index, rebase state); absolute."""
        return self._path(self._run("rev-parse", "--git-dir").out.strip())

    @cached_property
    def common_dir(self) -> Path:
        """The directory shared by all worktrees (objects, refs, config); absolute."""
        return self._path(self._run("rev-parse", "--git-common-dir").out.strip())

    # -- state -------------------------------------------------------------------------

    def head(self) -> str | None:
        """The commit HEAD points at, or None before the first commit."""
        done = self._run("rev-parse", "--verify", "-q", "HEAD^{commit}", ok=(0, 1))
        return done.out.strip() or None

    def dirty_paths(self) -> list[str]:
        """Tracked paths with staged or unstaged changes (untracked files are not dirt, as
        for git's own rebase: a checkpoint records them and a rollback leaves them be)."""
        out = self._run(
            "status", "--porcelain=v1", "-z", "--untracked-files=no", "--no-renames"
        ).out
        return sorted({entry[3:] for entry in out.split("\0") if len(entry) > 3})

    def untracked_files(self) -> set[str]:
        """Untracked, non-ignored files (a nested repository shows as "dir/")."""
        return set(self._untracked())

    def remove_untracked(self, paths: Iterable[str]) -> list[str]:
        """Delete those of `paths` that are untracked and not ignored; returns them.

        Tracked and ignored files are never touched; emptied directories go too.
        """
        return self._delete(sorted(set(paths) & self.untracked_files()))

    def remove_new_untracked(self, keep: Iterable[str]) -> list[str]:
        """Delete every untracked, non-ignored file not in `keep` (the untracked files
        that were there before); returns them. One listing of the untracked files."""
        return self._delete(sorted(self.untracked_files() - set(keep)))

    def _delete(self, doomed: list[str]) -> list[str]:
        """Delete these untracked files (a nested repository: "dir/") and emptied folders."""
        for rel in doomed:
            path = self._root / rel.rstrip("/")
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
        out = self._run(
            "status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames"
        ).out
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

    def merge_touches(self, branch: str) -> list[str]:
        """The paths merging `branch` into HEAD writes: its changes since their merge base."""
        out = self._run("diff", "--name-only", "-z", "--no-renames", f"HEAD...{branch}").out
        return _split(out)

    def reset_owned_worktree(self) -> None:
        """Put a gsd-owned plan worktree exactly at its branch's tip: tracked files reset,
        untracked ones removed (ignored ones, build output, stay). Never the user's."""
        self._quit_operations()
        self._run("reset", "--hard", "-q")
        self.remove_new_untracked(())

    def unstaged_paths(self) -> set[str]:
        """Tracked paths whose working-tree file differs from the index."""
        return set(_split(self._run("diff", "--name-only", "-z", "--no-renames").out))

    def operation_in_progress(self) -> str | None:
        """A merge, rebase, cherry-pick or revert stopped half way in this worktree."""
        return self._operation_in_progress()

    def _refs(self, status: Status) -> dict[str, str]:
        """`snapshot_refs()` with HEAD taken from a status pass (one process fewer)."""
        refs = self._ref_table()
        refs["HEAD"] = f"ref: refs/heads/{status.branch}" if status.branch else (status.head or "")
        return refs

    def _ref_table(self) -> dict[str, str]:
        """Every ref and its sha, gsd's checkpoint tags left out (other tasks make them)."""
        out = self._run("for-each-ref", "--format=%(refname)%00%(objectname)").out
        refs: dict[str, str] = {}
        for line in out.splitlines():
            name, _, sha = line.partition("\0")
            if name and not name.startswith(CHECKPOINT_PREFIX):
                refs[name] = sha
        return refs

    def observe(self, cp: Checkpoint) -> Observation:
        """`changed_files` and `changed_refs` of a spawn, in two git processes when the
        agent left HEAD, its branch and every tag and branch `changed_refs` watches alone
        (the common case, even while other plans' branches move); otherwise (or with a
        snapshot of dirty work) the full answer from those two methods."""
        status = self.status()
        if cp.snapshot is None and status.head == cp.head and status.branch == cp.branch:
            # Only the refs the full answer looks at: other plans' branches move in a wave.
            foreign = self._foreign_branches()
            if _watched_refs(self._ref_table(), foreign) == _watched_refs(cp.refs, foreign):
                new = status.untracked - set(cp.untracked)
                return Observation(sorted(status.changed | new), [])
        return Observation(self.changed_files(cp), self.changed_refs(cp.refs, cp))

    def snapshot_refs(self) -> dict[str, str]:
        """Every ref and its sha, plus "HEAD" ("ref: refs/heads/x" or a sha).

        gsd's checkpoint tags are left out: other tasks create and delete them.
        """
        refs = self._ref_table()
        symbolic = self._run("symbolic-ref", "-q", "HEAD", ok=(0, 1)).out.strip()
        refs["HEAD"] = f"ref: {symbolic}" if symbolic else (self.head() or "")
        return refs

    # -- checkpoints -------------------------------------------------------------------

    def create_checkpoint(
        self, plan_id: str, task: int, *, allow_dirty: bool = False
    ) -> Checkpoint:
        """Tag the current state before a spawn; never adds a commit to any branch.

        A dirty tree is refused unless `allow_dirty`; then the uncommitted work (index
        included) goes into a `git stash create` commit that only the tag points at.
        """
        status = self.status()
        head = status.head
        if head is None:
            raise GsdError(
                f"the repository has no commits yet: {self._root}",
                hint="make an initial commit first",
            )
        operation = self._operation_in_progress()
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
        snapshot = None
        if dirty:
            message = f"gsd checkpoint {plan_id} task {task}"
            snapshot = self._run("stash", "create", message).out.strip() or None
        untracked = tuple(sorted(status.untracked))
        refs = self._refs(status)
        tag = self._create_tag(plan_id, task, snapshot or head)
        checkpoint = Checkpoint(tag, head, status.branch, snapshot, untracked, refs)
        self._save_record(checkpoint)
        return checkpoint

    def rollback(self, cp: Checkpoint) -> None:
        """Put branch, HEAD, refs, index and working tree back as they were at `cp`.

        Commits the agent made leave the branch, files it created are removed, tracked
        files revert, and a snapshot's uncommitted work is re-applied with its index.
        Ignored files are never touched, not even ones the agent created, and neither
        are untracked files that predate the checkpoint (`changed_files` before the
        rollback says what it undoes). On failure the tag is kept for a manual restore.
        """
        try:
            self._quit_operations()
            foreign = self._foreign_branches()
            if cp.branch:
                own = f"refs/heads/{cp.branch}"
                self._run("update-ref", "-m", f"gsd rollback to {cp.tag}", own, cp.head)
                self._run("symbolic-ref", "-m", f"gsd rollback to {cp.tag}", "HEAD", own)
            else:
                self._run("update-ref", "--no-deref", "HEAD", cp.head)
            self._restore_refs(cp, foreign)
            saved = self._save_untracked_in_index(cp)
            self._run("reset", "--hard", "-q", cp.head)
            self.remove_new_untracked(cp.untracked)
            for rel, kept in saved.items():
                _write_back(self._root / rel, kept)
            if cp.snapshot:
                self._run("stash", "apply", "--index", "-q", cp.snapshot)
        except (GsdError, OSError) as exc:
            raise GsdError(
                f"rollback to {cp.tag} failed: {_one_line(str(exc))}",
                hint=f"the tag is kept; restore by hand with git reset --hard {cp.head}"
                + (f" && git stash apply --index {cp.snapshot}" if cp.snapshot else ""),
            ) from exc
        self.delete_checkpoint(cp)

    def delete_checkpoint(self, cp: Checkpoint) -> None:
        """Remove the checkpoint tag and its record (a missing tag is not an error)."""
        self._run("update-ref", "-d", cp.tag)
        self._record_path(cp.tag).unlink(missing_ok=True)

    def _record_path(self, tag: str) -> Path:
        name = tag.removeprefix(CHECKPOINT_PREFIX).replace("/", "_")
        return self.git_dir / "gsd" / "checkpoints" / f"{name}.json"

    def _save_record(self, cp: Checkpoint) -> None:
        """Everything `rollback` needs, kept while the tag lives: a run killed during
        a spawn is rolled back exactly by the next one (`recover`)."""
        import json

        path = self._record_path(cp.tag)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {**cp._asdict(), "untracked": list(cp.untracked)}
        temp = path.with_suffix(".tmp")
        temp.write_text(json.dumps(data))
        os.replace(temp, path)

    def recover(self) -> list[str]:
        """Roll back every checkpoint a killed run left open; return their tags. A
        checkpoint whose task was committed on top of it only loses its tag."""
        import json

        folder = self.git_dir / "gsd" / "checkpoints"
        recovered = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                data = json.loads(path.read_text())
                cp = Checkpoint(**{**data, "untracked": tuple(data["untracked"])})
            except (OSError, ValueError, TypeError, KeyError):
                path.unlink(missing_ok=True)  # a record torn by the crash itself
                continue
            if self._run("rev-parse", "--verify", "-q", cp.tag, ok=(0, 1)).status != 0:
                pass  # the tag went already: nothing left to undo
            elif self._committed_since(cp):
                self.delete_checkpoint(cp)  # killed after the task commit: the work stays
            else:
                self.rollback(cp)
                recovered.append(cp.tag)
            path.unlink(missing_ok=True)
        return recovered

    def _committed_since(self, cp: Checkpoint) -> bool:
        """Whether the checkpoint's task was committed on top of it (gsd was killed between
        the task commit and the tag's removal)."""
        match = _CHECKPOINT_NAME.match(cp.tag)
        if match is None or self.head() is None or not self._descends("HEAD", cp.head):
            return False
        task_id = f"{match['plan']}-{match['task']}"
        return task_id in self.committed_tasks(since=cp.head)

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
        """Delete checkpoint tags (all, or those older than `older_than`); returns them."""
        if older_than is None:
            doomed = [ref for ref, _ in self._checkpoint_refs()]
        else:
            cutoff = datetime.now(timezone.utc) - older_than
            doomed = [cp.tag for cp in self.list_checkpoints() if cp.created < cutoff]
        for ref in doomed:
            self._run("update-ref", "-d", ref)
        return doomed

    # -- what the spawn did ------------------------------------------------------------

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

        Reported: tags and branches deleted or moved, HEAD switched or detached, HEAD or
        the checkpoint's branch on a commit that does not descend from the checkpoint.
        Not reported: new commits on the branch (`changed_files` sees them), refs the agent
        created (rollback still deletes them), gsd's own refs and branches checked out
        in other worktrees (other plans move those while this one runs).
        """
        now = self.snapshot_refs()
        foreign = self._foreign_branches()
        own = f"refs/heads/{cp.branch}" if cp.branch else None
        notes = []
        for ref in sorted(before):
            if ref == own or not _watched(ref, foreign) or now.get(ref) == before[ref]:
                continue
            kind, name = _kind(ref)
            notes.append(f"{kind} {name} {'deleted' if ref not in now else 'moved'}")
        symbolic = now.get("HEAD", "")
        current = (
            symbolic.removeprefix("ref: refs/heads/") if symbolic.startswith("ref: ") else None
        )
        if current != cp.branch:
            notes.append(f"HEAD switched to branch {current}" if current else "HEAD detached")
        sha = self.head()
        if sha is None:
            notes.append(f"HEAD on branch {current}, which has no commits")
        elif not self._descends(sha, cp.head):
            notes.append(f"HEAD {_NOT_DESCENDANT}")
        if own and current != cp.branch:
            if own not in now:
                notes.append(f"branch {cp.branch} deleted")
            elif not self._descends(now[own], cp.head):
                notes.append(f"branch {cp.branch} {_NOT_DESCENDANT}")
        return notes

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
            diff = self._run("diff", "--cached", "--name-only", "-z", "HEAD", "--", *specs)
            staged = _split(diff.out)
        if not staged:
            return None
        # --only commits just these paths; whatever else was staged stays staged.
        only = ["--only", "--", *(_literal(p) for p in staged)]
        message = _task_message(plan_id, task, name, agent)
        self._run("commit", "-q", "--cleanup=verbatim", "-m", message, *only)
        sha = self.head()
        assert sha is not None
        return sha

    def commit_paths(self, plan_id: str, task: int, name: str, agent: str, paths: list[str]) -> str:
        """`commit_task` for an index that held nothing staged before the task (no
        --allow-dirty snapshot): stage the paths, commit the index: two processes."""
        self._run("add", "-A", "--", *(_literal(p) for p in paths))
        self._run(
            "commit", "-q", "--cleanup=verbatim", "-m", _task_message(plan_id, task, name, agent)
        )
        sha = self._head_from_files() or self.head()
        assert sha is not None
        return sha

    def _head_from_files(self) -> str | None:
        """HEAD's sha read from .git/HEAD and the loose ref a commit just wrote (no
        process); None when the repository does not store it that way."""
        try:
            head = (self.git_dir / "HEAD").read_text().strip()
            if not head.startswith("ref: "):
                return head if _SHA_RE.fullmatch(head) else None
            sha = (self.common_dir / head[5:]).read_text().strip()
        except OSError:
            return None
        return sha if _SHA_RE.fullmatch(sha) else None

    def commit_docs(self, message: str, paths: list[str]) -> str | None:
        """gsd's own bookkeeping (SUMMARY, STATE, ROADMAP, logs): only these paths."""
        specs = [_literal(p) for p in paths]
        if not specs:
            return None
        self._run("add", "-A", "--", *specs)
        if self._run("diff", "--cached", "--quiet", "--", *specs, ok=(0, 1)).status == 0:
            return None
        self._run("commit", "-q", "--cleanup=verbatim", "-m", message, "--", *specs)
        return self._head_from_files() or self.head()

    def committed_tasks(
        self, since: str | None = None, *, plan_branches: bool = False
    ) -> dict[str, str]:
        """`Gsd-Task` trailer value -> newest commit carrying it, reachable from HEAD
        (and, with `plan_branches`, from the `gsd/*` branches of plans not merged yet)."""
        if self.head() is None:
            return {}
        revs = [f"{since}..HEAD" if since else "HEAD"]
        if plan_branches:
            revs.append("--branches=gsd/*")
        out = self._run(
            "log", "--format=%H%x00%(trailers:key=Gsd-Task,valueonly,unfold)%x1e", *revs
        ).out
        tasks: dict[str, str] = {}
        for record in out.split("\x1e"):
            sha, _, values = record.strip().partition("\0")
            for value in values.splitlines():
                if value.strip():
                    tasks.setdefault(value.strip(), sha)
        return tasks

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
        self._run("update-ref", "-m", "gsd: plan merged", "-d", f"refs/heads/{branch}")

    def merge_head(self) -> str | None:
        """The commit being merged when a merge stopped half way, else None."""
        try:
            return (self.git_dir / "MERGE_HEAD").read_text().split()[0]
        except (OSError, IndexError):
            return None

    def start_merge(self, branch: str, message: str) -> list[str]:
        """`git merge --no-ff --no-commit`: [] when it applied cleanly (the commit is
        `finish_merge`'s), else the conflicted paths, with the merge already aborted."""
        done = self._run("merge", "--no-ff", "--no-commit", "-q", "-m", message, branch,
                         ok=(0, 1))  # fmt: skip
        if done.status == 0:
            return []
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
        return sha

    def abort_merge(self) -> None:
        self._run("merge", "--abort", ok=(0, 128))

    # -- internals ---------------------------------------------------------------------

    def _run(self, command: str, *args: str, ok: tuple[int, ...] = (0,)) -> _Result:
        """Run `git COMMAND ARGS` in the worktree; a status outside `ok` is a GsdError."""
        method = getattr(self._repo.git, command.replace("-", "_"))
        try:
            status, out, err = method(
                *args,
                with_extended_output=True,
                with_exceptions=False,
                strip_newline_in_stdout=False,
            )
        except git.exc.GitCommandNotFound as exc:
            raise GsdError("git is not installed or not on PATH", hint="install git") from exc
        except git.exc.GitError as exc:
            raise GsdError(f"git {command} failed in {self._root}: {_one_line(str(exc))}") from exc
        result = _Result(int(status), str(out), str(err))
        if result.status not in ok:
            what = " ".join([command, *[a for a in args[:1] if not a.startswith("-")]])
            reason = _reason(result.err) or f"exit status {result.status}"
            hint = "run the same git command by hand to see the full error"
            if "identity unknown" in result.err or "tell me who you are" in result.err:
                hint = "set git config user.name and user.email"
            raise GsdError(f"git {what} failed in {self._root}: {reason}", hint=hint)
        return result

    def _path(self, value: str) -> Path:
        path = Path(value)
        return (path if path.is_absolute() else self._root / path).resolve()

    def current_branch(self) -> str | None:
        """The branch HEAD is on (short name), None when detached."""
        ref = self._run("symbolic-ref", "-q", "HEAD", ok=(0, 1)).out.strip()
        return ref.removeprefix("refs/heads/") or None

    def _untracked(self) -> list[str]:
        return _split(self._run("ls-files", "-z", "--others", "--exclude-standard").out)

    def _descends(self, sha: str, ancestor: str) -> bool:
        return self._run("merge-base", "--is-ancestor", ancestor, sha, ok=(0, 1)).status == 0

    def _operation_in_progress(self) -> str | None:
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

    def _create_tag(self, plan_id: str, task: int, target: str) -> str:
        probe = f"{CHECKPOINT_PREFIX}{plan_id}/{task}-x"
        ordinary = is_plan_id(plan_id)  # 01-02, 02.1-01, 12A-03
        if not ordinary and self._run("check-ref-format", probe, ok=(0, 1)).status != 0:
            raise GsdError(
                f"plan id {plan_id!r} cannot be part of a git tag name",
                hint="use plan ids like 01-02",
            )
        for _ in range(20):
            stamp = datetime.now(timezone.utc).strftime(_STAMP)
            tag = f"{CHECKPOINT_PREFIX}{plan_id}/{task}-{stamp}-{secrets.token_hex(3)}"
            # An empty old value makes update-ref fail if the tag exists: no race.
            done = self._run("update-ref", "-m", "gsd checkpoint", tag, target, "", ok=(0, 128))
            if done.status == 0:
                return tag
            if self._run("rev-parse", "--verify", "-q", tag, ok=(0, 1)).status != 0:
                raise GsdError(
                    f"cannot create checkpoint tag {tag}: {_reason(done.err)}",
                    hint="check that the repository is writable",
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

    def _foreign_branches(self) -> set[str]:
        """Branches checked out in other worktrees of this repository (full ref names).

        Read from the worktrees' HEAD files, not `git worktree list`, which fails while
        another thread is adding a worktree (its folder is not complete yet)."""
        heads = [self.common_dir / "HEAD"]
        admin = self.common_dir / "worktrees"
        if admin.is_dir():
            heads += [entry / "HEAD" for entry in admin.iterdir()]
        branches: set[str] = set()
        for head in heads:
            if head.parent == self.git_dir:
                continue  # this worktree's own
            try:
                text = head.read_text().strip()
            except OSError:
                continue  # being created or removed right now
            if text.startswith("ref: refs/heads/"):
                branches.add(text[len("ref: ") :])
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

    def _restore_refs(self, cp: Checkpoint, foreign: set[str]) -> None:
        now = self.snapshot_refs()
        own = f"refs/heads/{cp.branch}" if cp.branch else None
        message = f"gsd rollback to {cp.tag}"
        for ref, sha in cp.refs.items():
            if ref != own and _watched(ref, foreign) and now.get(ref) != sha:
                self._run("update-ref", "-m", message, ref, sha)
        for ref in now:
            if ref != own and ref not in cp.refs and _watched(ref, foreign):
                self._run("update-ref", "-d", ref)

    def _save_untracked_in_index(self, cp: Checkpoint) -> dict[str, _Saved]:
        """Pre-existing untracked files the agent staged; `reset --hard` would delete them."""
        indexed = set(_split(self._run("ls-files", "-z", "--cached").out))
        saved: dict[str, _Saved] = {}
        for rel in cp.untracked:
            path = self._root / rel
            if rel in indexed and path.is_symlink():
                saved[rel] = _Saved(Path(os.readlink(path)), 0)
            elif rel in indexed and path.is_file():
                saved[rel] = _Saved(path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
        return saved


def _watched(ref: str, foreign: set[str]) -> bool:
    """Refs a spawn must not rewrite and rollback restores: tags and local branches."""
    if ref.startswith(CHECKPOINT_PREFIX) or ref.startswith(PLAN_BRANCH_PREFIX) or ref in foreign:
        return False
    return ref.startswith(("refs/tags/", "refs/heads/"))


def _watched_refs(refs: dict[str, str], foreign: set[str]) -> dict[str, str]:
    return {ref: sha for ref, sha in refs.items() if _watched(ref, foreign)}


def _kind(ref: str) -> tuple[str, str]:
    if ref.startswith("refs/tags/"):
        return "tag", ref.removeprefix("refs/tags/")
    return "branch", ref.removeprefix("refs/heads/")


def _write_back(path: Path, saved: _Saved) -> None:
    if os.path.lexists(path):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(saved.content, Path):
        path.symlink_to(saved.content)
    else:
        path.write_bytes(saved.content)
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


def _reason(stderr: str) -> str:
    """The first line of git's stderr that says what went wrong."""
    for line in stderr.splitlines():
        line = line.strip()
        if line and not line.startswith("hint:"):
            for prefix in ("fatal: ", "error: "):
                line = line.removeprefix(prefix)
            return line
    return ""


def _some(paths: Iterable[str], limit: int = 3) -> str:
    items = list(paths)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
