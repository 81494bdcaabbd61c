"""The git checks without a sandbox: what a misbehaving agent does with real git between
the checkpoint and gsd's look, and what gsd reports and puts back (issue 10)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import gsd.io.git.command
import gsd.io.git.repo
from gsd.core.errors import GsdError
from gsd.core.safety import enforce
from gsd.io.git.branches import Branches
from gsd.io.git.checkpoint import Checkpoints
from gsd.io.git.checkpointrecord import CHECKPOINT_PREFIX
from gsd.io.git.commits import Commits
from gsd.io.git.observe import Observer
from gsd.io.git.repo import Git
from tests.conftest import Project, git
from tests.test_git import checkpoint_tags, commit_all, one_line_error, repo_state


@pytest.fixture
def repo(git_project: Project) -> Project:
    git_project.write(".gitignore", "*.log\n.env*\n*.key\n*.pem\nsecrets/\n")
    for name in ("a.txt", "b.txt", "c.txt", ".planning/config.json"):
        git_project.write(name, f"{name} v1\n")
    commit_all(git_project.root, "files")
    return git_project


def stash_list(root: Path) -> str:
    return git(root, "stash", "list", "--format=%H %gs")


def make_stashes(repo: Project, count: int) -> None:
    for n in range(count):
        repo.write("a.txt", f"user's stash {n}\n")
        git(repo.root, "stash", "push", "-q", "-m", f"user {n}")


def planted(root: Path) -> Path:
    """A program that leaves a mark when git runs it (a hook, an fsmonitor)."""
    mark = root.parent / "ran"
    program = root.parent / "evil.sh"
    program.write_text(f"#!/bin/sh\necho ran >> {mark}\nexit 0\n")
    program.chmod(0o755)
    return mark


# -- refs ----------------------------------------------------------------------------


def test_stash_clear_is_reported_and_every_stash_comes_back(repo: Project) -> None:
    root = repo.root
    make_stashes(repo, 3)
    before = stash_list(root)
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "stash", "clear")
    assert stash_list(root) == ""
    seen = Observer(g).observe(cp)
    assert seen.changed_refs == ["stash list changed"]
    Checkpoints(g).rollback(cp)
    assert stash_list(root) == before
    git(root, "stash", "pop", "-q", "stash@{2}")  # the oldest one still applies
    assert (root / "a.txt").read_text() == "user's stash 0\n"


def test_a_dropped_stash_in_the_middle_is_reported_and_restored(repo: Project) -> None:
    root = repo.root
    make_stashes(repo, 3)
    before = stash_list(root)
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "stash", "drop", "-q", "stash@{1}")  # refs/stash itself stays where it was
    assert Observer(g).observe(cp).changed_refs == ["stash list changed"]
    Checkpoints(g).rollback(cp)
    assert stash_list(root) == before


@pytest.mark.parametrize("taken", [["drop", "-q"], ["pop", "-q"]])
def test_the_newest_stash_taken_comes_back_with_no_entry_added(
    repo: Project, taken: list[str]
) -> None:
    """`git stash drop` or `pop` of the newest stash moves refs/stash itself: restoring
    it must not leave the extra, empty reflog entry moving the ref writes."""
    root = repo.root
    make_stashes(repo, 3)
    before = stash_list(root)
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "stash", *taken)
    git(root, "checkout", "-q", "--", ".")  # what a pop applied: the agent's change
    assert Observer(g).observe(cp).changed_refs == ["stash list changed"]
    Checkpoints(g).rollback(cp)
    assert stash_list(root) == before


def test_a_stash_pushed_meanwhile_is_left_it_may_be_the_users(repo: Project) -> None:
    """A stash made during the spawn only adds: the user may have made it in their own
    checkout, so it is neither reported nor removed (nothing is lost either way)."""
    root = repo.root
    make_stashes(repo, 1)
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    repo.write("a.txt", "the user's work, stashed while the agent ran\n")
    git(root, "stash", "push", "-q", "-m", "user later")
    after = stash_list(root)
    assert Observer(g).observe(cp).changed_refs == []
    Checkpoints(g).rollback(cp)
    assert stash_list(root) == after and after.count("\n") == 2


def test_notes_remotes_and_any_ref_are_watched_and_restored(repo: Project) -> None:
    root = repo.root
    head = git(root, "rev-parse", "HEAD").strip()
    git(root, "notes", "add", "-m", "user's note")
    git(root, "update-ref", "refs/remotes/origin/main", head)
    git(root, "update-ref", "refs/custom/thing", head)
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "notes", "add", "-f", "-m", "agent's note")
    git(root, "update-ref", "-d", "refs/remotes/origin/main")
    git(root, "update-ref", "refs/custom/thing", git(root, "rev-parse", "HEAD~1").strip())
    git(root, "update-ref", "refs/custom/new", head)  # created: not reported, left
    assert Observer(g).observe(cp).changed_refs == [
        "ref refs/custom/thing moved",
        "notes commits moved",
        "remote-tracking branch origin/main deleted",
    ]
    notes = git(root, "rev-parse", "refs/notes/commits")
    Checkpoints(g).rollback(cp)
    # what was deleted or moved off its line is put back; what moved on (the notes) and
    # what is new (refs/custom/new) may be the user's and loses nothing: both are left
    after = git(root, "for-each-ref")
    assert git(root, "rev-parse", "refs/custom/thing").strip() == head
    assert git(root, "rev-parse", "refs/notes/commits") == notes
    assert "refs/remotes/origin/main" in after and "refs/custom/new" in after


def test_a_checkpoint_tag_an_agent_makes_is_reported_and_deleted(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    forged = f"{CHECKPOINT_PREFIX}01-02/1-20200101T000000Z-abcdef"
    git(root, "update-ref", forged, "HEAD")
    other = Checkpoints(Git(root)).create("01-03", 1)  # gsd's own, meanwhile: not the agent's
    seen = Observer(g).observe(cp)
    assert seen.changed_refs == [
        "checkpoint tag checkpoint/01-02/1-20200101T000000Z-abcdef created, not by gsd"
    ]
    Checkpoints(g).rollback(cp)
    assert checkpoint_tags(root) == [other.tag]


def test_deleting_another_gsd_tag_is_reported_and_undone(repo: Project) -> None:
    root = repo.root
    older = Checkpoints(Git(root)).create("01-03", 1)  # another plan's, open
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "update-ref", "-d", older.tag)
    assert Observer(g).observe(cp).changed_refs == [f"tag {older.name} deleted"]
    Checkpoints(g).rollback(cp)
    assert checkpoint_tags(root) == [older.tag]


@pytest.fixture
def plans(repo: Project, tmp_path: Path) -> tuple[Path, Path]:
    """Two plan worktrees, as a parallel wave has them."""
    for plan in ("01-02", "01-03"):
        git(repo.root, "worktree", "add", "-q", "-b", f"gsd/{plan}", str(tmp_path / plan))
    return tmp_path / "01-02", tmp_path / "01-03"


def test_another_plans_branch_deleted_is_reported_and_restored(
    repo: Project, plans: tuple[Path, Path]
) -> None:
    mine, theirs = plans
    (theirs / "t.txt").write_text("their work\n")
    their_tip = Commits(Git(theirs)).commit_paths("01-03", 1, "theirs", "worker", ["t.txt"])
    g = Git(mine)
    cp = Checkpoints(g).create("01-02", 1)
    git(mine, "update-ref", "-d", "refs/heads/gsd/01-03")  # the agent, from its worktree
    assert Observer(g).observe(cp).changed_refs == [
        "branch gsd/01-03 (checked out in another worktree) deleted"
    ]
    Checkpoints(g).rollback(cp)
    assert git(repo.root, "rev-parse", "gsd/01-03").strip() == their_tip


def test_another_plans_branch_moved_off_its_line_is_reported_not_moved_back(
    repo: Project, plans: tuple[Path, Path]
) -> None:
    mine, theirs = plans
    g = Git(mine)
    cp = Checkpoints(g).create("01-02", 1)
    (theirs / "t.txt").write_text("their work, committed by plain git\n")
    commit_all(theirs, "their agent's own commit")  # a descendant: their plan's business
    assert Observer(g).observe(cp).changed_refs == []
    git(mine, "update-ref", "refs/heads/gsd/01-03", "HEAD~1")
    assert Observer(g).observe(cp).changed_refs == [
        "branch gsd/01-03 (checked out in another worktree) moved to a commit that does not "
        "descend from its tip"
    ]


def test_a_plan_branch_checked_out_nowhere_is_watched_like_any(repo: Project) -> None:
    root = repo.root
    git(root, "branch", "gsd/01-09")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "branch", "-D", "gsd/01-09")
    assert Observer(g).observe(cp).changed_refs == ["branch gsd/01-09 deleted"]
    Checkpoints(g).rollback(cp)
    assert git(root, "branch", "--list", "gsd/01-09").strip() == "gsd/01-09"


def test_gsds_own_writes_meanwhile_are_neither_reported_nor_undone(
    repo: Project, plans: tuple[Path, Path]
) -> None:
    root = repo.root
    mine, theirs = plans
    g = Git(mine)
    cp = Checkpoints(g).create("01-02", 1)
    # While this spawn runs: the other plan commits, then its worktree goes (its branch is
    # no longer checked out anywhere), and a wave-1 branch is deleted after its merge.
    git(root, "branch", "gsd/01-01")
    (theirs / "t.txt").write_text("their work\n")
    their_tip = Commits(Git(theirs)).commit_paths("01-03", 1, "theirs", "worker", ["t.txt"])
    git(root, "worktree", "remove", str(theirs))
    Branches(Git(root)).delete_branch("gsd/01-01")
    seen = Observer(g).observe(cp)
    assert seen.changed_refs == []
    Checkpoints(g).rollback(cp)
    assert git(root, "rev-parse", "gsd/01-03").strip() == their_tip
    assert git(root, "branch", "--list", "gsd/01-01") == ""


# -- index flags ---------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--skip-worktree", "--assume-unchanged"])
def test_a_hidden_edit_of_config_json_shows_and_the_flag_is_cleared(
    repo: Project, flag: str
) -> None:
    root = repo.root
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    repo.write(".planning/config.json", '{"mode": "yolo"}\n')
    git(root, "update-index", flag, ".planning/config.json")
    assert git(root, "status", "--porcelain") == ""  # what git alone shows
    seen = Observer(g).observe(cp)
    kind = flag.removeprefix("--")
    assert seen.flags == [f"{kind} on .planning/config.json"]
    assert seen.changed == [".planning/config.json"]
    found = enforce.check(
        tier="read-only", changed=seen.changed, allowed=[], scope="warn", flags=seen.flags
    )
    assert [v.kind for v in found] == ["tier", "protected", "index-flags"]
    assert all(v.fatal for v in found)
    assert git(root, "ls-files", "-v", ".planning/config.json") == "H .planning/config.json\n"
    Checkpoints(g).rollback(cp)
    assert (root / ".planning/config.json").read_text() == ".planning/config.json v1\n"
    assert git(root, "status", "--porcelain") == ""


def test_the_users_own_flags_are_left_alone(repo: Project) -> None:
    root = repo.root
    git(root, "update-index", "--assume-unchanged", "a.txt")
    git(root, "update-index", "--skip-worktree", "b.txt")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    assert cp.flags == {"a.txt": "assume-unchanged", "b.txt": "skip-worktree"}
    git(root, "update-index", "--skip-worktree", "c.txt")  # the agent adds one
    seen = Observer(g).observe(cp)
    assert seen.flags == ["skip-worktree on c.txt"]
    Checkpoints(g).rollback(cp)
    assert git(root, "ls-files", "-v") == (
        "H .gitignore\nH .planning/config.json\nH README.md\nh a.txt\nS b.txt\nH c.txt\n"
    )


def test_an_index_untouched_by_the_agent_is_not_read_again(
    repo: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = Git(repo.root)
    cp = Checkpoints(g).create("01-02", 1)
    repo.write("a.txt", "agent, without git\n")

    def unexpected(*args: object) -> None:
        raise AssertionError("the index was parsed although it did not change")

    monkeypatch.setattr(gsd.io.git.repo.indexflags, "index_flags", unexpected)
    assert Observer(g).observe(cp).changed == ["a.txt"]


# -- .git internals ------------------------------------------------------------------


def test_a_planted_hook_and_fsmonitor_never_run_and_are_put_back(repo: Project) -> None:
    root = repo.root
    mark = planted(root)
    config = (root / ".git/config").read_bytes()
    hooks = sorted(p.name for p in (root / ".git/hooks").iterdir())
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    # The agent: a hook, an fsmonitor (run by every git status), a pager, an alias.
    evil = str(root.parent / "evil.sh")
    for hook in ("pre-commit", "post-commit", "commit-msg"):
        (root / ".git/hooks" / hook).symlink_to(evil)
    git(root, "config", "core.fsmonitor", evil)
    (root / ".git/info/attributes").write_text("* filter=evil\n")
    git(root, "config", "filter.evil.clean", evil)
    repo.write("a.txt", "agent\n")
    seen = Observer(g).observe(cp)
    assert seen.internals == [
        "config",
        "hooks/commit-msg",
        "hooks/post-commit",
        "hooks/pre-commit",
        "info/attributes",
    ]
    assert seen.changed == ["a.txt"]
    Commits(g).commit_paths("01-02", 1, "task", "worker", seen.changed)
    Checkpoints(g).delete(cp)
    assert not mark.exists(), "gsd ran a program the agent planted"
    assert (root / ".git/config").read_bytes() == config
    assert sorted(p.name for p in (root / ".git/hooks").iterdir()) == hooks
    assert not (root / ".git/info/attributes").exists()


def test_a_hooks_folder_swapped_for_a_symlink_comes_back_as_it_was(
    repo: Project, tmp_path: Path
) -> None:
    root = repo.root
    hooks = root / ".git/hooks"
    (hooks / "pre-push").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "pre-push").chmod(0o751)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not gsd's to touch\n")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    os.rename(hooks, tmp_path / "old-hooks")
    hooks.symlink_to(elsewhere)
    seen = Observer(g).observe(cp)
    assert "hooks" in seen.internals
    assert hooks.is_dir() and not hooks.is_symlink()
    assert stat.S_IMODE((hooks / "pre-push").stat().st_mode) == 0o751
    assert (elsewhere / "keep.txt").read_text() == "not gsd's to touch\n"
    Checkpoints(g).rollback(cp)


def test_a_worktrees_own_config_worktree_is_watched(repo: Project, tmp_path: Path) -> None:
    git(repo.root, "worktree", "add", "-q", "-b", "gsd/01-02", str(tmp_path / "wt"))
    g = Git(tmp_path / "wt")
    cp = Checkpoints(g).create("01-02", 1)
    git(repo.root, "config", "extensions.worktreeConfig", "true")
    git(tmp_path / "wt", "config", "--worktree", "core.pager", "evil")
    seen = Observer(g).observe(cp)
    assert seen.internals == ["config", "worktrees/wt/config.worktree"]
    assert not (repo.root / ".git/worktrees/wt/config.worktree").exists()
    Checkpoints(g).rollback(cp)


def test_a_hook_planted_by_one_plans_agent_never_runs_in_another_plans_commit(
    repo: Project, plans: tuple[Path, Path]
) -> None:
    mine, theirs = plans
    mark = planted(repo.root)
    me, them = Git(mine), Git(theirs)
    mine_cp, their_cp = Checkpoints(me).create("01-02", 1), Checkpoints(them).create("01-03", 1)
    (theirs / "t.txt").write_text("their agent's work\n")
    hook = repo.root / ".git/hooks/pre-commit"
    hook.symlink_to(repo.root.parent / "evil.sh")  # their agent, while both spawns run
    (mine / "m.txt").write_text("my agent's work\n")
    seen = Observer(me).observe(mine_cp)  # gsd's first git command after my spawn: hook gone first
    Commits(me).commit_paths("01-02", 1, "mine", "worker", seen.changed)
    Checkpoints(me).delete(mine_cp)
    assert not mark.exists() and not os.path.lexists(hook)
    # Nobody can tell which agent did it: every spawn open at the time hears of it.
    assert seen.internals == ["hooks/pre-commit"]
    assert Observer(them).observe(their_cp).internals == ["hooks/pre-commit"]
    Checkpoints(them).rollback(their_cp)


def test_rollback_alone_puts_internals_back(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    (root / ".git/hooks/pre-commit").write_text("#!/bin/sh\nexit 1\n")
    Checkpoints(g).rollback(cp)
    assert not (root / ".git/hooks/pre-commit").exists()


# -- ignored protected files ---------------------------------------------------------


def test_ignored_secrets_are_compared_and_restored_exactly(repo: Project) -> None:
    root = repo.root
    repo.write(".env", "TOKEN=user\n")
    (root / ".env").chmod(0o600)
    repo.write("certs/server.pem", "PEM user\n")
    repo.write("secrets/deploy.key", "KEY user\n")  # inside an ignored folder
    repo.write("unrelated.log", "ignored, not protected\n")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    repo.write(".env", "TOKEN=agent\n")
    (root / "certs/server.pem").unlink()
    repo.write("secrets/deploy.key", "KEY agent\n")
    repo.write("new/.env.production", "TOKEN=planted\n")
    repo.write("unrelated.log", "agent\n")
    seen = Observer(g).observe(cp)
    assert seen.protected == [
        ".env",
        "certs/server.pem",
        "new/.env.production",
        "secrets/deploy.key",
    ]
    assert seen.changed == []
    found = enforce.check(
        tier="full", changed=[], allowed=[], scope="warn", ignored_protected=seen.protected
    )
    assert [(v.kind, v.fatal) for v in found] == [("protected", True)]
    Checkpoints(g).rollback(cp)
    assert (root / ".env").read_text() == "TOKEN=user\n"
    assert stat.S_IMODE((root / ".env").stat().st_mode) == 0o600
    assert (root / "certs/server.pem").read_text() == "PEM user\n"
    assert (root / "secrets/deploy.key").read_text() == "KEY user\n"
    assert not (root / "new").exists()
    assert (root / "unrelated.log").read_text() == "agent\n"  # other ignored files: never


def test_a_secret_behind_a_symlinked_folder_is_never_written_through(
    repo: Project, tmp_path: Path
) -> None:
    root = repo.root
    repo.write("conf/.env", "TOKEN=user\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".env").write_text("someone else's\n")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    os.rename(root / "conf", tmp_path / "moved-conf")
    (root / "conf").symlink_to(outside)
    seen = Observer(g).observe(cp)
    assert seen.protected == ["conf/.env"] and seen.changed == ["conf"]
    Checkpoints(g).rollback(cp)
    assert (root / "conf/.env").read_text() == "TOKEN=user\n" and not (root / "conf").is_symlink()
    assert (outside / ".env").read_text() == "someone else's\n"


# -- the agent's own commits, git rm and git mv -------------------------------------


def test_an_agents_commits_mv_and_rm_end_in_one_task_commit(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "mv", "a.txt", "moved.txt")
    git(root, "rm", "-q", "b.txt")
    repo.write("c.txt", "agent\n")
    git(root, "commit", "-q", "-am", "the agent's own commit")
    git(root, "mv", "c.txt", "c2.txt")  # and more, staged only
    seen = Observer(g).observe(cp)
    assert seen.changed == ["a.txt", "b.txt", "c.txt", "c2.txt", "moved.txt"]
    assert seen.changed_refs == []
    assert Checkpoints(g).squash_agent_commits(cp) is True
    sha = Commits(g).commit_paths("01-02", 1, "Task 1", "worker", seen.changed)
    Checkpoints(g).delete(cp)
    assert git(root, "rev-list", "--count", f"{cp.head}..HEAD").strip() == "1"
    shown = git(root, "show", "--name-status", "--no-renames", "--format=%B", sha)
    assert "Gsd-Task: 01-02-1" in shown
    assert shown.split("\n\n")[-1].split() == [
        "D",
        "a.txt",
        "D",
        "b.txt",
        "D",
        "c.txt",
        "A",
        "c2.txt",
        "A",
        "moved.txt",
    ]
    assert git(root, "status", "--porcelain") == ""


def test_git_mv_and_rm_commit_through_commit_task_too(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    git(root, "mv", "a.txt", "moved.txt")
    git(root, "rm", "-q", "b.txt")
    sha = Commits(g).commit_task("01-02", 1, "Task 1", "worker", ["a.txt", "b.txt", "moved.txt"])
    assert sha is not None
    shown = git(root, "show", "--name-status", "--no-renames", "--format=", sha)
    assert shown == "D\ta.txt\nD\tb.txt\nA\tmoved.txt\n"


def test_nothing_to_squash(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    assert Checkpoints(g).squash_agent_commits(cp) is False
    git(root, "checkout", "-q", "-b", "elsewhere")
    repo.write("a.txt", "elsewhere\n")
    commit_all(root, "on another branch")
    assert Checkpoints(g).squash_agent_commits(cp) is False


# -- index.lock, stderr, environment --------------------------------------------------


def test_another_gits_index_lock_is_waited_for(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    lock = root / ".git/index.lock"
    lock.write_text("")
    assert g.index_lock_held() == lock
    threading.Timer(0.3, lock.unlink).start()
    repo.write("a.txt", "work\n")
    started = time.monotonic()
    Commits(g).commit_paths("01-02", 1, "Task 1", "worker", ["a.txt"])
    assert time.monotonic() - started >= 0.25
    assert g.index_lock_held() is None
    assert git(root, "status", "--porcelain") == ""


def test_a_lock_held_too_long_is_one_clear_error_never_a_merge_conflict(
    repo: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repo.root
    monkeypatch.setattr(gsd.io.git.command, "LOCK_WAIT_S", 0.3)
    git(root, "checkout", "-q", "-b", "side")
    repo.write("side.txt", "side\n")
    commit_all(root, "side")
    git(root, "checkout", "-q", "main")
    lock = root / ".git/index.lock"
    lock.write_text("")
    g = Git(root)
    with pytest.raises(GsdError) as caught:
        Branches(g).start_merge("side", "merge side")
    message = one_line_error(caught.value)
    assert message.startswith(f"another git process holds {lock}; gsd waited 0.3 s")
    assert "index.lock still there after 0.3 s" in caught.value.details
    assert g.status().changed == frozenset()  # a read needs no lock
    lock.unlink()
    assert Branches(g).start_merge("side", "merge side") == []
    Branches(g).abort_merge()


def test_a_lock_taken_during_a_merge_is_waited_for_not_called_a_conflict(
    repo: Project, tmp_path: Path
) -> None:
    """A merge whose index.lock another git took after it started stops half way with
    "fix conflicts and then commit": gsd undoes it and merges again once the lock goes."""
    root = repo.root
    git(root, "checkout", "-q", "-b", "side")
    repo.write("side.txt", "side\n")
    commit_all(root, "side")
    git(root, "checkout", "-q", "main")
    once = tmp_path / "took-the-lock"
    hook = root / ".git/hooks/reference-transaction"  # runs as the merge sets ORIG_HEAD
    hook.write_text(
        f"#!/bin/sh\n[ -e {once} ] && exit 0\ntouch {once} {root}/.git/index.lock\n"
        f"(sleep 0.5; rm -f {root}/.git/index.lock) >/dev/null 2>&1 &\n"
    )
    hook.chmod(0o755)
    g = Git(root)
    assert Branches(g).start_merge("side", "merge side") == []
    assert once.exists()
    Branches(g).finish_merge("merge side", [])
    assert (root / "side.txt").read_text() == "side\n"


def test_a_git_error_keeps_its_whole_stderr(repo: Project) -> None:
    root = repo.root
    hook = root / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho 'first line' >&2\necho 'second line' >&2\nexit 1\n")
    hook.chmod(0o755)
    repo.write("a.txt", "work\n")
    with pytest.raises(GsdError) as caught:
        Commits(Git(root)).commit_paths("01-02", 1, "Task 1", "worker", ["a.txt"])
    assert one_line_error(caught.value).startswith(f"git commit failed in {root}: first line")
    assert caught.value.details.splitlines()[1:] == ["first line", "second line"]
    assert "Gsd-Task: 01-02-1" in caught.value.details.splitlines()[0]
    assert caught.value.details.startswith("git commit -q --cleanup=verbatim -m ")


def test_a_parent_gits_environment_does_not_redirect_gsd(
    repo: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))  # what a hook exports
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "nowhere"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    g = Git(repo.root)
    assert g.root == repo.root.resolve() and g.head() is not None
    assert gsd.io.git.command.git_env(read_only=True)["GIT_OPTIONAL_LOCKS"] == "0"
    env = gsd.io.git.command.git_env()
    assert "GIT_DIR" not in env and "GIT_OPTIONAL_LOCKS" not in env
    assert env["GIT_AUTHOR_NAME"] == "Test Author" and env["GIT_CONFIG_NOSYSTEM"] == "1"


def test_gsds_status_takes_no_index_lock(repo: Project, tmp_path: Path) -> None:
    """With GIT_OPTIONAL_LOCKS=0 a status never writes the index: an editor's `git add`
    running at the same moment cannot fail on gsd's lock."""
    root = repo.root
    repo.write("a.txt", "changed\n")  # a refresh would want to write the index
    index = root / ".git/index"
    before = index.stat().st_mtime_ns
    time.sleep(0.05)
    Git(root).status()
    assert index.stat().st_mtime_ns == before


def test_repo_state_is_exact_after_everything_at_once(repo: Project) -> None:
    """All the misbehaviour of this file in one spawn, and the rollback is exact."""
    root = repo.root
    make_stashes(repo, 2)
    git(root, "tag", "v1")
    repo.write(".env", "TOKEN=user\n")
    before = {**repo_state(root), "stash": stash_list(root)}
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "stash", "clear")
    git(root, "tag", "-d", "v1")
    git(root, "update-index", "--skip-worktree", "a.txt")
    repo.write("a.txt", "hidden\n")
    repo.write(".env", "TOKEN=agent\n")
    (root / ".git/hooks/post-checkout").write_text("#!/bin/sh\nexit 0\n")
    repo.write("b.txt", "committed by the agent\n")
    commit_all(root, "agent")
    seen = Observer(g).observe(cp)
    assert all(seen[1:]), seen
    Checkpoints(g).rollback(cp)
    assert {**repo_state(root), "stash": stash_list(root)} == before
    assert (root / ".env").read_text() == "TOKEN=user\n"
    assert not (root / ".git/hooks/post-checkout").exists()


def test_a_program_gsd_would_run_is_not_run_while_observing(repo: Project) -> None:
    """`core.fsmonitor` is what every `git status` runs: planted, it ran 24 times in one
    run before gsd put internals back before its first git command."""
    root = repo.root
    mark = planted(root)
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "config", "core.fsmonitor", str(root.parent / "evil.sh"))
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # the spawn ends
    Observer(g).observe(cp)
    Checkpoints(g).rollback(cp)
    assert not mark.exists()


def test_another_plans_checkpoint_tag_gone_between_the_ledger_and_the_ref_is_gsds(
    repo: Project,
) -> None:
    """Another plan's thread notes its tag's removal in the ledger, then this spawn's
    checkpoint is taken, then the tag goes: the order a 9-plan wave met. The tag was
    gsd's own, so nothing is reported and rollback does not bring it back."""
    root = repo.root
    other = Git(root)
    theirs = Checkpoints(other).create("01-06", 1)
    gsd.io.git.repo.refledger.ledger(other.common_dir).wrote(theirs.tag, "")  # noted, not yet gone
    g = Git(root)
    cp = Checkpoints(g).create("01-07", 1)
    git(root, "update-ref", "-d", theirs.tag)  # ... and now it goes
    seen = Observer(g).observe(cp)
    assert seen.changed_refs == []
    Checkpoints(g).rollback(cp)
    assert theirs.tag.removeprefix("refs/tags/") not in git(root, "tag", "--list")


def test_a_checkpoint_tag_gsd_never_made_is_still_the_agents(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    cp = Checkpoints(g).create("01-07", 1)
    head = git(root, "rev-parse", "HEAD").strip()
    git(root, "update-ref", f"{CHECKPOINT_PREFIX}01-07/9-20200101T000000Z-planted", head)
    assert any("created, not by gsd" in note for note in Observer(g).observe(cp).changed_refs)
    Checkpoints(g).rollback(cp)
    assert "planted" not in git(root, "tag", "--list")


def test_in_a_sandbox_what_the_user_does_to_refs_and_config_meanwhile_stays(
    repo: Project,
) -> None:
    """A confined agent (Landlock: it can write no git directory) changes no ref and no
    .git file, so whatever changes there while it runs is the user's: a failed attempt's
    rollback keeps the user's new stash, branch, commit, tag and remote."""
    root = repo.root
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1, confined=True)
    repo.write("a.txt", "the user's work, stashed\n")
    git(root, "stash", "push", "-q", "-m", "user's stash")
    git(root, "switch", "-q", "-c", "feature")
    repo.write("f.txt", "the user's commit\n")
    commit_all(root, "the user's commit")
    git(root, "tag", "v1.0")
    git(root, "switch", "-q", "main")
    git(root, "remote", "add", "origin", "https://example.invalid/repo.git")

    def users_refs() -> list[str]:
        listed = git(root, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
        return [line for line in listed if not line.startswith(CHECKPOINT_PREFIX)]

    refs = users_refs()
    seen = Observer(g).observe(cp)
    assert (seen.changed_refs, seen.internals) == ([], [])
    Checkpoints(g).rollback(cp)
    assert users_refs() == refs
    assert "user's stash" in stash_list(root)
    assert "origin" in git(root, "remote")
