"""A task's fewer git processes: the listing of ignored protected files is skipped only
where it would be empty, and the special-files walk finds what it found before."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from gsd.core.safety.enforce import may_be_protected
from gsd.io.git.command import split
from gsd.io.git.repo import Git
from gsd.io.git.restore import PROTECTED_SCAN
from gsd.io.plans import specialfiles
from tests.conftest import Project, git

pytestmark = pytest.mark.unit  # `make test-fast` runs these

# names git's `:(glob)**/PATTERN` listing may hold, as a file or as a folder above one
PROTECTED = [
    ".env",
    ".env.local",
    "server.pem",
    "id.key",
    ".pem",
    "X.PEM",
    ".ENV.prod",
    "a.Key",
]
OTHERS = ["env", "pem", "key.txt", "x.pem.bak", "keys", "a.env", "README.md"]


@pytest.mark.parametrize("name", PROTECTED)
def test_protected_names_are_seen(name: str) -> None:
    assert may_be_protected(name)


@pytest.mark.parametrize("name", OTHERS)
def test_other_names_are_not(name: str) -> None:
    assert not may_be_protected(name)


def _listing(root: Path, icase: bool = False) -> list[str]:
    env = {**os.environ, "GIT_ICASE_PATHSPECS": "1"} if icase else None
    import subprocess

    done = subprocess.run(
        ["git", *PROTECTED_SCAN], cwd=root, capture_output=True, text=True, env=env, check=True
    )
    return split(done.stdout)


@pytest.mark.parametrize("icase", [False, True])
def test_no_protected_name_means_an_empty_listing(git_project: Project, icase: bool) -> None:
    """Whenever the walk sees no protected name, git lists no ignored protected file (a
    file named like one, one in a folder named like one, any letter case, ignored)."""
    root = git_project.root
    git_project.write(".gitignore", "*\n!.gitignore\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore all")
    for name in OTHERS:
        git_project.write(f"sub/{name}", "x\n")
    assert specialfiles.walk(root)[1] is False
    assert _listing(root, icase) == []
    for i, name in enumerate(PROTECTED):
        where = f"d{i}/{name}" if i % 2 else f"d{i}/{name}/inner.txt"
        git_project.write(where, "secret\n")
        named = specialfiles.walk(root)[1]
        assert named, where
        for path in _listing(root, icase):
            assert any(may_be_protected(part) for part in path.split("/")), path
        (root / where).unlink()


def test_the_walk_finds_special_entries_as_before(
    git_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = git_project.root
    (root / ".planning").mkdir(exist_ok=True)
    os.mkfifo(root / ".env")
    os.mkfifo(root / "plain-fifo")
    os.mkfifo(root / ".planning" / "pipe")
    (root / ".planning" / "link").symlink_to("/etc/hostname")
    (root / "outside-link").symlink_to("/etc/hostname")
    sock = socket.socket(socket.AF_UNIX)
    (root / "deep").mkdir()
    monkeypatch.chdir(root)  # a short socket path
    try:
        sock.bind("deep/x.pem")
        found, named = specialfiles.walk(root)
    finally:
        sock.close()
    assert found == {
        ".env": "FIFO",
        ".planning/pipe": "FIFO",
        ".planning/link": "symlink",
        "deep/x.pem": "socket",
    }
    assert named


def test_a_task_starts_fewer_git_processes(git_project: Project) -> None:
    """The checkpoint: one status, for-each-ref beside it, no listing of ignored
    protected files in a tree with no such name and no look-up of its tag's name; the
    look after the agent: one status, for-each-ref and that listing beside it."""
    from gsd.io.git.checkpoint import Checkpoints
    from gsd.io.git.command import GitExec
    from gsd.io.git.observe import Observer

    started: list[tuple[str, ...]] = []
    original = GitExec.start

    def start(self: GitExec, *args: str, **kwargs: object) -> object:
        started.append(tuple(args))
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    repo = Git(git_project.root)
    GitExec.start = start  # type: ignore[method-assign, assignment]
    try:
        cp = Checkpoints(repo).create("01-01", 1)
        Observer(repo).observe(cp)
    finally:
        GitExec.start = original  # type: ignore[method-assign]
    commands = [args[0] for args in started]
    assert commands.count("status") == 2
    assert commands.count("ls-files") == 1  # the look after the agent's
    assert commands.count("rev-parse") == 0
    Checkpoints(repo).delete(cp)


def test_a_taken_tag_name_is_retried(git_project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tag's name is not looked up first: when a ref has it, creating it fails, and
    another name is tried; the ref that had it is left as it was."""
    from gsd.io.git.checkpoint import Checkpoints
    from gsd.io.git.checkpointrecord import CheckpointRecords

    root = git_project.root
    taken = "refs/tags/checkpoint/01-01/1-20260101T000000Z-aaaaaa"
    free = "refs/tags/checkpoint/01-01/1-20260101T000000Z-bbbbbb"
    git(root, "update-ref", taken, "HEAD")
    names = iter([taken, free])
    monkeypatch.setattr(Checkpoints, "_tag_name", lambda self, plan_id, task: next(names))
    repo = Git(root)
    cp = Checkpoints(repo).create("01-01", 1)
    assert cp.tag == free
    assert [c.tag for c in CheckpointRecords(repo).load_all()[0]] == [free]  # no other record
    listed = git(root, "for-each-ref", "--format=%(refname)", "refs/tags/checkpoint/")
    assert listed.split() == [taken, free]
    Checkpoints(repo).delete(cp)
    assert git(root, "for-each-ref", "--format=%(refname)", "refs/tags/").split() == [taken]
