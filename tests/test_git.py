"""Checkpoints, exact rollback and task commits, against real git in temporary repos."""

from __future__ import annotations

import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import gsd.io.git.checkpoint
import gsd.io.git.command
from gsd.core.errors import GsdError, InputError
from gsd.io.git.checkpoint import Checkpoints
from gsd.io.git.checkpointrecord import CHECKPOINT_PREFIX, CheckpointRecords
from gsd.io.git.commits import Commits
from gsd.io.git.observe import Observer
from gsd.io.git.recovery import OpenCheckpoints
from gsd.io.git.repo import Git
from tests.conftest import Project, git


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def tags(root: Path) -> str:
    return git(root, "show-ref", "--tags", "--dereference") if git(root, "tag", "-l") else ""


def checkpoint_tags(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", "refs/tags/checkpoint/").split()


def repo_state(root: Path) -> dict[str, str]:
    """What a rollback must give back: status, diffs, HEAD, branch, tags, branches."""
    return {
        "status": git(root, "status", "--porcelain", "-uall"),
        "diff": git(root, "diff"),
        "cached": git(root, "diff", "--cached"),
        "head": git(root, "rev-parse", "HEAD"),
        "branch": git(root, "symbolic-ref", "HEAD"),
        "tags": tags(root),
        "heads": git(root, "show-ref", "--heads"),
        "main": git(root, "log", "main", "--format=%H"),
    }


def one_line_error(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text
    assert "Traceback" not in text and "cmdline" not in text and "GitCommandError" not in text
    return text


@pytest.fixture
def repo(git_project: Project) -> Project:
    """The one-commit project plus an ignore rule and a few tracked files."""
    git_project.write(".gitignore", "*.log\n")
    for name in ("a.txt", "b.txt", "gone.txt", "sub/c.txt"):
        git_project.write(name, f"{name} v1\n")
    commit_all(git_project.root, "files")
    return git_project


class Frozen(datetime):
    """`datetime.now` fixed at a second, so checkpoints share a timestamp."""

    moment = datetime(2026, 2, 23, 14, 32, 15, tzinfo=timezone.utc)

    @classmethod
    def now(cls, tz: object = None) -> Frozen:
        return cls.fromtimestamp(cls.moment.timestamp(), timezone.utc)


# -- opening -------------------------------------------------------------------------


def test_not_a_repository_is_one_clear_line(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InputError) as caught:
        Git(plain)
    assert one_line_error(caught.value) == f"not a git repository: {plain} (run git init)"


def test_a_missing_git_program_is_one_clear_line(
    repo: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gsd.io.git.command, "GIT", str(tmp_path / "no-such-git"))
    with pytest.raises(GsdError) as caught:
        Git(repo.root)
    assert one_line_error(caught.value) == "git is not installed or not on PATH (install git)"


def test_root_and_git_dirs_in_a_worktree(repo: Project, tmp_path: Path) -> None:
    main = Git(repo.root)
    assert main.root == repo.root.resolve()
    assert main.git_dir == main.common_dir == repo.root.resolve() / ".git"
    git(repo.root, "worktree", "add", "-q", "-b", "gsd/01-02", str(tmp_path / "wt"))
    tree = Git(tmp_path / "wt")
    assert tree.root == (tmp_path / "wt").resolve()
    assert tree.git_dir == repo.root.resolve() / ".git" / "worktrees" / "wt"
    assert tree.common_dir == repo.root.resolve() / ".git"
    assert Git(repo.root / "sub").root == main.root


def test_remove_new_untracked_touches_only_new_untracked_files(repo: Project) -> None:
    g = Git(repo.root)
    repo.write("pre.txt", "predates\n")
    before = g.untracked_files()
    repo.write("cache/deep/x.pyc", "junk\n")
    repo.write("report.log", "ignored\n")
    repo.write("a.txt", "tracked, changed\n")
    assert g.untracked_files() - before == {"cache/deep/x.pyc"}
    git(repo.root, "init", "-q", "nested/repo")
    assert g.remove_new_untracked(before) == ["cache/deep/x.pyc", "nested/repo/"]
    assert not (repo.root / "cache").exists() and not (repo.root / "nested").exists()
    assert (repo.root / "report.log").exists() and (repo.root / "a.txt").exists()
    assert g.untracked_files() == {"pre.txt"}


def test_two_checkpoints_in_the_same_second_differ(
    repo: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gsd.io.git.checkpoint, "datetime", Frozen)
    suffixes = iter(["aaaaaa", "aaaaaa", "bbbbbb"])  # the second name collides once

    class Secrets:
        @staticmethod
        def token_hex(n: int) -> str:
            return next(suffixes)

    monkeypatch.setattr(gsd.io.git.checkpoint, "secrets", Secrets)
    g = Git(repo.root)
    first = Checkpoints(g).create("01-02", 1)
    second = Checkpoints(g).create("01-02", 1)
    assert first.tag == f"{CHECKPOINT_PREFIX}01-02/1-20260223T143215Z-aaaaaa"
    assert second.tag == f"{CHECKPOINT_PREFIX}01-02/1-20260223T143215Z-bbbbbb"
    assert checkpoint_tags(repo.root) == [first.tag, second.tag]


def test_checkpoint_adds_no_commit(repo: Project) -> None:
    root = repo.root
    count = git(root, "rev-list", "--count", "HEAD")
    branches = git(root, "log", "--branches", "--format=%H")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 3)
    assert cp.head == git(root, "rev-parse", "HEAD").strip()
    assert cp.branch == "main" and cp.snapshot is None and cp.untracked == ()
    assert git(root, "rev-parse", cp.tag).strip() == cp.head
    assert "refs/heads/main" in cp.refs and cp.refs["HEAD"] == "ref: refs/heads/main"
    assert not any(ref.startswith(CHECKPOINT_PREFIX) for ref in cp.refs)
    repo.write("a.txt", "dirty\n")
    dirty = Checkpoints(g).create("01-02", 4, allow_dirty=True)
    assert dirty.snapshot and git(root, "rev-parse", dirty.tag).strip() == dirty.snapshot
    assert git(root, "rev-list", "--count", "HEAD") == count
    assert git(root, "log", "--branches", "--format=%H") == branches
    assert git(root, "stash", "list") == ""
    assert git(root, "status", "--porcelain") == " M a.txt\n"


def test_dirty_tree_is_refused_without_allow_dirty(repo: Project) -> None:
    g = Git(repo.root)
    repo.write("untracked.txt", "x\n")
    repo.write("a.txt", "uncommitted\n")
    with pytest.raises(GsdError) as caught:
        Checkpoints(g).create("01-02", 1)
    message = one_line_error(caught.value)
    assert message.startswith("working tree has uncommitted changes: a.txt in ")
    assert message.endswith("(commit or stash them, or pass --allow-dirty)")
    assert checkpoint_tags(repo.root) == []
    git(repo.root, "checkout", "--", "a.txt")
    # Untracked files alone are not dirt: nothing to snapshot, the tag points at HEAD.
    cp = Checkpoints(g).create("01-02", 1)
    assert cp.snapshot is None and cp.untracked == ("untracked.txt",)


def test_checkpoint_refuses_an_unfinished_operation(repo: Project) -> None:
    root = repo.root
    git(root, "checkout", "-q", "-b", "side")
    repo.write("a.txt", "side\n")
    side = commit_all(root, "side")
    git(root, "checkout", "-q", "main")
    repo.write("a.txt", "main\n")
    commit_all(root, "main")
    done = subprocess.run(["git", "cherry-pick", side], cwd=root, capture_output=True)
    assert done.returncode != 0
    with pytest.raises(GsdError, match="a cherry-pick is in progress"):
        Checkpoints(Git(root)).create("01-02", 1, allow_dirty=True)


def test_bad_plan_id_is_a_clear_error(repo: Project) -> None:
    with pytest.raises(GsdError) as caught:
        Checkpoints(Git(repo.root)).create("01..02", 1)
    assert "cannot be part of a git tag name" in one_line_error(caught.value)


def test_list_and_prune_checkpoints(repo: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    g = Git(repo.root)
    monkeypatch.setattr(gsd.io.git.checkpoint, "datetime", Frozen)
    old = Checkpoints(g).create("02.1-01", 2)
    monkeypatch.undo()
    new = Checkpoints(g).create("01-02", 1)
    head = git(repo.root, "rev-parse", "HEAD").strip()
    git(repo.root, "update-ref", f"{CHECKPOINT_PREFIX}odd-name", head)
    listed = Checkpoints(g).tags()
    assert [cp.tag for cp in listed] == [old.tag, new.tag]
    assert listed[0].plan_id == "02.1-01" and listed[0].task == 2 and listed[0].sha == head
    assert listed[0].created == Frozen.moment
    assert Checkpoints(g).prune(older_than=timedelta(days=1)) == [old.tag]
    assert sorted(Checkpoints(g).prune()) == sorted([new.tag, f"{CHECKPOINT_PREFIX}odd-name"])
    assert checkpoint_tags(repo.root) == [] and Checkpoints(g).tags() == []


# -- rollback ------------------------------------------------------------------------


def test_rollback_of_a_dirty_checkpoint_is_exact(repo: Project) -> None:
    root = repo.root
    git(root, "tag", "v1")
    git(root, "tag", "-a", "v2", "-m", "annotated")
    git(root, "branch", "other", "HEAD~1")
    repo.write("keep.log", "ignored, predates\n")
    repo.write("notes.txt", "untracked, predates\n")
    repo.write("a.txt", "a dirty\n")  # unstaged change
    repo.write("b.txt", "b staged\n")
    git(root, "add", "b.txt")
    repo.write("b.txt", "b staged then changed\n")  # staged and unstaged
    repo.write("staged.txt", "new and staged\n")
    git(root, "add", "staged.txt")
    before = repo_state(root)
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1, allow_dirty=True)
    assert cp.snapshot and cp.untracked == ("notes.txt",)
    assert git(root, "status", "--porcelain", "-uall") == before["status"]

    # The agent: edits, deletes, creates, commits, rewrites refs, switches branch.
    repo.write("a.txt", "agent\n")
    (root / "gone.txt").unlink()
    repo.write("new.py", "print()\n")
    repo.write("newdir/deep/x.py", "x\n")
    repo.write("new.log", "ignored, by the agent\n")
    commit_all(root, "agent commit")
    git(root, "tag", "-d", "v1")
    git(root, "tag", "-f", "-a", "v2", "-m", "moved")
    git(root, "checkout", "-q", "-b", "feature")
    repo.write("sub/c.txt", "on feature\n")
    commit_all(root, "feature commit")
    repo.write("later.txt", "uncommitted\n")

    changed = Observer(g).changed_files(cp)
    Checkpoints(g).rollback(cp)

    after = repo_state(root)
    # a branch made meanwhile may be the user's (made in their checkout): it is left, and
    # nothing else differs
    feature = git(root, "rev-parse", "refs/heads/feature").strip()
    assert after == {**before, "heads": f"{feature} refs/heads/feature\n" + before["heads"]}
    assert checkpoint_tags(root) == []
    assert (root / "notes.txt").read_text() == "untracked, predates\n"
    assert (root / "keep.log").read_text() == "ignored, predates\n"
    # Ignored files are never removed, even ones the agent created.
    assert (root / "new.log").read_text() == "ignored, by the agent\n"
    assert not (root / "new.py").exists() and not (root / "newdir").exists()
    assert not (root / "later.txt").exists()
    assert (root / "gone.txt").exists()
    # notes.txt is listed because the agent committed it (`git add -A`); it survives.
    assert changed == [
        "a.txt",
        "b.txt",
        "gone.txt",
        "later.txt",
        "new.py",
        "newdir/deep/x.py",
        "notes.txt",
        "staged.txt",
        "sub/c.txt",
    ]


def test_rollback_of_a_clean_checkpoint(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    head = git(root, "rev-parse", "HEAD")
    cp = Checkpoints(g).create("01-02", 2)
    repo.write("a.txt", "agent\n")
    git(root, "mv", "b.txt", "moved.txt")
    repo.write("brand/new.txt", "new\n")
    commit_all(root, "agent")
    git(root, "checkout", "-q", "--detach", "HEAD~1")
    changed = Observer(g).changed_files(cp)
    Checkpoints(g).rollback(cp)
    assert changed == ["a.txt", "b.txt", "brand/new.txt", "moved.txt"]
    assert git(root, "status", "--porcelain", "-uall") == ""
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "symbolic-ref", "HEAD") == "refs/heads/main\n"
    assert not (root / "brand").exists() and (root / "b.txt").read_text() == "b.txt v1\n"


def test_rollback_of_a_detached_checkpoint_and_a_half_done_rebase(repo: Project) -> None:
    root = repo.root
    git(root, "checkout", "-q", "--detach", "HEAD")
    head = git(root, "rev-parse", "HEAD")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    assert cp.branch is None
    git(root, "checkout", "-q", "-b", "tmp")
    repo.write("a.txt", "tmp\n")
    commit_all(root, "tmp")
    git(root, "checkout", "-q", "main")
    repo.write("a.txt", "main\n")
    commit_all(root, "main")
    done = subprocess.run(["git", "rebase", "tmp"], cwd=root, capture_output=True)
    assert done.returncode != 0  # stopped on a conflict
    Checkpoints(g).rollback(cp)
    assert git(root, "rev-parse", "HEAD") == head
    assert subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=root).returncode == 1
    assert git(root, "status", "--porcelain", "-uall") == ""
    assert not (g.git_dir / "rebase-merge").exists() and not (g.git_dir / "rebase-apply").exists()
    # main was moved off its line by the agent: put back; tmp was made meanwhile and may be
    # the user's: left (it loses nothing)
    assert git(root, "for-each-ref", "--format=%(refname)", "refs/heads") == (
        "refs/heads/main\nrefs/heads/tmp\n"
    )


def test_rollback_keeps_a_preexisting_untracked_file_the_agent_committed(
    repo: Project,
) -> None:
    root = repo.root
    repo.write("mine.txt", "mine\n")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1, allow_dirty=True)
    git(root, "add", "mine.txt")
    git(root, "commit", "-q", "-m", "agent took it")
    assert Observer(g).changed_files(cp) == ["mine.txt"]
    Checkpoints(g).rollback(cp)
    assert (root / "mine.txt").read_text() == "mine\n"
    assert git(root, "status", "--porcelain", "-uall") == "?? mine.txt\n"


def test_rollback_failure_keeps_the_tag(repo: Project) -> None:
    g = Git(repo.root)
    cp = Checkpoints(g).create("01-02", 1)
    bogus = cp._replace(snapshot="0" * 40)
    with pytest.raises(GsdError) as caught:
        Checkpoints(g).rollback(bogus)
    message = one_line_error(caught.value)
    assert message.startswith(f"rollback to {cp.tag} failed: ")
    assert "the tag is kept" in message
    assert checkpoint_tags(repo.root) == [cp.tag]


# -- what the agent did --------------------------------------------------------------


def test_changed_files_lists_exactly_what_the_spawn_changed(repo: Project) -> None:
    root = repo.root
    for name in ("mod.txt", "del.txt", "old.txt", "committed.txt", "flip.txt", "same.txt"):
        repo.write(name, f"{name}\n")
    commit_all(root, "more files")
    repo.write("pre.txt", "predates\n")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1, allow_dirty=True)
    assert Observer(g).changed_files(cp) == []
    repo.write("committed.txt", "changed\n")
    git(root, "commit", "-q", "-m", "one", "committed.txt")
    repo.write("flip.txt", "flipped\n")
    git(root, "commit", "-q", "-m", "two", "flip.txt")
    repo.write("flip.txt", "flip.txt\n")
    git(root, "commit", "-q", "-m", "three", "flip.txt")  # net zero, still reported
    repo.write("mod.txt", "modified\n")
    (root / "del.txt").unlink()
    git(root, "mv", "old.txt", "renamed.txt")
    repo.write("new/new.txt", "new\n")
    repo.write("new.log", "ignored\n")
    assert Observer(g).changed_files(cp) == [
        "committed.txt",
        "del.txt",
        "flip.txt",
        "mod.txt",
        "new/new.txt",
        "old.txt",
        "renamed.txt",
    ]
    assert len(git(root, "rev-list", f"{cp.head}..HEAD").split()) == 3


def test_changed_files_is_relative_to_the_snapshot(repo: Project) -> None:
    repo.write("a.txt", "user's uncommitted work\n")
    repo.write("b.txt", "user's staged work\n")
    git(repo.root, "add", "b.txt")
    g = Git(repo.root)
    cp = Checkpoints(g).create("01-02", 1, allow_dirty=True)
    assert Observer(g).changed_files(cp) == []
    repo.write("sub/c.txt", "agent\n")
    git(repo.root, "add", "a.txt")  # staging alone is a change to the index
    assert Observer(g).changed_files(cp) == ["a.txt", "sub/c.txt"]


def test_changed_refs_reports_rewrites_not_new_commits(repo: Project) -> None:
    root = repo.root
    git(root, "tag", "v1")
    git(root, "tag", "v2")
    git(root, "branch", "other")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    repo.write("a.txt", "agent\n")
    sha = commit_all(root, "agent commit")
    git(root, "tag", "new-tag")
    assert Observer(g).changed_refs(cp.refs, cp) == []
    assert git(root, "rev-list", f"{cp.head}..HEAD").split() == [sha]
    git(root, "tag", "-d", "v1")
    git(root, "tag", "-f", "v2", "HEAD")
    git(root, "branch", "-f", "other", "HEAD")
    git(root, "reset", "-q", "--hard", "HEAD~2")
    assert Observer(g).changed_refs(cp.refs, cp) == [
        "branch other moved",
        "tag v1 deleted",
        "tag v2 moved",
        "HEAD moved to a commit that does not descend from the checkpoint",
    ]
    assert git(root, "rev-list", f"{cp.head}..HEAD").split() == []


def test_changed_refs_reports_switch_and_detach(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "checkout", "-q", "-b", "x")
    assert Observer(g).changed_refs(cp.refs, cp) == ["HEAD switched to branch x"]
    git(root, "checkout", "-q", "--detach")
    git(root, "branch", "-f", "main", "HEAD~1")
    assert Observer(g).changed_refs(cp.refs, cp) == [
        "HEAD detached",
        "branch main moved to a commit that does not descend from the checkpoint",
    ]


def test_other_worktrees_are_neither_reported_nor_restored(repo: Project, tmp_path: Path) -> None:
    root = repo.root
    base = git(root, "rev-parse", "HEAD").strip()
    for plan in ("01-02", "01-03"):
        git(root, "worktree", "add", "-q", "-b", f"gsd/{plan}", str(tmp_path / plan))
    mine, theirs = tmp_path / "01-02", tmp_path / "01-03"
    g = Git(mine)
    cp = Checkpoints(g).create("01-02", 1)
    (theirs / "a.txt").write_text("other plan\n")
    their_commit = commit_all(theirs, "other plan's task")
    (root / "README.md").write_text("user on main\n")
    user_commit = commit_all(root, "user on main")
    (mine / "mine.txt").write_text("agent\n")
    assert Observer(g).changed_refs(cp.refs, cp) == []
    Checkpoints(g).rollback(cp)
    assert git(root, "rev-parse", "gsd/01-03").strip() == their_commit
    assert git(root, "rev-parse", "main").strip() == user_commit
    assert git(mine, "rev-parse", "HEAD").strip() == base
    assert not (mine / "mine.txt").exists()


# -- task commits --------------------------------------------------------------------


def test_commit_task_message_and_trailers(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    before = git(root, "rev-list", "--count", "HEAD")
    assert Commits(g).commit_task("01-02", 3, "Task 3: nothing", "python-pro", []) is None
    assert git(root, "rev-list", "--count", "HEAD") == before  # no empty commit
    repo.write("a.txt", "work\n")
    repo.write("new.txt", "work\n")
    sha = Commits(g).commit_task(
        "01-02", 3, "Task 3:\n  add the\nthing ", "python-pro", ["a.txt", "new.txt"]
    )
    assert sha == git(root, "rev-parse", "HEAD").strip()
    assert git(root, "log", "-1", "--format=%B") == (
        "feat(01-02): Task 3: add the thing\n\nGsd-Task: 01-02-3\nGsd-Specialist: python-pro\n\n"
    )
    assert git(root, "status", "--porcelain", "-uall") == ""
    assert Commits(g).committed_tasks() == {"01-02-3": sha}


def test_commit_task_with_paths_commits_only_those(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    repo.write("b.txt", "user staged\n")
    git(root, "add", "b.txt")
    repo.write("a.txt", "task\n")
    (root / "gone.txt").unlink()
    repo.write("odd*name.txt", "task\n")
    repo.write("untouched.txt", "not the task's\n")
    assert (
        Commits(g).commit_task("01-02", 1, "n", "a", paths=["sub/c.txt", "never-existed.txt"])
        is None
    )
    sha = Commits(g).commit_task("01-02", 1, "n", "a", paths=["a.txt", "gone.txt", "odd*name.txt"])
    assert sha is not None
    shown = git(root, "show", "--name-status", "--format=", sha)
    assert shown == "M\ta.txt\nD\tgone.txt\nA\todd*name.txt\n"
    assert git(root, "status", "--porcelain", "-uall") == "M  b.txt\n?? untouched.txt\n"


def test_committed_tasks_since_and_through_a_merge(repo: Project, tmp_path: Path) -> None:
    root = repo.root
    g = Git(root)
    repo.write("a.txt", "one\n")
    first = Commits(g).commit_task("01-01", 1, "one", "gsd-executor", ["a.txt"])
    git(root, "worktree", "add", "-q", "-b", "gsd/01-02", str(tmp_path / "wt"))
    (tmp_path / "wt" / "b.txt").write_text("two\n")
    second = Commits(Git(tmp_path / "wt")).commit_task("01-02", 1, "two", "python-pro", ["b.txt"])
    git(root, "merge", "-q", "--no-ff", "-m", "merge", "gsd/01-02")
    assert Commits(g).committed_tasks() == {"01-01-1": first, "01-02-1": second}
    assert Commits(g).committed_tasks(since=first) == {"01-02-1": second}


def test_commit_without_identity_is_one_clear_line(
    repo: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NAME", "EMAIL"):
        for who in ("AUTHOR", "COMMITTER"):
            monkeypatch.delenv(f"GIT_{who}_{name}")
    git(repo.root, "config", "user.useConfigOnly", "true")
    repo.write("a.txt", "work\n")
    with pytest.raises(GsdError) as caught:
        Commits(Git(repo.root)).commit_task("01-02", 1, "n", "a", ["a.txt"])
    message = one_line_error(caught.value)
    assert message.startswith(f"git commit failed in {repo.root.resolve()}: ")
    assert message.endswith("(set git config user.name and user.email)")


# -- observe: the quick answer must be the full answer --------------------------------

AGENT_ACTIONS = {
    "nothing": [],
    "edit-create-delete": ["write a.txt", "write new/deep.txt", "delete b.txt"],
    "stage-a-preexisting-untracked": ["add old-untracked.txt"],
    "space-in-name": ["write with space.txt"],
    "commit": ["write a.txt", "commit"],
    "tag": ["tag agent-tag"],
    "branch-switch": ["branch-switch"],
    "other-plans-branch-moves": ["write a.txt", "move-plan-branch gsd/01-03"],
    "stash": ["write a.txt", "stash"],
}


@pytest.mark.parametrize("action", sorted(AGENT_ACTIONS))
def test_observe_equals_the_full_methods(repo: Project, action: str) -> None:
    root = repo.root
    repo.write("b.txt", "b\n")
    commit_all(root, "b")
    repo.write("old-untracked.txt", "before\n")
    git(root, "branch", "gsd/01-03")
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    for step in AGENT_ACTIONS[action]:
        verb, _, arg = step.partition(" ")
        if verb == "write":
            repo.write(arg, "agent\n")
        elif verb == "delete":
            (root / arg).unlink()
        elif verb == "add":
            git(root, "add", arg)
        elif verb == "commit":
            commit_all(root, "agent")
        elif verb == "tag":
            git(root, "tag", arg)
        elif verb == "branch-switch":
            git(root, "checkout", "-q", "-b", "agent-branch")
        elif verb == "move-plan-branch":
            git(root, "branch", "-f", arg, "HEAD~1")
        elif verb == "stash":
            git(root, "stash", "-q")
    seen = Observer(g).observe(cp)
    assert seen == (
        Observer(g).changed_files(cp),
        Observer(g).changed_refs(cp.refs, cp),
        [],
        [],
        [],
    )
    status = g.status()
    assert status.head == g.head()
    if action != "commit":  # (that agent's `git add -A` committed the old file)
        assert "old-untracked.txt" in status.untracked | status.changed


def test_observe_is_three_git_processes_side_by_side_while_other_plans_move(
    repo: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = repo.root
    for plan in ("01-02", "01-03"):
        git(root, "worktree", "add", "-q", "-b", f"gsd/{plan}", str(tmp_path / plan))
    mine, theirs = tmp_path / "01-02", tmp_path / "01-03"
    g = Git(mine)
    cp = Checkpoints(g).create("01-02", 1)
    (theirs / "a.txt").write_text("other plan\n")
    Commits(Git(theirs)).commit_paths("01-03", 1, "other plan's task", "worker", ["a.txt"])
    git(root, "branch", "-f", "gsd/01-04", "HEAD")  # a plan branch made meanwhile
    (mine / "mine.txt").write_text("agent\n")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    seen = Observer(g).observe(cp)
    monkeypatch.delenv("GIT_TRACE")
    commands = [
        line.split("trace: built-in: git ")[1].split()[0]
        for line in trace.read_text().splitlines()
        if "built-in: git " in line
    ]
    assert sorted(commands) == ["for-each-ref", "ls-files", "status"]
    assert seen == (["mine.txt"], [], [], [], [])
    assert seen[:2] == (Observer(g).changed_files(cp), Observer(g).changed_refs(cp.refs, cp))


def test_recover_rolls_back_an_open_checkpoint_but_keeps_a_committed_task(repo: Project) -> None:
    root = repo.root
    g = Git(root)
    head = git(root, "rev-parse", "HEAD")
    Checkpoints(g).create("01-02", 1)
    repo.write("a.txt", "half done\n")  # gsd killed during the spawn
    assert (
        OpenCheckpoints(Git(root)).recover(owned=True).rolled_back
        and git(root, "rev-parse", "HEAD") == head
    )
    assert (root / "a.txt").read_text() == "a.txt v1\n" and checkpoint_tags(root) == []
    Checkpoints(g).create("01-02", 1)
    repo.write("a.txt", "done\n")
    sha = Commits(g).commit_task(
        "01-02", 1, "Task 1", "worker", ["a.txt"]
    )  # killed before the tag went
    assert OpenCheckpoints(Git(root)).recover(owned=True).rolled_back == []
    assert git(root, "rev-parse", "HEAD").strip() == sha
    assert (root / "a.txt").read_text() == "done\n" and checkpoint_tags(root) == []


def test_a_run_killed_between_the_record_and_the_tag_leaves_nothing(repo: Project) -> None:
    """The record is written before the tag: a kill between the two leaves a record the
    next run settles, never a checkpoint tag with no record (the soak test once found one)."""
    root = repo.root
    g = Git(root)
    cp = Checkpoints(g).create("01-02", 1)
    git(root, "update-ref", "-d", cp.tag)  # as if killed after the record, before the tag
    assert checkpoint_tags(root) == [] and CheckpointRecords(g).load_all()[0]
    recovery = OpenCheckpoints(Git(root)).recover(owned=True)
    assert recovery.warnings == [] and checkpoint_tags(root) == []
    assert CheckpointRecords(Git(root)).load_all() == ([], [])
