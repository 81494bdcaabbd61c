"""wave (bench/parallel.py): one wave of plans run side by side, against the agents' own sleep.

Run by `bench/run.py` (`--only wave`). For N = 1, 3, 10 and 30 plans in one wave (one task
each, `max_concurrent_agents: 3`), a fresh git repository gets a phase whose agent is a
`/bin/sh` script that sleeps 1 s, writes one file and prints a Task Report. Timed with
time.perf_counter around `subprocess.run` of the installed `gsd execute-phase 1`
(argv list):

- gsd:   the whole command: start-up, validation, worktrees, spawns, merges, STATE.md,
         SUMMARY.md, docs commits;
- floor: the same agent argv started directly, in batches of 3 side by side
         (Popen, then wait for the batch): what no orchestrator can beat, ideally
         ceil(N / 3) x 1 s.

Reported: median and minimum of each, and two ratios against the floor: the wave's own
wall time (its `wave-start` to `wave-end` events in the run's .planning/logs/phase-01.jsonl:
worktrees, spawns, task commits, SUMMARY.md, the merges with STATE.md and ROADMAP.md;
issue 23's target for N = 3, 10 and 30 is <= 1.15x), and the whole command's (adding
gsd's start-up, validation and final docs commit; target <= 1.3x). Subject and floor
alternate run by run. With GSD_BENCH_BASE set to a checkout of another gsd (`git worktree
add --detach DIR COMMIT`), that gsd runs too (its folder first on PYTHONPATH, the same
venv), before the subject in even rounds and after it in odd ones: a row `N base`.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from task import GIT_ENV, REPORT, TaskFailed, git, git_environment

from gsd.formats import execlog

REPO = Path(__file__).resolve().parent.parent
GSD = REPO / ".venv" / "bin" / "gsd"
RATIO_TARGET = 1.15  # the wave's own wall time / the agents alone (issue 23)
COMMAND_TARGET = 1.3  # the whole command / the agents alone
SIZES = (1, 3, 10, 30)
# GSD_BENCH_BASE=/path/to/a/checkout: its gsd/ too, alternated round by round (before/after)
BASE = os.environ.get("GSD_BENCH_BASE")
BASE_LABEL = "base"
SLEEP_S = 1.0
PARALLEL = 3

# The Task Report is bench/task.py's; the here-document is unquoted so that $GSD_PLAN
# in it is the plan's.
AGENT_SH = (
    'sleep {sleep}\nmkdir -p src\necho "$GSD_PLAN" > "src/p$GSD_PLAN.txt"\ncat <<EOF'
    + REPORT.format(path="src/p$GSD_PLAN.txt")
    + "EOF\n"
)
AGENT_MD = """\
---
name: worker
description: "bench agent: sleeps, writes one file, reports"
tools: [read_file, write_file, replace, run_shell_command]
runner: command
command: ["/bin/sh", "{script}"]
---
Bench persona.
"""
PLAN = """\
---
phase: 01-bench
plan: {n:02d}
type: execute
wave: 1
depends_on: []
files_modified: [src/p01-{n:02d}.txt]
autonomous: true
must_haves:
  truths: ["src/p01-{n:02d}.txt exists"]
---

<objective>Write one file.</objective>

<tasks>
<task type="auto" specialist="worker">
  <name>Task 1: write src/p01-{n:02d}.txt</name>
  <files>src/p01-{n:02d}.txt</files>
  <action>Write it.</action>
  <verify><automated>test -f src/p01-{n:02d}.txt</automated></verify>
  <done>It is there.</done>
</task>
</tasks>
"""

Say = Callable[[str], None]
Table = Callable[[list[str], list[list[str]]], None]


def make_project(root: Path, plans: int, script: Path) -> None:
    (root / "agents").mkdir(parents=True)
    (root / "agents" / "worker.md").write_text(AGENT_MD.format(script=script))
    phase = root / ".planning" / "phases" / "01-bench"
    phase.mkdir(parents=True)
    (root / ".planning" / "available_agents.md").write_text("- **worker**: bench\n")
    # no fallback: a failed bench task is a failed bench (and gsd-executor needs claude)
    config = {
        "parallelization": {"max_concurrent_agents": PARALLEL},
        "voltagent": {"fallback_on_error": False},
    }
    (root / ".planning" / "config.json").write_text(json.dumps(config))
    for n in range(1, plans + 1):
        (phase / f"01-{n:02d}-PLAN.md").write_text(PLAN.format(n=n))
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")


def run_gsd(root: Path, base: str | None = None) -> tuple[float, float]:
    """Wall time of `gsd execute-phase 1`, and the wave's own (wave-start to wave-end);
    `base`: a checkout of another gsd, first on PYTHONPATH (the same venv otherwise)."""
    env = {**os.environ, "PYTHONPATH": base} if base else None
    started = time.perf_counter()
    done = subprocess.run([str(GSD), "execute-phase", "1"], cwd=root, capture_output=True, env=env)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise TaskFailed(f"gsd execute-phase: {done.stderr.decode(errors='replace')[-500:]}")
    events, _ = execlog.read_all(root / ".planning")  # the phase log holds the waves
    start = next(e["ts"] for e in events if e["event"] == "wave-start")
    end = next(e["ts"] for e in events if e["event"] == "wave-end")
    return wall, _parse(end) - _parse(start)


def _parse(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def run_floor(root: Path, plans: int, script: Path) -> float:
    """The agents alone, `PARALLEL` at a time, as directly as Python can start them."""
    started = time.perf_counter()
    for first in range(0, plans, PARALLEL):
        batch = [
            subprocess.Popen(
                ["/bin/sh", str(script)],
                cwd=root,
                stdout=subprocess.DEVNULL,
                env={"PATH": "/usr/bin:/bin", "GSD_PLAN": f"01-{n:02d}"},
            )
            for n in range(first + 1, min(plans, first + PARALLEL) + 1)
        ]
        for process in batch:
            process.wait()
    return time.perf_counter() - started


def bench_wave(tmp: Path, *, quick: bool, say: Say, table: Table) -> dict[str, float]:
    say("== wave: plans of one wave side by side (agents sleep 1 s) ==")
    sizes = [3] if quick else list(SIZES)
    rounds = 1 if quick else 3
    script = tmp / "wave-agent.sh"
    script.write_text(AGENT_SH.format(sleep=SLEEP_S))
    results: dict[str, float] = {}
    rows = []
    with git_environment(tmp / "wave-home"):
        for plans in sizes:
            walls, spans, floors = [], [], []
            before: list[tuple[float, float]] = []
            for r in range(rounds):
                if BASE and r % 2 == 0:
                    before.append(_in(tmp / f"wave-{plans}-{r}-base", plans, script, BASE))
                wall, span = _in(tmp / f"wave-{plans}-{r}", plans, script, None)
                walls.append(wall)
                spans.append(span)
                if BASE and r % 2 == 1:
                    before.append(_in(tmp / f"wave-{plans}-{r}-base", plans, script, BASE))
                floor_dir = tmp / f"wave-{plans}-{r}-floor"
                floor_dir.mkdir()
                floors.append(run_floor(floor_dir, plans, script))
            ideal = math.ceil(plans / PARALLEL) * SLEEP_S
            if before:
                rows.append(_row(f"{plans} {BASE_LABEL}", ideal, floors, before))
            ratio = statistics.median(spans) / statistics.median(floors)
            results[f"wave_ratio_{plans}"] = ratio
            results[f"wave_command_ratio_{plans}"] = statistics.median(walls) / statistics.median(
                floors
            )
            rows.append(
                [
                    str(plans),
                    f"{ideal:.0f} s",
                    _s(floors),
                    _s(spans),
                    _s(walls),
                    f"{ratio:.2f}x",
                    f"{min(spans) / min(floors):.2f}x",
                    f"{results[f'wave_command_ratio_{plans}']:.2f}x",
                ]
            )
    table(
        [
            "plans",
            "ideal",
            "floor med/min",
            "wave med/min",
            "command med/min",
            "wave/floor med",
            "wave/floor min",
            "command/floor med",
        ],
        rows,
    )
    say(
        f"(GIT identity for both: {GIT_ENV['GIT_AUTHOR_NAME']}; {rounds} round(s) per size; "
        f"max_concurrent_agents {PARALLEL}; python {sys.version.split()[0]})"
    )
    return results


def _in(root: Path, plans: int, script: Path, base: str | None) -> tuple[float, float]:
    make_project(root, plans, script)
    return run_gsd(root, base)


def _row(
    label: str, ideal: float, floors: list[float], runs: list[tuple[float, float]]
) -> list[str]:
    walls, spans = [w for w, _ in runs], [s for _, s in runs]
    floor = statistics.median(floors)
    return [
        label,
        f"{ideal:.0f} s",
        _s(floors),
        _s(spans),
        _s(walls),
        f"{statistics.median(spans) / floor:.2f}x",
        f"{min(spans) / min(floors):.2f}x",
        f"{statistics.median(walls) / floor:.2f}x",
    ]


def _s(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} / {min(values):.2f} s"
