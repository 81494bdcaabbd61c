"""files (bench/manyfiles.py): one task whose agent creates N files, against a plain commit.

Run by `bench/run.py` (`--only files`). In a small committed git repository (automatic gc
off, for every subject alike), one task's agent is a Python script (the real interpreter
binary, `-I -S`) that writes N new files of distinct content (50 per folder, under `gen/`,
the task's `<files>`) and prints a complete success Task Report. Two subjects alternate
run by run, the order rotated each round, after one warm-up each:

- gsd:   `gsd.run.taskrun.run_task(...)` in this process (imports excluded): checkpoint,
         spawn, observation, enforcement (scope, special files, secrets, large files,
         nested repositories), the task commit of the N files. Its agent's own run (the
         `proc.supervise` call, wrapped with time.perf_counter) is taken out of the same
         run's time: gsd's own cost, paired run by run (the agent writing N files on a
         busy disk varies by seconds, more than gsd's whole cost);
- floor: the agent run untimed, then `git add -A` and `git commit -q -m MSG` timed, each
         started with `subprocess.run` and an argv list.

Between runs the repository goes back to its first commit (`git reset --hard`, the
folder removed), untimed; each run's files hold new content (a run number), so every
subject writes N new blobs. The ratio is gsd's own cost over the floor (medians; target
<= 2x at 30,000 files).
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

    def gsd(self) -> tuple[float, float]:
        """run_task's time, and the part of it its agent's spawn took."""
        from gsd.io.process import proc

        plan, task_, agent, dispatch = task_objects(self.argv(), "gen/")
        supervise, spawned = proc.supervise, []

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return supervise(*args, **kwargs)
            finally:
                spawned.append(time.perf_counter() - began)

        setattr(proc, "supervise", timed)  # noqa: B010 (a wrapper, put back below)
        try:
            start = time.perf_counter()
            outcome = self.run_task(
                git=self.git, plan=plan, task=task_, agent=agent, dispatch=dispatch, prompt="W"
            )
            elapsed = time.perf_counter() - start
        finally:
            setattr(proc, "supervise", supervise)  # noqa: B010
        if not outcome.success or outcome.commit is None or len(outcome.changed) != self.files:
            raise TaskFailed(
                f"run_task: success={outcome.success} error={outcome.error_type} "
                f"details={outcome.details!r} changed={len(outcome.changed)}"
            )
        self.reset()
        return elapsed, sum(spawned)

    def _agent(self) -> float:
        start = time.perf_counter()
        done = subprocess.run(self.argv(), cwd=self.root, capture_output=True)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            raise TaskFailed(f"agent: exit {done.returncode}: {done.stderr.decode()[-300:]}")
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


def measure(tmp: Path, files: int, runs: int, warmup: int = 1) -> dict[str, list[float]]:
    """Seconds of each run: run_task ("gsd"), its agent's spawn ("agent"), the floor."""
    root = tmp / f"files-{files}"
    make_repo(root)
    subjects = Subjects(root, files, tmp / f"files-{files}-scratch")
    for _ in range(warmup):
        subjects.gsd()
        subjects.floor()
    times: dict[str, list[float]] = {"gsd": [], "agent": [], "floor": []}
    for r in range(runs):
        for name in ("gsd", "floor") if r % 2 == 0 else ("floor", "gsd"):
            if name == "floor":
                times["floor"].append(subjects.floor())
            else:
                elapsed, spawned = subjects.gsd()
                times["gsd"].append(elapsed)
                times["agent"].append(spawned)
    return times


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def bench_files(tmp: Path, *, quick: bool, say: Say, table: Table) -> dict[str, Any]:
    sizes, runs = ([500], 2) if quick else ([10_000, 30_000], 3)
    say("== files: one task whose agent creates N files, against git add -A && git commit ==")
    say("gsd:   gsd.run.taskrun.run_task(...) in this process; the agent writes N files in gen/")
    say("agent: python -I -S agent.py N RUN REPORT; gsd own = run_task - its agent's spawn")
    say("floor: the agent untimed, then `git add -A` and `git commit -q -m MSG` timed")
    say(f"{runs} runs each after a warm-up, alternated; seconds: median (min-max)")
    out: dict[str, Any] = {}
    rows = []
    with git_environment(tmp / "home-files"):
        for files in sizes:
            times = measure(tmp, files, runs)
            own = [g - a for g, a in zip(times["gsd"], times["agent"], strict=True)]
            ratio = statistics.median(own) / statistics.median(times["floor"])
            out[f"files_ratio_{files}"] = ratio
            rows.append(
                [
                    f"{files:,}",
                    spread(times["gsd"]),
                    spread(times["agent"]),
                    spread(own),
                    spread(times["floor"]),
                    f"{ratio:.2f}x",
                ]
            )
    table(
        [
            "files",
            "run_task s",
            "its agent s",
            "gsd own s",
            "floor s",
            "gsd own / floor",
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
