"""`gsd approve`: one approval answers one checkpoint task, checked, under the run lock."""

from __future__ import annotations

import json

import pytest

from gsd.core import layout
from gsd.io.plans import approvals
from gsd.io.plans.project import Project
from tests.conftest import git
from tests.test_execute import AGENT, CHECKPOINT, REPORT, install_agents, task, task_commits
from tests.test_lock import hold

DECISION = (
    '<task type="checkpoint:decision" gate="blocking">\n<decision>Which store?</decision>\n'
    "<context>Both work.</context>\n<options>\n"
    '  <option id="a"><name>SQLite</name><pros>simple</pros><cons>one writer</cons></option>\n'
    '  <option id="b"><name>Postgres</name><pros>scales</pros><cons>a server</cons></option>\n'
    "</options>\n<resume-signal>Select: a or b</resume-signal>\n</task>"
)


@pytest.fixture
def phase(git_project, tmp_path):
    """Phase 1 of a repository with a command agent: plan 01-02 has no checkpoint."""
    script = tmp_path / "agent.py"
    script.write_text(AGENT.format(report=REPORT))
    install_agents(git_project, script)
    git_project.write(
        ".planning/config.json",
        json.dumps({"specialists": {"kill_grace_seconds": 1, "max_retries": 1}}),
    )
    git_project.plan("01-01")
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


@pytest.fixture
def two_checks(phase):
    """Plan 01-01: auto, human-verify (2), auto, decision (4), auto."""
    tasks = [task("01-01", 1), CHECKPOINT, task("01-01", 3), DECISION, task("01-01", 5)]
    files = "[src/t01-01_1.py, src/t01-01_3.py, src/t01-01_5.py]"
    phase.plan("01-01", tasks="\n".join(tasks), files_modified=files, autonomous="false")
    git(phase.root, "commit", "-q", "-am", "two human checks")
    return phase


def recorded(root) -> list[tuple[object, object]]:
    path = root / layout.APPROVALS
    lines = path.read_text().splitlines() if path.exists() else []
    return [(r["task"], r["option"]) for r in map(json.loads, lines)]


def test_each_checkpoint_needs_its_own_approval(two_checks, gsd) -> None:
    root = two_checks.root
    first = gsd("execute-phase", "1")
    assert first.code == 4 and "task 2: checkpoint:human-verify waits" in first.err
    approved = gsd("approve", "01-01")  # the first checkpoint still waiting: task 2
    assert (approved.code, approved.out) == (0, "approved 01-01 task 2: checkpoint:human-verify\n")
    second = gsd("execute-phase", "1")
    assert second.code == 4, second.err  # the approval of task 2 does not answer task 4
    assert "task 2: checkpoint:human-verify approved (approved by gsd approve)" in second.err
    assert "task 4: checkpoint:decision waits for a person: Which store?" in second.err
    assert task_commits(root) == ["01-01-1", "01-01-3"]
    missing = gsd("approve", "01-01")
    assert missing.code == 2 and missing.err == (
        "gsd: error: task 4 of plan 01-01 (checkpoint:decision) (choose --option a or b)\n"
    )
    wrong = gsd("approve", "01-01", "--option", "c")
    assert wrong.code == 2 and wrong.err.startswith(
        "gsd: error: --option c: not an option of task 4 of plan 01-01"
    )
    assert gsd("approve", "01-01", "--option", "b").out == (
        "approved 01-01 task 4: checkpoint:decision (option b)\n"
    )
    assert recorded(root) == [(2, None), (4, "b")]
    done = gsd("execute-phase", "1")
    assert done.code == 0, done.err
    assert "task 4: checkpoint:decision approved (approved, option b by gsd approve)" in done.err
    assert task_commits(root) == ["01-01-1", "01-01-3", "01-01-5", "01-02-1"]
    again = gsd("approve", "01-01")
    assert again.code == 2 and "every checkpoint of plan 01-01 is answered already" in again.err


@pytest.mark.parametrize(
    ("args", "error"),
    [
        pytest.param(
            ["--task", "1"],
            "--task 1: task 1 of plan 01-01 is auto, not a checkpoint (its checkpoint tasks: 2, 4)",
            id="not-a-checkpoint",
        ),
        pytest.param(
            ["--task", "9"],
            "--task 9: plan 01-01 has no task 9 (its checkpoint tasks: 2, 4)",
            id="no-such-task",
        ),
        pytest.param(
            ["--task", "2", "--option", "a"],
            "--option a: task 2 of plan 01-01 is checkpoint:human-verify, which has no options "
            "(leave --option out)",
            id="option-of-a-human-verify",
        ),
        pytest.param(
            ["--task", "4", "--option", "z"],
            "--option z: not an option of task 4 of plan 01-01 (checkpoint:decision) "
            "(choose --option a or b)",
            id="unknown-option",
        ),
    ],
)
def test_task_and_option_are_checked(two_checks, gsd, args: list[str], error: str) -> None:
    result = gsd("approve", "01-01", *args)
    assert (result.code, result.err) == (2, f"gsd: error: {error}\n")
    assert recorded(two_checks.root) == []


def test_a_plan_without_checkpoints_has_nothing_to_approve(phase, gsd) -> None:
    result = gsd("approve", "01-02")
    assert (result.code, result.err) == (
        2,
        "gsd: error: plan 01-02 has no checkpoint task: nothing to approve\n",
    )


def test_a_named_task_is_answered_and_the_default_is_the_first_still_waiting(
    two_checks, gsd
) -> None:
    assert gsd("approve", "01-01", "--task", "4", "--option", "a").code == 0
    assert gsd("approve", "01-01").out == "approved 01-01 task 2: checkpoint:human-verify\n"
    # answering a task again replaces its answer: the later one counts
    assert gsd("approve", "01-01", "--task", "4", "--option", "b").code == 0
    assert recorded(two_checks.root) == [(4, "a"), (2, None), (4, "b")]
    project = Project(two_checks.root)
    plan = project.find_plan("01-01")
    assert {n: a["option"] for n, a in approvals.answered(project, plan).items()} == {
        2: None,
        4: "b",
    }


def test_an_old_record_without_a_task_answers_only_the_first_checkpoint(two_checks) -> None:
    # an older gsd's lines, unsigned: they count once a person committed them
    two_checks.write(layout.APPROVALS, '{"ts": "x", "plan": "01-01", "task": null}\n')
    git(two_checks.root, "add", layout.APPROVALS)
    git(two_checks.root, "commit", "-q", "-m", "old approvals")
    project = Project(two_checks.root)
    verify, decision = (t for t in project.find_plan("01-01").tasks if t.is_checkpoint)
    assert approvals.answer(project, "01-01", verify, auto=False) == "approved by gsd approve"
    assert approvals.answer(project, "01-01", decision, auto=False) is None
    # and an approval of another plan's task answers nothing here
    two_checks.write(layout.APPROVALS, '{"plan": "01-02", "task": 4, "option": "a"}\n')
    git(two_checks.root, "add", layout.APPROVALS)
    git(two_checks.root, "commit", "-q", "-m", "old approvals")
    assert approvals.answer(Project(two_checks.root), "01-01", decision, auto=False) is None


def test_approve_is_refused_while_a_run_holds_the_lock(two_checks, gsd) -> None:
    holder = hold(f"repo_lock(Path({str(two_checks.root)!r}))")
    try:
        busy = gsd("approve", "01-01")
    finally:
        holder.kill()
        holder.wait()
    assert busy.code == 2 and len(busy.err.splitlines()) == 1
    assert busy.err.startswith("gsd: error: another gsd run holds ")
    assert f"pid {holder.pid}" in busy.err
    assert recorded(two_checks.root) == []
    assert gsd("approve", "01-01").code == 0  # the holder is gone: its lock is taken over
