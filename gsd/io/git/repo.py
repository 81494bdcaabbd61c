"""One repository (or linked worktree) as gsd drives it: where it is, its state, its refs."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from gsd.core.errors import GsdError, InputError
from gsd.formats import nofollow
from gsd.io import records
from gsd.io.git import command as gitexec
from gsd.io.git import indexflags, refledger
from gsd.io.git.command import GitExec, GitResult, Side, first_reason, literal, lock_held, split

# Every command is started by gsd.io.git.command, which drops the GIT_* variables a parent git
# exports and ends a command that outlives its timeout; a git that cannot start is one
# line (`Git()` says so). GitPython was measured and removed (docs/PERFORMANCE.md).

# State files of an operation that stops half way; checkpoints refuse to start inside one.
_OPERATIONS = {
    "rebase-merge": "rebase",
    "rebase-apply": "rebase or am",
    "MERGE_HEAD": "merge",
    "CHERRY_PICK_HEAD": "cherry-pick",
    "REVERT_HEAD": "revert",
}
SHA_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
STATUS = ("status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames")
REFS = ("for-each-ref", "--format=%(refname)%00%(objectname)")


class Status(NamedTuple):
    """One `git status --porcelain=v2 --branch` pass: HEAD, branch, changes, untracked."""

    head: str | None  # None before the first commit
    branch: str | None  # short name, None when detached
    changed: frozenset[str]  # tracked paths changed in the index or the working tree
    untracked: frozenset[str]  # untracked, non-ignored


class Git:
    """One repository (or linked worktree) as gsd uses it."""

    def __init__(self, root: Path) -> None:
        where = Path(root)
        asked = [
            "rev-parse",
            "--is-bare-repository",
            "--absolute-git-dir",
            "--git-common-dir",
            "--show-toplevel",
        ]
        done = gitexec.call(asked, cwd=where, read_only=True)
        if done.status == gitexec.EXIT_NOT_FOUND and not done.out:
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
        for folder in (self._root, self._git_dir, self._common_dir):
            nofollow.trust(folder)  # gsd's writes below them follow no link an agent made
        self._hash_size = 20
        # The index file's stamp when it last had no flagged entry: gsd's own add and
        # commit keep it so (`carry_no_flags`), and the next checkpoint need not read it.
        self._no_flags_at: tuple[int, int, int, int] | None = None
        self._ledger = refledger.ledger(self._common_dir)
        self._exec = GitExec(self._root, self._git_dir, self._common_dir)
        self._pinned: str | None = None  # the branch a run merges into (`pin_branch`)

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

    @property
    def ledger(self) -> refledger.Ledger:
        """gsd's own ref writes in this repository (so a watch never blames an agent)."""
        return self._ledger

    # -- running git -------------------------------------------------------------------

    def git(
        self, command: str, *args: str, ok: tuple[int, ...] = (0,), input: str | None = None
    ) -> GitResult:
        """`git COMMAND ARGS` in the worktree, its status, stdout and stderr; a status
        outside `ok` is a GsdError whose `details` hold git's whole stderr. Another git's
        index.lock is waited for."""
        return self._exec.checked(command, *args, ok=ok, input=input)

    def out(
        self, command: str, *args: str, ok: tuple[int, ...] = (0,), input: str | None = None
    ) -> str:
        """`git COMMAND ARGS`'s stdout as text, checked as `git` checks it."""
        return self._exec.checked(command, *args, ok=ok, input=input).stdout

    def side(self, *commands: tuple[str, ...]) -> Side:
        """Git commands started beside the current one (`with`), their outputs from
        `results()`: two processes at once where gsd needs both answers."""
        return self._exec.side(*commands)

    def wait_for_index_lock(self, deadline: float, argv: tuple[str, ...]) -> None:
        """Wait (with backoff) until no other git holds this worktree's index.lock."""
        self._exec.wait_for_index_lock(deadline, argv)

    # -- state -------------------------------------------------------------------------

    def pin_branch(self) -> None:
        """Remember the branch HEAD is on (none when detached): from now on gsd merges
        and commits its books only there (`check_branch`)."""
        self._pinned = self._head_ref()

    def check_branch(self) -> None:
        """A GsdError when HEAD left the pinned branch (the user switched meanwhile)."""
        if self._pinned is None:
            return
        now = self._head_ref()
        if now != self._pinned:
            was = self._pinned.removeprefix("refs/heads/")
            where = now.removeprefix("refs/heads/") if now else "a detached HEAD"
            raise GsdError(
                f"{self._root} moved from branch {was} to {where} during the run; gsd "
                f"merges only into {was}: stopped, the plans' gsd/* branches keep their work",
                hint=f"switch back (git switch {was}) and run gsd again",
            )

    def _head_ref(self) -> str | None:
        """The branch HEAD names (`refs/heads/...`), read from the HEAD file; None when
        detached or unreadable."""
        try:
            text = (self._git_dir / "HEAD").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
        return text[5:].strip() if text.startswith("ref: ") else None

    def head(self) -> str | None:
        """The commit HEAD points at, or None before the first commit."""
        return self.out("rev-parse", "--verify", "-q", "HEAD^{commit}", ok=(0, 1)).strip() or None

    def current_branch(self) -> str | None:
        """The branch HEAD is on (short name), None when detached."""
        ref = self.out("symbolic-ref", "-q", "HEAD", ok=(0, 1)).strip()
        return ref.removeprefix("refs/heads/") or None

    def status(self, paths: Iterable[str] | None = None) -> Status:
        """HEAD, branch, tracked changes and untracked files in one pass over the tree;
        with `paths`, the changes and untracked files among those paths alone."""
        specs = () if paths is None else ("--", *(literal(p) for p in paths))
        status = parse_status(self.out(*STATUS, *specs))
        if status.head is not None:
            self._hash_size = len(status.head) // 2  # SHA-1 or SHA-256: the index reader needs it
        return status

    def branch_status(self) -> Status:
        """HEAD and branch as `status` gives them, without a look at the files (changed
        and untracked empty): two small questions, not a pass over a large tree."""
        head = self.head()
        if head is not None:
            self._hash_size = len(head) // 2
        return Status(
            head=head, branch=self.current_branch(), changed=frozenset(), untracked=frozenset()
        )

    def untracked_files(self) -> set[str]:
        """Untracked, non-ignored files (a nested repository shows as "dir/")."""
        return set(self.untracked())

    def untracked(self) -> list[str]:
        """Untracked, non-ignored files, in git's order."""
        return split(self.out("ls-files", "-z", "--others", "--exclude-standard"))

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

    def dirty_among(self, paths: Iterable[str]) -> set[str]:
        """Those of `paths` that are changed (staged or not) or untracked: the user's."""
        specs = [literal(p) for p in paths]
        if not specs:
            return set()
        out = self.out(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", *specs
        )
        return {entry[3:] for entry in out.split("\0") if len(entry) > 3}

    def staged_paths(self) -> list[str]:
        """Paths whose staged content differs from HEAD (a merge refuses to start then)."""
        return split(self.out("diff", "--cached", "--name-only", "-z", "--no-renames"))

    def tracked_among(self, paths: list[str]) -> set[str]:
        """Those of `paths` that git tracks (in the index)."""
        out = self.out("ls-files", "-z", "--", *(literal(p) for p in paths))
        return set(split(out))

    def unstaged_paths(self) -> set[str]:
        """Tracked paths whose working-tree file differs from the index."""
        return set(split(self.out("diff", "--name-only", "-z", "--no-renames")))

    def snapshot_refs(self) -> dict[str, str]:
        """Every ref and its sha, plus "HEAD" ("ref: refs/heads/x" or a sha)."""
        refs = self.ref_table()
        symbolic = self.out("symbolic-ref", "-q", "HEAD", ok=(0, 1)).strip()
        refs["HEAD"] = f"ref: {symbolic}" if symbolic else (self.head() or "")
        return refs

    def ref_table(self, out: str | None = None) -> dict[str, str]:
        """Every ref under refs/ and its sha (from `for-each-ref`, or its output `out`)."""
        if out is None:
            out = self.out(*REFS)
        refs: dict[str, str] = {}
        for line in out.splitlines():
            name, _, sha = line.partition("\0")
            if name:
                refs[name] = sha
        return refs

    def index_lock_held(self) -> Path | None:
        """This worktree's index.lock when another git process holds it (a precondition
        to check before any agent runs), else None."""
        return lock_held(self.git_dir)

    def operation_in_progress(self) -> str | None:
        """A merge, rebase, cherry-pick or revert stopped half way in this worktree."""
        git_dir = self.git_dir
        for name, label in _OPERATIONS.items():
            if (git_dir / name).exists():
                return label
        return None

    def quit_operations(self) -> None:
        """Forget a rebase or cherry-pick the agent left half done (reset clears merges)."""
        git_dir = self.git_dir
        if (git_dir / "rebase-apply" / "applying").exists():
            self.git("am", "--quit", ok=(0, 1, 128))
        if (git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists():
            self.git("rebase", "--quit", ok=(0, 1, 128))
        if (git_dir / "sequencer").exists():
            self.git("cherry-pick", "--quit", ok=(0, 1, 128))

    def descends(self, sha: str, ancestor: str) -> bool:
        """Whether `sha` is `ancestor` or one of its descendants."""
        return self.git("merge-base", "--is-ancestor", ancestor, sha, ok=(0, 1)).status == 0

    def head_from_files(self) -> str | None:
        """HEAD's sha read from .git/HEAD and the loose ref a commit just wrote (no
        process); None when the repository does not store it that way."""
        symbolic = self.symbolic_head()
        if symbolic is None:
            head = (records.read_private(self.git_dir / "HEAD", limit=4096) or b"").decode()
            return head.strip() if SHA_RE.fullmatch(head.strip()) else None
        sha = (records.read_private(self.common_dir / symbolic, limit=4096) or b"").decode()
        return sha.strip() if SHA_RE.fullmatch(sha.strip()) else None

    def symbolic_head(self) -> str | None:
        """The ref .git/HEAD names ("refs/heads/x"), read from the file; None if detached."""
        text = (records.read_private(self.git_dir / "HEAD", limit=4096) or b"").decode()
        return text.strip()[5:] if text.startswith("ref: refs/") else None

    def current_head(self) -> str | None:
        """HEAD's sha, from the files when git stored it there (no process), else asked."""
        return self.head_from_files() or self.head()

    def noted_head(self) -> str | None:
        """HEAD after a commit or merge gsd made, entered in the ledger as gsd's own."""
        sha = self.current_head()
        if sha:
            self.note_head(sha)
        return sha

    def note_head(self, sha: str) -> None:
        """Enter a commit gsd made on the current branch in the ledger."""
        ref = self.symbolic_head()
        if ref is not None:
            self._ledger.wrote(ref, sha)

    # -- index flags, stashes, restoring paths --------------------------------------

    @property
    def index(self) -> Path:
        """This worktree's index file."""
        return self.git_dir / "index"

    def index_flags(self) -> dict[str, str]:
        """path -> "assume-unchanged", "skip-worktree" or both, comma separated; read from
        the index file itself (no process) unless it is split or sparse."""
        stamp = indexflags.index_stamp(self.index)
        if stamp is not None and stamp == self._no_flags_at:
            return {}
        found = indexflags.index_flags(self.index, self._hash_size)
        if found is None:
            found = indexflags.parse_ls_files_v(self.out("ls-files", "-v", "-z"))
        self._no_flags_at = None if found else stamp
        return found

    def carry_no_flags(self, before: tuple[int, int, int, int] | None) -> None:
        """After gsd's own `add` and `commit`: an index with no flags still has none."""
        if before is not None and before == self._no_flags_at:
            self._no_flags_at = indexflags.index_stamp(self.index)

    def unflag(self, flagged: dict[str, str]) -> None:
        """Clear these index flags (path -> "assume-unchanged", "skip-worktree", both)."""
        for kind in (indexflags.ASSUME_UNCHANGED, indexflags.SKIP_WORKTREE):
            paths = [path for path, kinds in flagged.items() if kind in kinds.split(",")]
            if paths:  # one option per run: update-index applies only the first it is given
                self.git("update-index", f"--no-{kind}", "--", *paths)

    def stash_create(self) -> str:
        """`git stash create`: a commit of the uncommitted tracked changes (its second
        parent holds the index) that no ref points at; "" when there are none. (Right
        after files were replaced behind its back git can answer 1 without a word; asked
        again, on the index that first call refreshed, it answers.)"""
        done = self.git("stash", "create", ok=(0, 1))
        if done.status == 1 and not done.stderr.strip():  # once more, on a refreshed index
            done = self.git("stash", "create", ok=(0, 1))
        if done.status == 1 and done.stderr.strip():
            raise GsdError(
                f"git stash create failed in {self._root}: {first_reason(done.stderr)}",
                details=done.stderr,
            )
        return done.stdout.strip()

    def paths_differing(self, commit: str) -> list[str]:
        """Tracked paths whose working-tree file differs from `commit`'s tree."""
        return split(self.out("diff", "--name-only", "-z", "--no-renames", commit))

    def staged_differing(self, commit: str) -> list[str]:
        """Paths whose staged content differs from `commit`'s tree."""
        out = self.out("diff", "--cached", "--name-only", "-z", "--no-renames", commit)
        return split(out)

    def restore_paths(self, source: str, paths: list[str], *, staged: bool) -> None:
        """`paths` of the working tree (or, `staged`, of the index) as `source` has them;
        a path `source` does not hold is removed."""
        where = "--staged" if staged else "--worktree"
        self.git("restore", f"--source={source}", where, "--", *(literal(p) for p in paths))


def parse_status(out: str) -> Status:
    """`git status --porcelain=v2 -z --branch` output as a Status."""
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
    return Status(
        head=head, branch=branch, changed=frozenset(changed), untracked=frozenset(untracked)
    )
