"""The run lock: one per repository, whichever worktree; a second live run is refused by
name; a dead run's lock is taken over."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.io.lock import RunLock, repo_lock
from gsd.io.process import procgroups
from tests.conftest import REPO, git
from tests.test_proc import alive_with

HOLD = """
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from gsd.io.lock import RunLock, repo_lock
lock = {take}.acquire()
print("held", flush=True)
time.sleep(60)
"""


def hold(take: str) -> subprocess.Popen[str]:
    """A live run in another process: it holds the lock `take` builds until killed."""
    code = HOLD.format(repo=str(REPO), take=take)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_second_live_run_is_refused_naming_the_holder(tmp_path: Path) -> None:
    common, registry = tmp_path / "common", tmp_path / "running"
    holder = hold(f"RunLock(Path({str(common)!r}), Path({str(registry)!r}))")
    try:
        with pytest.raises(GsdError) as caught:
            RunLock(common, registry).acquire()
        message = str(caught.value)
        assert f"pid {holder.pid}" in message and "another gsd run holds" in message
    finally:
        holder.kill()
        holder.wait()
    # the holder died without releasing: the next run takes the lock over
    with RunLock(common, registry):
        assert json.loads(layout.lock_file(common).read_text())["pid"] != holder.pid
    assert not layout.lock_file(common).exists()


@pytest.fixture
def linked(git_project) -> tuple[Path, Path]:
    """The main worktree of a repository and a linked worktree of it."""
    other = git_project.root.parent / "linked"
    git(git_project.root, "worktree", "add", "-q", "-b", "other", str(other))
    return git_project.root, other


def test_one_lock_covers_every_worktree_of_a_repository(linked, gsd, monkeypatch) -> None:
    main, other = linked
    common = (main / ".git").resolve()
    for root in (main, other):
        (root / "deep").mkdir()
    paths = {repo_lock(root).path for root in (main, main / "deep", other, other / "deep")}
    assert paths == {common / "gsd/run.lock"}
    assert repo_lock(other).registry == common / "gsd/running"  # reaped from any worktree
    holder = hold(f"repo_lock(Path({str(main)!r}))")
    try:
        with pytest.raises(GsdError) as caught:
            repo_lock(other).acquire()
        assert f"another gsd run holds {common / 'gsd/run.lock'}: pid {holder.pid}" in str(
            caught.value
        )
        monkeypatch.chdir(other)  # `checkpoints prune` in the linked worktree waits too
        busy = gsd("checkpoints", "prune")
        assert busy.code == 2 and f"pid {holder.pid}" in busy.err
        assert len(busy.err.splitlines()) == 1
    finally:
        holder.kill()
        holder.wait()
    with repo_lock(other) as lock:  # the dead holder's lock is taken over
        assert json.loads(lock.path.read_text())["pid"] != holder.pid
    assert not lock.path.exists()
    assert gsd("checkpoints", "prune").code == 0


def test_outside_a_repository_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(GsdError, match=f"^not a git repository: {tmp_path} "):
        repo_lock(tmp_path)


def test_a_lock_that_cannot_be_written_is_one_line(git_project) -> None:
    common = git_project.root / ".git"
    (common / "gsd").write_text("not a folder\n")  # the lock's folder cannot be made
    with pytest.raises(GsdError) as caught:
        RunLock(common).acquire()
    assert str(caught.value).startswith(f"cannot write {common / 'gsd/run.lock'}: ")
    assert "\n" not in str(caught.value)


def test_stale_lock_takeover_reaps_the_dead_runs_processes(tmp_path: Path) -> None:
    common, registry = tmp_path / "common", tmp_path / "running"
    layout.lock_file(common).parent.mkdir(parents=True)
    layout.lock_file(common).write_text('{"pid": 999999, "argv": ["gsd", "execute-phase", "1"]}\n')
    token = f"gsd-lock-{uuid.uuid4().hex}"
    script = tmp_path / "left.sh"
    script.write_text("#!/bin/bash\ntrap '' TERM\nwhile true; do sleep 0.2; done\n")
    script.chmod(0o755)
    runner = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(REPO)!r})
        from gsd.io.process import proc
        # the token is split so that this supervisor's own command line does not hold it
        proc.supervise([{str(script)!r}, {token[:9]!r} + {token[9:]!r}],
                       cwd=Path({str(tmp_path)!r}),
                       stdout_path=Path({str(tmp_path / "o")!r}),
                       stderr_path=Path({str(tmp_path / "e")!r}),
                       timeout_s=60, grace_s=1, registry=Path({str(registry)!r}))
        """
    )
    dead_run = subprocess.Popen([sys.executable, "-c", runner], start_new_session=True)
    deadline = time.monotonic() + 120
    while not (alive_with(token) and list(registry.glob("*.json"))):
        assert time.monotonic() < deadline, "the supervised agent never started"
        time.sleep(0.05)
    # simulate a gsd whose agent survived it: SIGSTOP the supervisor, not kill (which
    # would kill the agent through the parent-death signal)
    dead_run.send_signal(19)
    try:
        with RunLock(common, registry):
            assert alive_with(token) == []  # the dead run's agent was ended on takeover
    finally:
        dead_run.kill()
        dead_run.wait()
    assert procgroups.reap(registry) == []
