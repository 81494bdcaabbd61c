"""state (bench/state.py): deriving STATE.md and ROADMAP.md as a project grows (issue 23).

Run by `bench/run.py` (`--only state`). Projects come from `generate.make_done_project`:
every plan done as a run leaves it (PLAN.md, SUMMARY.md, its log with spawn, result and
commit events, a failed attempt with its error record in one plan of ten, each phase's
merge log), STATE.md and ROADMAP.md from GSD's templates, derived once by `gsd sync`.
Two figures, each command started with `subprocess.run` and an argv list, timed with
time.perf_counter (wall) and the children's rusage (CPU), sizes alternated run by run:

- check: `gsd sync --check` (nothing stale) on 10 x 20 and 50 x 20 plans; the target is
  the large one under 1.5 s, and growth near linear (5x the plans, <= ~5x the time);
- merge: the bookkeeping after a 1-task plan is merged: a finished project of N plans,
  the last plan's SUMMARY.md and log added (`generate.finish_plan`), then `gsd sync`
  (which writes both files; they are put back before each run), N = 10, 200, 1,000;
  also the derive step alone (`derive.sync` in a started interpreter, imports not
  counted), and warm: a second `derive.sync` in a process that has parsed the plans
  once, and cached: `derive.gather` through execute-phase's derive cache
  (`gsd.run.derivecache`, left by the runs before), what `execute-phase` runs after
  each merge. Target: 1,000 plans at most 1.3x 10 plans, whole command; the whole
  `gsd execute-phase` of such a merge is bench/statemerge.py's.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import generate

REPO = Path(__file__).resolve().parent.parent
VENV_PY = REPO / ".venv" / "bin" / "python"
GSD = REPO / ".venv" / "bin" / "gsd"
CHECK_TARGET_S = 1.5
MERGE_TARGET = 1.3
OWNED = ("STATE.md", "ROADMAP.md")

# derive.sync in a started interpreter: prints its own seconds (imports not counted)
DERIVE_STEP = """\
import sys, time
from pathlib import Path
from gsd.io.plans.project import Project
from gsd.run import derive
project = Project(Path(sys.argv[1]))
start = time.perf_counter()
derive.sync(project, write=sys.argv[2] == "cold")
print(time.perf_counter() - start)
if sys.argv[2] == "warm":  # plans parsed already, as in execute-phase after a merge
    start = time.perf_counter()
    derive.sync(project, write=True)
    print(time.perf_counter() - start)
"""
# execute-phase's derive after a merge: through its cache (.git/gsd/derive-cache.json),
# which the runs before this one left, as a user's earlier merges would
CACHED_STEP = """\
import sys, time
from pathlib import Path
from gsd.io.plans.project import Project
from gsd.run import derive
from gsd.run.derivecache import DeriveCache
project = Project(Path(sys.argv[1]))
start = time.perf_counter()
cache = DeriveCache.load(project.root / ".git")
cache.begin()
derive.sync(project, facts=derive.gather(project, cache))
cache.save()
print(time.perf_counter() - start)
"""


class StateFailed(Exception):
    pass


def _timed(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall, CPU of the child, its stdout) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise StateFailed(f"{' '.join(argv)} in {cwd}: exit {done.returncode}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def _project(root: Path, phases: int, per_phase: int, *, skip_last: bool = False) -> Path:
    generate.make_done_project(root, phases, per_phase, skip_last=skip_last)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    _timed([str(GSD), "sync"], root)  # STATE.md and ROADMAP.md derived once
    return root


def _shape(plans: int) -> tuple[int, int]:
    """(phases, plans per phase): phases of 20, or one phase of fewer."""
    return (plans // 20, 20) if plans >= 20 else (1, plans)


def _med(values: list[float]) -> str:
    low, mid, high = (round(f(values) * 1000) for f in (min, statistics.median, max))
    return f"{mid} ({low}-{high})"


def bench_check(
    tmp: Path, sizes: list[int], rounds: int, say: Callable[[str], None], table: Callable
) -> dict[str, float]:
    say("== state: gsd sync --check, every plan done, nothing stale ==")
    roots = {n: _project(tmp / f"check-{n}", *_shape(n)) for n in sizes}
    wall: dict[int, list[float]] = {n: [] for n in sizes}
    cpu: dict[int, list[float]] = {n: [] for n in sizes}
    for r in range(rounds):
        for n in sizes[r % len(sizes) :] + sizes[: r % len(sizes)]:
            seconds, used, _ = _timed([str(GSD), "sync", "--check"], roots[n])
            wall[n].append(seconds)
            cpu[n].append(used)
    table(
        ["plans", "wall ms med (min-max)", "CPU ms med (min-max)"],
        [[f"{n:,}", _med(wall[n]), _med(cpu[n])] for n in sizes],
    )
    small, large = sizes[0], sizes[-1]
    growth = statistics.median(wall[large]) / statistics.median(wall[small])
    say(f"{large / small:g}x the plans: {growth:.2f}x the time (linear: {large / small:g}x)")
    return {"state_check_s": statistics.median(wall[large]), "state_check_growth": growth}


def _merge_project(tmp: Path, plans: int) -> tuple[Path, dict[str, bytes]]:
    """A finished project with its last plan just merged: the STATE.md and ROADMAP.md
    bytes from before the merge (put back before each run), the plan's files added."""
    phases, per_phase = _shape(plans)
    root = _project(tmp / f"merge-{plans}", phases, per_phase, skip_last=True)
    kept = {name: (root / ".planning" / name).read_bytes() for name in OWNED}
    generate.finish_plan(root, phases, per_phase, 10_000_000.0)
    return root, kept


def _restore(root: Path, kept: dict[str, bytes]) -> None:
    for name, data in kept.items():
        (root / ".planning" / name).write_bytes(data)


def bench_merge(
    tmp: Path, sizes: list[int], rounds: int, say: Callable[[str], None], table: Callable
) -> dict[str, float]:
    say("== state: the bookkeeping after one plan is merged (gsd sync, and derive.sync alone) ==")
    made = {n: _merge_project(tmp, n) for n in sizes}
    kinds = ("wall", "cpu", "step", "warm", "cached")
    runs: dict[str, dict[int, list[float]]] = {k: {n: [] for n in sizes} for k in kinds}
    for r in range(rounds):
        for n in sizes[r % len(sizes) :] + sizes[: r % len(sizes)]:
            root, kept = made[n]
            _restore(root, kept)
            seconds, used, _ = _timed([str(GSD), "sync"], root)
            runs["wall"][n].append(seconds)
            runs["cpu"][n].append(used)
            _restore(root, kept)
            _, _, out = _timed([str(VENV_PY), "-c", DERIVE_STEP, str(root), "cold"], root)
            runs["step"][n].append(float(out.strip()))
            _restore(root, kept)
            _, _, out = _timed([str(VENV_PY), "-c", DERIVE_STEP, str(root), "warm"], root)
            runs["warm"][n].append(float(out.split()[-1]))
            _restore(root, kept)
            _, _, out = _timed([str(VENV_PY), "-c", CACHED_STEP, str(root)], root)
            runs["cached"][n].append(float(out.strip()))
    table(
        [
            "plans",
            "gsd sync wall ms",
            "gsd sync CPU ms",
            "derive.sync alone ms",
            "warm ms",
            "cached ms",
        ],
        [[f"{n:,}", *(_med(runs[k][n]) for k in kinds)] for n in sizes],
    )
    first, last = sizes[0], sizes[-1]
    ratio = {k: statistics.median(runs[k][last]) / statistics.median(runs[k][first]) for k in runs}
    say(
        f"{last:,} plans against {first:,}: gsd sync {ratio['wall']:.2f}x wall, "
        f"{ratio['cpu']:.2f}x CPU; derive.sync alone {ratio['step']:.2f}x, in a warm "
        f"process (plans parsed already) {ratio['warm']:.2f}x, through execute-phase's derive "
        f"cache (its derive after a merge) {ratio['cached']:.2f}x"
    )
    return {
        "state_merge_ratio": ratio["wall"],
        "state_merge_cpu_ratio": ratio["cpu"],
        "state_merge_cached_ratio": ratio["cached"],
    }


def bench_state(
    tmp: Path, *, quick: bool, say: Callable[[str], None], table: Callable
) -> dict[str, float]:
    results = bench_check(tmp, [40, 100] if quick else [200, 1000], 1 if quick else 5, say, table)
    sizes = [10, 100] if quick else [10, 200, 1000]
    results.update(bench_merge(tmp, sizes, 1 if quick else 5, say, table))
    import statemerge  # it imports this module's helpers

    results.update(statemerge.bench_execute(tmp, sizes, 1 if quick else 5, say, table))
    return results
