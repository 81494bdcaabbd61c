"""Task commits read without GitPython (`gsd status`), against real repositories."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gsd.git
import gsd.gitread
from gsd.gitread import committed_tasks
from tests.conftest import Project, git


def commit(root: Path, message: str, *trailers: str) -> str:
    (root / "f.txt").write_text(message)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message, *(arg for t in trailers for arg in ("-m", t)))
    return git(root, "rev-parse", "HEAD").strip()


def test_same_program_as_gitpython_finds() -> None:
    import git  # GitPython: its import is gsd.git's check that this program runs

    assert gsd.gitread.GIT == str(git.Git.GIT_PYTHON_GIT_EXECUTABLE or "git")


def test_newest_commit_per_task_from_head_and_plan_branches(
    git_project: Project, tmp_path: Path
) -> None:
    root = git_project.root
    commit(root, "one", "Gsd-Task: 01-01-1")
    newer = commit(root, "again", "Gsd-Task: 01-01-1")
    git(root, "worktree", "add", "-q", "-b", "gsd/01-02", str(tmp_path / "wt"))
    on_branch = commit(tmp_path / "wt", "two", "Gsd-Task: 01-02-1")
    git(root, "branch", "other", on_branch)  # not a plan branch: not counted
    assert committed_tasks(root) == {"01-01-1": newer}
    assert committed_tasks(root, plan_branches=True) == {"01-01-1": newer, "01-02-1": on_branch}
    assert committed_tasks(root) == gsd.git.Git(root).committed_tasks()
    assert committed_tasks(root, plan_branches=True) == gsd.git.Git(root).committed_tasks(
        plan_branches=True
    )


def test_nothing_committed_outside_a_repository_or_before_the_first_commit(
    tmp_path: Path,
) -> None:
    assert committed_tasks(tmp_path) == {}
    git(tmp_path, "init", "-q", "-b", "main")
    assert committed_tasks(tmp_path, plan_branches=True) == {}


def test_nothing_committed_when_git_cannot_run(git_project: Project) -> None:
    commit(git_project.root, "one", "Gsd-Task: 01-01-1")
    probe = "import pathlib, gsd.gitread as g; print(g.committed_tasks(pathlib.Path('.')))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=git_project.root, capture_output=True, text=True,
        env={"PATH": "", "GIT_PYTHON_GIT_EXECUTABLE": str(git_project.root / "no-git")},
        check=True,
    )  # fmt: skip
    assert done.stdout == "{}\n"
