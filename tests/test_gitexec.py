"""How gsd runs git (gsd.io.git.command), and task commits read without GitPython (`gsd status`)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

import gsd.io.git.command
import gsd.io.git.repo
from gsd.core.errors import GsdError, UsageError, logged
from gsd.io.git.commits import Commits, committed_tasks
from tests.conftest import REPO, Project, git, plan_text


def commit(root: Path, message: str, *trailers: str) -> str:
    (root / "f.txt").write_text(message)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message, *(arg for t in trailers for arg in ("-m", t)))
    return git(root, "rev-parse", "HEAD").strip()


def test_the_program_is_git_on_path_or_the_one_named_by_the_variable() -> None:
    probe = "import gsd.io.git.command as g; print(g.GIT)"
    named = {**os.environ, "GIT_PYTHON_GIT_EXECUTABLE": "/opt/git/bin/git"}
    unset = {k: v for k, v in os.environ.items() if k != "GIT_PYTHON_GIT_EXECUTABLE"}
    for env, program in ((named, "/opt/git/bin/git"), (unset, "git")):
        done = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
        )
        assert done.stdout == f"{program}\n"


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
    assert committed_tasks(root) == Commits(gsd.io.git.repo.Git(root)).committed_tasks()
    assert committed_tasks(root, plan_branches=True) == Commits(
        gsd.io.git.repo.Git(root)
    ).committed_tasks(plan_branches=True)


def test_nothing_committed_outside_a_repository_or_before_the_first_commit(
    tmp_path: Path,
) -> None:
    assert committed_tasks(tmp_path) == {}
    git(tmp_path, "init", "-q", "-b", "main")
    assert committed_tasks(tmp_path, plan_branches=True) == {}


def test_nothing_committed_when_git_cannot_run(git_project: Project) -> None:
    commit(git_project.root, "one", "Gsd-Task: 01-01-1")
    probe = "import pathlib, gsd.io.git.commits as c; print(c.committed_tasks(pathlib.Path('.')))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=git_project.root,
        capture_output=True,
        text=True,
        env={"PATH": "", "GIT_PYTHON_GIT_EXECUTABLE": str(git_project.root / "no-git")},
        check=True,
    )
    assert done.stdout == "{}\n"


# The one git runner: scrubbed environment, whole stderr, timeout --------------------------


def hook(root: Path, body: str) -> None:
    """A pre-commit hook for the repository at `root` (the common one for its worktrees)."""
    path = Path(git(root, "rev-parse", "--git-common-dir").strip())
    path = (root / path if not path.is_absolute() else path) / "hooks" / "pre-commit"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_gsd_in_a_hook_of_another_repository_acts_on_its_own(
    git_project: Project, tmp_path: Path
) -> None:
    """git exports GIT_DIR (linked worktree) and GIT_INDEX_FILE (`commit -a`) into the
    hooks of the repository it commits in; gsd started there on another one reads that."""
    project = git_project.root
    plan = ".planning/phases/01-alpha/01-01-PLAN.md"
    git_project.write(plan, plan_text().replace("type: execute", "type: bogus"))
    git(project, "add", plan)
    git_project.write(plan, plan_text())  # fixed on disk: only the index is broken
    tag = "checkpoint/01-01/1-20250101T000000Z-abc"
    git(project, "tag", tag)
    host, other, out = tmp_path / "host", tmp_path / "other", tmp_path / "out"
    out.mkdir()
    git(tmp_path, "init", "-q", "-b", "main", str(host))
    (host / "a.txt").write_text("one\n")
    git(host, "add", "a.txt")
    git(host, "commit", "-q", "-m", "one")
    git(host, "worktree", "add", "-q", str(other))
    gsd = f"PYTHONPATH={shlex.quote(str(REPO))} {shlex.quote(sys.executable)} -m gsd"
    hook(
        host,
        f"env | grep '^GIT_' > {out}/env\ncd {shlex.quote(str(project))} || exit 9\n"
        f"{gsd} validate --staged > {out}/validate 2>&1; echo $? >> {out}/validate\n"
        f"{gsd} checkpoints list > {out}/list 2>&1; echo $? >> {out}/list\n",
    )
    (other / "a.txt").write_text("two\n")
    done = subprocess.run(
        ["git", "commit", "-q", "-a", "-m", "two"], cwd=other, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    exported = (out / "env").read_text()
    assert "GIT_DIR=" in exported and "GIT_INDEX_FILE=" in exported  # what makes it a test
    validated = (out / "validate").read_text()
    assert f"{plan}:4:1: error GSD003" in validated and validated.endswith("\n1\n"), validated
    listed = (out / "list").read_text()
    assert tag in listed and listed.endswith("\n0\n"), listed


def test_a_failing_git_commands_whole_stderr_reaches_the_error(git_project: Project) -> None:
    root = git_project.root
    hook(
        root,
        "echo 'lint: first problem' >&2\necho '  second line' >&2\n"
        "echo 'third: fix and retry' >&2\nexit 1\n",
    )
    done = gsd.io.git.command.call(["commit", "--allow-empty", "-q", "-m", "x"], cwd=root)
    error = gsd.io.git.command.failure(done, root)
    assert str(error) == f"git commit failed in {root}: lint: first problem"
    assert error.details.splitlines() == [
        "git commit --allow-empty -q -m x (exit 1)",
        "lint: first problem",
        "  second line",
        "third: fix and retry",
    ]
    assert "third: fix and retry" in logged(error)


def test_a_hook_that_hangs_ends_as_a_one_line_error(
    git_project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git_project.root
    pid_file = tmp_path / "sleep.pid"
    hook(root, f"sleep 120 &\necho $! > {pid_file}\nwait\n")
    monkeypatch.setenv(gsd.io.git.command.TIMEOUT_VAR, "1")
    git_project.write("a.txt", "work\n")
    started = time.monotonic()
    with pytest.raises(GsdError) as caught:
        Commits(gsd.io.git.repo.Git(root)).commit_paths("01-02", 1, "Task 1", "worker", ["a.txt"])
    assert time.monotonic() - started < 60  # 1 s, then at most 2 x 5 s of grace
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"git commit gave no answer in 1 s in {root}; gsd ended it")
    assert gsd.io.git.command.TIMEOUT_VAR in message
    assert not (root / ".git" / "index.lock").exists()  # git's SIGTERM cleanup ran
    assert ended(int(pid_file.read_text()))  # the hook's own child was ended too
    assert git(root, "log", "-1", "--format=%s").strip() == "initial"


def ended(pid: int, within_s: float = 20.0) -> bool:
    """Whether `pid` is gone (or a zombie) within `within_s`: a signalled process closes
    its pipes, which lets gsd go on, a moment before the kernel marks it dead."""
    deadline = time.monotonic() + within_s
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.parametrize("given", ["soon", "0", "-5", "inf"])
def test_a_bad_timeout_setting_is_one_usage_error(
    git_project: Project, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    monkeypatch.setenv(gsd.io.git.command.TIMEOUT_VAR, given)
    with pytest.raises(UsageError) as caught:
        gsd.io.git.command.call(["status"], cwd=git_project.root)
    assert str(caught.value).startswith(
        f"{gsd.io.git.command.TIMEOUT_VAR}={given!r} is not a number"
    )


def test_a_missing_git_is_a_result_not_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gsd.io.git.command, "GIT", str(tmp_path / "no-such-git"))
    done = gsd.io.git.command.call(["status"], cwd=tmp_path)
    assert done.status == gsd.io.git.command.EXIT_NOT_FOUND and "no-such-git" in done.stderr


def test_a_bad_timeout_setting_is_refused_before_git_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "git-ran"
    program = tmp_path / "git"
    program.write_text(f'#!/bin/sh\ntouch {shlex.quote(str(marker))}\nexec git "$@"\n')
    program.chmod(0o755)
    monkeypatch.setattr(gsd.io.git.command, "GIT", str(program))
    monkeypatch.setenv(gsd.io.git.command.TIMEOUT_VAR, "soon")
    with pytest.raises(UsageError):
        gsd.io.git.command.call(["status"], cwd=tmp_path)
    time.sleep(1)  # a git started anyway would have touched the marker by now
    assert not marker.exists()
