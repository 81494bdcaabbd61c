"""Per-plan logs (.planning/logs/) and SUMMARY.md from a plan's whole history, in real runs."""

from __future__ import annotations

import json

import pytest

from gsd.formats import errorlog, execlog
from gsd.formats.planning import summaryread
from tests import test_execute
from tests.conftest import git
from tests.test_execute import fail

phase = test_execute.phase  # the fixture: two plans in two waves, small command agents

FOLDER = ".planning/phases/01-alpha"


def docs_commit(root, plan: str) -> list[str]:
    """The files of the plan's `docs(PLAN): plan summary` commit."""
    sha = git(
        root, "log", "--all", "--format=%H", "--fixed-strings", f"--grep=docs({plan}): plan summary"
    ).split()[0]
    return sorted(git(root, "show", "--format=", "--name-only", sha).split())


def own_files(plan: str) -> list[str]:
    return sorted(
        [
            f"{FOLDER}/{plan}-RESULT.txt",
            f"{FOLDER}/{plan}-SUMMARY.md",
            f".planning/logs/{plan}.jsonl",
        ]
    )


def test_each_plan_commits_its_own_log_and_the_run_its_phase_log(phase, gsd) -> None:
    root = phase.root
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    for plan in ("01-01", "01-02"):
        assert docs_commit(root, plan) == own_files(plan)  # nothing else on its branch
        events, errors, warnings = execlog.read_split(root / f".planning/logs/{plan}.jsonl")
        assert warnings == [] and errors == []
        assert {e["plan"] for e in events} == {plan}
        assert [e["event"] for e in events][-1] == "plan-complete"
    phase_log = root / ".planning/logs/phase-01.jsonl"
    kinds = [e["event"] for e in execlog.read_split(phase_log)[0]]
    assert kinds[0] == "run-start" and kinds[-1] == "run-end" and kinds.count("merge") == 2
    # the phase log is written on the user's branch alone, never on a plan's branch
    mainline = set(git(root, "rev-list", "--first-parent", "HEAD").split())
    touching = git(root, "log", "--all", "--format=%H", "--", str(phase_log)).split()
    assert touching and set(touching) <= mainline
    assert not (root / ".planning/execution-log.jsonl").exists()
    assert not (root / ".planning/specialist-errors.jsonl").exists()


@pytest.fixture
def wave(phase):
    """Two plans in wave 1 (01-02 no longer waits for 01-01), no STATE.md or ROADMAP.md:
    what merging plan branches does to the logs alone."""
    root = phase.root
    plan = root / FOLDER / "01-02-PLAN.md"
    plan.write_text(
        plan.read_text()
        .replace('depends_on: ["01-01"]', "depends_on: []")
        .replace("wave: 2", "wave: 1")
    )
    git(root, "rm", "-q", ".planning/STATE.md")
    git(root, "commit", "-q", "-am", "two independent plans")
    return phase


def test_plan_branches_of_a_wave_merge_in_any_order_without_a_log_conflict(
    wave, gsd, tmp_path
) -> None:
    root = wave.root
    fail(tmp_path, "01-02", 1, "rate-limit-once")  # an error record in 01-02's log
    for plan in ("01-01", "01-02"):  # as a CI job does: execute-plan on branch gsd/PLAN
        git(root, "switch", "-q", "-c", f"gsd/{plan}", "main")
        result = gsd("execute-plan", plan)
        assert result.code == 0, result.err
        changed = git(root, "diff", "--name-only", f"main...gsd/{plan}").split()
        assert sorted(f for f in changed if f.startswith(".planning/")) == own_files(plan)
        git(root, "switch", "-q", "main")
    for order in (["gsd/01-01", "gsd/01-02"], ["gsd/01-02", "gsd/01-01"]):
        git(root, "switch", "-q", "-C", "merged", "main")
        for branch in order:
            git(root, "merge", "-q", "--no-ff", "-m", f"merge {branch}", branch)
        assert git(root, "status", "--porcelain") == ""
    # gsd errors and gsd report read every per-plan log, and the old shared logs too
    legacy_error = errorlog.ErrorRecord(
        timestamp="2020-01-01T00:00:00Z",
        phase="01",
        plan="01",
        task="1",
        specialist="old",
        error_type="timeout",
    )
    (root / ".planning/specialist-errors.jsonl").write_text(errorlog.to_line(legacy_error) + "\n")
    old_event = execlog.event("spawn", ts="2020-01-01T00:00:00.000Z", plan="00-01", task=1)
    (root / ".planning/execution-log.jsonl").write_text(execlog.to_line(old_event) + "\n")
    shown = json.loads(gsd("errors", "--format", "json").out)["errors"]
    assert [(e["specialist"], e["plan"]) for e in shown] == [("old", "01"), ("worker", "02")]
    report = json.loads(gsd("report", "--all", "--format", "json").out)
    assert {row["plan"] for row in report["per_plan"]} == {"01-01", "01-02"}
    assert any(r["plan"] == "00-01" for r in report["timeline"])
    assert gsd("errors", "--plan", "01-02").out.count("nonzero-exit") == 1


@pytest.mark.parametrize("in_place", [False, True], ids=["worktree", "in-place"])
def test_a_resumed_plans_summary_tells_its_whole_history(phase, gsd, tmp_path, in_place) -> None:
    root = phase.root
    if in_place:
        config = json.loads((root / ".planning/config.json").read_text())
        config["workflow"] = {"use_worktrees": False}
        config["sandbox"]["enabled"] = False  # in place, the sandbox keeps src/ from being made
        (root / ".planning/config.json").write_text(json.dumps(config))
        git(root, "commit", "-q", "-am", "in place")
    fail(tmp_path, "01-01", 2)
    assert gsd("execute-phase", "1").code == 1  # task 1 committed, task 2 failed
    (tmp_path / "markers/fail-01-01-2").unlink()
    resumed = gsd("execute-phase", "1")
    assert resumed.code == 0, resumed.err
    text = (root / FOLDER / "01-01-SUMMARY.md").read_text()
    assert "**2 of 2 tasks done in 2 commits, 2 files changed" in text
    shas = {
        n: git(
            root, "log", "--all", "--format=%h", "--fixed-strings", f"--grep=Gsd-Task: 01-01-{n}"
        ).split()[0]
        for n in (1, 2)
    }
    assert f"1. **Task 1: Task 1** - `{shas[1]}` (worker)" in text
    assert f"2. **Task 2: Task 2** - `{shas[2]}`" in text
    front = summaryread.parse(text)
    assert front["key-files"] == {"created": ["src/t01-01_1.py", "src/t01-01_2.py"], "modified": []}
    assert "Task 2 attempt 1 (worker):** nonzero-exit" in text  # the first run's failure
    tokens = text.split("## Tokens and Cost")[1]
    attempts = [r for r in tokens.splitlines() if r.startswith("| **Total** |")]
    assert attempts and int(attempts[0].split("|")[2]) >= 3  # both runs' attempts
    if not in_place:  # the first run's RESULT file is on the user's branch: it stays there
        assert docs_commit(root, "01-01") == [
            ".planning/logs/01-01.jsonl",
            f"{FOLDER}/01-01-SUMMARY.md",
        ]


def test_a_run_killed_between_its_log_append_and_its_docs_commit_loses_no_line(
    phase, tmp_path
) -> None:
    """SIGKILL while the docs commit runs (gsd's lines appended to the logs, not yet
    committed): the next run takes exactly those bytes back and commits them once; the
    checkout ends clean (test_soak found this window at random)."""
    import os
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    root = phase.root
    # the hook runs in the sandbox: it may write only `sandbox.writable` outside the
    # checkout, and signal nothing outside it, so it says when, and the test kills gsd
    control = tmp_path / "control"
    control.mkdir()
    config = json.loads((root / ".planning/config.json").read_text())
    config["sandbox"] = {"writable": [str(control)]}
    (root / ".planning/config.json").write_text(json.dumps(config))
    git(root, "commit", "-qam", "sandbox.writable")
    marker, go = control / "killed-once", control / "go"
    hook = root / ".git" / "hooks" / "commit-msg"
    hook.write_text(
        "#!/bin/sh\n"
        f'if grep -q "run complete" "$1" && [ ! -e "{marker}" ]; then\n'
        f'  touch "{marker}"\n'
        f'  i=0; while [ ! -e "{go}" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n'
        "  exit 1  # and the commit does not happen\n"
        "fi\n"
    )
    hook.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "gsd", "execute-phase", "1"]

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=300)

    process = subprocess.Popen(
        argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 240
    while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.kill()  # while the docs commit runs: gsd's log lines appended, not committed
    process.wait(timeout=60)
    go.touch()
    assert process.returncode == -9 and marker.exists()
    lock = root / ".git" / "index.lock"
    for _ in range(300):  # git itself ends the refused commit at once; wide margin
        if not lock.exists():
            break
        time.sleep(0.1)
    left = git(root, "status", "--porcelain").split("\n")
    assert any(".planning/logs/" in line for line in left), left  # the window was hit
    again = run()
    assert again.returncode == 0, again.stderr
    assert git(root, "status", "--porcelain").strip() == ""
    for log in sorted((root / ".planning/logs").glob("*.jsonl")):
        lines = log.read_text().splitlines()
        assert len(lines) == len(set(lines)), f"{log.name}: a line appended twice"
    events = [e["event"] for e in execlog.read_all(root / ".planning")[0]]
    # the killed run's last lines (its run-end) are committed once; the second run had
    # nothing to do and wrote nothing of its own
    assert events.count("run-start") == 1 and events.count("run-end") == 1
    assert events.count("plan-complete") == 2
    assert "docs: log lines of an interrupted run" in git(root, "log", "--format=%s")
