"""Cost known before a run (issue 25): the figures, then `execute-phase --dry-run`'s
estimates and `gsd report`'s estimate against actual from the logs of real runs, made
by a command agent that reports its usage in its result file."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

from gsd.core.estimate import Sample, Spread, estimate, percentile, phase_total, spread
from gsd.formats import execlog
from gsd.io.plans import history
from tests.conftest import git

# Task T of any plan uses 1000*T input and 200*T output tokens and costs $0.10*T.
AGENT = """\
import json, os
plan, task = os.environ["GSD_PLAN"], int(os.environ["GSD_TASK"])
path = f"src/t{plan}_{task}.py"
os.makedirs("src", exist_ok=True)
open(path, "w").write(f"# {os.environ['GSD_SPECIALIST']}\\n")
report = (
    "### Task Report\\n- Status: success\\n- Files Created: " + path + "\\n"
    "- Files Modified: none\\n- Files Deleted: none\\n- Validation: pass\\n- Errors: none\\n"
)
with open(os.environ["GSD_RESULT_FILE"], "w") as handle:
    json.dump({"result": report, "input_tokens": 1000 * task, "output_tokens": 200 * task,
               "cost_usd": round(0.1 * task, 2)}, handle)
"""
AGENT_FILE = """\
---
name: {name}
description: "test agent"
tools: [read_file, write_file]
timeout_mins: 1
runner: command
command: ["{python}", "{script}"]
---
Test persona.
"""


def task(plan: str, n: int, specialist: str = "worker") -> str:
    return (
        f'<task type="auto" specialist="{specialist}">\n<name>Task {n}</name>\n'
        f"<files>src/t{plan}_{n}.py</files>\n<action>Write it.</action>\n"
        "<verify><automated>true</automated></verify>\n<done>Done.</done>\n</task>"
    )


def make_project(git_project, tmp_path: Path):
    """Phase 1: plan 01-01, three tasks for `worker`; phase 2: plan 02-01, two tasks for
    `worker` and one for `other`. Both agents run AGENT."""
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    for name in ("worker", "other", "gsd-executor"):
        text = AGENT_FILE.format(name=name, python=sys.executable, script=script)
        git_project.write(f"agents/{name}.md", text)
    git_project.write(".planning/available_agents.md", "- **worker**: test\n- **other**: test\n")
    git_project.write(
        ".planning/config.json", json.dumps({"specialists": {"kill_grace_seconds": 1}})
    )
    git_project.plan(
        "01-01",
        tasks="\n".join(task("01-01", n) for n in (1, 2, 3)),
        files_modified="[src/t01-01_1.py, src/t01-01_2.py, src/t01-01_3.py]",
    )
    git_project.plan(
        "02-01",
        phase_dir="02-beta",
        tasks="\n".join([task("02-01", 1), task("02-01", 2), task("02-01", 3, "other")]),
        files_modified="[src/t02-01_1.py, src/t02-01_2.py, src/t02-01_3.py]",
    )
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    return git_project


@pytest.fixture
def ran(git_project, tmp_path: Path, gsd):
    """The project after a real run of phase 1: the history of `worker` on `command`."""
    project = make_project(git_project, tmp_path)
    done = gsd("execute-phase", "1")
    assert done.code == 0, done.err
    return project


def results(root: Path) -> list[dict]:
    events, warnings = execlog.read_all(root / ".planning")
    assert warnings == []
    return [e for e in events if e.get("event") == "result"]


# --- the figures ----------------------------------------------------------------------


@pytest.mark.unit  # `make test-fast` runs it
def test_a_spread_is_min_max_under_ten_runs_and_p10_p90_from_ten() -> None:
    assert spread([3, None, 1, 2]) == Spread(median=2, low=1, high=3, runs=3, kind="min-max")
    assert spread([None]) is None
    ten = spread(range(1, 11))  # 1..10: p10 = 1.9, p90 = 9.1 (linear interpolation)
    assert ten is not None and (ten.kind, ten.runs, ten.median) == ("p10-p90", 10, 5.5)
    assert (round(ten.low, 6), round(ten.high, 6)) == (1.9, 9.1)
    assert percentile([4.0], 0.9) == 4.0


@pytest.mark.unit  # `make test-fast` runs it
def test_an_estimate_rests_on_its_agent_on_its_runner() -> None:
    def past(agent: str, runner: str | None, tokens: int) -> Sample:
        return Sample(
            agent=agent,
            runner=runner,
            ts="2026-01-01T00:00:00.000Z",
            tokens=tokens,
            cost_usd=0.5,
            seconds=10.0,
        )

    samples = [
        past("a", "claude", 100),
        past("a", "codex", 900),  # another runner: not counted
        past("a", None, 300),  # a log older than the runner field: counted for the agent
        past("b", "claude", 5),
    ]
    found = estimate(samples, "a", "claude")
    assert found.runs == 2 and found.tokens == (200, 100, 300, 2, "min-max")
    assert estimate(samples, "c", "claude").no_history
    total = phase_total([found, estimate(samples, "b", "claude"), estimate(samples, "c", "x")])
    assert (total.tasks, total.no_history, total.tokens, total.cost_usd) == (3, 1, 205, 1.0)


@pytest.mark.unit  # `make test-fast` runs it
def test_history_reads_successful_results_once() -> None:
    result = {"event": "result", "ts": "t1", "plan": "01-01", "task": 1, "attempt": 1}
    events = [
        {**result, "agent": "a", "success": True, "tokens": 40, "input_tokens": 1},
        {**result, "agent": "a", "success": True, "tokens": 40, "input_tokens": 1},  # twice
        {
            **result,
            "ts": "t2",
            "agent": "a",
            "success": True,
            "input_tokens": 3,
            "output_tokens": 4,
        },
        {**result, "ts": "t3", "agent": "a", "success": False, "tokens": 999},
        {"event": "spawn", "ts": "t4", "agent": "a"},
    ]
    assert [s.tokens for s in history.samples(events)] == [40, 7]


# --- the dry run ----------------------------------------------------------------------


def test_the_dry_run_estimates_each_task_from_the_runs_before(ran, gsd) -> None:
    root = ran.root
    logged = results(root)
    assert [(e["agent"], e["runner"], e["tokens"]) for e in logged] == [
        ("worker", "command", 1200),
        ("worker", "command", 2400),
        ("worker", "command", 3600),
    ]
    seconds = sorted(e["duration_s"] for e in logged)
    before = git(root, "status", "--porcelain"), git(root, "show-ref")
    done = gsd("execute-phase", "2", "--dry-run", "--format", "json")
    assert done.code == 0, done.err
    body = json.loads(done.out)
    one, two, other = (t["estimate"] for t in body["tasks"])
    assert one == two
    assert one["runs"] == 3 and one["history"] is True
    assert one["tokens"] == {
        "median": 2400,
        "low": 1200,
        "high": 3600,
        "runs": 3,
        "kind": "min-max",
    }
    assert one["cost_usd"] == {"median": 0.2, "low": 0.1, "high": 0.3, "runs": 3, "kind": "min-max"}
    assert (one["seconds"]["median"], one["seconds"]["low"], one["seconds"]["high"]) == (
        statistics.median(seconds),
        seconds[0],
        seconds[-1],
    )
    assert other == {
        "runs": 0,
        "history": False,
        "tokens": None,
        "cost_usd": None,
        "seconds": None,
    }
    total = body["estimate"]
    assert (total["tasks"], total["no_history"], total["tokens"], total["cost_usd"]) == (
        3,
        1,
        4800,
        0.4,
    )
    assert total["seconds"] == round(2 * statistics.median(seconds), 6)
    assert (git(root, "status", "--porcelain"), git(root, "show-ref")) == before


def test_the_dry_run_says_it_in_text_and_markdown(ran, gsd) -> None:
    text = gsd("execute-phase", "2", "--dry-run")
    assert text.code == 0, text.err
    assert "  estimate: 2,400 tokens (1,200-3,600), $0.20 ($0.10-$0.30), " in text.out
    assert "; median of 3 runs of worker on command, range min-max" in text.out
    assert "  estimate: no history (no successful run of other on command" in text.out
    assert "Phase 02-beta estimate: 4,800 tokens, $0.40, " in text.out
    assert "(sum of the medians of 2 tasks); 1 task of 3 with no history, not counted" in text.out
    markdown = gsd("execute-phase", "2", "--dry-run", "--format", "markdown").out
    assert markdown.startswith("## Phase 02-beta: dry run, 3 tasks\n")
    assert "| 02-01  |      1 | worker  | command  |      3 | 2,400 (1,200-3,600) |" in markdown
    assert "| other   | command  |      0 | no history" in markdown


def test_without_history_every_task_says_so(git_project, tmp_path: Path, gsd) -> None:
    make_project(git_project, tmp_path)
    body = json.loads(gsd("execute-phase", "1", "--dry-run", "--format", "json").out)
    assert [t["estimate"]["history"] for t in body["tasks"]] == [False, False, False]
    assert body["estimate"] == {
        "tasks": 3,
        "no_history": 3,
        "tokens": None,
        "cost_usd": None,
        "seconds": None,
        "basis": "sum of the tasks' medians",
    }


def test_the_dry_run_warns_when_the_estimate_is_past_the_budget(ran, gsd) -> None:
    done = gsd("execute-phase", "2", "--dry-run", "--budget-usd", "0.3")
    assert done.code == 0
    assert (
        "gsd: warning: the phase's estimate is $0.40, past the budget of $0.30 (--budget-usd): "
        "a live run would stop before its end"
    ) in done.err


# --- gsd report -------------------------------------------------------------------------


def test_report_shows_each_task_against_the_estimate_before_its_run(ran, gsd) -> None:
    first = json.loads(gsd("report", "--format", "json").out)["estimates"]
    assert [(r["task"], r["runs"], r["tokens_estimate"], r["tokens"]) for r in first] == [
        (1, 0, None, 1200),
        (2, 0, None, 2400),
        (3, 0, None, 3600),
    ]  # the first run had no history
    done = gsd("execute-phase", "2")
    assert done.code == 0, done.err
    rows = json.loads(gsd("report", "--format", "json").out)["estimates"]
    shown = [
        (r["plan"], r["task"], r["agent"], r["runner"], r["runs"], r["tokens_estimate"])
        for r in rows
    ]
    assert shown == [
        ("02-01", 1, "worker", "command", 3, 2400),
        ("02-01", 2, "worker", "command", 3, 2400),
        ("02-01", 3, "other", "command", 0, None),
    ]
    assert [(r["tokens"], r["cost_estimate"], r["cost_usd"], r["attempts"]) for r in rows] == [
        (1200, 0.2, 0.1, 1),
        (2400, 0.2, 0.2, 1),
        (3600, None, 0.3, 1),
    ]
    text = gsd("report").out
    assert "Estimate against actual (median of the runs logged before each run)" in text
    assert "no history" in text
    every = json.loads(gsd("report", "--all", "--format", "json").out)["estimates"]
    assert len(every) == 6
