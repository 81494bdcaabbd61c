"""A task of many paths (more than STAGE_LISTED) is staged from a list, as `git add -A`
would stage it path by path: the same commit, the same refusal of an ignored file."""

from __future__ import annotations

import pytest

from gsd.core.errors import GsdError
from gsd.io.git.commits import STAGE_LISTED, Commits
from gsd.io.git.repo import Git
from tests.conftest import Project, git


@pytest.fixture
def repo(git_project: Project) -> Project:
    git_project.write(".gitignore", "*.log\n")
    for name in ("a.txt", "gone.txt", "kept.txt"):
        git_project.write(name, f"{name} v1\n")
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "files")
    return git_project


@pytest.mark.parametrize("many", [False, True])
@pytest.mark.parametrize("form", ["commit_paths", "commit_task"])
def test_many_paths_commit_what_few_do(repo: Project, many: bool, form: str) -> None:
    root = repo.root
    count = STAGE_LISTED + 10 if many else 3
    new = [f"gen/d{i // 50}/f {i}*.txt" for i in range(count)]
    for path in new:
        repo.write(path, f"{path}\n")
    repo.write("a.txt", "changed\n")
    (root / "gone.txt").unlink()
    repo.write("other.txt", "not the task's\n")
    commit = getattr(Commits(Git(root)), form)
    sha = commit("01-02", 1, "Task 1", "worker", ["a.txt", "gone.txt", *new])
    shown = git(root, "show", "--name-status", "--no-renames", "--format=", sha).splitlines()
    assert sorted(shown) == sorted(["M\ta.txt", "D\tgone.txt", *(f"A\t{p}" for p in new)])
    assert git(root, "status", "--porcelain", "-uall") == "?? other.txt\n"


@pytest.mark.parametrize("many", [False, True])
def test_an_ignored_file_among_many_is_refused_as_among_few(repo: Project, many: bool) -> None:
    root = repo.root
    new = [f"gen/f{i}.txt" for i in range(STAGE_LISTED + 10 if many else 2)]
    for path in [*new, "debug.log"]:
        repo.write(path, "x\n")
    with pytest.raises(GsdError, match="git add failed"):
        Commits(Git(root)).commit_paths("01-02", 1, "Task 1", "worker", [*new, "debug.log"])
