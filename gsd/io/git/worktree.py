"""Where plans run (SPEC 0, SPEC 7 step 4): one `git worktree` per plan, on branch
`gsd/{plan}`, kept until the plan is merged back in the repository's folder outside it
(`gsd.io.statedir`: the user's state folder unless configured; never under a `.git/`,
where Claude Code refuses every edit). The user's checkout is never an agent's working
directory; these worktrees are gsd's own. Older versions kept them under
`.git/gsd/worktrees/`: those are found (from `git worktree list`) and removed.

A large repository's checkout costs seconds to write and to delete, so a plan's folder
is not deleted when it ends but kept as the repository's one spare checkout (beside its
folder: `{key}.spare`, its index `{key}.spare.index`; no longer a worktree git knows),
and the next plan's worktree is added without a checkout and takes it: `git reset
--hard` then rewrites only the files that differ from the plan's start, and `git clean
-ffdx` removes everything else, ignored files and nested repositories too. The agent
sees exactly what a fresh checkout holds (git's index says which files are unchanged
from their size, times and inode, the change time included; only gsd's git writes that
index). Anything unusual (no spare, a gitlink, a step that fails) falls back to the
full checkout."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import threading
from pathlib import Path

from gsd.core import layout
from gsd.core.errors import GsdError, InputError
from gsd.io.git import hookjail
from gsd.io.git.branches import Branches
from gsd.io.git.recovery import OpenCheckpoints
from gsd.io.git.repo import Git

PREFIX = "gsd/"


def branch_of(plan_id: str) -> str:
    """`gsd/{phase}-{plan}`: plan ids already read `01-02`."""
    return f"{PREFIX}{plan_id}"


class Worktrees:
    """The plan worktrees of one repository; safe to use from the threads of a wave."""

    def __init__(self, git: Git, folder: Path | None) -> None:
        """`folder`: where this run puts the plans' worktrees (`statedir.worktrees_folder`);
        None when not known (`gsd checkpoints prune`): only worktrees an older gsd left
        under `.git/` are then out of place."""
        self.git = git  # the user's checkout, where plans are merged back
        self.branches = Branches(git)
        self.folder = folder
        self.legacy = Path(os.path.realpath(layout.legacy_worktrees_dir(git.common_dir)))
        self.key = layout.repo_key(Path(os.path.realpath(git.common_dir)))
        self.here = git.current_branch()
        self._lock = threading.Lock()  # worktrees are added and removed one at a time

    def branch(self, plan_id: str) -> str:
        """The plan's branch. A CI job runs `execute-plan` on a branch named gsd/{plan}
        (checked out in its own checkout, so no worktree can have it): then the plan
        works on gsd/{plan}-run and is merged into gsd/{plan} like any plan."""
        name = branch_of(plan_id)
        return f"{name}-run" if name == self.here else name

    def on_checkout(self, plan_id: str) -> bool:
        """Whether the checkout is on the plan's own branch (a CI job running the plan,
        or continuing it): then the plan's work ends up on that branch, paused or not."""
        return self.here == branch_of(plan_id)

    def path(self, plan_id: str) -> Path:
        """Where the plan's worktree is (or would be)."""
        return self._folder_of(self.branch(plan_id))

    def _folder_of(self, branch: str) -> Path:
        if self.folder is None:
            raise ValueError("no folder for plan worktrees was given")
        return layout.plan_worktree(self.folder, branch.removeprefix(PREFIX))

    def tip(self, plan_id: str) -> str | None:
        """The commit the plan's branch points at (None: no branch)."""
        with self._lock:
            return self.branches.branch_tip(self.branch(plan_id))

    def open(self, plan_id: str, start: str) -> tuple[Git, list[str]]:
        """The plan's worktree, exactly at its branch's tip: reused if it exists, else
        added on its branch (created at `start` when new). A checkpoint a killed run left
        open in it is rolled back, and anything else left in it (an agent's files from an
        attempt that never got to its checkpoint) removed: the folder is gsd's, and every
        attempt starts from the committed work alone. The second value lists the
        checkpoints rolled back."""
        where = self.path(plan_id)
        # one `git worktree add` at a time: it reads the other worktrees' folders, and
        # fails on one being added; `worktree list` would too (so: no listing here)
        with self._lock:
            fresh = not (where / ".git").is_file()
            if fresh:
                if where.exists():  # a folder git no longer knows: ours, and stale
                    shutil.rmtree(where)
                where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                if not self._take_spare(where, self.branch(plan_id), start):
                    self.branches.add_worktree(where, self.branch(plan_id), start)
        place = Git(where)
        if fresh:  # just checked out: nothing in it but the branch's tip
            return place, []
        opened = OpenCheckpoints(place)
        recovery = opened.recover(owned=True)
        for line in recovery.warnings:
            sys.stderr.write(f"gsd: warning: {line}\n")
        for tag, ref in opened.salvaged.items():
            sys.stderr.write(f"gsd: {kept_line(tag, ref)}\n")
        Branches(place).reset_owned_worktree(self.branch(plan_id))
        return place, recovery.rolled_back

    def close(self, plan_id: str) -> None:
        """Remove the plan's worktree folder; its branch keeps the work."""
        self._close(self.branch(plan_id))

    def _close(self, branch: str) -> None:
        with self._lock:
            where = self._folder_of(branch)
            if not self._park(where):
                self._remove(where)

    # -- the spare checkout ------------------------------------------------------------

    def _spare(self) -> tuple[Path, Path] | None:
        """The repository's spare checkout and its index (None: no folder known)."""
        if self.folder is None:
            return None
        return self.folder.with_name(f"{self.folder.name}.spare"), self.folder.with_name(
            f"{self.folder.name}.spare.index"
        )

    def drop_spare(self) -> list[str]:
        """The spare checkout removed (`gsd checkpoints prune`): a full copy of the
        repository the last plan left; the next plan checks out in full. One line per
        thing removed."""
        spare = self._spare()
        with self._lock:
            if spare is None or not any(os.path.lexists(p) for p in spare):
                return []
            _drop(*spare)
        return [f"removed the spare checkout {spare[0]}"]

    def _park(self, where: Path) -> bool:
        """Keep a plan's worktree folder as the spare checkout: its index moved out of
        git's entry for it, its `.git` file removed, the folder renamed, git's entry
        pruned. False (nothing moved, or the folder no longer a worktree) when there is
        a spare already or this cannot be: the caller removes the worktree."""
        spare = self._spare()
        if spare is None or os.path.lexists(spare[0]) or not (where / ".git").is_file():
            return False
        admin = _admin_dir(where, self.git.common_dir)
        if admin is None or not (admin / "index").is_file():
            return False
        try:
            os.replace(admin / "index", spare[1])
            (where / ".git").unlink()
            os.replace(where, spare[0])
        except OSError:
            return False
        self.branches.prune_worktrees()
        with contextlib.suppress(OSError):  # another plan's worktree is still in it
            where.parent.rmdir()
        return True

    def _take_spare(self, where: Path, branch: str, start: str) -> bool:
        """The plan's worktree made from the spare checkout, at its branch's tip exactly
        as a fresh checkout would be: added without a checkout, the spare's index then
        its files moved in, tracked files reset and every other file removed. False when
        there is no spare (or it cannot be used: it is then discarded). Killed at any
        step, what is left is a worktree a resume resets, or a half spare, discarded."""
        spare = self._spare()
        if spare is None:
            return False
        tree, index = spare
        if not (tree.is_dir() and not tree.is_symlink() and index.is_file()):
            _drop(tree, index)  # a half of one a killed run left, or none
            return False
        if self._post_checkout(where):
            return False  # a fresh checkout runs it: the spare would not
        try:
            self.branches.add_worktree(where, branch, start, checkout=False)
            admin = _admin_dir(where, self.git.common_dir)
            if admin is None:
                raise OSError("no git folder for the new worktree")
            os.replace(index, admin / "index")
            os.replace(where / ".git", tree / ".git")
            where.rmdir()
            os.replace(tree, where)
            place = Git(where)
            # the index's times are trusted as git trusts them by default, whatever the
            # repository's config: a file changed since has another change time
            trusted = ("core.trustctime=true", "-c", "core.checkStat=default")
            place.git("-c", *trusted, "reset", "--hard", "-q", "HEAD")
            place.git("clean", "-ffdxq")
            if "\n160000 " in "\n" + place.out("ls-files", "-s"):  # `MODE SHA STAGE\tPATH`
                raise OSError("a gitlink: its folder's files are not reset")
        except (OSError, GsdError):
            self._remove(where)
            self.branches.prune_worktrees()
            _drop(tree, index)
            where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            return False
        return True

    def _post_checkout(self, where: Path) -> bool:
        """Whether the user has a post-checkout hook git would run in `where`."""
        known = hookjail.user_has_hook("post-checkout", where)
        if known is not None:  # a run's jail knows where the hooks are
            return known
        value = self.git.out("config", "--get", "core.hooksPath", ok=(0, 1)).strip()
        hooks = Path(hookjail.user_hooks_path(value, self.git.common_dir, Path.home()))
        return os.access(
            (hooks if hooks.is_absolute() else where / hooks) / "post-checkout", os.X_OK
        )

    def _remove(self, where: Path) -> None:
        """Remove a worktree of gsd's: its folder and git's entry for it (under
        `.git/worktrees/`); the repository's folder goes once it is empty."""
        if not where.exists():
            return
        self.branches.remove_worktree(where)
        if where.exists():  # git would not (a locked worktree, a stray file): ours all the same
            shutil.rmtree(where, ignore_errors=True)
            self.branches.prune_worktrees()
        with contextlib.suppress(OSError):  # another plan's worktree is still in it
            where.parent.rmdir()

    def delete_branch(self, plan_id: str) -> None:
        """Delete the plan's branch (merged, or with nothing on it)."""
        with self._lock:
            self.branches.delete_branch(self.branch(plan_id))

    def settle(self, *, forget: bool = False) -> list[str]:
        """Plan worktrees as a killed run or an older gsd left them, put straight:
        checkpoints open in them rolled back (from their signed records), and those out
        of place removed, git's entries with them (under `.git/gsd/worktrees/`, where gsd
        kept them before 2026-11-27, or in a folder configured differently before; their
        branches keep the work). With `forget` (`gsd checkpoints prune`) a checkpoint gsd
        will not roll back is forgotten, not an error. Returns one line per thing done."""
        done = []
        self.branches.prune_worktrees()  # folders removed by hand
        for path, branch in self.branches.worktrees().items():
            if branch is None or not branch.startswith(PREFIX) or not self._ours(path):
                continue
            done += self._recover(Git(path), branch, forget=forget)  # a spawn it left
            if self._misplaced(path, branch):
                with self._lock:
                    self._remove(path)
                done.append(f"removed the worktree of {branch} an earlier run left in {path}")
        self._clear_legacy()
        return done

    def _recover(self, place: Git, branch: str, *, forget: bool) -> list[str]:
        opened = OpenCheckpoints(place)
        try:
            recovery = opened.recover(owned=True)
        except GsdError as exc:
            if not forget:
                raise
            tags = OpenCheckpoints(place).drop()
            return [f"forgot {tag} in {branch}, not rolled back: {exc.message}" for tag in tags]
        done = [
            f"rolled back {tag} in {branch}, left open by an interrupted run"
            for tag in recovery.rolled_back
        ]
        kept = [kept_line(tag, ref) for tag, ref in opened.salvaged.items()]
        return done + kept + recovery.warnings

    def tidy(self) -> list[str]:
        """What a killed run left behind, put straight: `settle`, then a half-done merge
        of a plan branch is aborted (the merge runs again), and worktrees and branches
        with nothing left to merge are removed. Returns one line per thing done."""
        done = self.settle()
        checked_out = self.branches.worktrees()
        branches = self.branches.plan_branches()
        for path, branch in checked_out.items():  # checked out by the user (a CI job's
            if branch is not None and not self._ours(path):  # gsd/{plan}): theirs
                branches.pop(branch, None)
        merging = self.branches.merge_head()
        if merging is not None and merging in branches.values() and self._our_merge():
            touched = self.git.unstaged_paths() & set(self.git.staged_paths())
            if touched:  # the user edited files of the merge after gsd was killed
                raise InputError(
                    f"a merge of {_name_of(branches, merging)} that an interrupted gsd run "
                    f"began is still open in {self.git.root}, and {', '.join(sorted(touched)[:5])} "
                    "changed since: gsd leaves it as it is",
                    hint="finish it (git commit) or undo it (git merge --abort), then run again",
                )
            self.branches.abort_merge()
            done.append(f"aborted the merge of {_name_of(branches, merging)} a killed run left")
        head = self.git.head()  # one question: removing merged branches leaves HEAD alone
        for branch, tip in sorted(branches.items()):
            if head is not None and self.git.descends(head, tip):
                self._close(branch)
                with self._lock:
                    self.branches.delete_branch(branch)
                done.append(f"removed {branch}: nothing on it left to merge")
        return done

    def _ours(self, path: Path) -> bool:
        """Whether a worktree (its resolved path) is one of gsd's: in a folder named by
        this repository's key (wherever the folder was configured then), or in the
        folder older versions used under `.git/gsd/worktrees/`."""
        return path.parent.name == self.key or self.legacy in path.parents

    def _misplaced(self, path: Path, branch: str) -> bool:
        """Whether a worktree of gsd's is not where this run would put its plan's."""
        if self.legacy in path.parents:
            return True
        return self.folder is not None and path != Path(os.path.realpath(self._folder_of(branch)))

    def _clear_legacy(self) -> None:
        """Folders git no longer knows under `.git/gsd/worktrees/` go, then the folder."""
        if not self.legacy.is_dir():
            return
        known = set(self.branches.worktrees())
        for entry in self.legacy.iterdir():
            if entry.resolve() not in known:
                if entry.is_symlink() or not entry.is_dir():
                    entry.unlink(missing_ok=True)
                else:
                    shutil.rmtree(entry, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.legacy.rmdir()

    def _our_merge(self) -> bool:
        """Whether the merge in progress is one gsd began (its message is gsd's): a plan
        branch merged by hand, as gsd's conflict line suggests, is the user's to finish."""
        try:
            first = (self.git.git_dir / "MERGE_MSG").read_text(errors="replace").split("\n")[0]
        except OSError:
            return False
        return _GSD_MERGE.fullmatch(first) is not None


_GSD_MERGE = re.compile(r"Merge branch 'gsd/[^']+': plan \S+ complete")


def _name_of(branches: dict[str, str], sha: str) -> str:
    return next(name for name, tip in branches.items() if tip == sha)


def _admin_dir(where: Path, common_dir: Path) -> Path | None:
    """A linked worktree's own git folder, from its `.git` file, when git's entry there
    names this worktree back (None: not so). The `.git` file is in the agent's folder:
    an agent may have rewritten it to name another worktree's folder, or the user's."""
    dot_git = where / ".git"
    try:
        text = dot_git.read_text(errors="replace") if not dot_git.is_symlink() else ""
    except OSError:
        return None
    if not text.startswith("gitdir: "):
        return None
    admin = Path(os.path.realpath(where / text.removeprefix("gitdir: ").strip()))
    if admin.parent != Path(os.path.realpath(common_dir / "worktrees")):
        return None
    try:  # git's own record of the worktree's `.git`, which no agent writes
        back = (admin / "gitdir").read_text(errors="replace").strip()
    except OSError:
        return None
    return admin if os.path.realpath(back) == os.path.realpath(dot_git) else None


def _drop(tree: Path, index: Path) -> None:
    """A spare checkout's folder and index removed (either may be missing)."""
    if tree.is_symlink() or tree.is_file():
        tree.unlink()
    shutil.rmtree(tree, ignore_errors=True)
    with contextlib.suppress(OSError):
        index.unlink()


def kept_line(tag: str, ref: str) -> str:
    """How a killed run's attempt kept before its rollback is said."""
    return (
        f"the changes of {tag.removeprefix('refs/tags/')} are kept under {ref} (gsd salvage show)"
    )
