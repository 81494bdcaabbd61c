"""Commits gsd makes and reads: one per task with its trailers, its own bookkeeping; and
the `Gsd-Task` trailers read back (`committed_tasks`, light enough for `gsd status`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from gsd.core.errors import GsdError
from gsd.core.ids import split_task_key, task_key
from gsd.core.verdict.outcomes import TaskCommit
from gsd.core.words import one_line
from gsd.io.git import command as gitexec
from gsd.io.git.command import literal, split

if TYPE_CHECKING:  # a Commits is handed its Git: `gsd status` reads trailers without one
    from gsd.io.git.repo import Git

# One record per commit: its sha, NUL, its `Gsd-Task` trailer values, one a line, NUL,
# its `Gsd-Undone` ones (`gsd undo` took those tasks' commits back).
# Past this many paths, a task's changes are staged from a list (`_stage_listed`).
STAGE_LISTED = 256
UNDONE_TRAILER = "Gsd-Undone"
_TASK_LOG = (
    "--format=%H%x00%(trailers:key=Gsd-Task,valueonly,unfold)"
    f"%x00%(trailers:key={UNDONE_TRAILER},valueonly,unfold)%x1e"
)


class Commits:
    """The task commits of one repository (or linked worktree)."""

    def __init__(self, git: Git) -> None:
        self.git = git

    def commit_task(
        self, plan_id: str, task: int, name: str, agent: str, paths: list[str]
    ) -> str | None:
        """Commit a task's changes to `paths`; None if none of them changed.

        Message: `feat({plan_id}): {name}`, a blank line, then the `Gsd-Task` and
        `Gsd-Specialist` trailers. Other staged changes stay staged.
        """
        if self.git.head() is None:
            raise GsdError(
                f"the repository has no commits yet: {self.git.root}",
                hint="make an initial commit first",
            )
        specs = [literal(p) for p in paths]
        listed = self.git.out("ls-files", "-z", "--cached", "--", *specs) if specs else ""
        indexed = set(split(listed))
        root = str(self.git.root)
        present = [p for p in paths if p in indexed or os.path.lexists(os.path.join(root, p))]
        if present and not self._stage_listed(present, []):
            self.git.git("add", "-A", "--", *(literal(p) for p in present))
        staged = []
        if paths:
            diff = self.git.out(
                "diff", "--cached", "--name-only", "-z", "--no-renames", "HEAD", "--", *specs
            )
            staged = split(diff)
        if not staged:
            return None
        # --only commits just these paths; whatever else was staged stays staged.
        only = ["--only", "--", *(literal(p) for p in staged)]
        message = _task_message(plan_id, task, name, agent)
        self.git.git("commit", "-q", "--cleanup=verbatim", "-m", message, *only)
        sha = self.git.head()
        assert sha is not None
        self.git.note_head(sha)
        return sha

    def commit_paths(self, plan_id: str, task: int, name: str, agent: str, paths: list[str]) -> str:
        """`commit_task` for an index that held nothing staged before the task (no
        --allow-dirty snapshot): stage the paths, commit the index: two processes (three
        when a path is gone from disk: `add` refuses one `git rm` took out of the index)."""
        from gsd.io.git import indexflags  # not on `gsd status`'s path (committed_tasks)

        index = indexflags.index_stamp(self.git.index)
        root = str(self.git.root)
        exists = [os.path.lexists(os.path.join(root, p)) for p in paths]
        present = [p for p, there in zip(paths, exists, strict=True) if there]
        gone = [p for p, there in zip(paths, exists, strict=True) if not there]
        if not self._stage_listed(present, gone):
            if gone:
                self.git.git(
                    "rm", "--cached", "-q", "--ignore-unmatch", "--", *(literal(p) for p in gone)
                )
            if present:
                self.git.git("add", "-A", "--", *(literal(p) for p in present))
        self.git.git(
            "commit", "-q", "--cleanup=verbatim", "-m", _task_message(plan_id, task, name, agent)
        )
        sha = self.git.noted_head()
        assert sha is not None
        self.git.carry_no_flags(index)
        return sha

    def _stage_listed(self, present: list[str], gone: list[str]) -> bool:
        """Stage many paths (more than STAGE_LISTED) as `git add -A` would, from a list
        on stdin: `update-index --add --remove` reads each path once, where git matches
        every file against every pathspec given to `add` (quadratic: 18 s for 30,000
        new files). False, nothing done, for fewer paths, or when one of `present` is an
        untracked file git ignores: `add` refuses those, and is left to say so."""
        if len(present) + len(gone) <= STAGE_LISTED:
            return False
        listed = "".join(f"{p}\0" for p in present)
        if (
            present
            and self.git.git("check-ignore", "-z", "--stdin", input=listed, ok=(0, 1)).stdout
        ):
            return False
        every = listed + "".join(f"{p}\0" for p in gone)
        self.git.git("update-index", "--add", "--remove", "-z", "--stdin", input=every)
        return True

    def commit_docs(self, message: str, paths: list[str]) -> str | None:
        """gsd's own bookkeeping (SUMMARY, STATE, ROADMAP, logs): only these paths,
        and only on the branch a run pinned (`Git.check_branch`)."""
        specs = [literal(p) for p in paths]
        if not specs:
            return None
        self.git.check_branch()
        self.git.git("add", "-A", "--", *specs)
        if self.git.git("diff", "--cached", "--quiet", "--", *specs, ok=(0, 1)).status == 0:
            return None
        self.git.git("commit", "-q", "--cleanup=verbatim", "-m", message, "--", *specs)
        return self.git.noted_head()

    def committed_tasks(
        self, since: str | None = None, *, plan_branches: bool = False
    ) -> dict[str, str]:
        """`Gsd-Task` trailer value -> newest commit carrying it, reachable from HEAD
        (and, with `plan_branches`, from the `gsd/*` branches of plans not merged yet)."""
        if self.git.head() is None:
            return {}
        out = self.git.out("log", *task_log_args(since, plan_branches=plan_branches))
        return parse_task_log(out)

    def plan_task_commits(self, plan_id: str) -> dict[int, TaskCommit]:
        """The plan's task commits reachable from HEAD, by task (the newest carrying each
        `Gsd-Task` trailer), each with its agent and the files it added and changed."""
        if self.git.head() is None:
            return {}
        out = self.git.out(
            "log",
            "--format=%H%x00%(trailers:key=Gsd-Task,valueonly,unfold)"
            "%x00%(trailers:key=Gsd-Specialist,valueonly,unfold)%x1e",
            "--fixed-strings",
            f"--grep=Gsd-Task: {plan_id}-",  # every task_key of the plan
            "HEAD",
        )
        found: dict[int, TaskCommit] = {}
        for record in out.split("\x1e"):
            sha, _, rest = record.strip().partition("\0")
            values, _, agent = rest.partition("\0")
            for value in values.splitlines():
                key = split_task_key(value)
                if key is None or key[0] != plan_id:
                    continue
                if key[1] not in found:
                    found[key[1]] = self._task_commit(key[1], sha, agent.strip())
        return dict(sorted(found.items()))

    def _task_commit(self, task: int, sha: str, agent: str) -> TaskCommit:
        out = self.git.out(
            "diff-tree",
            "-r",
            "--no-commit-id",
            "--name-status",
            "-z",
            "--no-renames",
            "--root",
            sha,
        )
        fields = [f for f in out.split("\0") if f]
        pairs = list(zip(fields[0::2], fields[1::2], strict=False))
        return TaskCommit(
            task=task,
            sha=sha,
            agent=agent,
            added=tuple(p for s, p in pairs if s == "A"),
            changed=tuple(p for _, p in pairs),
        )


def _task_message(plan_id: str, task: int, name: str, agent: str) -> str:
    return (
        f"feat({one_line(plan_id)}): {one_line(name)}\n\n"
        f"Gsd-Task: {task_key(one_line(plan_id), task)}\nGsd-Specialist: {one_line(agent)}\n"
    )


def task_log_args(since: str | None = None, *, plan_branches: bool = False) -> list[str]:
    """`git log`'s arguments for the task commits reachable from HEAD (since `since`),
    and with `plan_branches` from the `gsd/*` branches too."""
    revs = [f"{since}..HEAD" if since else "HEAD"]
    if plan_branches:
        revs.append("--branches=gsd/*")
    return [_TASK_LOG, *revs]


def parse_task_log(out: str) -> dict[str, str]:
    """`Gsd-Task` trailer value -> the newest commit carrying it, from `task_log_args`'s log
    (newest first); none for a task whose newest word is a `Gsd-Undone` trailer (`gsd
    undo` reverted its commit: the task is to be done again)."""
    tasks: dict[str, str | None] = {}
    for record in out.split("\x1e"):
        sha, _, rest = record.strip().partition("\0")
        values, _, undone = rest.partition("\0")
        for value in values.splitlines():
            if value.strip():
                tasks.setdefault(value.strip(), sha)
        for value in undone.splitlines():
            if value.strip():
                tasks.setdefault(value.strip(), None)
    return {key: sha for key, sha in tasks.items() if sha is not None}


def committed_tasks(root: Path, *, plan_branches: bool = False) -> dict[str, str]:
    """`Gsd-Task` trailer value -> newest commit carrying it, reachable from HEAD (and the
    `gsd/*` branches); empty when `root` is in no repository, before the first commit, or
    when git cannot run. For commands that only look (`gsd status`): no Git object."""
    done = gitexec.call(
        ["log", *task_log_args(plan_branches=plan_branches)], cwd=root, read_only=True
    )
    if done.status != 0:
        return {}
    return parse_task_log(done.stdout)
