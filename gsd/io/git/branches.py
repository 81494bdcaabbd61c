"""Branches, worktrees and merges of one repository: what running plans side by side needs."""

from __future__ import annotations

import time
from pathlib import Path

from gsd.core.errors import GsdError
from gsd.core.words import some
from gsd.io import records
from gsd.io.git import command as gitexec
from gsd.io.git.command import details, first_reason, literal, split
from gsd.io.git.repo import SHA_RE, Git

PLAN_BRANCH_PREFIX = "refs/heads/gsd/"


class MergeRefused(GsdError):
    """`git merge` would overwrite the user's uncommitted or untracked files (or take in
    staged ones), and changed nothing: `paths` are the files git named."""

    def __init__(self, branch: str, paths: list[str]) -> None:
        super().__init__(f"merging {branch} would overwrite {some(paths)}")
        self.paths = paths


class Branches:
    """The branches and worktrees of one repository, and merges into its checkout."""

    def __init__(self, git: Git) -> None:
        self.git = git

    def branch_tip(self, branch: str) -> str | None:
        """The commit a local branch points at, or None when there is no such branch."""
        done = self.git.out(
            "rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}", ok=(0, 1)
        )
        return done.strip() or None

    def plan_branches(self) -> dict[str, str]:
        """gsd's plan branches (`gsd/{plan}`), short name -> the commit each points at."""
        return {
            ref.removeprefix("refs/heads/"): sha
            for ref, sha in self.git.ref_table().items()
            if ref.startswith(PLAN_BRANCH_PREFIX)
        }

    def added_by(self, branch: str) -> list[str]:
        """Files `branch` adds since its merge base with HEAD (one a user's checkout has
        untracked or ignored would be overwritten by merging it)."""
        out = self.git.out(
            "diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", f"HEAD...{branch}"
        )
        return split(out)

    def changed_since_fork(self, tip: str, paths: list[str]) -> set[str]:
        """Those of `paths` HEAD changed since it and `tip` parted (a branch at `tip` that
        changes one too would conflict with HEAD when merged)."""
        base = self.git.out("merge-base", "HEAD", tip, ok=(0, 1)).strip()
        if not base or not paths:
            return set(paths) if not base else set()
        out = self.git.out(
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            base,
            "HEAD",
            "--",
            *(literal(p) for p in paths),
        )
        return set(split(out))

    def worktrees(self) -> dict[Path, str | None]:
        """Linked and main worktrees of this repository: path -> branch (None: detached)."""
        found: dict[Path, str | None] = {}
        path: Path | None = None
        for line in self.git.out("worktree", "list", "--porcelain").splitlines():
            if line.startswith("worktree "):
                path = Path(line[len("worktree ") :]).resolve()
                found[path] = None
            elif line.startswith("branch refs/heads/") and path is not None:
                found[path] = line[len("branch refs/heads/") :]
        return found

    def add_worktree(self, path: Path, branch: str, start: str, *, checkout: bool = True) -> None:
        """Check `branch` out at `path`; the branch is created at `start` if it is new.
        Without `checkout`, no file is written and no index made (`--no-checkout`).
        Not beside another `add_worktree`: git reads the other worktrees' folders."""
        quiet = ("-q",) if checkout else ("-q", "--no-checkout")
        if self.branch_tip(branch) is None:
            if SHA_RE.fullmatch(start):
                self.git.ledger.wrote(f"refs/heads/{branch}", start)
            self.git.git("worktree", "add", *quiet, "-b", branch, str(path), start)
        else:
            self.git.git("worktree", "add", *quiet, str(path), branch)

    def remove_worktree(self, path: Path) -> None:
        """Remove a linked worktree and its folder (a missing one is not an error)."""
        self.git.git("worktree", "remove", "--force", str(path), ok=(0, 128))

    def prune_worktrees(self) -> None:
        """Forget linked worktrees whose folder is gone."""
        self.git.git("worktree", "prune")

    def reset_owned_worktree(self, branch: str | None = None) -> None:
        """Put a gsd-owned worktree exactly at its branch's tip (on `branch` if given):
        operations quit, index flags cleared, tracked files reset, untracked (not
        ignored) files removed. Never for the user's own checkout."""
        self.git.quit_operations()
        if branch is not None:
            self.git.git("symbolic-ref", "HEAD", f"refs/heads/{branch}")
        flagged = self.git.index_flags()
        if flagged:
            self.git.unflag(flagged)
        self.git.git("reset", "--hard", "-q", "HEAD")
        self.git.git("clean", "-ffdq")

    def delete_branch(self, branch: str) -> None:
        self.git.ledger.wrote(f"refs/heads/{branch}", "")
        self.git.git("update-ref", "-m", "gsd: plan merged", "-d", f"refs/heads/{branch}")

    def delete_refs(self, refs: list[str], why: str) -> None:
        """Delete refs of gsd's own (checkpoint tags, salvage refs) in one transaction,
        each in the ledger first: no task's watch blames an agent for it."""
        if not refs:
            return
        for ref in refs:
            self.git.ledger.wrote(ref, "")
        orders = "".join(f"delete {ref}\0\0" for ref in refs)
        self.git.git("update-ref", "-m", why, "--stdin", "-z", input=orders)

    def merge_head(self) -> str | None:
        """The commit being merged when a merge stopped half way, else None."""
        text = records.read_private(self.git.git_dir / "MERGE_HEAD", limit=4096) or b""
        first = text.decode("ascii", "replace").split()[:1]
        return first[0] if first else None

    def start_merge(self, branch: str, message: str) -> list[str]:
        """`git merge --no-ff --no-commit`: [] when it applied cleanly (the commit is
        `finish_merge`'s), else the conflicted paths, with the merge already aborted.
        Another git's index.lock is waited for, then a GsdError: never a conflict."""
        self.git.check_branch()  # only into the branch the run started on
        argv = ("merge", "--no-ff", "--no-commit", "-q", "-m", message, branch)
        deadline = time.monotonic() + gitexec.LOCK_WAIT_S
        while True:
            self.git.wait_for_index_lock(deadline, argv)
            done = self.git.git(*argv, ok=(0, 1, 2))
            if done.status == 0:
                return []
            refused = _overwritten(done.stderr)
            if done.status == 2 and refused:  # git refused before changing anything
                raise MergeRefused(branch, refused)
            if done.status == 2:
                raise GsdError(
                    f"git merge {branch} failed in {self.git.root}: "
                    f"{first_reason(done.stderr) or 'exit status 2'}",
                    details=details(argv, done),
                )
            if "Unable to write index" not in done.stderr:
                break
            # Another git took index.lock under the merge, which then stopped half set
            # up (and says "fix conflicts"): undo it, and merge again once the lock goes.
            self.abort_merge()
        conflicted = split(self.git.out("diff", "--name-only", "-z", "--diff-filter=U"))
        self.abort_merge()
        return conflicted or [first_reason(done.stderr) or "merge failed"]

    def finish_merge(self, message: str, paths: list[str]) -> str:
        """Commit the merge `start_merge` prepared, with `paths` (gsd's bookkeeping) added."""
        if paths:
            self.git.git("add", "-A", "--", *(literal(p) for p in paths))
        self.git.git("commit", "-q", "--cleanup=verbatim", "-m", message)
        sha = self.git.noted_head()
        assert sha is not None
        return sha

    def abort_merge(self) -> None:
        self.git.git("merge", "--abort", ok=(0, 128))

    def fast_forward(self, branch: str) -> bool:
        """Move the checked-out branch up to `branch` (`git merge --ff-only`): False, with
        nothing changed, when that is not a fast-forward or would overwrite a file."""
        done = self.git.git("merge", "--ff-only", "-q", f"refs/heads/{branch}", ok=(0, 1, 2, 128))
        if done.status != 0:
            return False
        self.git.noted_head()
        return True


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
