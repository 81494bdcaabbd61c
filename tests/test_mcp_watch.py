"""run_status and progress read a run's own state: the run lock's holder, the journal of
lines not committed yet, the checkout's logs and a plan worktree's (gsd.cli.mcp_watch),
and run_stop refuses what is no run (gsd.io.background). Real files in a real repository."""

from __future__ import annotations

import json
import os
import socket
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from gsd.cli import mcp_watch
from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.io import background
from gsd.io.plans.project import Project
from tests.conftest import git

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def lines(path: Path, *events: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(e) + "\n" for e in events)


def hold_lock(root: Path, argv: list[str], started: str = "2026-11-29T10:00:00Z") -> None:
    """The lock file as a live run writes it: this test's own (live) process named."""
    holder = {"pid": os.getpid(), "started": started, "host": socket.gethostname(), "argv": argv}
    path = layout.lock_file(root / ".git")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(holder) + "\n")


@pytest.fixture
def run(git_project):
    """Phase 1's plans 01-01 (two tasks) and 01-02; an earlier run in the checkout's log,
    the live run's lines in the journal and in a linked worktree's log."""
    git_project.plan("01-01", tasks="\n".join([_task(1), _task(2)]))
    git_project.plan("01-02", depends_on='["01-01"]', wave=2)
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    root = git_project.root
    lines(
        root / ".planning/logs/phase-01.jsonl",
        {"ts": "2026-11-28T09:00:00.000Z", "event": "run-start", "phase": "01-alpha"},
        {"ts": "2026-11-28T09:01:00.000Z", "event": "run-end", "status": "stopped"},
    )
    journal = layout.journal_dir(root / ".git")
    lines(
        journal / "side.jsonl",
        {"ts": "2026-11-29T10:00:00.100Z", "event": "run-start", "phase": "01-alpha"},
        {"ts": "2026-11-29T10:00:00.200Z", "event": "wave-start", "wave": 1, "plans": ["01-01"]},
    )
    spawn = {"event": "spawn", "plan": "01-01", "agent": "worker", "step": "first"}
    lines(
        journal / "plans/01-01.jsonl",
        {**spawn, "ts": "2026-11-29T10:00:01.000Z", "task": 1, "attempt": 1},
        {"ts": "2026-11-29T10:00:05.000Z", "event": "result", "plan": "01-01", "task": 1}
        | {"success": True, "input_tokens": 1200, "output_tokens": 80, "cost_usd": 0.01},
    )
    tree = root.parent / "wt-01-01"
    git(root, "worktree", "add", "-q", "-b", "gsd/01-01", str(tree))
    lines(
        tree / ".planning/logs/01-01.jsonl",
        {"ts": "2026-11-29T10:00:05.500Z", "event": "commit", "plan": "01-01", "task": 1},
        {**spawn, "ts": "2026-11-29T10:00:06.000Z", "task": 2, "attempt": 2, "step": "retry"},
    )
    return Project(root)


def _task(n: int) -> str:
    return (
        f'<task type="auto">\n<name>Task {n}</name>\n<files>src/x.py</files>\n'
        "<action>Do.</action>\n<verify><automated>true</automated></verify>\n"
        "<done>Done.</done>\n</task>"
    )


def test_a_live_run_is_read_from_the_lock_the_journal_and_the_worktrees(run) -> None:
    hold_lock(run.root, ["gsd", "execute-phase", "1"])
    status = mcp_watch.run_status(run)
    assert (status.state, status.pid, status.phase) == ("running", os.getpid(), "01-alpha")
    assert (status.wave, status.wave_plans) == (1, ["01-01"])
    [task] = status.running
    assert (task.plan, task.task, task.attempt, task.step) == ("01-01", 2, 2, "retry")
    assert (status.attempts, status.commits, status.input_tokens, status.output_tokens) == (
        1,
        1,
        1200,
        80,
    )
    assert status.cost_usd == 0.01 and status.started == "2026-11-29T10:00:00.100Z"
    assert "running: plan 01-01 task 2 worker attempt 2 (retry)" in mcp_watch.status_text(status)
    plans = {p.plan: p for p in mcp_watch.progress(run, "1")}
    assert plans["01-01"].status == "running" and plans["01-01"].tasks_total == 2
    assert plans["01-01"].last_event == {
        "ts": "2026-11-29T10:00:06.000Z",
        "event": "spawn",
        "plan": "01-01",
        "task": 2,
        "attempt": 2,
    }
    assert plans["01-02"].status == "pending" and plans["01-02"].last_event is None


def test_a_running_attempt_shows_the_tokens_its_stream_reported(run) -> None:
    """The attempt's stdout in its worktree's .git/gsd/runs/, read as the budget reads
    it (claude's stream-json here); one written before the spawn is an earlier attempt's."""
    hold_lock(run.root, ["gsd", "execute-phase", "1"])
    stdout = layout.run_dir(run.root / ".git/worktrees/wt-01-01", "01-01", 2) / "stdout"
    stdout.parent.mkdir(parents=True)
    usage = {"input_tokens": 900, "output_tokens": 40}
    message = {"type": "assistant", "message": {"id": "m1", "usage": usage}}
    stdout.write_text(json.dumps(message) + "\n")
    spawned = datetime(2026, 11, 29, 10, 0, 6, tzinfo=timezone.utc).timestamp()
    os.utime(stdout, (spawned + 2, spawned + 2))
    [task] = mcp_watch.run_status(run).running
    assert task.tokens == 940
    os.utime(stdout, (spawned - 60, spawned - 60))
    [task] = mcp_watch.run_status(run).running
    assert task.tokens is None


def test_a_run_whose_process_is_gone_is_no_longer_running(run) -> None:
    status = mcp_watch.run_status(run)  # no lock: a killed run left no run-end
    assert (status.state, status.running, status.pid) == ("ended", [], None)
    lines(
        layout.journal_dir(run.root / ".git") / "side.jsonl",
        {"ts": "2026-11-29T10:00:09.000Z", "event": "run-end", "status": "interrupted"},
    )
    status = mcp_watch.run_status(run)
    assert status.state == "interrupted" and status.elapsed_s == 8.9


def test_a_live_run_that_logged_nothing_yet_shows_no_earlier_run(run) -> None:
    hold_lock(run.root, [sys.argv[0], "execute-phase", "1"], started="2026-11-29T11:00:00Z")
    status = mcp_watch.run_status(run)
    assert status.state == "running" and status.phase is None and status.attempts == 0
    assert status.started == "2026-11-29T11:00:00Z"


def test_run_stop_refuses_when_no_run_holds_the_lock(run) -> None:
    with pytest.raises(GsdError, match="no gsd run is live"):
        background.stop(run.root, 1)
    hold_lock(run.root, ["gsd", "approve", "01-01"])
    with pytest.raises(GsdError, match=r"held by `gsd approve 01-01` .*not by a run"):
        background.stop(run.root, 1)


def test_no_run_yet(git_project) -> None:
    status = mcp_watch.run_status(Project(git_project.root))
    assert (status.state, status.phase, status.background) == ("none", None, None)
    assert mcp_watch.status_text(status).startswith("run none")
