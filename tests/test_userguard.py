"""The user's checkout beside a plan's worktree when no sandbox keeps agents out of it
(gsd.io.confine.userguard): what changed during a spawn is put back, displaced bytes are kept, and
the user's own git work meanwhile is never reverted."""

from __future__ import annotations

import subprocess

from gsd.io.confine import userguard
from gsd.io.git.repo import Git
from tests.conftest import git


def test_an_agents_edit_is_put_back_and_what_it_replaced_is_kept(git_project) -> None:
    root = git_project.root
    git_project.write("README.md", "the user's uncommitted edit\n")
    user = Git(root)
    kept = userguard.take(user)
    assert kept is not None
    git_project.write("README.md", "the agent's bytes\n")
    git_project.write("src/injected.py", "x = 1\n")
    notes = userguard.put_back(user, kept)
    userguard.release(user, kept)
    assert notes == ["README.md (changed)", "src/injected.py (new)"]
    assert (root / "README.md").read_text() == "the user's uncommitted edit\n"
    assert not (root / "src/injected.py").exists()
    displaced = sorted((root / ".git/gsd/displaced").rglob("*.*"))
    assert [p.read_text() for p in displaced] == ["the agent's bytes\n", "x = 1\n"]


def test_a_commit_of_the_user_meanwhile_is_never_reverted(git_project) -> None:
    """HEAD moved: the user is at work in their checkout; nothing is put back (putting
    back the snapshot would stage a revert of the user's own commit)."""
    root = git_project.root
    user = Git(root)
    kept = userguard.take(user)
    assert kept is not None
    git_project.write("f.txt", "v2, the user's\n")
    git(root, "add", "f.txt")
    git(root, "commit", "-q", "-m", "the user's commit")
    assert userguard.put_back(user, kept) == []
    userguard.release(user, kept)
    assert git(root, "status", "--porcelain") == ""
    assert (root / "f.txt").read_text() == "v2, the user's\n"


def test_spawns_open_at_once_share_one_snapshot(git_project) -> None:
    """The second spawn of a wave must not take its snapshot after the first one's agent
    wrote in the checkout: both use the one taken when the first started."""
    root = git_project.root
    user = Git(root)
    first = userguard.take(user)
    git_project.write("README.md", "agent A's garbage\n")
    second = userguard.take(Git(root))
    assert first is not None and second is first
    userguard.release(user, first)
    assert userguard.put_back(user, second) == ["README.md (changed)"]
    userguard.release(user, second)
    assert (root / "README.md").read_text() == "demo\n"
    third = userguard.take(user)  # all released: a fresh one
    assert third is not None and third is not first
    userguard.release(user, third)


def test_a_merge_half_done_in_the_users_checkout_means_no_snapshot(git_project) -> None:
    root = git_project.root
    git(root, "switch", "-q", "-c", "side")
    git_project.write("README.md", "side\n")
    git(root, "commit", "-q", "-am", "side")
    git(root, "switch", "-q", "main")
    git_project.write("README.md", "main\n")
    git(root, "commit", "-q", "-am", "main")
    subprocess.run(["git", "merge", "-q", "side"], cwd=root, capture_output=True)
    assert (root / ".git/MERGE_HEAD").exists()
    assert userguard.take(Git(root)) is None  # no crash: nothing is guarded, or put back
