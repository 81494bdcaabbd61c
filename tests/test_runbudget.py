"""A whole run's budget (issue 25: `--budget-usd`, `--budget-tokens`, config `budget`),
end to end in real repositories: no task starts once the run's spend reaches it, and a
delegation that crosses what is left is stopped, rolled back and its changes salvaged."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from gsd.core.safety.budget import RunBudget, Spent, left, spent_line
from tests.conftest import git
from tests.test_estimate import make_project, results

STREAM_AGENT = Path(__file__).parent / "fakebin" / "stream_agent.py"


def task_commits(root: Path) -> list[str]:
    """The `Gsd-Task` trailers of every commit on any branch."""
    out = git(root, "log", "--branches", "--format=%(trailers:key=Gsd-Task,valueonly)")
    return sorted(line.strip() for line in out.splitlines() if line.strip())


def on_any_branch(root: Path, path: str) -> bool:
    return bool(git(root, "log", "--branches", "--format=%H", "--", path).strip())


def errors(gsd) -> list[dict]:
    return json.loads(gsd("errors", "--format", "json").out)["errors"]


@pytest.mark.unit  # `make test-fast` runs it
def test_the_figures() -> None:
    budget = RunBudget(usd=1.0, tokens=100, usd_source="--budget-usd", tokens_source="x")
    assert spent_line(Spent(99, 0.99), budget) is None
    assert left(Spent(99, 0.99), budget) == (1, 0.01)
    assert spent_line(Spent(10, 1.0), budget) == (
        "the run has spent $1.00 of its budget of $1.00 (--budget-usd)"
    )
    assert spent_line(Spent(100, 0), budget) == (
        "the run has used 100 tokens of its budget of 100 (x)"
    )
    assert left(Spent(500, 5.0), budget) == (0, 0.0)
    assert spent_line(Spent(10**9, 10**9), RunBudget()) is None


@pytest.mark.parametrize(
    ("args", "config", "said"),
    [
        pytest.param(
            ["--budget-usd", "0.10"],
            {},
            "the run has spent $0.10 of its budget of $0.10 (--budget-usd)",
            id="usd-on-the-command-line",
        ),
        pytest.param(
            [],
            {"budget": {"tokens": 1200}},
            "the run has used 1,200 tokens of its budget of 1,200 (config.json budget.tokens)",
            id="tokens-in-config",
        ),
    ],
)
def test_a_spent_budget_stops_the_run_before_the_next_task(
    git_project, tmp_path: Path, gsd, args: list[str], config: dict, said: str
) -> None:
    project = make_project(git_project, tmp_path)
    root = project.root
    if config:
        project.write(".planning/config.json", json.dumps(config))
        git(root, "commit", "-qam", "budget")
    done = gsd("execute-phase", "1", *args)
    assert done.code == 1
    assert f"task 2: budget-exceeded: {said}; task 2 not started" in done.err
    # task 1 (1,200 tokens, $0.10) ran and is committed on its plan's branch; no other
    assert [(e["task"], e["success"]) for e in results(root)] == [(1, True)]
    assert task_commits(root) == ["01-01-1"]
    assert not on_any_branch(root, "src/t01-01_2.py")
    [record] = errors(gsd)
    assert (record["error_type"], record["specialist"]) == ("budget-exceeded", "gsd")
    assert record["details"] == f"{said}; task 2 not started (raise the budget, then run again)"


def test_a_delegation_that_costs_past_what_is_left_is_rolled_back(
    git_project, tmp_path: Path, gsd
) -> None:
    """A command agent's cost is known from its result file only: $0.20 for task 2, with
    $0.05 of $0.15 left, fails it as a token abort would, after the fact."""
    root = make_project(git_project, tmp_path).root
    done = gsd("execute-phase", "1", "--budget-usd", "0.15")
    assert done.code == 1
    assert [(e["task"], e["success"], e["error_type"]) for e in results(root)] == [
        (1, True, None),
        (2, False, "budget-exceeded"),
    ]
    [record] = errors(gsd)
    assert record["details"].startswith(
        "cost $0.2000, past the $0.0500 left of the run's budget of $0.15 (--budget-usd)"
    )
    assert task_commits(root) == ["01-01-1"]
    assert not on_any_branch(root, "src/t01-01_2.py")  # rolled back
    salvaged = git(root, "ls-tree", "-r", "--name-only", "refs/gsd/salvage/01-01/2/1")
    assert "src/t01-01_2.py" in salvaged.split()  # and kept off every branch


CODEX = """#!{python}
import os
task = os.environ["GSD_TASK"]
steps = os.environ["FAKE_STEPS_" + task].split()
out = "src/new.py" if task == "1" else "src/two.py"
os.execv("{python}", ["{python}", "{agent}", "codex", *steps, "--write", out])
"""
CODEX_AGENT = """\
---
name: worker
description: "test agent"
tools: [read_file, write_file]
runner: codex
---
Test persona.
"""


def test_a_running_delegation_is_stopped_when_it_crosses_the_budget(
    git_project, tmp_path: Path, gsd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Task 1 uses 3,000 of the run's 5,000 tokens; task 2 streams on past the 2,000 left
    and would hang: its stream is watched, it is stopped, rolled back and salvaged."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "codex"
    program.write_text(CODEX.format(python=sys.executable, agent=STREAM_AGENT))
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_STEPS_1", "1000,2000")
    monkeypatch.setenv("FAKE_STEPS_2", "1000,2000,4000 --hang")
    root = git_project.root
    git_project.write("agents/worker.md", CODEX_AGENT)
    git_project.write(".planning/available_agents.md", "- **worker**: test\n")
    git_project.write(
        ".planning/config.json",
        json.dumps(
            {
                "specialists": {"kill_grace_seconds": 1, "max_retries": 1},
                "voltagent": {"fallback_on_error": False},
            }
        ),
    )
    tasks = [
        f'<task type="auto" specialist="worker">\n<name>Task {n}</name>\n'
        f"<files>{path}</files>\n<action>Write it.</action>\n"
        "<verify><automated>true</automated></verify>\n<done>Done.</done>\n</task>"
        for n, path in ((1, "src/new.py"), (2, "src/two.py"))
    ]
    git_project.plan("01-01", tasks="\n".join(tasks), files_modified="[src/new.py, src/two.py]")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")
    done = gsd("execute-phase", "1", "--budget-tokens", "5000")
    assert done.code == 1
    first, second = results(root)
    assert (first["task"], first["success"], first["tokens"]) == (1, True, 3000)
    assert (second["task"], second["error_type"], second["budget"]) == (
        2,
        "budget-exceeded",
        "aborted",
    )
    assert second["budget_abort"] == 2000 and second["duration_s"] < 20  # not left to hang
    [record] = errors(gsd)
    assert (
        "past the abort threshold of 2,000 (what was left of the run's budget of 5,000 "
        "tokens, --budget-tokens)"
    ) in record["details"]
    assert task_commits(root) == ["01-01-1"]  # one attempt: budget-exceeded is not retried
    assert not on_any_branch(root, "src/two.py")
    salvaged = git(root, "ls-tree", "-r", "--name-only", "refs/gsd/salvage/01-01/2/1")
    assert "src/two.py" in salvaged.split()
