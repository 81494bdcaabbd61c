"""Token budgets: streamed usage per runner, the watch, and one task stopped past its abort
threshold, run by a small program that streams each runner's real usage format."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from gsd.core.safety.budget import DEFAULTS, Budget, budget_status, resolve_budget
from gsd.core.verdict.outcomes import next_rung
from gsd.formats.agents import Agent
from gsd.formats.runners.invocation import parse_output
from gsd.formats.runners.usage import UsageMeter
from gsd.io.dispatch import TaskDispatch
from gsd.io.git.repo import Git
from gsd.io.process.budgetwatch import LONGEST_LINE, BudgetWatch
from gsd.run.taskrun import run_task
from tests.test_proc import alive_with
from tests.test_taskrun import logged, make_plan, repo, state  # noqa: F401  (fixture)

STREAM_AGENT = Path(__file__).parent / "fakebin" / "stream_agent.py"
FIXTURES = Path(__file__).parent / "fixtures" / "runners"


# --- what each runner's stream says --------------------------------------------------


def lines(runner: str, steps: str, tmp_path: Path) -> list[str]:
    import subprocess

    done = subprocess.run(
        [sys.executable, str(STREAM_AGENT), runner, steps],
        input="",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    return done.stdout.splitlines()


@pytest.mark.parametrize(
    ("runner", "after_each"),
    [
        # claude: one API call's two content blocks count once; the result confirms the sum
        pytest.param("claude", [0, 1000, 1000, 3000, 3000, 3000], id="claude"),
        pytest.param("gemini", [0, 0, 0, 3000], id="gemini-only-at-its-result"),
    ],
)
def test_the_meter_reads_each_runners_stream(
    runner: str, after_each: list[int], tmp_path: Path
) -> None:
    meter = UsageMeter(runner)
    assert [meter.feed(line) for line in lines(runner, "1000,2000", tmp_path)] == after_each


def test_the_codex_meter_estimates_a_turn_until_it_ends(tmp_path: Path) -> None:
    """codex reports usage only when a turn ends: until then the meter estimates from
    its items (a request's fixed part when the turn starts, the items' text after), says
    it is estimating, and the count replaces the estimate when the turn ends."""
    from gsd.formats.runners.usage import CODEX_REQUEST_TOKENS

    meter = UsageMeter("codex")
    seen = []
    for line in lines("codex", "1000,2000", tmp_path):
        seen.append((meter.feed(line), meter.estimated))
    message = len(json.dumps(json.loads(lines("codex", "1", tmp_path)[2])["item"])) // 4
    start, after = CODEX_REQUEST_TOKENS, CODEX_REQUEST_TOKENS + message
    assert seen == [
        (0, False),
        (start, True),
        (after, True),
        (1000, False),
        (1000 + start, True),
        (1000 + after, True),
        (3000, False),
    ]


def test_the_codex_estimate_grows_with_each_tool_call() -> None:
    """Each tool call makes another request that re-sends everything seen so far."""
    meter = UsageMeter("codex")
    meter.feed('{"type": "turn.started"}')
    figures = []
    for _ in range(4):
        item = {"type": "command_execution", "command": "cat", "aggregated_output": "x" * 40_000}
        figures.append(meter.feed(json.dumps({"type": "item.completed", "item": item})))
    steps = [b - a for a, b in zip(figures, figures[1:], strict=False)]
    assert all(later > earlier for earlier, later in zip(steps, steps[1:], strict=False))
    assert figures[-1] > 4 * 10_000  # past what the outputs alone hold
    assert meter.estimated


def test_the_meter_ignores_what_is_not_usage() -> None:
    meter = UsageMeter("claude")
    for line in ("", "not json", "{bad", '{"type": "assistant", "message": 3}', "[1]"):
        meter.feed(line)
    assert meter.tokens == 0


def test_real_streams_parse_as_output() -> None:
    """The real CLIs' stream-json (captured, no credentials): claude's closing result
    line; gemini's stream without a result is an error with nothing counted."""
    text = (FIXTURES / "claude-2.1.330_stream_not_logged_in.jsonl").read_text()
    out = parse_output("claude", text)
    assert out.structured and out.input_tokens == 0
    assert UsageMeter("claude").feed(text.splitlines()[1]) == 0
    gemini = parse_output("gemini", (FIXTURES / "gemini-0.61.0_stream_offline.jsonl").read_text())
    assert (gemini.structured, gemini.is_error, gemini.input_tokens) == (True, True, None)


def test_the_watch_reads_on_and_skips_an_overlong_line(tmp_path: Path) -> None:
    out = tmp_path / "stdout"
    out.write_bytes(b"")
    watch = BudgetWatch(out, "codex", abort=500)
    assert watch() is False
    usage = json.dumps({"type": "turn.completed", "usage": {"input_tokens": 400}})
    with open(out, "ab") as handle:
        handle.write(b"x" * (LONGEST_LINE + 10))  # a tool's output, no newline yet
    assert watch() is False and watch._partial == b""
    with open(out, "ab") as handle:
        handle.write(b"tail of it\n" + usage.encode() + b"\n" + usage.encode()[:10])
    assert watch() is False and watch.tokens == 400
    with open(out, "ab") as handle:
        handle.write(usage.encode()[10:] + b"\n")
    assert watch() is True and watch.tokens == 800


# --- where a budget comes from ---------------------------------------------------------


def test_budgets_resolve_agent_then_config_then_default() -> None:
    config = {"codex": (10, 20)}
    assert resolve_budget("codex", (1, 2), "a.md", config) == Budget(1, 2, "a.md token_budget")
    assert resolve_budget("codex", None, "a.md", config) == Budget(
        10, 20, "config.json budgets.codex"
    )
    assert resolve_budget("gemini", None, "a.md", config) == Budget(200_000, 400_000, "default")
    assert DEFAULTS["codex"] == (200_000, 400_000)
    assert resolve_budget("command", None, "a.md", config) is None
    assert budget_status(None, Budget(1, 2, ""), aborted=False) is None
    assert budget_status(5, Budget(10, 20, ""), aborted=False) == "within"
    assert budget_status(15, Budget(10, 20, ""), aborted=False) == "over"


# --- one task, end to end --------------------------------------------------------------


def streaming(runner: str, steps: str, tmp_path: Path, *extra: str) -> tuple[Agent, list[str]]:
    """An agent on `runner` whose program streams that runner's usage (the dispatch's
    argv is what runs: the real CLI's place is taken by the stand-in)."""
    token = f"gsd-agent-{uuid.uuid4().hex}"
    agent = Agent(name="python-pro", tools=["read_file", "write_file"], runner=runner)
    return agent, [sys.executable, str(STREAM_AGENT), runner, steps, *extra, token]


def budget_dispatch(agent: Agent, argv: list[str], warn: int, abort: int) -> TaskDispatch:
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
        argv=argv,
        timeout_s=30.0,
        timeout_source="test",
        grace_s=1.0,
        budget_warn=warn,
        budget_abort=abort,
        budget_source="config.json budgets." + agent.runner,
    )


@pytest.mark.parametrize("runner", ["claude", "codex", "gemini"])
def test_past_abort_the_agent_is_stopped_and_rolled_back(runner: str, repo, tmp_path) -> None:  # noqa: F811
    before = state(repo)
    agent, argv = streaming(
        runner, "1000,2000,4000,8000", tmp_path, "--hang", "--write", "src/new.py"
    )
    plan = make_plan()
    outcome = run_task(
        git=Git(repo.root),
        plan=plan,
        task=plan.tasks[0],
        agent=agent,
        dispatch=budget_dispatch(agent, argv, 2000, 5000),
        prompt="p",
    )
    assert alive_with(argv[-1]) == [], "the agent outlived its budget"
    assert outcome.error_type == "budget-exceeded" and not outcome.success
    assert outcome.budget == "aborted" and outcome.tokens is not None and outcome.tokens > 5000
    assert outcome.duration_s < 20  # stopped, not left to hang until the timeout
    assert "past the abort threshold of 5,000 (config.json budgets." in outcome.details
    assert state(repo)[:3] == before[:3]  # rolled back: src/new.py is gone
    assert not (repo.root / "src/new.py").exists()
    [line] = logged(repo)
    assert (line["error_type"], line["runner"]) == ("budget-exceeded", runner)
    assert next_rung(outcome, retries=2, fallback_on_error=True, on_fallback=False) == "stop"


@pytest.mark.parametrize("runner", ["claude", "codex", "gemini"])
def test_past_warn_the_task_succeeds_and_is_marked_over(runner: str, repo, tmp_path) -> None:  # noqa: F811
    agent, argv = streaming(runner, "1000,2000", tmp_path, "--write", "src/new.py")
    plan = make_plan()
    outcome = run_task(
        git=Git(repo.root),
        plan=plan,
        task=plan.tasks[0],
        agent=agent,
        dispatch=budget_dispatch(agent, argv, 2000, 5000),
        prompt="p",
    )
    assert outcome.success, outcome.details
    assert (outcome.budget, outcome.tokens) == ("over", 3000)
    assert (outcome.budget_warn, outcome.budget_abort) == (2000, 5000)


def test_within_budget(repo, tmp_path) -> None:  # noqa: F811
    agent, argv = streaming("codex", "1000", tmp_path, "--write", "src/new.py")
    plan = make_plan()
    outcome = run_task(
        git=Git(repo.root),
        plan=plan,
        task=plan.tasks[0],
        agent=agent,
        dispatch=budget_dispatch(agent, argv, 2000, 5000),
        prompt="p",
    )
    assert outcome.success and (outcome.budget, outcome.tokens) == ("within", 1000)


# --- a whole run: SUMMARY, gsd report, gsd errors -----------------------------------------

CODEX = """#!{python}
import os, sys
steps = os.environ["FAKE_STEPS"].split()
os.execv("{python}", ["{python}", "{agent}", "codex", *steps, "--write", "src/new.py"])
"""
AGENT_FILE = """\
---
name: worker
description: "test agent"
tools: [read_file, write_file]
runner: codex
{budget}---
Test persona.
"""


@pytest.fixture
def codex_phase(git_project, tmp_path, monkeypatch):
    """Phase 1, one task for `worker` on a stand-in `codex` that streams codex's usage."""
    import os

    from tests.conftest import git as run_git
    from tests.test_execute import install_agents

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "codex"
    program.write_text(CODEX.format(python=sys.executable, agent=STREAM_AGENT))
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    install_agents(git_project, tmp_path / "unused.py")
    task = (
        '<task type="auto" specialist="worker">\n<name>Task 1</name>\n'
        "<files>src/new.py</files>\n<action>Write it.</action>\n"
        "<verify><automated>true</automated></verify>\n<done>Done.</done>\n</task>"
    )
    git_project.plan("01-01", tasks=task, files_modified="[src/new.py]")
    git_project.write(
        ".planning/config.json",
        json.dumps(
            {
                "specialists": {"kill_grace_seconds": 1, "max_retries": 1},
                "budgets": {"codex": {"warn": 2000, "abort": 5000}},
            }
        ),
    )
    return git_project, run_git


def test_a_run_over_its_warn_budget_says_so_everywhere(codex_phase, gsd, monkeypatch) -> None:
    project, run_git = codex_phase
    project.write("agents/worker.md", AGENT_FILE.format(budget=""))
    run_git(project.root, "add", "-A")
    run_git(project.root, "commit", "-q", "-m", "plans")
    monkeypatch.setenv("FAKE_STEPS", "1000,2000")
    done = gsd("execute-phase", "1")
    assert done.code == 0, done.err
    summary = next(project.root.glob(".planning/phases/*/01-01-SUMMARY.md")).read_text()
    assert "- Task 1 attempt 1 (worker): 3,000 tokens, over its budget of 2,000" in summary
    report = gsd("report", "--format", "json")
    [row] = json.loads(report.out)["budgets"]
    assert (row["tokens"], row["warn"], row["abort"], row["budget"]) == (3000, 2000, 5000, "over")
    assert "Token budgets" in gsd("report").out
    errors = gsd("errors")
    assert (
        "gsd: warning: 01-01 task 1 (worker, attempt 1): 3,000 tokens, over its budget "
        "of 2,000 (stopped past 5,000)"
    ) in errors.err


def test_a_run_past_its_agents_abort_threshold_stops_and_is_not_retried(
    codex_phase, gsd, monkeypatch
) -> None:
    project, run_git = codex_phase
    budget = "token_budget: {warn: 1000, abort: 2500}\n"  # the agent file's, over config's
    project.write("agents/worker.md", AGENT_FILE.format(budget=budget))
    run_git(project.root, "add", "-A")
    run_git(project.root, "commit", "-q", "-m", "plans")
    monkeypatch.setenv("FAKE_STEPS", "1000,2000,4000 --hang")
    done = gsd("execute-phase", "1")
    assert done.code != 0
    assert not (project.root / "src/new.py").exists()
    report = json.loads(gsd("report", "--format", "json").out)
    assert [(r["agent"], r["budget"], r["abort"]) for r in report["budgets"]] == [
        ("worker", "aborted", 2500)
    ]  # one attempt: neither retried nor handed to the fallback
    errors = json.loads(gsd("errors", "--format", "json").out)["errors"]
    assert [e["error_type"] for e in errors] == ["budget-exceeded"]
    assert "past the abort threshold of 2,500 (" in errors[0]["details"]


def test_the_gemini_meter_estimates_until_its_result() -> None:
    """gemini-cli 0.61.0 streams no usage before its `result`: each model turn (tool calls
    in a row are one turn) counts GEMINI_TURN_TOKENS and the conversation so far, marked
    as an estimate; the result's count replaces it."""
    from gsd.formats.runners.usage import GEMINI_TURN_TOKENS

    meter = UsageMeter("gemini")
    call = '{"type":"tool_use","timestamp":"t","tool_name":"x","parameters":{"a":"' + "b" * 400
    meter.feed(call + '"}}')
    meter.feed(call + '"}}')  # a second call of the same turn
    assert (meter.tokens, meter.estimated) == (GEMINI_TURN_TOKENS, True)
    meter.feed('{"type":"tool_result","timestamp":"t","tool_id":"x","output":"' + "o" * 4000 + '"}')
    meter.feed(call + '"}}')
    assert meter.tokens > 2 * GEMINI_TURN_TOKENS + 1000 and meter.estimated
    meter.feed('{"type":"result","timestamp":"t","status":"success","stats":{"total_tokens":5}}')
    assert (meter.tokens, meter.estimated) == (5, False)
