"""Derived STATE.md and ROADMAP.md (issue 12): a local execute-phase, `gsd sync`, its
`--check`, the local bookkeeping bugs, and the same phase run as CI runs it (each plan
on its own branch in its own clone, merged in a shuffled order, then one `gsd sync`)
giving the same bytes as a local run."""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
from pathlib import Path

import pytest

from gsd.formats.planning import metrics
from gsd.run import derive
from tests import test_worktrees
from tests.conftest import git
from tests.test_worktrees import commit_all, run_gsd, start_gsd, steer, wait_for

# the worktree tests' phase and the folder that steers its agents, as fixtures here too
repo = test_worktrees.repo
control = test_worktrees.control

# GSD's template, as a project keeps it: counters, the By Phase table, a per-plan table
STATE = """\
# Project State

## Current Position

Phase: 1 of [N] ([Phase name])
Plan: 0 of [M] in current phase
Status: Ready to plan
Last activity: 2026-01-01 - Project initialized

Progress: [░░░░░░░░░░] 0%

## Performance Metrics

**Velocity:**
- Total plans completed: 0
- Average duration: -
- Total execution time: 0 hours

**By Phase:**

| Phase | Plans | Total | Avg/Plan |
|-------|-------|-------|----------|
| - | - | - | - |

**Recent Execution:**

| Plan | Duration | Tasks | Files |
|------|----------|-------|-------|
| - | - | - | - |

A note of mine that gsd must keep.

## Accumulated Context

### Blockers/Concerns

- Waiting on the design review (mine)

## Session Continuity

Last session: 2026-01-01
Stopped at: Project initialized
Resume file: None
"""

ROADMAP = """\
# Roadmap: Demo

## Phases

- [ ] **Phase 1: Alpha** - the first three plans
- [ ] **Phase 2: Beta** - later

## Phase Details

### Phase 1: Alpha
**Goal**: it works

Plans:
- [ ] 01-01-PLAN.md — two files
- [ ] 01-02-PLAN.md — one file
- [ ] 01-03-PLAN.md — after both

### Phase 2: Beta
**Plans**: TBD

## Progress

| Phase | Plans Complete | Status | Completed |
|-------|----------------|--------|-----------|
| 1. Alpha | 0/3 | Not started | - |
| 2. Beta | 0/TBD | Not started | - |
"""


@pytest.fixture
def books(repo: Path) -> Path:
    """The worktree tests' 3-plan phase (wave 1: 01-01, 01-02; wave 2: 01-03), with
    GSD's STATE.md and ROADMAP.md (no .gitattributes: per-plan logs cannot conflict)."""
    (repo / ".planning/STATE.md").write_text(STATE)
    (repo / ".planning/ROADMAP.md").write_text(ROADMAP)
    commit_all(repo, "state files")
    return repo


def completed_days(root: Path) -> set[str]:
    folder = root / ".planning/phases/01-alpha"
    return {
        re.search(r"^completed: (\S+)$", p.read_text(), re.M).group(1)  # type: ignore[union-attr]
        for p in folder.glob("*-SUMMARY.md")
    }


def test_a_local_run_derives_counters_bar_rows_and_ticks(books: Path, gsd) -> None:
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    (day,) = completed_days(books)
    text = (books / ".planning/STATE.md").read_text()
    for line in (
        "Phase: 1 of 2 (Alpha)",
        "Plan: 3 of 3 in current phase",
        "Status: Phase complete",
        f"Last activity: {day} - Completed 01-03-PLAN.md",
        "Progress: [██████████] 100%",
        "- Total plans completed: 3",  # the bug: it stayed 0
        "- Average duration: 1min",
        "- Total execution time: 0.05 hours",
        "| 01 | 3 | 3min | 1min |",  # the bug: the By Phase row stayed 0
        "| Phase 01 P01 | 1min | 2 tasks | 2 files |",
        "| Phase 01 P02 | 1min | 1 task | 1 file |",
        "| Phase 01 P03 | 1min | 1 task | 1 file |",
        "A note of mine that gsd must keep.",
        "- Waiting on the design review (mine)",
        f"Last session: {day}",
        "Stopped at: Phase 1 complete",
        "Resume file: None",
    ):
        assert f"\n{line}\n" in text, line
    assert text.index("P01 |") < text.index("P02 |") < text.index("P03 |")
    road = (books / ".planning/ROADMAP.md").read_text()
    assert "- [x] **Phase 1: Alpha** - the first three plans" in road  # the bug: never ticked
    assert "- [ ] **Phase 2: Beta** - later" in road
    assert road.count("- [x] 01-0") == 3
    assert f"| 1. Alpha | 3/3 | Complete | {day} |" in road
    assert "| 2. Beta | 0/TBD | Not started | - |" in road  # no plans: left as written
    assert git(books, "status", "--porcelain") == ""  # committed with the docs
    # what execute-phase wrote is what `gsd sync` derives: fresh, and sync changes nothing
    assert gsd("sync", "--check").code == 0
    before = git(books, "rev-parse", "HEAD")
    synced = gsd("sync")
    assert synced.code == 0 and "up to date" in synced.err
    assert git(books, "status", "--porcelain") == "" and git(books, "rev-parse", "HEAD") == before


def test_sync_check_reports_stale_lines_and_sync_is_idempotent(books: Path, gsd) -> None:
    assert gsd("execute-phase", "1").code == 0
    path = books / ".planning/STATE.md"
    fresh = path.read_bytes()
    path.write_text(
        path.read_text()
        .replace("Plan: 3 of 3", "Plan: 21 of 30")
        .replace("- Total plans completed: 3", "- Total plans completed: 0")
    )
    road = books / ".planning/ROADMAP.md"
    road.write_text(road.read_text().replace("- [x] 01-02-PLAN.md", "- [ ] 01-02-PLAN.md"))
    stale = path.read_bytes()
    check = gsd("sync", "--check")
    assert check.code == 1
    assert (
        ".planning/STATE.md: line 6: 'Plan: 21 of 30 in current phase' -> "
        "'Plan: 3 of 3 in current phase'" in check.out.splitlines()
    )
    assert any(
        line.startswith(".planning/ROADMAP.md: line ") and "01-02-PLAN.md" in line
        for line in check.out.splitlines()
    )
    assert len(check.out.splitlines()) == 3 and "2 files stale" in check.err
    assert path.read_bytes() == stale  # --check writes nothing
    as_json = json.loads(gsd("sync", "--check", "--format", "json").out)
    assert len(as_json["stale"]) == 3
    written = gsd("sync")
    assert written.code == 0 and "2 files written" in written.err
    assert path.read_bytes() == fresh
    assert gsd("sync").err.strip() == "gsd: STATE.md and ROADMAP.md are up to date"
    assert path.read_bytes() == fresh and gsd("sync", "--check").code == 0
    assert git(books, "status", "--porcelain") == ""  # sync never commits: nothing to


def test_sync_of_one_phase_and_of_a_fresh_project(books: Path, gsd) -> None:
    # nothing ran yet: the position is phase 1's, nothing else of the user's moves
    assert gsd("sync", "1").code == 0
    text = (books / ".planning/STATE.md").read_text()
    assert (
        "Phase: 1 of 2 (Alpha)\nPlan: 0 of 3 in current phase\nStatus: Ready to execute\n"
        "Last activity: 2026-01-01 - Project initialized\n" in text
    )
    assert "Last session: 2026-01-01\nStopped at: Project initialized\n" in text
    assert "| - | - | - | - |" in text  # no plan done: no rows
    assert gsd("sync", "--check").code == 0
    assert gsd("sync", "7").code == 2  # no such phase: a usage error


def test_a_failure_and_a_pause_are_blockers_until_resolved(books: Path, control, gsd) -> None:
    steer(control, "need", "01-02-1", "does/not/exist")  # the agent exits 4
    failed = gsd("execute-phase", "1", "--max-parallel", "1")
    assert failed.code == 1
    text = (books / ".planning/STATE.md").read_text()
    assert "\n- [01-02] nonzero-exit: " in text and "- Waiting on the design review" in text
    assert "Status: Blocked\n" in text
    assert (
        "Stopped at: 01-02 nonzero-exit\nResume file: .planning/phases/01-alpha/01-02-PLAN.md"
        in text
    )
    assert "Plan: 1 of 3 in current phase" in text
    assert gsd("sync", "--check").code == 0  # the run wrote what sync derives
    (control / "need-01-02-1").unlink()
    assert gsd("execute-phase", "1").code == 0
    text = (books / ".planning/STATE.md").read_text()
    assert "[01-02]" not in text and "Status: Phase complete" in text


def test_a_paused_plan_is_a_blocker_until_approved(books: Path, gsd) -> None:
    from tests.test_execute import CHECKPOINT

    path = books / ".planning/phases/01-alpha/01-01-PLAN.md"
    path.write_text(
        path.read_text()
        .replace("autonomous: true", "autonomous: false")
        .replace("</task>\n", f"</task>\n{CHECKPOINT}\n", 1)
    )
    commit_all(books, "a human check")
    assert gsd("execute-phase", "1", "--max-parallel", "1").code == 4
    text = (books / ".planning/STATE.md").read_text()
    assert (
        "- [01-01] checkpoint-paused: task 2 (checkpoint:human-verify) waits for a person: "
        "Open the page and look (then `gsd approve 01-01`)" in text
    )
    assert "Status: Paused at a human checkpoint" in text
    assert gsd("approve", "01-01").code == 0
    stale = gsd("sync", "--check")  # approved: no longer a blocker
    assert stale.code == 1 and "checkpoint-paused" in stale.out
    assert gsd("execute-phase", "1").code == 0
    assert "checkpoint-paused" not in (books / ".planning/STATE.md").read_text()


def test_ctrl_c_writes_session_continuity(books: Path, control) -> None:
    steer(control, "hang", "01-02-1")
    process = start_gsd(books, "execute-phase", "1", "--max-parallel", "1")
    wait_for(control / "started-01-02-1", process)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=120) == 130
    (day,) = completed_days(books)
    text = (books / ".planning/STATE.md").read_text()
    assert (
        f"Last session: {day}\nStopped at: Completed 01-01-PLAN.md; 01-02 in progress\n"
        "Resume file: .planning/phases/01-alpha/01-02-PLAN.md\n"
    ) in text
    assert "Plan: 1 of 3 in current phase" in text and "Status: In progress" in text
    assert git(books, "status", "--porcelain") == ""  # committed with the run's docs


def test_execute_plan_of_one_plan_does_not_complete_the_phase(books: Path, gsd) -> None:
    assert gsd("execute-plan", "01-01").code == 0
    text = (books / ".planning/STATE.md").read_text()
    assert "Plan: 1 of 3 in current phase" in text and "Status: In progress" in text
    assert "Completed phase" not in text and "Phase complete" not in text
    assert "Stopped at: Completed 01-01-PLAN.md; 01-02 not started" in text
    road = (books / ".planning/ROADMAP.md").read_text()
    assert "- [x] 01-01-PLAN.md" in road and "- [ ] **Phase 1: Alpha**" in road
    assert "| 1. Alpha | 1/3 | In Progress | - |" in road


# ---------------------------------------------------------------- local run == CI run


def ci_job(origin: Path, where: Path, plan: str) -> None:
    """What the workflow's execute job does: a fresh clone, `git switch -c gsd/PLAN`,
    `gsd execute-plan PLAN`, the branch pushed back."""
    subprocess.run(["git", "clone", "-q", str(origin), str(where)], check=True)
    git(where, "config", "commit.gpgsign", "false")
    git(where, "switch", "-q", "-c", f"gsd/{plan}")
    done = run_gsd(where, "execute-plan", plan)
    assert done.returncode == 0, done.stderr
    git(where, "push", "-q", "origin", f"HEAD:refs/heads/gsd/{plan}")


def test_a_ci_fan_out_merged_in_any_order_then_synced_equals_a_local_run(
    books: Path, tmp_path: Path
) -> None:
    start = git(books, "rev-parse", "HEAD").strip()
    local = tmp_path / "local"
    subprocess.run(["git", "clone", "-q", str(books), str(local)], check=True)
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(books), str(origin)], check=True)
    # (a) a local execute-phase
    assert git(local, "rev-parse", "HEAD").strip() == start
    done = run_gsd(local, "execute-phase", "1")
    assert done.returncode == 0, done.stderr
    # (b) each plan a CI job on its own branch; a reviewer merges them in a shuffled order
    main = tmp_path / "main"
    subprocess.run(["git", "clone", "-q", str(origin), str(main)], check=True)
    shuffle = random.Random(12)
    for wave in (["01-01", "01-02"], ["01-03"]):
        for plan in wave:
            ci_job(origin, tmp_path / f"job-{plan}", plan)
        git(main, "fetch", "-q", "origin")
        for plan in shuffle.sample(wave, len(wave)):
            git(main, "merge", "-q", "--no-ff", "--no-edit", f"origin/gsd/{plan}")
        git(main, "push", "-q", "origin", "HEAD:refs/heads/main")
    # no plan branch touched STATE.md or ROADMAP.md: nothing but the merges changed them
    for plan in ("01-01", "01-02", "01-03"):
        touched = git(main, "diff", "--name-only", start, f"origin/gsd/{plan}")
        assert ".planning/STATE.md" not in touched and ".planning/ROADMAP.md" not in touched
    assert run_gsd(main, "sync", "--check").returncode == 1
    assert run_gsd(main, "sync").returncode == 0
    if len(completed_days(local) | completed_days(main)) > 1:
        pytest.skip("the runs straddled midnight UTC: their SUMMARY dates differ")
    for name in ("STATE.md", "ROADMAP.md"):
        ours = (local / ".planning" / name).read_bytes()
        theirs = (main / ".planning" / name).read_bytes()
        assert ours == theirs, name
    assert run_gsd(main, "sync", "--check").returncode == 0


def test_derived_rows_do_not_depend_on_the_order_plans_completed_in() -> None:
    text = STATE
    for plan_id in ("01-03", "01-01", "01-02"):
        text = metrics.record_metric(text, plan_id=plan_id, duration="1min", tasks=1, files=1)
    rows = [line for line in text.splitlines() if line.startswith("| Phase 01 P")]
    assert rows == [f"| Phase 01 P0{n} | 1min | 1 task | 1 file |" for n in (1, 2, 3)]
    for phase in ("02", "01", "02.1"):
        text = metrics.record_phase_metric(text, phase=phase, plans=1, total="1min", average="1min")
    phases = [line.split("|")[1].strip() for line in text.splitlines() if re.match(r"\| 0\d", line)]
    assert phases == ["01", "02", "02.1"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("45s", 45), ("3min", 180), ("12 min", 720), ("1h 5m", 3900), ("soon", None), ("", None)],
)
def test_durations_as_summaries_write_them(text: str, seconds: float | None) -> None:
    assert derive._seconds(text) == seconds


def test_phases_the_roadmap_lists_count_before_they_are_planned(tmp_path: Path) -> None:
    """`Phase: 1 of N` counts the roadmap's phases, as GSD's own STATE.md does: phase 2
    has no folder yet but is a phase of the project."""
    from gsd.io.plans.project import Project
    from gsd.run.derive import gather, state_text

    root = tmp_path / "p"
    (root / ".planning/phases/01-alpha").mkdir(parents=True)
    (root / ".planning/ROADMAP.md").write_text(ROADMAP)
    (root / ".planning/phases/01-alpha/01-01-PLAN.md").write_text(
        '---\nphase: 01-alpha\nplan: 01\nwave: 1\n---\n<tasks><task type="auto"><name>T'
        "</name><files>a</files><action>a</action><verify>v</verify><done>d</done></task>"
        "</tasks>\n"
    )
    facts = gather(Project(root))
    assert facts.phase_count == 2
    assert "Phase: 1 of 2 (Alpha)" in state_text(STATE, facts)
