"""files (bench/manyfiles.py): one task whose agent creates N files, against a plain commit.

Run by `bench/run.py` (`--only files`). In a small committed git repository (automatic gc
off, for every subject alike), one task's agent is a Python script (the real interpreter
binary, `-I -S`) that writes N new files of distinct content (50 per folder, under `gen/`,
the task's `<files>`) and prints a complete success Task Report. Three subjects alternate
run by run, the order rotated each round, after one warm-up each:

- gsd:   `gsd.run.taskrun.run_task(...)` in this process (imports excluded): checkpoint,
         spawn, observation, enforcement (scope, special files, secrets, large files,
         nested repositories), the task commit of the N files;
- agent: the same agent argv alone (`subprocess.run`), the files it wrote removed untimed;
- floor: the agent run untimed, then `git add -A` and `git commit -q -m MSG` timed, each
         started with `subprocess.run` and an argv list.

Between runs the repository goes back to its first commit (`git reset --hard`, the
folder removed), untimed; each run's files hold new content (a run number), so every
subject writes N new blobs. gsd's own cost is run_task minus the agent alone (medians);
the ratio is that over the floor (target <= 2x at 30,000 files).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from task import REPORT, TaskFailed, git, git_environment, task_objects

RATIO_TARGET = 2.0
AGENT_PY = """\
import os, sys
n, seed = int(sys.argv[1]), sys.argv[2]
for i in range(n):
    folder = f"gen/d{i // 50:04d}"
    if i % 50 == 0:
        os.makedirs(folder, exist_ok=True)
    with open(f"{folder}/f{i:05d}.txt", "w") as handle:
        handle.write(f"run {seed} file {i}\\n")
sys.stdout.write(sys.argv[3])
"""

Say = Callable[[str], None]
Table = Callable[[list[str], list[list[str]]], None]


class Subjects:
    """gsd, the agent alone and the git floor, one run each per call, at one size."""

    def __init__(self, root: Path, files: int, scratch: Path) -> None:
        from gsd.io.git.repo import Git
        from gsd.run.taskrun import run_task

        scratch.mkdir(parents=True)
        script = scratch / "agent.py"
        script.write_text(AGENT_PY)
        self.root, self.files, self.script = root, files, script
        self.python = os.path.realpath(sys.executable)
        self.base = git(root, "rev-parse", "HEAD").strip()
        self.git = Git(root)
        self.run_task = run_task
        self.count = 0

    def argv(self) -> list[str]:
        self.count += 1
        report = REPORT.format(path="gen/")
        return [self.python, "-I", "-S", str(self.script), str(self.files), str(self.count), report]

    def reset(self) -> None:
        git(self.root, "reset", "-q", "--hard", self.base)
        shutil.rmtree(self.root / "gen", ignore_errors=True)

    def gsd(self) -> float:
        plan, task_, agent, dispatch = task_objects(self.argv(), "gen/")
        start = time.perf_counter()
        outcome = self.run_task(
            git=self.git, plan=plan, task=task_, agent=agent, dispatch=dispatch, prompt="Write."
        )
        elapsed = time.perf_counter() - start
        if not outcome.success or outcome.commit is None or len(outcome.changed) != self.files:
            raise TaskFailed(
                f"run_task: success={outcome.success} error={outcome.error_type} "
                f"details={outcome.details!r} changed={len(outcome.changed)}"
            )
        self.reset()
        return elapsed

    def _agent(self) -> float:
        start = time.perf_counter()
        done = subprocess.run(self.argv(), cwd=self.root, capture_output=True)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise TaskFailed(f"agent: exit {done.returncode}: {done.stderr.decode()[-300:]}")
        return elapsed

    def agent_alone(self) -> float:
        elapsed = self._agent()
        self.reset()
        return elapsed

    def floor(self) -> float:
        self._agent()
        start = time.perf_counter()
        for args in (["add", "-A"], ["commit", "-q", "-m", f"floor {self.count}"]):
            done = subprocess.run(["git", *args], cwd=self.root, capture_output=True)
            if done.returncode != 0:
                raise TaskFailed(f"floor: git {args[0]}: {done.stderr.decode().strip()}")
        elapsed = time.perf_counter() - start
        self.reset()
        return elapsed


def make_repo(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "README.md").write_text("many files\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "config", "gc.auto", "0")  # no background packing while a subject is timed
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")


def measure(tmp: Path, files: int, runs: int) -> dict[str, list[float]]:
    root = tmp / f"files-{files}"
    make_repo(root)
    subjects = Subjects(root, files, tmp / f"files-{files}-scratch")
    run: dict[str, Callable[[], float]] = {
        "gsd": subjects.gsd,
        "agent": subjects.agent_alone,
        "floor": subjects.floor,
    }
    for fn in run.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in run}
    names = list(run)
    for r in range(runs):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(run[name]())
    return times


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def bench_files(tmp: Path, *, quick: bool, say: Say, table: Table) -> dict[str, Any]:
    sizes, runs = ([500], 2) if quick else ([10_000, 30_000], 3)
    say("== files: one task whose agent creates N files, against git add -A && git commit ==")
    say("gsd:   gsd.run.taskrun.run_task(...) in this process; the agent writes N files in gen/")
    say("agent: the agent alone (python -I -S agent.py N RUN REPORT), subprocess.run")
    say("floor: the agent untimed, then `git add -A` and `git commit -q -m MSG` timed")
    say(f"{runs} runs each after a warm-up, alternated; seconds: median (min-max)")
    out: dict[str, Any] = {}
    rows = []
    with git_environment(tmp / "home-files"):
        for files in sizes:
            times = measure(tmp, files, runs)
            gsd_med, agent_med = statistics.median(times["gsd"]), statistics.median(times["agent"])
            floor_med = statistics.median(times["floor"])
            own = gsd_med - agent_med
            ratio = own / floor_med
            out[f"files_ratio_{files}"] = ratio
            rows.append(
                [
                    f"{files:,}",
                    spread(times["gsd"]),
                    spread(times["agent"]),
                    f"{own:.2f}",
                    spread(times["floor"]),
                    f"{ratio:.2f}x",
                    f"{gsd_med / (agent_med + floor_med):.2f}x",
                ]
            )
    table(
        [
            "files",
            "run_task s",
            "agent alone s",
            "gsd own s",
            "floor s",
            "gsd own / floor",
            "run_task / (agent + floor)",
        ],
        rows,
    )
    for files in sizes:
        ratio = out[f"files_ratio_{files}"]
        verdict = "MET" if ratio <= RATIO_TARGET else "MISSED"
        say(
            f"many files, {files:,} (gsd own / floor, medians): {ratio:.2f}x, "
            f"target <= {RATIO_TARGET:g}x: {verdict}"
        )
    say("")
    return out
