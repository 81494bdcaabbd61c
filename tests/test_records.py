"""Signed checkpoint records and recovery after a killed run: gsd acts only on what it
wrote, never follows a planted link, and never resets the user's own checkout."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gsd.core.errors import GsdError
from gsd.io import records
from gsd.io.git.branches import Branches
from gsd.io.git.checkpoint import Checkpoints
from gsd.io.git.checkpointrecord import CHECKPOINT_PREFIX
from gsd.io.git.commits import Commits
from gsd.io.git.recovery import OpenCheckpoints
from gsd.io.git.repo import Git
from tests.conftest import REPO, Project, git
from tests.test_git import checkpoint_tags, commit_all, one_line_error


@pytest.fixture
def repo(git_project: Project) -> Project:
    git_project.write(".gitignore", "*.log\n.env\n")
    for name in ("a.txt", "b.txt"):
        git_project.write(name, f"{name} v1\n")
    commit_all(git_project.root, "files")
    return git_project


def killed_checkpoint(root: Path, plan: str = "01-02", task: int = 1) -> str:
    """A checkpoint made by a gsd process that then dies without a word (SIGKILL)."""
    code = (
        "import os, sys\nfrom gsd.io.git.checkpoint import Checkpoints\n"
        "from gsd.io.git.repo import Git\n"
        f"cp = Checkpoints(Git(sys.argv[1])).create({plan!r}, {task})\n"
        "print(cp.tag, flush=True)\nos._exit(9)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 9, done.stderr
    return done.stdout.strip()


def record_of(root: Path, tag: str) -> Path:
    name = tag.removeprefix(CHECKPOINT_PREFIX).replace("/", "_")
    return root / ".git/gsd/checkpoints" / f"{name}.json"


# -- the key, signatures, private files ------------------------------------------------


def test_the_key_is_made_once_private_and_outside_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    key = records.record_key()
    path = tmp_path / "state/gsd/private/record-key"
    assert records.key_path() == path and path.read_bytes() == key and len(key) == 64
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    records._keys.clear()
    assert records.record_key() == key
    monkeypatch.delenv("XDG_STATE_HOME")
    assert records.key_path() == Path.home() / ".local/state/gsd/private/record-key"


def test_a_key_an_older_gsd_kept_moves_to_the_private_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records signed before the move stay good; the old, agent-readable copy is gone."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    records._keys.clear()
    old = tmp_path / "state/gsd/record-key"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"k" * 64)
    old.chmod(0o600)
    assert records.record_key() == b"k" * 64
    assert (tmp_path / "state/gsd/private/record-key").read_bytes() == b"k" * 64
    assert not old.exists()
    records._keys.clear()


def test_a_signature_holds_for_this_key_and_this_data_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "one"))
    text = records.sign({"tag": "t", "refs": {"b": "2", "a": "1"}})
    assert records.verify(text.encode()) == {"tag": "t", "refs": {"b": "2", "a": "1"}}
    changed = json.loads(text)
    changed["record"]["tag"] = "u"
    assert records.verify(json.dumps(changed).encode()) is None
    assert records.verify(b'{"record": {"tag": "t"}}') is None
    assert records.verify(b"not json") is None
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "two"))  # another user's key
    assert records.verify(text.encode()) is None


def test_read_private_refuses_links_and_odd_files(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.write_bytes(b"data")
    (tmp_path / "link").symlink_to(real)
    os.mkfifo(tmp_path / "fifo")
    assert records.read_private(real) == b"data"
    assert records.read_private(tmp_path / "link") is None
    assert records.read_private(tmp_path / "fifo") is None  # and does not hang
    assert records.read_private(tmp_path) is None
    assert records.read_private(tmp_path / "missing") is None
    assert records.read_private(real, limit=3) is None


def test_safe_dir_and_write_private_never_follow_a_link(tmp_path: Path) -> None:
    base, elsewhere = tmp_path / "base", tmp_path / "elsewhere"
    (base / "real/deeper").mkdir(parents=True)
    elsewhere.mkdir()
    (base / "linked").symlink_to(elsewhere)
    assert records.safe_dir(base / "real/deeper", under=base)
    assert not records.safe_dir(base / "linked", under=base)
    assert not records.safe_dir(base / "linked")
    assert not records.safe_dir(tmp_path / "nope")
    target = elsewhere / "victim"
    target.write_text("keep me\n")
    (base / "real/record").symlink_to(target)
    records.write_private(base / "real/record", b"new\n")
    assert target.read_text() == "keep me\n" and not (base / "real/record").is_symlink()
    assert (base / "real/record").read_bytes() == b"new\n"
    with pytest.raises(GsdError, match="is a symlink or not a folder"):
        records.write_private(base / "linked/x", b"")
    with pytest.raises(GsdError, match="gsd does not follow it"):
        records.private_dir(base / "linked/sub", under=base)
    assert not (elsewhere / "x").exists() and not (elsewhere / "sub").exists()


# -- records gsd did not write --------------------------------------------------------


def forge(repo: Project, tag: str, data: dict[str, object], signed: bool = False) -> Path:
    """What a hostile agent writes: a record (in the old unsigned form) and its tag."""
    path = record_of(repo.root, tag)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = records.sign(data) if signed else json.dumps(data)
    path.write_text(text)
    git(repo.root, "update-ref", tag, data["head"])  # type: ignore[arg-type]
    return path


def test_a_forged_record_is_ignored_reported_once_and_nothing_is_reset(repo: Project) -> None:
    root = repo.root
    first = git(root, "rev-parse", "HEAD~1").strip()
    git(root, "branch", "users-branch")
    git(root, "tag", "users-tag")
    repo.write("users-untracked.txt", "mine\n")
    tag = f"{CHECKPOINT_PREFIX}01-02/1-20260101T000000Z-abcdef"
    data = {
        "tag": tag,
        "head": first,
        "branch": "main",
        "snapshot": None,
        "untracked": [],
        "refs": {"HEAD": "ref: refs/heads/main"},
    }
    path = forge(repo, tag, data)
    head = git(root, "rev-parse", "HEAD")
    recovery = OpenCheckpoints(Git(root)).recover(owned=True)
    assert recovery.rolled_back == [] and recovery.dropped == []
    (warning,) = recovery.warnings
    assert (
        warning == f"ignored {path}: not signed by gsd (or damaged) (gsd acts only on "
        "records it wrote)"
    )
    assert git(root, "rev-parse", "HEAD") == head
    assert "users-branch" in git(root, "branch") and git(root, "tag", "-l", "users-tag")
    assert (root / "users-untracked.txt").read_text() == "mine\n"
    assert OpenCheckpoints(Git(root)).recover(owned=True).warnings == []  # reported once


def test_a_record_signed_with_another_key_is_ignored(
    repo: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "agents-own-key"))
    tag = killed_checkpoint(repo.root)
    monkeypatch.delenv("XDG_STATE_HOME")
    repo.write("a.txt", "after the crash\n")
    recovery = OpenCheckpoints(Git(repo.root)).recover(owned=True)
    assert recovery.rolled_back == [] and "not signed by gsd" in recovery.warnings[0]
    assert (repo.root / "a.txt").read_text() == "after the crash\n"
    assert tag in checkpoint_tags(repo.root)  # not gsd's to delete either


def test_a_symlinked_record_or_folder_is_never_followed(repo: Project, tmp_path: Path) -> None:
    root = repo.root
    tag = killed_checkpoint(root)
    path = record_of(root, tag)
    kept = tmp_path / "kept.json"
    os.rename(path, kept)
    path.symlink_to(kept)
    recovery = OpenCheckpoints(Git(root)).recover(owned=True)
    assert recovery.rolled_back == []
    assert recovery.warnings == [
        f"ignored {path}: a symlink, not a regular file, or too big "
        "(gsd acts only on records it wrote)"
    ]
    folder = root / ".git/gsd/checkpoints"
    os.rename(folder, tmp_path / "folder")
    folder.symlink_to(tmp_path / "folder")
    assert OpenCheckpoints(Git(root)).recover(owned=True).warnings == [
        f"ignored {folder}: a symlink or not a folder (gsd does not follow it)"
    ]
    with pytest.raises(GsdError) as caught:
        Checkpoints(Git(root)).create("01-02", 2)
    assert "gsd does not follow it" in one_line_error(caught.value)
    assert checkpoint_tags(root) == [tag]  # no tag without its record


def test_a_record_of_another_worktree_or_tag_is_ignored(repo: Project, tmp_path: Path) -> None:
    root = repo.root
    git(root, "worktree", "add", "-q", "-b", "gsd/01-02", str(tmp_path / "wt"))
    tag = killed_checkpoint(tmp_path / "wt")
    elsewhere = record_of(root, tag)
    elsewhere.parent.mkdir(parents=True)
    theirs = root / ".git/worktrees/wt/gsd/checkpoints" / record_of(root, tag).name
    elsewhere.write_bytes(theirs.read_bytes())
    recovery = OpenCheckpoints(Git(root)).recover(owned=True)
    assert "a record of another worktree" in recovery.warnings[0]
    git(root, "update-ref", tag, "HEAD~1")  # the tag moved: not the checkpoint any more
    recovery = OpenCheckpoints(Git(tmp_path / "wt")).recover(owned=True)
    assert recovery.rolled_back == [] and "points elsewhere" in recovery.warnings[0]


# -- recovery in a gsd-owned worktree ---------------------------------------------------


def test_an_owned_worktree_is_rolled_back_from_the_record_even_after_prune(
    repo: Project,
) -> None:
    root = repo.root
    head = git(root, "rev-parse", "HEAD")
    tag = killed_checkpoint(root)
    repo.write("a.txt", "half done\n")  # the killed task's agent
    repo.write("new.txt", "half done\n")
    assert Checkpoints(Git(root)).prune() == [tag]  # the user tidies tags after the crash
    recovery = OpenCheckpoints(Git(root)).recover(owned=True)
    assert recovery.rolled_back == [tag] and recovery.warnings == []
    assert git(root, "rev-parse", "HEAD") == head
    assert (root / "a.txt").read_text() == "a.txt v1\n" and not (root / "new.txt").exists()
    assert not record_of(root, tag).exists()


def test_recovery_never_deletes_or_moves_refs_made_after_the_crash(repo: Project) -> None:
    root = repo.root
    git(root, "tag", "v1")
    tag = killed_checkpoint(root)
    git(root, "tag", "-d", "v1")  # the agent, before the crash
    git(root, "branch", "made-after-the-crash")  # the user, after it
    OpenCheckpoints(Git(root)).recover(owned=True)
    assert git(root, "tag", "-l", "v1") == "v1\n"  # re-created: deleting loses nothing
    assert "made-after-the-crash" in git(root, "branch")
    assert tag not in checkpoint_tags(root)


def test_an_old_record_copied_back_never_rewinds_later_tasks(repo: Project) -> None:
    root = repo.root
    tag = killed_checkpoint(root, task=3)  # a task that is later done again, elsewhere
    saved = record_of(root, tag).read_bytes()
    OpenCheckpoints(Git(root)).recover(owned=True)
    g = Git(root)
    repo.write("a.txt", "task 1\n")
    Commits(g).commit_paths("01-02", 1, "Task 1", "worker", ["a.txt"])
    repo.write("b.txt", "task 2\n")
    sha = Commits(g).commit_paths("01-02", 2, "Task 2", "worker", ["b.txt"])
    record_of(root, tag).write_bytes(saved)  # an agent replays it
    recovery = OpenCheckpoints(Git(root)).recover(owned=True)
    assert recovery.rolled_back == []
    assert recovery.warnings == [
        f"did not roll back {tag.removeprefix('refs/tags/')}: tasks were committed after it"
    ]
    assert git(root, "rev-parse", "HEAD").strip() == sha


def test_internals_changed_since_the_crash_stop_recovery(repo: Project) -> None:
    root = repo.root
    killed_checkpoint(root)
    hook = root / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\ntouch ran\n")
    hook.chmod(0o755)
    for owned in (True, False):
        with pytest.raises(GsdError) as caught:
            OpenCheckpoints(Git(root)).recover(owned=owned)
        message = one_line_error(caught.value)
        assert message.startswith(".git/hooks/pre-commit changed since checkpoint checkpoint/")
        assert "gsd checkpoints prune" in message


def test_drop_open_records_rolls_nothing_back(repo: Project) -> None:
    root = repo.root
    tag = killed_checkpoint(root)
    repo.write("a.txt", "whoever's\n")
    assert OpenCheckpoints(Git(root)).drop() == [tag]
    assert checkpoint_tags(root) == [] and not record_of(root, tag).exists()
    assert (root / "a.txt").read_text() == "whoever's\n"


def test_reset_owned_worktree_puts_it_at_its_branch_tip(repo: Project, tmp_path: Path) -> None:
    git(repo.root, "worktree", "add", "-q", "-b", "gsd/01-02", str(tmp_path / "wt"))
    wt = tmp_path / "wt"
    tip = git(wt, "rev-parse", "HEAD")
    (wt / "a.txt").write_text("left over\n")
    (wt / "junk/deep.txt").parent.mkdir()
    (wt / "junk/deep.txt").write_text("left over\n")
    (wt / "keep.log").write_text("ignored\n")
    git(wt, "update-index", "--skip-worktree", "b.txt")
    git(wt, "checkout", "-q", "--detach")
    Branches(Git(wt)).reset_owned_worktree("gsd/01-02")
    assert git(wt, "status", "--porcelain", "-uall") == "" and git(wt, "rev-parse", "HEAD") == tip
    assert git(wt, "symbolic-ref", "HEAD") == "refs/heads/gsd/01-02\n"
    assert "S " not in git(wt, "ls-files", "-v")
    assert (wt / "keep.log").exists() and not (wt / "junk").exists()


# -- the user's own checkout: never reset -------------------------------------------------


def test_in_the_users_checkout_an_untouched_checkpoint_is_just_dropped(repo: Project) -> None:
    tag = killed_checkpoint(repo.root)
    recovery = OpenCheckpoints(Git(repo.root)).recover(owned=False)
    assert recovery == ([], [tag], [])
    assert checkpoint_tags(repo.root) == []


def test_in_the_users_checkout_a_commit_since_settles_the_checkpoint(repo: Project) -> None:
    """The user committed what was there after the crash (as gsd's one line asks): the
    tree is clean and HEAD moved on from the checkpoint, so it is dropped, nothing reset."""
    root = repo.root
    tag = killed_checkpoint(root)
    repo.write("b.txt", "committed\n")
    commit_all(root, "the user's commit")
    head = git(root, "rev-parse", "HEAD")
    assert OpenCheckpoints(Git(root)).recover(owned=False) == ([], [tag], [])
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""
    assert checkpoint_tags(root) == []


@pytest.mark.parametrize("change", ["edit", "new-file", "secret"])
def test_in_the_users_checkout_any_difference_is_left_and_explained(
    repo: Project, change: str
) -> None:
    root = repo.root
    repo.write(".env", "TOKEN=1\n")
    tag = killed_checkpoint(root)
    if change == "edit":
        repo.write("a.txt", "the user's edit after the crash, or the agent's\n")
    elif change == "new-file":
        repo.write("notes.txt", "whose?\n")
    else:
        repo.write(".env", "TOKEN=2\n")
    before = (git(root, "status", "--porcelain"), git(root, "rev-parse", "HEAD"))
    with pytest.raises(GsdError) as caught:
        OpenCheckpoints(Git(root)).recover(owned=False)
    message = one_line_error(caught.value)
    name = tag.removeprefix("refs/tags/")
    assert message.startswith(f"checkpoint {name} of an interrupted run is still open in ")
    expected = {"edit": "a.txt", "new-file": "notes.txt", "commit": "HEAD", "secret": ".env"}
    assert f": {expected[change]}" in message
    assert "they may be its agent's or yours, so gsd leaves them" in message
    assert "git reset --hard" in message and "gsd checkpoints prune" in message
    assert (git(root, "status", "--porcelain"), git(root, "rev-parse", "HEAD")) == before
    assert tag in checkpoint_tags(root)
