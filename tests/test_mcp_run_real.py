"""The real claude CLI as the hub (issue 25): `gsd mcp --allow-run` registered as README
says, the scripted model server (tests/modelserver) playing a model that starts phase 1
with execute_phase, polls run_status, then reads progress. The phase's plan is done by
a command agent in the background run, which goes on after claude (and with it the MCP
server) has ended. Judged by git and by the tool results claude sent back to its model.
The CLIs come from `make clis`; without them this test skips and says why.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gsd.core import layout
from gsd.io.lock import process_alive
from tests.conftest import git, slack
from tests.e2e.cells import run_git, user_environment
from tests.modelserver import anthropic, gemini, responses
from tests.modelserver.scenario import Scenario, mcp, shell
from tests.modelserver.server import ModelServer
from tests.test_clis import cli_bin  # noqa: F401  (the fixture)
from tests.test_execute import REPORT, task
from tests.test_mcp_run import AGENT

pytestmark = pytest.mark.slow

AGENT_FILE = """\
---
name: worker
description: the worker
tools: Read, Write
runner: command
command: ["{python}", "{script}"]
timeout_mins: 1
---
The worker.
"""
PLAN = """\
---
phase: 01-hub
plan: 01
type: execute
wave: 1
depends_on: []
files_modified: [src/t01-01_1.py, src/t01-01_2.py]
autonomous: true
must_haves:
  truths:
    - "it works"
  artifacts: []
  key_links: []
---

<objective>Two files.</objective>

<tasks>
{tasks}
</tasks>
"""
TOOLS = ("execute_phase", "run_status", "progress")
WAIT = "for i in $(seq 240); do [ -e .git/gsd/run.lock ] || break; sleep 0.5; done"


def build(base: Path) -> Path:
    """A repository whose phase 1 has one plan of two tasks, each by a command agent."""
    repo = base / "repo"
    script = base / "agent.py"
    script.write_text(AGENT.format(report=REPORT))
    (base / "markers").mkdir()
    files = {
        ".planning/phases/01-hub/01-01-PLAN.md": PLAN.format(
            tasks=task("01-01", 1) + "\n" + task("01-01", 2)
        ),
        ".claude/agents/worker.md": AGENT_FILE.format(python=sys.executable, script=script),
        ".claude/agents/gsd-executor.md": AGENT_FILE.format(
            python=sys.executable, script=script
        ).replace("name: worker", "name: gsd-executor"),
        ".planning/available_agents.md": "- **worker**: the worker\n",
        ".planning/config.json": json.dumps({"specialists": {"max_retries": 0}}),
        "README.md": "hub\n",
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    run_git(repo, "init", "-q", "-b", "main")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "plan")
    return repo


def hub(
    bin_dir: Path, repo: Path, home: Path, scenario: Scenario, extra: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """claude in `repo`, `gsd mcp --allow-run` registered for the user, the model playing
    `scenario`: its run, and each tool result it sent back to the model."""
    with ModelServer(scenario) as server:
        env = {**user_environment(bin_dir, home), **anthropic.configure(home, server.url)}
        gsd = [sys.executable, "-m", "gsd", "mcp", "--allow-run"]
        add = ["claude", "mcp", "add", "--scope", "user", "gsd", "--", *gsd]
        subprocess.run(add, env=env, check=True, capture_output=True, cwd=home)
        allowed = ",".join([*(f"mcp__gsd__{name}" for name in TOOLS), "Bash"])
        argv = ["claude", "-p", "--output-format", "json", "--allowedTools", allowed]
        done = subprocess.run(
            [*argv, "--permission-mode", "dontAsk"],
            input="Run phase 1 of this project with gsd, watch it, and say how it went.",
            cwd=repo,
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=slack(180),
        )
        bodies = [entry.body for entry in server.log]
    return done, list(anthropic.tool_results(bodies).values())


def test_claude_starts_watches_and_reads_a_phase(cli_bin: Path, tmp_path: Path) -> None:  # noqa: F811
    repo = build(tmp_path)
    before = git(repo, "rev-parse", "HEAD").strip()
    (tmp_path / "markers" / "sleep-01-01-1").write_text("2")  # a run to watch
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)  # conftest made it: HOME for gsd and claude alike
    steps = (
        mcp("execute_phase", phase="1"),
        mcp("run_status"),
        mcp("run_status"),
        shell(WAIT),  # the model waits a while (the run's lock gone), then looks again
        mcp("run_status"),
        mcp("progress", phase="1"),
    )
    scenario = Scenario(steps=steps, final="Phase 1 is done.", usage=(900, 40))
    done, results = hub(cli_bin, repo, home, scenario, {})
    said = f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    # claude hands its model each tool's structured content, as JSON
    started = [json.loads(r) for r in results if r.startswith('{"running":')]
    assert len(started) == 1 and started[0]["running"], (results, said)
    polled = [json.loads(r) for r in results if r.startswith('{"state":')]
    assert len(polled) == 3, results
    assert all(p["phase"] == "01-hub" for p in polled), polled
    assert polled[0]["pid"] == started[0]["pid"], polled  # the run it started, while live
    assert polled[0]["state"] == "running" and polled[-1]["state"] == "complete", polled
    assert polled[-1]["commits"] == 2, polled[-1]  # the model read the finished run
    [progress] = [json.loads(r) for r in results if r.startswith('{"plans":')]
    assert [(p["plan"], p["tasks_total"]) for p in progress["plans"]] == [("01-01", 2)]
    assert progress["plans"][0]["tasks_done"] == 2, progress
    # the run outlived claude and its MCP server: wait for it, then judge it in git
    records = sorted(layout.background_dir(repo / ".git").glob("*.json"))
    assert len(records) == 1, records
    pid = json.loads(records[0].read_text())["pid"]
    deadline = time.monotonic() + slack(120)
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not process_alive(pid), "the background run did not end"
    trailers = git(repo, "log", "--format=%(trailers:key=Gsd-Task,valueonly)").split()
    assert sorted(trailers) == ["01-01-1", "01-01-2"], records[0].with_suffix(".out").read_text()
    assert git(repo, "show", "HEAD:src/t01-01_2.py") == "# done\n"
    assert (repo / ".planning/phases/01-hub/01-01-SUMMARY.md").is_file()
    assert git(repo, "for-each-ref", "refs/heads/gsd/") == ""
    assert not layout.lock_file(repo / ".git").exists()
    # issue 25's "done when": `gsd undo` of that phase leaves the repository as before
    # it, STATE.md derived
    undone = subprocess.run(
        [sys.executable, "-m", "gsd", "undo", "1"], cwd=repo, capture_output=True, text=True
    )
    assert undone.returncode == 0, undone.stderr
    assert git(repo, "ls-tree", "-r", "--name-only", "HEAD", "--", "src") == ""
    assert not (repo / ".planning/phases/01-hub/01-01-SUMMARY.md").exists()
    assert git(repo, "merge-base", "--is-ancestor", before, "HEAD") == ""  # history grew
    moved = git(repo, "diff", "--name-only", before, "HEAD").split()
    derived = {".planning/STATE.md", ".planning/ROADMAP.md"}
    assert {p for p in moved if not p.startswith(".planning/logs/")} <= derived, moved
    check = [sys.executable, "-m", "gsd", "sync", "--check"]
    assert subprocess.run(check, cwd=repo, capture_output=True).returncode == 0  # derived
    # and a dry run estimates each task from that run's history (the logs it kept)
    argv = [sys.executable, "-m", "gsd", "execute-phase", "1", "--dry-run", "--format", "json"]
    dry = subprocess.run(argv, cwd=repo, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    body = json.loads(dry.stdout)
    estimates = [t["estimate"] for t in body["tasks"]]
    assert [(e["history"], e["runs"]) for e in estimates] == [(True, 2), (True, 2)], (
        estimates
    )  # worker ran twice
    assert all(e["seconds"]["median"] > 0 for e in estimates), estimates
    assert body["estimate"]["no_history"] == 0 and body["estimate"]["seconds"] > 0


def test_an_agent_under_a_gsd_run_gets_no_run_tool(cli_bin: Path, tmp_path: Path) -> None:  # noqa: F811
    """claude started by a gsd run has GSD_TASK in its environment, and so has the `gsd
    mcp` it starts: `--allow-run` or not, no run tool is served, nothing runs."""
    repo = build(tmp_path)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    scenario = Scenario(steps=(mcp("execute_phase", phase="1"),), final="Tried.")
    done, results = hub(cli_bin, repo, home, scenario, {"GSD_TASK": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert not any(r.startswith('{"running":') for r in results), results
    # not listed to claude at all: its ToolSearch finds nothing, the call no such tool
    assert any("No such tool available: mcp__gsd__execute_phase" in r for r in results), results
    assert not layout.background_dir(repo / ".git").exists()
    assert git(repo, "log", "--format=%(trailers:key=Gsd-Task,valueonly)").split() == []


HUBS = {  # how a user registers `gsd mcp --allow-run` and asks each CLI, headless
    "codex": (
        ["codex", "mcp", "add", "gsd", "--"],
        ["codex", "exec", "--json", "--skip-git-repo-check"],
    ),
    # gemini 0.61.0 offers a headless session no MCP tool that is not read-only unless
    # its server is trusted (`--trust`); --skip-trust: the repository is a new folder
    "gemini": (
        ["gemini", "mcp", "add", "--scope", "user", "--trust", "gsd"],
        ["gemini", "--output-format", "json", "--skip-trust", "-p"],
    ),
}


@pytest.mark.parametrize("cli", sorted(HUBS))
def test_codex_and_gemini_start_and_watch_a_phase(
    cli: str,
    cli_bin: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """codex and gemini as the hub. codex 0.169.0 passes its MCP servers none of the
    shell's GIT_* variables: git's identity comes from ~/.gitconfig, as for most users."""
    repo = build(tmp_path)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Hub\n\temail = hub@example.invalid\n")
    steps = (mcp("execute_phase", phase="1"), mcp("run_status"), mcp("progress", phase="1"))
    scenario = Scenario(steps=steps, final="Phase 1 is under way.", usage=(900, 40))
    add, ask = HUBS[cli]
    with ModelServer(scenario) as server:
        configure = responses.configure if cli == "codex" else gemini.configure
        env = {**user_environment(cli_bin, home), **configure(home, server.url)}
        gsd = [sys.executable, "-m", "gsd", "mcp", "--allow-run"]
        command = [*add, *gsd] if cli == "codex" else [*add, gsd[0], "--", *gsd[1:]]
        subprocess.run(command, env=env, check=True, capture_output=True, cwd=home)
        done = subprocess.run(
            [*ask, "Run phase 1 with gsd."],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=slack(180),
            stdin=subprocess.DEVNULL,
        )
        bodies = [entry.body for entry in server.log]
    said = f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, said
    found = responses.tool_results(bodies) if cli == "codex" else gemini.tool_results(bodies)
    results = list(found.values())
    assert len(results) == 3, (results, said)
    # codex hands its model a tool's structured content, gemini its text
    started, polled = (
        ('"running":true', '"tasks_total":2')
        if cli == "codex"
        else (
            "started gsd execute-phase 01 in the background",
            "2 tasks",
        )
    )
    assert started in results[0] and polled in results[2], results
    [record] = sorted(layout.background_dir(repo / ".git").glob("*.json"))
    pid = json.loads(record.read_text())["pid"]
    deadline = time.monotonic() + slack(120)
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.3)
    output = record.with_suffix(".out").read_text()
    trailers = git(repo, "log", "--format=%(trailers:key=Gsd-Task,valueonly)").split()
    assert sorted(trailers) == ["01-01-1", "01-01-2"], output
    authors = set(git(repo, "log", "--format=%an", "--grep=^Gsd-Task:").splitlines())
    assert authors == {"Hub"}, authors
    assert git(repo, "for-each-ref", "refs/heads/gsd/") == ""
