"""`gsd execute-phase N` end to end in real repositories, with small command agents."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from gsd.formats import errorlog, execlog
from tests.conftest import git, plan_text, slack

REPORT = (
    "### Task Report\\n- Status: success\\n- Files Created: none\\n- Files Modified: none\\n"
    "- Files Deleted: none\\n- Validation: pass\\n- Errors: none\\n### Downstream Context\\n"
    "- Key Interfaces Introduced: none\\n- Patterns Established: none\\n- Warnings: none\\n"
)

AGENT = """\
import os, sys, time
plan, task = os.environ["GSD_PLAN"], os.environ["GSD_TASK"]
# markers live beside this script, outside the repository, in a folder the sandbox lets
# agents write (config `sandbox.writable`): "rate-limit-once" deletes its marker
marker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "markers",
                      f"fail-{{plan}}-{{task}}")
if os.path.exists(marker):
    mode = open(marker).read().strip()
    if mode == "hang":
        time.sleep(60)
    if mode == "rate-limit-once":
        os.unlink(marker)
        print("API Error: 429 rate_limit_error")
    sys.exit(3)
os.makedirs("src", exist_ok=True)
open(f"src/t{{plan}}_{{task}}.py", "w").write(f"# {{os.environ['GSD_SPECIALIST']}}\\n")
print("{report}")
"""

AGENT_FILE = """\
---
name: {name}
description: "test agent"
tools: [read_file, write_file, replace, run_shell_command]
timeout_mins: 1
runner: command
command: ["{python}", "{script}"]
---
Test persona.
"""


def task(plan: str, n: int, specialist: str = "worker") -> str:
    return (
        f'<task type="auto" specialist="{specialist}">\\n<name>Task {n}</name>\\n'
        f"<files>src/t{plan}_{n}.py</files>\\n<action>Write it.</action>\\n"
        "<verify><automated>true</automated></verify>\\n<done>Done.</done>\\n</task>"
    )


def install_agents(project, script: Path) -> None:
    """`worker` (the roster's one specialist) and `gsd-executor`, both running `script`."""
    for name in ("worker", "gsd-executor"):
        project.write(
            f"agents/{name}.md", AGENT_FILE.format(name=name, python=sys.executable, script=script)
        )
    project.write(".planning/available_agents.md", "- **worker**: test\n")


@pytest.fixture
def phase(git_project, tmp_path):
    root = git_project.root
    script = tmp_path / "agent.py"
    script.write_text(AGENT.format(report=REPORT))
    install_agents(git_project, script)
    (tmp_path / "markers").mkdir()
    git_project.write(
        ".planning/config.json",
        json.dumps(
            {
                "specialists": {"kill_grace_seconds": 1, "max_retries": 1},
                "sandbox": {"writable": [str(tmp_path / "markers")]},
            }
        ),
    )
    git_project.write(
        ".planning/STATE.md",
        textwrap.dedent("""\
        # Project State

        ## Current Position

        Phase: 1 of 1 (Alpha)
        Status: Ready to execute

        ### Blockers/Concerns

        None yet.
        """),
    )
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
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")
    return git_project


def task_commits(root) -> list[str]:
    """Task commits on every local branch (the user's and kept `gsd/*` plan branches),
    oldest first: a task committed twice would show twice."""
    out = git(
        root,
        "log",
        "--branches",
        "--format=%(trailers:key=Gsd-Task,valueonly)%x00%s",
        "--reverse",
        "--topo-order",
    )
    return [line.split("\0")[0].strip() for line in out.split("\n") if line.startswith("01-")]


def message_of(root, task_id: str) -> str:
    """The message of the commit whose Gsd-Task trailer is `task_id`."""
    sha = git(root, "log", "--branches", "--format=%H", f"--grep=Gsd-Task: {task_id}$").split()[0]
    return git(root, "log", "-1", "--format=%B", sha)


def logged_events(root) -> list[dict]:
    """Every event of every log in the checkout, in time order."""
    events, warnings = execlog.read_all(root / ".planning")
    assert warnings == []
    return events


def logged_errors(root) -> list[errorlog.ErrorRecord]:
    records, warnings = errorlog.read_all(root / ".planning")
    assert warnings == []
    return records


def fail(tmp_path, plan: str, n: int, mode: str = "exit") -> None:
    (tmp_path / "markers" / f"fail-{plan}-{n}").write_text(mode)


def test_a_phase_runs_to_completion_and_a_rerun_skips_everything(phase, gsd) -> None:
    root = phase.root
    result = gsd("execute-phase", "1", "--format", "json")
    assert result.code == 0, result.err
    assert task_commits(root) == ["01-01-1", "01-01-2", "01-02-1"]
    assert "Gsd-Specialist: worker" in message_of(root, "01-01-2")
    folder = root / ".planning/phases/01-alpha"
    assert (folder / "01-01-SUMMARY.md").exists() and (folder / "01-02-SUMMARY.md").exists()
    # SPEC 1: the raw output of each plan's last agent run, committed with the docs
    assert "### Task Report" in (folder / "01-02-RESULT.txt").read_text()
    assert "01-01-RESULT.txt" in git(root, "ls-files", ".planning/phases/01-alpha")
    assert git(root, "tag", "--list") == ""
    subjects = git(root, "log", "--format=%s")
    # SPEC 0: every plan ran in its worktree and was merged back
    assert "Merge branch 'gsd/01-01': plan 01-01 complete" in subjects
    assert "Merge branch 'gsd/01-02': plan 01-02 complete" in subjects
    assert git(root, "status", "--porcelain") == ""  # logs and state committed too
    assert git(root, "branch", "--list", "gsd/*") == ""
    assert [t["outcome"] for t in json.loads(result.out)["tasks"]] == ["committed"] * 3
    state = (root / ".planning/STATE.md").read_text()
    assert "Status: Phase complete" in state and "100%" in state
    assert "Plan: 2 of 2 in current phase" in state
    head = git(root, "rev-parse", "HEAD")
    again = gsd("execute-phase", "1")
    assert again.code == 0 and git(root, "rev-parse", "HEAD") == head
    assert "skipped" in again.err


def test_failure_stops_the_phase_and_a_rerun_resumes(phase, gsd, tmp_path) -> None:
    root = phase.root
    fail(tmp_path, "01-01", 2)
    result = gsd("execute-phase", "1")
    assert result.code == 1
    assert task_commits(root) == ["01-01-1"]
    state = (root / ".planning/STATE.md").read_text()
    assert "- [01-01] nonzero-exit:" in state
    assert logged_errors(root)[-1].error_type == "nonzero-exit"
    events = logged_events(root)
    rolled = [(e["plan"], e["task"]) for e in events if e["event"] == "rollback"]
    failed = [e for e in events if e["event"] == "result" and not e["success"]]
    assert set(rolled) == {("01-01", 2)} and len(rolled) == len(failed)  # every failed attempt
    status = json.loads(gsd("status", "--format", "json").out)
    plans = {p["plan"]: p for p in status["phases"][0]["plans"]}
    assert (plans["01-01"]["status"], plans["01-01"]["committed_tasks"]) == ("failed", [1])
    assert plans["01-02"]["status"] == "pending"
    assert any("[01-01] nonzero-exit" in b for b in status["blockers"])
    (tmp_path / "markers/fail-01-01-2").unlink()
    resumed = gsd("execute-phase", "1")
    assert resumed.code == 0, resumed.err
    assert task_commits(root) == ["01-01-1", "01-01-2", "01-02-1"]  # task 1 not redone
    status = json.loads(gsd("status", "--format", "json").out)
    assert [p["status"] for p in status["phases"][0]["plans"]] == ["done", "done"]
    assert status["blockers"] == []


def test_timeouts_are_retried_then_fall_back_to_gsd_executor(phase, gsd, tmp_path) -> None:
    root = phase.root
    (tmp_path / "agent.py").write_text(
        (tmp_path / "agent.py")
        .read_text()
        .replace(
            "if os.path.exists(marker):",
            'if os.environ["GSD_SPECIALIST"] == "worker" and os.path.exists(marker):',
        )
    )
    fail(tmp_path, "01-02", 1, "hang")
    # the worker hangs until it; gsd-executor must finish within it
    result = gsd("execute-phase", "1", "--timeout", str(slack(1)))
    assert result.code == 0, result.err
    assert "Gsd-Specialist: gsd-executor" in message_of(root, "01-02-1")
    events = [e["event"] for e in logged_events(root)]
    assert "retry" in events and "fallback" in events
    assert (
        "warning: phase 01 wave 2/2 plan 01-02 task 1: gsd-executor takes over: worker "
        "failed: timeout" in result.err
    )
    report = json.loads(gsd("report", "--format", "json").out)
    agents = {row["agent"]: row for row in report["per_agent"]}
    assert agents["worker"]["failed"] >= 2 and agents["gsd-executor"]["succeeded"] == 1
    assert report["retries"] >= 1
    assert any(r["outcome"] in ("timeout", "timeout-kill") for r in report["timeline"])
    assert "Per agent (retries:" in gsd("report").out


CHECKPOINT = (
    '<task type="checkpoint:human-verify" gate="blocking">\n<what-built>x</what-built>\n'
    "<how-to-verify>Open the page and look</how-to-verify>\n"
    "<resume-signal>approved</resume-signal>\n</task>"
)


@pytest.fixture
def paused(phase):
    """Plan 01-01 with a human check between its two tasks."""
    text = (phase.root / ".planning/phases/01-alpha/01-01-PLAN.md").read_text()
    text = text.replace("autonomous: true", "autonomous: false").replace(
        "</task>\n", "</task>\n" + CHECKPOINT + "\n", 1
    )
    phase.plan("01-01", text=text)
    git(phase.root, "commit", "-q", "-am", "a human check")
    return phase


def test_human_checkpoint_pauses_then_approve_continues(paused, gsd) -> None:
    root = paused.root
    result = gsd("execute-phase", "1")
    assert result.code == 4 and "Open the page and look" in result.err
    assert task_commits(root) == ["01-01-1"]
    assert "01-01  wave 1  paused" in gsd("status").out
    state = (root / ".planning/STATE.md").read_bytes()
    assert gsd("approve", "01-01").code == 0
    assert (root / ".planning/STATE.md").read_bytes() == state  # the run edits it, not approve
    resumed = gsd("execute-phase", "1")
    assert resumed.code == 0, resumed.err
    assert "checkpoint-paused" not in (root / ".planning/STATE.md").read_text()
    assert task_commits(root) == ["01-01-1", "01-01-3", "01-02-1"]


@pytest.mark.parametrize("how", ["--auto", "yolo"])
def test_auto_and_yolo_approve_human_verify(paused, gsd, how: str) -> None:
    if how == "yolo":
        settings = {"mode": "yolo", "specialists": {"kill_grace_seconds": 1, "max_retries": 1}}
        paused.write(".planning/config.json", json.dumps(settings))
        git(paused.root, "commit", "-q", "-am", "yolo")
    result = gsd("execute-phase", "1", *(["--auto"] if how == "--auto" else []))
    assert result.code == 0, result.err
    assert "approved (auto)" in result.err


def test_validation_errors_refuse_the_run(git_project, gsd) -> None:
    git_project.plan("01-01", text=plan_text().replace("type: execute", "type: nope"))
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    result = gsd("execute-phase", "1")
    assert result.code == 2
    assert result.err.endswith(
        ".planning/phases/01-alpha/01-01-PLAN.md:4:1: error GSD003 `type` is 'nope'; allowed: "
        "execute, tdd\n"
        "gsd: error: .planning/phases/01-alpha has 1 validation error; nothing was run (fix "
        "them and run again; `gsd validate --phase 01` lists them all)\n"
    )
    assert git(git_project.root, "tag", "--list") == ""


def test_a_refusal_lists_twenty_errors_then_how_many_more(
    git_project, gsd, runners_on_path
) -> None:
    no_action = '<task type="auto"><name>Task {n}</name><files>a.py</files></task>'
    tasks = "\n".join(no_action.format(n=n) for n in range(1, 26))
    git_project.plan("01-01", tasks=tasks)
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    result = gsd("execute-phase", "1")
    assert result.code == 2
    listed = [line for line in result.err.splitlines() if " error GSD" in line]
    assert len(listed) == 20
    assert "... and 5 more errors\n" in result.err
    assert "has 25 validation errors; nothing was run" in result.err
    dry = gsd("execute-phase", "1", "--dry-run")
    assert dry.code == 0
    assert [line for line in dry.err.splitlines() if " error GSD" in line] == listed
    assert "gsd: warning: 25 validation errors in .planning/phases/01-alpha; a live run " in dry.err


def test_execute_plan_runs_one_plan_once_its_dependencies_are_done(phase, gsd) -> None:
    root = phase.root
    early = gsd("execute-plan", "01-02")
    assert early.code == 2 and "depends on 01-01, not done yet" in early.err
    assert gsd("execute-plan", "01-01").code == 0
    assert task_commits(root) == ["01-01-1", "01-01-2"]
    assert gsd("execute-plan", "01-02").code == 0
    assert task_commits(root) == ["01-01-1", "01-01-2", "01-02-1"]
    missing = gsd("execute-plan", "01-07")
    assert missing.code == 2 and "no plan 01-07" in missing.err


def test_human_action_always_waits_even_with_auto(phase, gsd) -> None:
    action = (
        '<task type="checkpoint:human-action" gate="blocking">\n<action>Create the account'
        "</action>\n<instructions>Sign up</instructions>\n<verification>It exists"
        "</verification>\n<resume-signal>done</resume-signal>\n</task>"
    )
    text = (phase.root / ".planning/phases/01-alpha/01-01-PLAN.md").read_text()
    text = text.replace("autonomous: true", "autonomous: false").replace(
        "</task>\n", "</task>\n" + action + "\n", 1
    )
    phase.plan("01-01", text=text)
    git(phase.root, "commit", "-q", "-am", "a human action")
    result = gsd("execute-phase", "1", "--auto")
    assert result.code == 4 and "Sign up" in result.err


def test_gsd_killed_during_a_spawn_resumes_without_losing_or_redoing_work(phase, tmp_path) -> None:
    """SIGKILL gsd while an agent is half-way: its child dies with it, the next run rolls
    the half-done work back and carries on; every task is committed exactly once."""
    import os
    import signal
    import subprocess
    import time

    from tests.conftest import REPO, plan_worktree
    from tests.test_proc import alive_with

    root = phase.root
    (tmp_path / "agent.py").write_text(
        (tmp_path / "agent.py")
        .read_text()
        .replace(
            "if os.path.exists(marker):",
            'if os.path.exists(marker):\n    open("src/half-done.txt", "w").write("x")',
        )
    )
    fail(tmp_path, "01-01", 2, "hang")
    gsd = subprocess.Popen(
        [sys.executable, "-m", "gsd", "execute-phase", "1"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    half_done = plan_worktree(root, "01-01") / "src/half-done.txt"  # the plan's worktree
    while not half_done.exists():
        assert time.monotonic() < deadline and gsd.poll() is None, "the agent never started"
        time.sleep(0.05)
    gsd.send_signal(signal.SIGKILL)
    gsd.wait()
    assert git(root, "tag", "--list").startswith("checkpoint/")  # left open by the crash
    (tmp_path / "markers/fail-01-01-2").unlink()
    resumed = subprocess.run(
        [sys.executable, "-m", "gsd", "execute-phase", "1"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "left open by an interrupted run" in resumed.stderr
    assert task_commits(root) == ["01-01-1", "01-01-2", "01-02-1"]
    assert not (root / "src/half-done.txt").exists()
    assert git(root, "tag", "--list") == "" and git(root, "status", "--porcelain") == ""
    assert alive_with(str(tmp_path / "agent.py")) == []


def test_a_specialist_outside_the_roster_runs_as_gsd_executor_with_a_warning(phase, gsd) -> None:
    """SPEC 3 step 3: not in available_agents.md -> gsd-executor, warning (live runs too)."""
    root = phase.root
    plan = root / ".planning/phases/01-alpha/01-02-PLAN.md"
    plan.write_text(plan.read_text().replace('specialist="worker"', 'specialist="rust-pro"'))
    git(root, "commit", "-q", "-am", "a specialist nobody has")
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert (
        "warning: phase 01 wave 2/2 plan 01-02 task 1: gsd-executor instead of "
        "'rust-pro': not in .planning/available_agents.md" in result.err
    )
    assert "Gsd-Specialist: gsd-executor" in message_of(root, "01-02-1")


def test_a_rate_limited_failure_is_retried_like_a_timeout(phase, gsd, tmp_path) -> None:
    """SPEC 7 step 5: a rate-limit exit is transient: retried by the same specialist."""
    root = phase.root
    fail(tmp_path, "01-02", 1, "rate-limit-once")
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert "Gsd-Specialist: worker" in message_of(root, "01-02-1")  # no fallback
    events = [e["event"] for e in logged_events(root)]
    assert "retry" in events and "fallback" not in events
    assert logged_errors(root)[-1].error_type == "nonzero-exit"  # SPEC 6's types; no new one


@pytest.mark.parametrize(
    "command",
    [
        ["status"],
        ["report"],
        ["errors"],
        ["agents", "list"],
        ["checkpoints", "list"],
        ["rules"],
        ["show", "1"],
        ["waves", "1"],
    ],
)
def test_every_listing_command_speaks_markdown(phase, gsd, tmp_path, command) -> None:
    """SPEC 8: every listing command takes --format text|markdown|json."""
    from gsd.io.git.checkpoint import Checkpoints
    from gsd.io.git.repo import Git

    fail(tmp_path, "01-01", 2)  # a failure, so that errors and report have rows
    gsd("execute-phase", "1")
    Checkpoints(Git(phase.root)).create("01-01", 2)  # one left behind, for checkpoints list
    result = gsd(*command, "--format", "markdown")
    assert result.code == 0, result.err
    rows = [line for line in result.out.splitlines() if line.startswith("|")]
    separators = [r for r in rows if set(r.replace(" ", "")) <= set("|-:")]
    assert rows and separators, result.out  # at least one Markdown table
    assert json.loads(gsd(*command, "--format", "json").out) is not None


def test_report_junit_after_a_failed_run(phase, gsd, tmp_path) -> None:
    from lxml import etree

    from tests.conftest import REPO

    fail(tmp_path, "01-01", 1)
    assert gsd("execute-phase", "1").code == 1
    result = gsd("report", "--format", "junit")
    assert result.code == 0, result.err
    root = etree.fromstring(result.out.encode())
    etree.XMLSchema(etree.parse(str(REPO / "tests/data/junit.xsd"))).assertValid(root)
    suite = root.find("testsuite")
    assert suite.get("name") == "plan 01-01"  # 01-02's wave never started
    first, second = suite.findall("testcase")
    assert (first.get("name"), second.get("name")) == ("task 1: Task 1", "task 2: Task 2")
    assert first.find("failure").get("type") == "nonzero-exit"
    assert "attempt 1: worker: nonzero-exit" in first.findtext("system-out")
    assert second.find("skipped").get("message") == "not run"
    (tmp_path / "markers/fail-01-01-1").unlink()
    assert gsd("execute-phase", "1").code == 0
    root = etree.fromstring(gsd("report", "--format", "junit").out.encode())
    assert (root.get("tests"), root.get("failures")) == ("3", "0")
    assert [c.find("skipped") for c in root.iter("testcase")] == [None, None, None]
