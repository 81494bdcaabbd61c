"""`gsd mcp --allow-run` (issue 25): runs started, watched, stopped and approved through
the MCP SDK's own stdio client, with command agents that are real programs; each judged
by what is in git and on disk afterwards (commits, branches, worktrees, the run lock)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from gsd.core import layout
from tests.conftest import git, slack
from tests.test_execute import CHECKPOINT, REPORT, install_agents, task, task_commits
from tests.test_mcp import INITIALIZED, TOOLS, _initialize, _lines, converse, gsd_argv
from tests.test_mcp_watch import hold_lock

pytest.importorskip("mcp.server.mcpserver", reason="the MCP SDK 2.x is not installed (make venv)")

import anyio  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

RUN_TOOLS = {"execute_phase", "execute_plan", "run_status", "run_stop", "approve", "progress"}
# a command agent: writes its task's file and reports; a marker beside it makes it sleep
AGENT = """\
import os, sys, time
plan, task = os.environ["GSD_PLAN"], os.environ["GSD_TASK"]
marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "markers",
                      f"sleep-{{plan}}-{{task}}")
if os.path.exists(marker):
    time.sleep(float(open(marker).read()))
os.makedirs("src", exist_ok=True)
open(f"src/t{{plan}}_{{task}}.py", "w").write("# done\\n")
print("{report}")
"""


@pytest.fixture
def phase(git_project, tmp_path):
    """Phase 1: plan 01-01 (two tasks), then 01-02 (one), each by a command agent."""
    script = tmp_path / "agent.py"
    script.write_text(AGENT.format(report=REPORT))
    install_agents(git_project, script)
    (tmp_path / "markers").mkdir()
    config = {"specialists": {"kill_grace_seconds": 1, "max_retries": 0}}
    git_project.write(".planning/config.json", json.dumps(config))
    git_project.plan(
        "01-01",
        tasks=task("01-01", 1) + "\n" + task("01-01", 2),
        files_modified="[src/t01-01_1.py, src/t01-01_2.py]",
    )
    git_project.plan(
        "01-02",
        tasks=task("01-02", 1),
        depends_on='["01-01"]',
        wave=2,
        files_modified="[src/t01-02_1.py]",
    )
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    return git_project


Client = Callable[[str, dict[str, Any]], Awaitable[Any]]


def session(
    root: Path,
    body: Callable[[Client], Awaitable[Any]],
    *flags: str,
    env: dict[str, str] | None = None,
) -> tuple[set[str], Any]:
    """`gsd mcp FLAGS` in `root`: its tools, and what `body` returns (given a call)."""

    async def run() -> tuple[set[str], Any]:
        argv = gsd_argv("mcp", *flags)
        params = StdioServerParameters(
            command=argv[0], args=argv[1:], cwd=root, env=env or dict(os.environ)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            listed = await client.list_tools()
            return {t.name for t in listed.tools}, await body(client.call_tool)

    return anyio.run(run)


async def until_ended(call: Client, seconds: float = 90) -> dict[str, Any]:
    """Poll run_status until the run is no longer running; its last answer."""
    deadline = time.monotonic() + slack(seconds)
    while True:
        result = await call("run_status", {})
        assert not result.is_error, result.content
        data: dict[str, Any] = result.structured_content
        if data["state"] != "running" or time.monotonic() > deadline:
            return data
        await anyio.sleep(0.3)


async def until_running(call: Client, seconds: float = 30) -> dict[str, Any]:
    """Poll run_status until an agent is under way; its last answer."""
    deadline = time.monotonic() + slack(seconds)
    while True:
        data: dict[str, Any] = (await call("run_status", {})).structured_content
        if data["running"] or time.monotonic() > deadline:
            return data
        await anyio.sleep(0.2)


def lock_free(root: Path) -> bool:
    return not layout.lock_file(root / ".git").exists()


def gsd_branches(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", "refs/heads/gsd/").split()


def worktrees(root: Path) -> list[str]:
    out = git(root, "worktree", "list", "--porcelain")
    return [line for line in out.splitlines() if line.startswith("worktree ")]


def test_run_tools_are_served_only_with_allow_run(phase) -> None:
    async def body(call: Client) -> Any:
        return await call("execute_phase", {"phase": "1"})

    tools, refused = session(phase.root, body)
    assert tools == TOOLS
    assert refused.is_error and "--allow-run" in refused.content[0].text
    assert len(refused.content[0].text.splitlines()) == 1
    tools, _ = session(phase.root, lambda call: call("run_status", {}), "--allow-run")
    assert tools == TOOLS | RUN_TOOLS
    # an agent a gsd run started (GSD_TASK set) gets the read-only tools, whatever the flag
    agent_env = {**os.environ, "GSD_TASK": "1"}
    tools, refused = session(phase.root, body, "--allow-run", env=agent_env)
    assert tools == TOOLS and refused.is_error and "GSD_TASK" in refused.content[0].text
    # nor to a server the live run is an ancestor of, whatever its environment (a CLI
    # may pass its MCP servers none): here this test's process holds the lock
    hold_lock(phase.root, [sys.argv[0], "execute-phase", "1"])
    try:
        tools, refused = session(phase.root, body, "--allow-run")
    finally:
        layout.lock_file(phase.root / ".git").unlink()
    assert tools == TOOLS and refused.is_error, refused.content
    assert f"the gsd run (pid {os.getpid()}) started it" in refused.content[0].text
    assert task_commits(phase.root) == [] and lock_free(phase.root)


def test_a_bad_phase_starts_nothing(phase) -> None:
    async def body(call: Client) -> Any:
        return await call("execute_phase", {"phase": "9"}), await call(
            "execute_plan", {"plan": "01-07"}
        )

    _, (phase_result, plan_result) = session(phase.root, body, "--allow-run")
    assert phase_result.is_error and "no phase '9'" in phase_result.content[0].text
    assert plan_result.is_error and "01-07" in plan_result.content[0].text
    assert not layout.background_dir(phase.root / ".git").exists()


def test_a_link_planted_where_the_output_goes_starts_nothing(phase, tmp_path: Path) -> None:
    """gsd follows no link where it writes: a link in place of the launches' folder is
    one error line, and nothing is written through it or run."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = layout.background_dir(phase.root / ".git")
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to(elsewhere)

    async def body(call: Client) -> Any:
        return await call("execute_phase", {"phase": "1"})

    _, result = session(phase.root, body, "--allow-run")
    assert result.is_error and "is a symbolic link" in result.content[0].text, result.content
    assert list(elsewhere.iterdir()) == [] and task_commits(phase.root) == []


def test_a_phase_started_watched_and_done(phase) -> None:
    root = phase.root
    (root.parent / "markers" / "sleep-01-01-1").write_text("2")  # something to watch

    async def body(call: Client) -> Any:
        started = await call("execute_phase", {"phase": "1"})
        assert not started.is_error, started.content
        seen = [await until_running(call)]
        ended = await until_ended(call)
        return started, seen, ended, await call("progress", {"phase": "1"})

    _, (started, seen, ended, progress) = session(root, body, "--allow-run")
    data = started.structured_content
    assert data["running"] and data["status"]["state"] == "running", data
    assert seen[0]["phase"] == "01-alpha" and seen[0]["wave"] == 1, seen
    assert [t["plan"] for t in seen[0]["running"]] == ["01-01"], seen
    assert ended["state"] == "complete", ended
    assert (ended["attempts"], ended["commits"], ended["failed_attempts"]) == (3, 3, 0)
    assert ended["background"]["exit_code"] == 0, ended
    plans = progress.structured_content["plans"]
    assert [(p["plan"], p["status"], p["tasks_done"], p["tasks_total"]) for p in plans] == [
        ("01-01", "done", 2, 2),
        ("01-02", "done", 1, 1),
    ]
    assert all(p["last_event"]["event"] in ("plan-complete", "merge") for p in plans), plans
    # in git: every task committed once, both plans merged and done, nothing left over
    assert task_commits(root) == ["01-01-1", "01-01-2", "01-02-1"]
    assert git(root, "show", "HEAD:src/t01-02_1.py") == "# done\n"
    assert (root / ".planning/phases/01-alpha/01-02-SUMMARY.md").is_file()
    assert gsd_branches(root) == [] and len(worktrees(root)) == 1 and lock_free(root)
    assert git(root, "status", "--porcelain") == ""
    output = Path(data["output"])
    assert output.is_file() and output.is_relative_to(root / ".git" / "gsd")


def test_run_stop_rolls_the_run_back(phase) -> None:
    root = phase.root
    (root.parent / "markers" / "sleep-01-01-1").write_text("120")
    head = git(root, "rev-parse", "HEAD").strip()

    async def body(call: Client) -> Any:
        started = await call("execute_phase", {"phase": "1"})
        assert not started.is_error, started.content
        status = await until_running(call)
        again = await call("execute_phase", {"phase": "1"})
        approve = await call("approve", {"plan": "01-01"})
        stopped = await call("run_stop", {"wait_s": 60})
        return status, again, approve, stopped, await call("run_status", {})

    _, (status, again, approve, stopped, after) = session(root, body, "--allow-run")
    assert status["running"][0]["plan"] == "01-01", status
    assert status["running"][0]["attempt"] == 1 and status["running"][0]["task"] == 1
    assert again.is_error and "a gsd run is live" in again.content[0].text
    assert approve.is_error and "another gsd run holds" in approve.content[0].text
    assert not stopped.is_error and stopped.structured_content["stopped"], stopped.content
    assert after.structured_content["state"] == "interrupted", after.structured_content
    # in git: no task commit, the attempt rolled back, no branch, worktree or lock left
    assert task_commits(root) == []
    assert gsd_branches(root) == [] and len(worktrees(root)) == 1 and lock_free(root)
    assert not (root / "src" / "t01-01_1.py").exists()
    assert git(root, "diff", "--stat", head, "HEAD", "--", "src") == ""


def test_the_run_outlives_the_server(phase) -> None:
    root = phase.root
    (root.parent / "markers" / "sleep-01-01-1").write_text("4")

    async def body(call: Client) -> Any:
        started = await call("execute_phase", {"phase": "1"})
        assert not started.is_error, started.content
        pid = started.structured_content["pid"]
        server = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        os.kill(server, signal.SIGKILL)  # the MCP server dies; the run must not
        return pid, server

    _, (pid, server) = session(root, body, "--allow-run")
    assert not Path(f"/proc/{server}").exists()  # killed, and reaped by the client
    assert Path(f"/proc/{pid}").exists()  # the run goes on
    deadline = time.monotonic() + slack(90)
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        if stat[0] == "Z":
            break
        time.sleep(0.3)
    assert task_commits(root) == ["01-01-1", "01-01-2", "01-02-1"]
    assert (root / ".planning/phases/01-alpha/01-02-SUMMARY.md").is_file()
    assert gsd_branches(root) == [] and lock_free(root)
    _, status = session(root, lambda call: call("run_status", {}), "--allow-run")
    assert status.structured_content["state"] == "complete", status.structured_content


def test_approve_answers_a_checkpoint_and_the_run_goes_on(phase) -> None:
    root = phase.root
    text = (root / ".planning/phases/01-alpha/01-01-PLAN.md").read_text()
    text = text.replace("autonomous: true", "autonomous: false").replace(
        "</task>\n", "</task>\n" + CHECKPOINT + "\n", 1
    )
    phase.plan("01-01", text=text)
    git(root, "commit", "-q", "-am", "a human check")

    async def body(call: Client) -> Any:
        await call("execute_phase", {"phase": "1"})
        paused = await until_ended(call)
        progress = (await call("progress", {})).structured_content["plans"]
        approved = await call("approve", {"plan": "01-01"})
        twice = await call("approve", {"plan": "01-01"})
        await call("execute_phase", {"phase": "1"})
        return paused, progress, approved, twice, await until_ended(call)

    _, (paused, progress, approved, twice, done) = session(root, body, "--allow-run")
    assert paused["state"] == "paused" and paused["background"]["exit_code"] == 4, paused
    assert progress[0]["plan"] == "01-01" and progress[0]["status"] == "paused", progress
    assert not approved.is_error, approved.content
    assert approved.content[0].text == "approved 01-01 task 2: checkpoint:human-verify"
    assert twice.is_error and "answered already" in twice.content[0].text
    assert done["state"] == "complete", done
    assert task_commits(root) == ["01-01-1", "01-01-3", "01-02-1"]
    recorded = [json.loads(line) for line in (root / layout.APPROVALS).read_text().splitlines()]
    assert [(r["plan"], r["task"]) for r in recorded] == [("01-01", 2)]
    assert lock_free(root) and gsd_branches(root) == []


def test_execute_plan_runs_that_plan_only(phase) -> None:
    async def body(call: Client) -> Any:
        started = await call("execute_plan", {"plan": "01-01"})
        assert not started.is_error, started.content
        return await until_ended(call), await call("progress", {})

    _, (ended, progress) = session(phase.root, body, "--allow-run")
    assert ended["state"] == "complete" and ended["background"]["exit_code"] == 0, ended
    assert ended["background"]["argv"][-2:] == ["execute-plan", "01-01"]
    plans = {p["plan"]: p["status"] for p in progress.structured_content["plans"]}
    assert plans == {"01-01": "done", "01-02": "pending"}
    assert task_commits(phase.root) == ["01-01-1", "01-01-2"]


def test_a_run_refused_before_it_starts_is_an_error_of_one_line(phase) -> None:
    """An uncommitted plan: `gsd execute-phase` refuses (exit 2) before anything runs;
    the tool's error carries its line, and no run is left behind."""
    plan = phase.root / ".planning/phases/01-alpha/01-02-PLAN.md"
    plan.write_text(plan.read_text().replace("Do the thing.", "Do it differently."))

    async def body(call: Client) -> Any:
        return await call("execute_phase", {"phase": "1"}), await call("run_status", {})

    _, (refused, status) = session(phase.root, body, "--allow-run")
    assert refused.is_error, refused.content
    text = refused.content[0].text
    assert len(text.splitlines()) == 1 and "exited 2" in text and "01-02-PLAN.md" in text, text
    assert text.count("gsd: error:") == 1, text
    assert status.structured_content["background"]["exit_code"] == 2
    assert task_commits(phase.root) == [] and lock_free(phase.root)


@pytest.mark.parametrize("agent", [False, True], ids=["allow-run", "an-agents"])
def test_the_first_answers_with_allow_run_are_the_sdks(phase, agent, monkeypatch) -> None:
    """`gsd mcp --allow-run` answers initialize and tools/list from its recorded answers
    (gsd.cli.mcp_start) exactly as the SDK's server with the run tools does, or, for an
    agent's server, as the plain one does."""
    if agent:
        monkeypatch.setenv("GSD_TASK", "1")
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    script = _lines(_initialize(), INITIALIZED, listing)
    sdk = [sys.executable, "-c", f"from gsd.cli.mcp_server import serve; serve({not agent})"]
    ours, err = converse(gsd_argv("mcp", "--allow-run"), phase.root, script, 2)
    theirs, _ = converse(sdk, phase.root, script, 2)
    assert ours == theirs and b"gsd mcp:" not in err
    [tools] = [m["result"]["tools"] for m in map(json.loads, ours) if m["id"] == 1]
    assert {t["name"] for t in tools} == (TOOLS if agent else TOOLS | RUN_TOOLS)


def test_only_the_last_launches_are_kept(phase) -> None:
    """.git/gsd/background/ keeps the records and outputs of the last 20 launches."""
    from gsd.io import background

    folder = layout.background_dir(phase.root / ".git")
    folder.mkdir(parents=True)
    for n in range(25):
        (folder / f"20260101T0000{n:02d}.000000-1.json").write_text("{}")
        (folder / f"20260101T0000{n:02d}.000000-1.out").write_text("")
    launch, process = background.start(phase.root, ["execute-phase", "9"])
    assert process.wait(timeout=60) == 2  # no phase 9: refused at once
    records = sorted(folder.glob("*.json"))
    assert len(records) == background.KEPT and records[-1] == launch.record
    assert len(list(folder.glob("*.out"))) == background.KEPT
    assert background.latest(phase.root).exit_code == 2
    assert "no phase" in background.output_tail(launch)
