"""The run lock: a second live run is refused by name; a dead run's lock is taken over."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from gsd import proc
from gsd.errors import GsdError
from gsd.lock import LOCK_NAME, RunLock
from tests.conftest import REPO
from tests.test_proc import alive_with

HOLD = """
import sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from gsd.lock import RunLock
lock = RunLock(Path({planning!r}), Path({registry!r})).acquire()
print("held", flush=True)
time.sleep(60)
"""


def test_second_live_run_is_refused_naming_the_holder(tmp_path: Path) -> None:
    planning, registry = tmp_path / ".planning", tmp_path / "running"
    code = HOLD.format(repo=str(REPO), planning=str(planning), registry=str(registry))
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(GsdError) as caught:
            RunLock(planning, registry).acquire()
        message = str(caught.value)
        assert f"pid {holder.pid}" in message and "another gsd run holds" in message
    finally:
        holder.kill()
        holder.wait()
    # the holder died without releasing: the next run takes the lock over
    with RunLock(planning, registry) as lock:
        assert json.loads((planning / LOCK_NAME).read_text())["pid"] != holder.pid
        assert lock.reaped == []
    assert not (planning / LOCK_NAME).exists()


def test_stale_lock_takeover_reaps_the_dead_runs_processes(tmp_path: Path) -> None:
    planning, registry = tmp_path / ".planning", tmp_path / "running"
    planning.mkdir()
    (planning / LOCK_NAME).write_text('{"pid": 999999, "argv": ["gsd", "execute-phase", "1"]}\n')
    token = f"gsd-lock-{uuid.uuid4().hex}"
    script = tmp_path / "left.sh"
    script.write_text("#!/bin/bash\ntrap '' TERM\nwhile true; do sleep 0.2; done\n")
    script.chmod(0o755)
    runner = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(REPO)!r})
        from gsd import proc
        # the token is split so that this supervisor's own command line does not hold it
        proc.supervise([{str(script)!r}, {token[:9]!r} + {token[9:]!r}],
                       cwd=Path({str(tmp_path)!r}),
                       stdout_path=Path({str(tmp_path / "o")!r}),
                       stderr_path=Path({str(tmp_path / "e")!r}),
                       timeout_s=60, grace_s=1, registry=Path({str(registry)!r}))
        """
    )
    dead_run = subprocess.Popen([sys.executable, "-c", runner], start_new_session=True)
    deadline = time.monotonic() + 20
    while not (alive_with(token) and list(registry.glob("*.json"))):
        assert time.monotonic() < deadline, "the supervised agent never started"
        time.sleep(0.05)
    # simulate a gsd whose agent survived it: SIGSTOP the supervisor, not kill (which
    # would kill the agent through the parent-death signal)
    dead_run.send_signal(19)
    try:
        with RunLock(planning, registry) as lock:
            assert len(lock.reaped) == 1
            assert alive_with(token) == []
    finally:
        dead_run.kill()
        dead_run.wait()
    assert proc.reap(registry) == []
