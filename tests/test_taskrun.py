"""One task end to end, in a real repository, with small agent programs (SPEC 5 and 6).

Each test asserts what a user would check afterwards: the outcome, the JSONL line,
`git status`, `git tag`, HEAD, the files, and that no process of the agent is alive.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.formats import errorlog
from gsd.formats.agents import Agent
from gsd.formats.planning.plan import parse
from gsd.formats.runners.invocation import build_argv
from gsd.io.dispatch import TaskDispatch
from gsd.io.git.repo import Git
from gsd.run.taskrun import run_task
from tests.conftest import git, plan_text, slack
from tests.test_proc import alive_with

REPORT = """
### Task Report
- Status: success
- Files Created: src/new.py
- Files Modified: none
- Files Deleted: none
- Validation: pass
- Errors: none
### Downstream Context
- Key Interfaces Introduced: none
- Patterns Established: none
- Warnings: none
## TASK COMPLETE
"""

FULL = ["read_file", "write_file", "replace", "run_shell_command"]


@pytest.fixture
def repo(git_project):
    git_project.write(".gitignore", "*.log\n")
    git_project.write("src/old.py", "old = 1\n")
    git_project.write("src/gone.py", "gone = 1\n")
    git_project.write(".planning/config.json", '{"mode": "yolo"}\n')
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "base")
    git(git_project.root, "tag", "v1")
    git_project.write("keep.log", "ignored, older than the task\n")
    git_project.write("notes.txt", "untracked, older than the task\n")
    return git_project


def make_plan(verify: str = "true", files: str = "src/new.py, src/old.py, src/gone.py"):
    task = (
        f'<task type="auto">\n<name>Task 1: do it</name>\n<files>{files}</files>\n'
        f"<action>Do it.</action>\n<verify><automated>{verify}</automated></verify>\n"
        "<done>Done.</done>\n</task>"
    )
    text = plan_text(tasks=task, files_modified="[src/new.py]")
    return parse(text, ".planning/phases/01-alpha/01-01-PLAN.md")


def agent_program(tmp_path: Path, body: str, tools: list[str] = FULL) -> tuple[Agent, str]:
    token = f"gsd-agent-{uuid.uuid4().hex}"
    script = tmp_path / f"{token}.py"
    script.write_text("import os, subprocess, sys, time\n" + textwrap.dedent(body))
    agent = Agent(
        name="python-pro",
        tools=tools,
        runner="command",
        command=[sys.executable, str(script), token],
    )
    return agent, token


def dispatch(agent: Agent, timeout: float = 30.0) -> TaskDispatch:
    return TaskDispatch(
        wave=1,
        plan="01-01",
        task=1,
        name="Task 1: do it",
        type="auto",
        specialist=agent.name,
        specialist_form="attribute",
        agent=agent.name,
        fallback_reason=None,
        tier=agent.tier,
        runner=agent.runner,
        model=None,
        argv=build_argv(agent, None),
        timeout_s=timeout,
        timeout_source="test",
        grace_s=1.0,
    )


def run(repo, agent: Agent, token: str, plan=None, timeout: float = 30.0, **kwargs):
    outcome = run_task(
        git=Git(repo.root),
        plan=plan or make_plan(),
        task=(plan or make_plan()).tasks[0],
        agent=agent,
        dispatch=dispatch(agent, timeout),
        prompt="the prompt",
        **kwargs,
    )
    assert alive_with(token) == [], "an agent process outlived its task"
    return outcome


def state(repo) -> tuple[str, str, str, list[str]]:
    """HEAD, `git status` (less the error log gsd itself writes), branch and tags."""
    root = repo.root
    status = "".join(
        line
        for line in git(root, "status", "--porcelain").splitlines(keepends=True)
        if ".planning/" not in line
    )
    tags = git(root, "tag", "--list").split()
    return git(root, "rev-parse", "HEAD"), status, git(root, "branch", "--show-current"), tags


def plan_log(repo) -> Path:
    """Where `run_task` logs a failure when no journal is given: the plan's own log."""
    return layout.plan_log(repo.root / layout.PLANNING, "01-01")


def logged(repo) -> list[dict]:
    records, warnings = errorlog.read(plan_log(repo))
    assert warnings == []
    return [json.loads(errorlog.to_line(r)) for r in records]


def test_success_is_committed_with_trailers(repo, tmp_path: Path) -> None:
    agent, token = agent_program(
        tmp_path,
        f"""
        open("src/new.py", "w").write("new = 1\\n")
        open("src/old.py", "a").write("more = 2\\n")
        os.remove("src/gone.py")
        print({REPORT!r})
    """,
    )
    head = git(repo.root, "rev-parse", "HEAD")
    outcome = run(repo, agent, token)
    assert (outcome.success, outcome.error_type) == (True, None), outcome.details
    assert outcome.changed == ["src/gone.py", "src/new.py", "src/old.py"]
    message = git(repo.root, "log", "-1", "--format=%B")
    assert message.startswith("feat(01-01): Task 1: do it\n")
    assert "Gsd-Task: 01-01-1\nGsd-Specialist: python-pro" in message
    assert git(repo.root, "rev-parse", "HEAD~1").strip() == head.strip()
    assert git(repo.root, "status", "--porcelain") == "?? notes.txt\n"
    assert git(repo.root, "tag", "--list").split() == ["v1"]  # checkpoint tag deleted
    assert outcome.report is not None and outcome.report.status == "success"
    assert not plan_log(repo).exists()


def test_agent_that_commits_and_moves_tags_is_rolled_back(repo, tmp_path: Path) -> None:
    before = state(repo)
    agent, token = agent_program(
        tmp_path,
        f"""
        open("src/new.py", "w").write("x\\n")
        open("src/old.py", "w").write("clobbered\\n")
        open("made.txt", "w").write("new untracked\\n")
        open("new.log", "w").write("new ignored\\n")
        subprocess.run(["git", "add", "-A"], check=True)
        subprocess.run(["git", "commit", "-qm", "agent commit"], check=True)
        subprocess.run(["git", "tag", "-d", "v1"], check=True)
        subprocess.run(["git", "tag", "v2"], check=True)
        print({REPORT!r})
    """,
    )
    outcome = run(repo, agent, token)
    assert (outcome.success, outcome.error_type) == (False, "policy-violation")
    assert "tag v1 deleted" in outcome.details
    # HEAD, status, branch and the deleted tag as they were; the tag made meanwhile may be
    # the user's (made in their own checkout) and is left: nothing of anyone's is lost
    head, status, branch, tags = state(repo)
    assert (head, status, branch) == before[:3] and tags == [*before[3], "v2"]
    assert (repo.root / "src/old.py").read_text() == "old = 1\n"
    assert not (repo.root / "made.txt").exists() and not (repo.root / "src/new.py").exists()
    assert (repo.root / "keep.log").exists() and (repo.root / "notes.txt").exists()
    assert (repo.root / "new.log").exists()  # ignored files are never touched
    (record,) = logged(repo)
    assert (record["error_type"], record["phase"], record["plan"], record["task"]) == (
        "policy-violation",
        "01",
        "01",
        "1",
    )
    assert record["specialist"] == "python-pro" and record["runner"] == "command"
    assert record["git_state"].startswith("checkpoint/01-01/1-")  # SPEC 6's form


def test_a_failed_rollback_is_logged_and_keeps_its_tag(repo, tmp_path: Path) -> None:
    # An agent killed inside a git command leaves index.lock behind: `reset --hard` fails.
    agent, token = agent_program(
        tmp_path, 'open("src/new.py", "w").write("x")\nopen(".git/index.lock", "w")\nsys.exit(3)\n'
    )
    plan = make_plan()
    with pytest.raises(GsdError, match="rollback to refs/tags/checkpoint/01-01/1-.* failed"):
        run_task(
            git=Git(repo.root),
            plan=plan,
            task=plan.tasks[0],
            agent=agent,
            dispatch=dispatch(agent),
            prompt="the prompt",
        )
    assert alive_with(token) == []
    (record,) = logged(repo)
    assert (record["error_type"], record["exit_code"]) == ("nonzero-exit", 3)
    assert "rollback to" in record["details"] and "the tag is kept" in record["details"]
    (tag,) = [t for t in git(repo.root, "tag", "--list").split() if t != "v1"]
    assert record["git_state"] == tag  # the tag the details tell a person to use
    (repo.root / ".git/index.lock").unlink()


def test_editing_config_json_is_a_policy_violation(repo, tmp_path: Path) -> None:
    agent, token = agent_program(
        tmp_path,
        f"""
        open(".planning/config.json", "w").write("{{}}")
        open("src/new.py", "w").write("x\\n")
        print({REPORT!r})
    """,
    )
    outcome = run(repo, agent, token)
    assert outcome.error_type == "policy-violation" and "config.json" in outcome.details
    assert (repo.root / ".planning/config.json").read_text() == '{"mode": "yolo"}\n'


def test_read_only_agent_that_writes_is_rolled_back(repo, tmp_path: Path) -> None:
    agent, token = agent_program(
        tmp_path, f'open("src/new.py", "w").write("x")\nprint({REPORT!r})\n', tools=["read_file"]
    )
    outcome = run(repo, agent, token)
    assert outcome.error_type == "policy-violation" and "read-only" in outcome.details
    assert not (repo.root / "src/new.py").exists()


def test_timeout_is_killed_and_rolled_back(repo, tmp_path: Path) -> None:
    before = state(repo)
    agent, token = agent_program(
        tmp_path,
        """
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open("src/new.py", "w").write("half done\\n")
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", sys.argv[1]])
        time.sleep(60)
    """,
    )
    outcome = run(repo, agent, token, timeout=1.0)
    assert (outcome.error_type, outcome.exit_code) == ("timeout-kill", 137)
    assert state(repo) == before
    (record,) = logged(repo)
    assert (record["error_type"], record["exit_code"]) == ("timeout-kill", 137)


def test_soft_success_report_then_hang(repo, tmp_path: Path, capfd) -> None:
    agent, token = agent_program(
        tmp_path,
        f"""
        open("src/new.py", "w").write("new = 1\\n")
        print({REPORT!r}, flush=True)
        time.sleep(60)
    """,
    )
    outcome = run(repo, agent, token, timeout=slack(1.0))  # the report comes before it
    assert (outcome.success, outcome.soft_success, outcome.exit_code) == (True, True, 124)
    assert outcome.commit is not None
    assert "soft success" in capfd.readouterr().err


def test_missing_runner_is_spawn_failed(repo, tmp_path: Path) -> None:
    agent = Agent(
        name="python-pro", tools=FULL, runner="command", command=["gsd-no-such-agent-program"]
    )
    before = state(repo)
    outcome = run(repo, agent, "unused-token")
    assert (outcome.error_type, outcome.exit_code) == ("spawn-failed", 127)
    assert state(repo) == before
    assert logged(repo)[0]["error_type"] == "spawn-failed"
    # the reason reaches the log; nothing was printed, so no RESULT file is replaced
    assert "gsd-no-such-agent-program: not found on PATH" in logged(repo)[0]["details"]
    assert outcome.output is None


def test_a_failing_agents_own_stderr_reaches_details(repo, tmp_path: Path) -> None:
    """The last lines of the agent's stderr (bounded, backtrace frames left out) end the
    error log record's details; its stdout file is kept for the RESULT file."""
    agent, token = agent_program(
        tmp_path,
        """
        print("working on it")
        for n in range(50):
            print(f"noise line {n}", file=sys.stderr)
        print("Error: the API key was refused", file=sys.stderr)
        print("    at file:///x/bundle.js:1:2", file=sys.stderr)
        print("  12: <unknown>", file=sys.stderr)
        sys.exit(3)
    """,
    )
    outcome = run(repo, agent, token)
    assert outcome.error_type == "nonzero-exit"
    details = logged(repo)[0]["details"]
    assert details.startswith("exit 3 without a success Task Report; stderr: ")
    assert details.endswith("noise line 49 | Error: the API key was refused")
    assert "noise line 44" not in details and "<unknown>" not in details
    assert outcome.output is not None and Path(outcome.output).read_text() == "working on it\n"


def test_gemini_policy_is_written_into_the_run_folder(repo, tmp_path: Path) -> None:
    """A gemini agent's policy file lands in .git/gsd/runs/{plan}-{task}/ and the runner
    gets `--policy` with its path (a stand-in `gemini` on PATH prints its argv)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "gemini").write_text(
        f"#!{sys.executable}\nimport sys, pathlib\nargs = sys.argv[1:]\n"
        "print(pathlib.Path(args[args.index('--policy') + 1]).read_text())\n"
    )
    (fake / "gemini").chmod(0o755)
    agent = Agent(name="python-pro", tools=FULL[:3], runner="gemini")
    environ = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}
    outcome = run(repo, agent, "unused-token", environ=environ)
    policy = repo.root / ".git" / "gsd" / "runs" / "01-01-1" / "gemini-policy.toml"
    assert policy.read_text() in Path(outcome.output or "").read_text()
    assert 'decision = "deny"' in policy.read_text()


def test_failed_verification_rolls_back_and_cleans_its_leftovers(repo, tmp_path: Path) -> None:
    agent, token = agent_program(
        tmp_path, f'open("src/new.py", "w").write("x")\nprint({REPORT!r})\n'
    )
    plan = make_plan(verify="touch verify-cache.txt; grep -q never src/new.py")
    outcome = run(repo, agent, token, plan=plan)
    assert outcome.error_type == "validation-failed" and "grep -q never" in outcome.details
    assert state(repo)[1] == "?? notes.txt\n"  # verify-cache.txt removed, src/new.py too


def test_failed_verification_details_hold_its_stdout_and_stderr(repo, tmp_path: Path) -> None:
    agent, token = agent_program(
        tmp_path, f'open("src/new.py", "w").write("x")\nprint({REPORT!r})\n'
    )
    plan = make_plan(verify="echo checked-src; ls no-such-file-anywhere")
    outcome = run(repo, agent, token, plan=plan)
    assert outcome.error_type == "validation-failed"
    assert "checked-src | " in outcome.details and "no-such-file-anywhere" in outcome.details


def test_skip_verification(repo, tmp_path: Path, monkeypatch, capfd) -> None:
    monkeypatch.setenv("SKIP_VERIFICATION", "true")
    agent, token = agent_program(
        tmp_path, f'open("src/new.py", "w").write("x")\nprint({REPORT!r})\n'
    )
    outcome = run(repo, agent, token, plan=make_plan(verify="false"))
    assert outcome.success
    assert "SKIP_VERIFICATION" in capfd.readouterr().err


@pytest.mark.parametrize(("scope", "success"), [("warn", True), ("fail", False)])
def test_scope(repo, tmp_path: Path, scope: str, success: bool) -> None:
    agent, token = agent_program(
        tmp_path,
        f"""
        open("src/new.py", "w").write("x\\n")
        open("elsewhere.py", "w").write("x\\n")
        print({REPORT!r})
    """,
    )
    outcome = run(repo, agent, token, scope=scope)
    assert outcome.success is success
    if success:
        assert outcome.deviations and "elsewhere.py" in outcome.deviations[0]
        assert "elsewhere.py" in git(repo.root, "show", "--name-only", "--format=")
    else:
        assert outcome.error_type == "policy-violation"


def test_dirty_tree_is_refused_unless_allowed(repo, tmp_path: Path) -> None:
    (repo.root / "src/old.py").write_text("uncommitted work\n")
    agent, token = agent_program(
        tmp_path, f'open("src/new.py", "w").write("x")\nprint({REPORT!r})\n'
    )
    refused = run(repo, agent, token)
    assert refused.error_type == "checkpoint-failed" and "--allow-dirty" in refused.details
    failing, token = agent_program(tmp_path, "open('src/new.py', 'w').write('x')\nsys.exit(3)\n")
    outcome = run(repo, failing, token, allow_dirty=True)
    assert outcome.error_type == "nonzero-exit"
    assert (repo.root / "src/old.py").read_text() == "uncommitted work\n"  # restored exactly
    assert not (repo.root / "src/new.py").exists()
