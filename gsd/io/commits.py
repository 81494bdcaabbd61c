"""Commits gsd makes and reads: one per task with its trailers, its own bookkeeping."""

from __future__ import annotations

import os

from gsd.core.errors import GsdError
from gsd.core.ids import split_task_key, task_key
from gsd.core.outcomes import TaskCommit
from gsd.io import indexflags
from gsd.io.git import Git
from gsd.io.gitread import parse_task_log, task_log_args
from gsd.io.gitrun import literal, one_line, split


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
        listed = self.git.run("ls-files", "-z", "--cached", "--", *specs).out if specs else ""
        indexed = set(split(listed))
        present = [p for p in paths if p in indexed or os.path.lexists(self.git.root / p)]
        if present:
            self.git.run("add", "-A", "--", *(literal(p) for p in present))
        staged = []
        if paths:
            diff = self.git.run(
                "diff", "--cached", "--name-only", "-z", "--no-renames", "HEAD", "--", *specs
            )
            staged = split(diff.out)
        if not staged:
            return None
        # --only commits just these paths; whatever else was staged stays staged.
        only = ["--only", "--", *(literal(p) for p in staged)]
        message = _task_message(plan_id, task, name, agent)
        self.git.run("commit", "-q", "--cleanup=verbatim", "-m", message, *only)
        sha = self.git.head()
        assert sha is not None
        self.git.note_head(sha)
        return sha

    def commit_paths(self, plan_id: str, task: int, name: str, agent: str, paths: list[str]) -> str:
        """`commit_task` for an index that held nothing staged before the task (no
        --allow-dirty snapshot): stage the paths, commit the index: two processes (three
        when a path is gone from disk: `add` refuses one `git rm` took out of the index)."""
        index = indexflags.index_stamp(self.git.index)
        present = [p for p in paths if os.path.lexists(self.git.root / p)]
        gone = [p for p in paths if p not in present]
        if gone:
            self.git.run(
                "rm", "--cached", "-q", "--ignore-unmatch", "--", *(literal(p) for p in gone)
            )
        if present:
            self.git.run("add", "-A", "--", *(literal(p) for p in present))
        self.git.run(
            "commit", "-q", "--cleanup=verbatim", "-m", _task_message(plan_id, task, name, agent)
        )
        sha = self.git.noted_head()
        assert sha is not None
        self.git.carry_no_flags(index)
        return sha

    def commit_docs(self, message: str, paths: list[str]) -> str | None:
        """gsd's own bookkeeping (SUMMARY, STATE, ROADMAP, logs): only these paths,
        and only on the branch a run pinned (`Git.check_branch`)."""
        specs = [literal(p) for p in paths]
        if not specs:
            return None
        self.git.check_branch()
        self.git.run("add", "-A", "--", *specs)
        if self.git.run("diff", "--cached", "--quiet", "--", *specs, ok=(0, 1)).status == 0:
            return None
        self.git.run("commit", "-q", "--cleanup=verbatim", "-m", message, "--", *specs)
        return self.git.noted_head()

    def committed_tasks(
        self, since: str | None = None, *, plan_branches: bool = False
    ) -> dict[str, str]:
        """`Gsd-Task` trailer value -> newest commit carrying it, reachable from HEAD
        (and, with `plan_branches`, from the `gsd/*` branches of plans not merged yet)."""
        if self.git.head() is None:
            return {}
        out = self.git.run("log", *task_log_args(since, plan_branches=plan_branches)).out
        return parse_task_log(out)

    def plan_task_commits(self, plan_id: str) -> dict[int, TaskCommit]:
        """The plan's task commits reachable from HEAD, by task (the newest carrying each
        `Gsd-Task` trailer), each with its agent and the files it added and changed."""
        if self.git.head() is None:
            return {}
        out = self.git.run(
            "log",
            "--format=%H%x00%(trailers:key=Gsd-Task,valueonly,unfold)"
            "%x00%(trailers:key=Gsd-Specialist,valueonly,unfold)%x1e",
            "--fixed-strings",
            f"--grep=Gsd-Task: {plan_id}-",  # every task_key of the plan
            "HEAD",
        ).out
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
        out = self.git.run(
            "diff-tree",
            "-r",
            "--no-commit-id",
            "--name-status",
            "-z",
            "--no-renames",
            "--root",
            sha,
        ).out
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
