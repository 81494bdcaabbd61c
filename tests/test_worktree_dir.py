"""Where plan worktrees live (SPEC 0 of 2026-11-27): outside the repository and every
`.git/` folder, in the user's state folder unless `workflow.worktree_dir` or
$GSD_WORKTREE_DIR says otherwise; worktrees an older gsd left under `.git/gsd/worktrees/`
(or a folder configured before) are found, rolled back and removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gsd.core import layout
from gsd.core.errors import InputError
from gsd.io import statedir
from gsd.io.git.checkpoint import Checkpoints
from gsd.io.git.repo import Git
from tests.conftest import REPO, git, plan_worktree
from tests.test_worktrees import (
    commit_all,
    control,
    leftovers,
    repo,
    run_gsd,
    start_gsd,
    steer,
    task_commits,
    wait_for,
)

__all__ = ["control", "repo"]  # fixtures

ALL_TASKS = ["01-01-1", "01-01-2", "01-02-1", "01-03-1"]


def run_env(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gsd", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(REPO)},
        timeout=300,
    )


def gsd_worktrees(root: Path) -> dict[Path, str]:
    """The linked worktrees git knows, path -> branch (the user's checkout left out)."""
    found: dict[Path, str] = {}
    path = None
    for line in git(root, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif line.startswith("branch ") and path is not None and path != root.resolve():
            found[path] = line.removeprefix("branch refs/heads/")
    return found


def configure(root: Path, **workflow: object) -> None:
    config = root / ".planning/config.json"
    data = json.loads(config.read_text())
    data["workflow"] = workflow
    config.write_text(json.dumps(data, indent=2) + "\n")
    commit_all(root, "config")


def kill_during_task(root: Path, control: Path, task: str, how: signal.Signals) -> None:
    """Start a run whose `task` hangs, stop gsd with `how` once the task has started."""
    steer(control, "hang", task)
    gsd = start_gsd(root, "execute-phase", "1")
    wait_for(control / f"started-{task}", gsd)
    gsd.send_signal(how)
    gsd.wait(timeout=120)
    (control / f"hang-{task}").unlink()


def test_a_run_keeps_plan_worktrees_in_the_state_folder_never_in_the_repository(
    repo: Path, control: Path
) -> None:
    kill_during_task(repo, control, "01-01-1", signal.SIGKILL)
    expected = plan_worktree(repo, "01-01")  # under the test's HOME/.local/state/gsd/worktrees
    found = gsd_worktrees(repo)  # 01-02's too, if the kill came before its end
    assert found[expected.resolve()] == "gsd/01-01"
    assert {path.parent for path in found} == {expected.parent.resolve()}
    assert expected.parent.name.startswith("repo-")
    assert not (repo / ".git/gsd/worktrees").exists()
    for path in found:
        assert ".git" not in path.parts and repo.resolve() not in path.parents

    resumed = run_gsd(repo, "execute-phase", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert "left open by an interrupted run" in resumed.stderr
    assert task_commits(repo) == ALL_TASKS
    assert leftovers(repo) == {}
    assert not expected.parent.exists()  # the repository's folder goes with its last worktree
    assert not (repo / ".git/gsd/worktrees").exists()


def test_the_config_key_moves_the_worktrees_and_the_env_var_wins(
    repo: Path, control: Path, tmp_path: Path
) -> None:
    configure(repo, worktree_dir="../configured")  # relative: from the repository's root
    kill_during_task(repo, control, "01-01-1", signal.SIGKILL)
    key = plan_worktree(repo, "01-01").parent.name
    configured = (tmp_path / "configured" / key / "01-01").resolve()
    assert gsd_worktrees(repo)[configured] == "gsd/01-01"
    (configured / "half-done.txt").write_text("x")  # the killed agent's half-done work

    # the next run uses $GSD_WORKTREE_DIR; the killed run's worktree is found where it
    # was, rolled back and removed; the agent sees its worktree under the new folder
    moved = tmp_path / "from-env"
    steer(control, "need", "01-01-1", str(moved / key / "01-01" / ".planning"))
    env = {**os.environ, statedir.WORKTREE_DIR_ENV: str(moved)}
    resumed = run_env(repo, env, "execute-phase", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert "rolled back refs/tags/checkpoint/01-01/1-" in resumed.stderr
    assert f"removed the worktree of gsd/01-01 an earlier run left in {configured}" in (
        resumed.stderr
    )
    assert task_commits(repo) == ALL_TASKS
    assert leftovers(repo) == {}
    assert not (tmp_path / "configured" / key).exists() and not (moved / key).exists()
    # on no branch or tag; kept only under the killed attempt's salvage ref (issue 24)
    assert "half-done" not in git(
        repo, "log", "--exclude=refs/gsd/salvage/*", "--all", "--name-only", "--format="
    )
    assert "half-done.txt" in git(repo, "show", "--name-only", "refs/gsd/salvage/01-01/1/1")


def old_gsd_killed_during_a_task(repo: Path) -> Path:
    """What an older gsd leaves when killed during 01-01's first task: the plan's worktree
    under .git/gsd/worktrees/, the task's checkpoint open in it (taken as every gsd takes
    it), the agent's half-done work."""
    old = repo / ".git/gsd/worktrees/01-01"
    git(repo, "worktree", "add", "-q", "-b", "gsd/01-01", str(old), "HEAD")
    Checkpoints(Git(old)).create("01-01", 1, confined=True)
    (old / "half-done.txt").write_text("x")
    (old / ".planning/STATE.md").write_text("an agent's edit\n")
    assert git(repo, "tag", "--list").startswith("checkpoint/01-01/1-")
    return old


@pytest.mark.parametrize("command", ["execute-phase", "checkpoints prune"])
def test_a_worktree_an_older_gsd_left_under_git_is_rolled_back_and_removed(
    repo: Path, control: Path, command: str
) -> None:
    old = old_gsd_killed_during_a_task(repo)
    args = ["execute-phase", "1"] if command == "execute-phase" else ["checkpoints", "prune"]
    done = run_gsd(repo, *args)
    assert done.returncode == 0, done.stderr
    assert "rolled back refs/tags/checkpoint/01-01/1-" in done.stderr, done.stderr
    assert f"removed the worktree of gsd/01-01 an earlier run left in {old.resolve()}" in (
        done.stderr
    )
    assert not (repo / ".git/gsd/worktrees").exists()
    assert not (repo / ".git/worktrees/01-01").exists()  # git's entry for it went too
    assert all(".git" not in path.parts for path in gsd_worktrees(repo))
    if command == "checkpoints prune":
        assert git(repo, "tag", "--list") == ""
        assert "gsd/01-01" in git(repo, "branch", "--list", "gsd/*")  # kept for the next run
        resumed = run_gsd(repo, "execute-phase", "1")
        assert resumed.returncode == 0, resumed.stderr
    assert task_commits(repo) == ALL_TASKS
    assert leftovers(repo) == {}
    # on no branch or tag; kept only under the killed attempt's salvage ref (issue 24)
    assert "half-done" not in git(
        repo, "log", "--exclude=refs/gsd/salvage/*", "--all", "--name-only", "--format="
    )
    assert "half-done.txt" in git(repo, "show", "--name-only", "refs/gsd/salvage/01-01/1/1")


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (".git/worktrees", "`workflow.worktree_dir` must be a folder outside the repository"),
        ("/srv/x/.git/wt", "`workflow.worktree_dir` must be a folder outside the repository"),
        ("build/worktrees", "would put plan worktrees inside the repository"),
        (".", "would put plan worktrees inside the repository"),
    ],
)
def test_a_configured_folder_in_the_repository_or_a_git_folder_is_refused(
    repo: Path, value: str, words: str
) -> None:
    configure(repo, worktree_dir=value)
    done = run_gsd(repo, "execute-phase", "1")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert ".planning/config.json:" in done.stderr and words in done.stderr
    assert "workflow.worktree_dir" in done.stderr
    assert task_commits(repo) == [] and gsd_worktrees(repo) == {}


def test_the_env_var_inside_the_repository_is_refused(repo: Path) -> None:
    env = {**os.environ, statedir.WORKTREE_DIR_ENV: str(repo / "worktrees")}
    done = run_env(repo, env, "execute-phase", "1")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "GSD_WORKTREE_DIR: " in done.stderr and "inside the repository" in done.stderr
    assert task_commits(repo) == [] and gsd_worktrees(repo) == {}


def test_two_clones_of_one_project_get_different_folders(tmp_path: Path) -> None:
    roots = [tmp_path / "a" / "app", tmp_path / "b" / "app"]
    for root in roots:
        root.mkdir(parents=True)
        git(root, "init", "-q")
    env = {"HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "state")}
    first, second = (statedir.worktrees_folder(r, r / ".git", None, env) for r in roots)
    assert first != second
    for folder in (first, second):
        assert folder.parent == (tmp_path / "state" / "gsd" / "worktrees").resolve()
        assert folder.name.startswith("app-") and ".git" not in folder.parts
    # the key is stable: the same repository gets the same folder every time
    assert statedir.worktrees_folder(roots[0], roots[0] / ".git", None, env) == first
    del env["XDG_STATE_HOME"]  # ~/.local/state without it
    third = statedir.worktrees_folder(roots[0], roots[0] / ".git", "~/wt", env)
    assert third == (tmp_path / "home" / "wt" / first.name).resolve()


def test_a_repository_whose_git_folder_is_not_named_git_gets_a_clean_key() -> None:
    assert layout.repo_key(Path("/srv/app.git")).startswith("app-")
    assert layout.repo_key(Path("/srv/.git")).startswith("srv-")
    assert layout.repo_key(Path("/.git")).startswith("repo-")
    assert layout.repo_key(Path("/srv/we ird/.git")).startswith("we_ird-")


def test_a_home_folder_that_is_the_repository_is_refused(tmp_path: Path) -> None:
    """A dotfiles repository at ~: the default folder would be inside it."""
    home = tmp_path / "home"
    git(home, "init", "-q")
    with pytest.raises(InputError) as refused:
        statedir.worktrees_folder(home, home / ".git", None, {"HOME": str(home)})
    assert "the default worktree folder" in str(refused.value)
    assert "GSD_WORKTREE_DIR" in str(refused.value)  # the hint says what to set


def test_doctor_says_where_plan_worktrees_go_or_why_not(repo: Path, gsd) -> None:
    done = gsd("doctor", "--format", "json")
    (found,) = [f for f in json.loads(done.out)["findings"] if f["topic"] == "worktrees"]
    assert found == {
        "status": "ok",
        "topic": "worktrees",
        "message": f"plan worktrees go in {plan_worktree(repo, '01-01').parent.resolve()}",
    }
    configure(repo, worktree_dir="build/wt")
    done = gsd("doctor", "--format", "json")
    (found,) = [f for f in json.loads(done.out)["findings"] if f["topic"] == "worktrees"]
    assert found["status"] == "problem" and "inside the repository" in found["message"]
    assert done.code != 0


def test_checkpoints_prune_removes_the_spare_checkout_a_run_left(repo: Path) -> None:
    done = run_gsd(repo, "execute-phase", "1")
    assert done.returncode == 0, done.stderr
    folder = plan_worktree(repo, "01-01").parent
    spare = folder.with_name(f"{folder.name}.spare")
    assert spare.is_dir() and any(spare.iterdir())  # the last plan's checkout, kept
    assert folder.with_name(f"{folder.name}.spare.index").is_file()

    pruned = run_gsd(repo, "checkpoints", "prune")
    assert pruned.returncode == 0, pruned.stderr
    assert f"removed the spare checkout {spare}" in pruned.stderr
    assert not spare.exists() and not folder.with_name(f"{folder.name}.spare.index").exists()
    assert task_commits(repo) == ALL_TASKS  # the work is on the branch, not in the spare
    again = run_gsd(repo, "checkpoints", "prune")
    assert "spare" not in again.stderr
