"""plan (bench/plan.py): one 1-task plan, the whole `gsd execute-phase 1`, in a large repository.

Run by `bench/run.py` (`--only plan`). A git repository of N generated files (bench/task.py's
`make_repo`: 50 per folder, committed and packed; N = 100 and 20,000) gets one phase with
one plan of one task, whose agent (`runner: command`, a `/bin/sh` script of built-ins)
writes one new file and prints a complete success Task Report. Two subjects alternate
run by run, the order rotated each round, after one warm-up each:

- gsd:   the installed `gsd execute-phase 1` (argv list, `subprocess.run`): start-up,
         validation, the plan's worktree, the agent, the task commit, SUMMARY.md, the
         merge into the user's branch with STATE.md and ROADMAP.md, the worktree removed;
- floor: `bash floor.sh` in a second copy of the same repository: a careful script doing
         the same git steps in the user's checkout, no worktree: `git switch -c` a plan
         branch, the agent (the same argv), `git add -A`, `git commit`, `git switch` back,
         `git merge --no-ff`, `git branch -d`.

Between runs each repository goes back to its first commit (`git reset --hard`, `git clean
-fdx`, the plan branch and gsd's records removed), untimed. Reported: medians and minimums
and the ratio of medians (target <= 5x at 20,000 files), and the children's CPU seconds.
gsd keeps a plan's worktree folder as the repository's spare checkout for the next plan
(gsd.io.git.worktree): the warm-up run, the first in the repository, checks out in full
(its time is printed), the timed ones start from the spare.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from task import REPORT, TaskFailed, git, git_environment, make_repo

REPO = Path(__file__).resolve().parent.parent
GSD = REPO / ".venv" / "bin" / "gsd"
RATIO_TARGET = 5.0
NEW_FILE = "src/new_module.py"

AGENT_SH = 'echo "VALUE = 1" > ' + NEW_FILE + "\ncat <<'EOF'" + REPORT.format(path=NEW_FILE)
AGENT_SH = AGENT_SH.replace("Files Created: none", f"Files Created: {NEW_FILE}").replace(
    f"Files Modified: {NEW_FILE}", "Files Modified: none"
)
AGENT_SH += "EOF\n"
AGENT_MD = """\
---
name: worker
description: "bench agent: writes one file, reports"
tools: [read_file, write_file, replace, run_shell_command]
runner: command
command: ["/bin/sh", "{script}"]
---
Bench persona.
"""
PLAN = f"""\
---
phase: 01-bench
plan: 01
type: execute
wave: 1
depends_on: []
files_modified: [{NEW_FILE}]
autonomous: true
must_haves:
  truths: ["{NEW_FILE} exists"]
---

<objective>Write one file.</objective>

<tasks>
<task type="auto" specialist="worker">
  <name>Task 1: write {NEW_FILE}</name>
  <files>{NEW_FILE}</files>
  <action>Write it.</action>
  <done>It is there.</done>
</task>
</tasks>
"""
FLOOR_SH = """\
set -e
git switch -q -c plan-01-01
/bin/sh "$1" > /dev/null
git add -A
git commit -q -m "feat(01-01): task 1"
git switch -q main
git merge -q --no-ff -m "Merge branch 'plan-01-01'" plan-01-01
git branch -q -d plan-01-01
"""

Say = Callable[[str], None]
Table = Callable[[list[str], list[list[str]]], None]


def make_project(root: Path, files: int, script: Path) -> str:
    """The repository, its one plan committed; returns the base commit."""
    make_repo(root, files)
    (root / "agents").mkdir()
    (root / "agents" / "worker.md").write_text(AGENT_MD.format(script=script))
    phase = root / ".planning" / "phases" / "01-bench"
    phase.mkdir(parents=True)
    (root / ".planning" / "available_agents.md").write_text("- **worker**: bench\n")
    config = {"voltagent": {"fallback_on_error": False}}
    (root / ".planning" / "config.json").write_text(json.dumps(config))
    (phase / "01-01-PLAN.md").write_text(PLAN)
    git(root, "add", "-A")
    git(root, "-c", "gc.auto=0", "commit", "-q", "-m", "the plan")
    return git(root, "rev-parse", "HEAD").strip()


def reset(root: Path, base: str) -> None:
    """Back to the base commit, untimed: nothing of the last run left."""
    git(root, "reset", "-q", "--hard", base)
    git(root, "clean", "-q", "-fdx")
    for line in git(root, "branch", "--format=%(refname:short)").split():
        if line != "main":
            git(root, "branch", "-q", "-D", line)
    shutil.rmtree(root / ".git" / "gsd", ignore_errors=True)
    git(root, "worktree", "prune")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run; a failure stops the bench."""
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise TaskFailed(f"{argv[0]}: {done.stderr.decode(errors='replace')[-800:]}")
    return wall, _children_cpu() - cpu


def measure_size(tmp: Path, files: int, runs: int, say: Say) -> dict[str, list[float]]:
    script = tmp / "plan-agent.sh"
    script.write_text(AGENT_SH)
    floor_sh = tmp / "plan-floor.sh"
    floor_sh.write_text(FLOOR_SH)
    roots = {"gsd": tmp / f"plan-{files}-gsd", "floor": tmp / f"plan-{files}-floor"}
    bases = {name: make_project(root, files, script) for name, root in roots.items()}
    argv = {"gsd": [str(GSD), "execute-phase", "1"], "floor": ["bash", str(floor_sh), str(script)]}
    times: dict[str, list[float]] = {"gsd": [], "floor": [], "gsd_cpu": [], "floor_cpu": []}
    names = list(roots)
    first: dict[str, float] = {}
    for r in range(runs + 1):  # the first round is the warm-up
        for name in names[r % 2 :] + names[: r % 2]:
            wall, cpu = timed(argv[name], roots[name])
            reset(roots[name], bases[name])
            if r:
                times[name].append(wall)
                times[f"{name}_cpu"].append(cpu)
            else:
                first[name] = wall
    say(
        f"  {files:,} files: 1 warm-up, then {runs} runs each, alternated; the warm-up "
        f"(gsd's first plan in the repository: its worktree checked out in full) took "
        f"{first['gsd'] * 1000:.0f} ms, the floor's {first['floor'] * 1000:.0f} ms"
    )
    return times


def bench_plan(tmp: Path, *, quick: bool, say: Say, table: Table) -> dict[str, float]:
    say("== plan: one 1-task plan, whole `gsd execute-phase 1`, against a git script ==")
    sizes = [100, 1_000] if quick else [100, 20_000]
    runs = 1 if quick else 5
    results: dict[str, float] = {}
    rows = []
    with git_environment(tmp / "plan-home"):
        os.environ["XDG_STATE_HOME"] = str(tmp / "plan-home" / "state")
        for files in sizes:
            t = measure_size(tmp, files, runs, say)
            med = {k: statistics.median(v) for k, v in t.items()}
            ratio = med["gsd"] / med["floor"]
            results[f"plan_ratio_{files}"] = ratio
            results[f"plan_cpu_ratio_{files}"] = med["gsd_cpu"] / med["floor_cpu"]
            rows.append(
                [
                    f"{files:,}",
                    f"{med['floor'] * 1000:.0f} / {min(t['floor']) * 1000:.0f} / "
                    f"{max(t['floor']) * 1000:.0f}",
                    f"{med['gsd'] * 1000:.0f} / {min(t['gsd']) * 1000:.0f} / "
                    f"{max(t['gsd']) * 1000:.0f}",
                    f"{ratio:.2f}x",
                    f"{med['floor_cpu'] * 1000:.0f} / {med['gsd_cpu'] * 1000:.0f}",
                    f"{results[f'plan_cpu_ratio_{files}']:.2f}x",
                ]
            )
    table(
        [
            "files",
            "floor ms med/min/max",
            "gsd ms med/min/max",
            "wall ratio",
            "CPU ms floor/gsd",
            "CPU ratio",
        ],
        rows,
    )
    say(f"(load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    return results
