"""Benchmarks of `gsd validate` against floors measured in the same run.

    .venv/bin/python bench/run.py            # everything (what `make bench` runs)
    .venv/bin/python bench/run.py --quick    # smoke test: fewer runs, smaller trees
    .venv/bin/python bench/run.py --only hook|bulk|task|wave|starts|state|agents|files|plan
    .venv/bin/python bench/run.py --profile  # also cProfile validate() on the largest tree

hook:  `gsd validate PLAN` (one plan, the git-hook case) against `<python> -c pass`.
bulk:  `gsd validate` of N generated plans against a bare read + regex split of the
       same files (bench/floor_bulk.py), for N = 100 .. 10,000, with time per plan.
task:  gsd's own cost per task (run_task in this process, less the agent alone) against
       a bash script of the same git tag/add/commit/tag -d, in repositories of 100 and
       20,000 files; and gsd's peak RSS while an agent prints 1 GiB (bench/task.py).
agents: `gsd agents list` over 5,000 generated agent files against a read of the same
       files, with each one's peak RSS (bench/agent_collections.py).
wave:  `gsd execute-phase 1` of one wave of 1, 3, 10 and 30 plans whose agents sleep 1 s,
       against the same agents started directly 3 at a time (bench/parallel.py).
starts: `gsd validate --staged PLAN`, the agent-CLI hook on a non-plan edit and `gsd mcp`
       to its tools/list answer against `python -c pass`; execute-phase's import time
       (bench/starts.py).
state: `gsd sync --check` on 200 and 1,000 done plans, and `gsd sync` after one plan
       is merged into 10, 200 and 1,000 done plans (bench/state.py); the whole
       `gsd execute-phase` of a new 1-task plan in those projects (bench/statemerge.py).
files: one task whose agent creates 10,000 and 30,000 files, gsd's own cost against a
       plain `git add -A && git commit` of them (bench/manyfiles.py).
plan:  the whole `gsd execute-phase 1` of a 1-task plan in repositories of 100 and 20,000
       files against a git script of the same steps, no worktree (bench/plan.py).

Every command is started with subprocess.run and an argv list (never a shell), and
timed with time.perf_counter around it; subject and floors alternate run by run (task
calls gsd in this process and alternates blocks of tasks; see bench/task.py).
The output is also written to bench/out/results.txt (the task part also to
bench/out/task.txt). Exit 0 unless gsd fails.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import gc
import io
import math
import os
import platform
import pstats
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import agent_collections  # noqa: E402
import generate  # noqa: E402
import manyfiles  # noqa: E402
import parallel  # noqa: E402
import plan  # noqa: E402
import starts  # noqa: E402
import state  # noqa: E402
import task  # noqa: E402
import waveprofile  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
VENV_PY = REPO / ".venv" / "bin" / "python"
GSD = REPO / ".venv" / "bin" / "gsd"
# The interpreter binary behind the venv's symlinks: the floors run it directly.
REAL_PY = os.path.realpath(VENV_PY)
FLOOR_BULK = BENCH / "floor_bulk.py"

HOOK_TARGET = 6.0
BULK_TARGET = 4.0
# Growth is called linear when the marginal cost per plan of the last size step is
# within this factor of the first step's, both from the medians and from the minimums
# (on a noisy machine the two disagree; the verdict takes the larger).
LINEAR_TOLERANCE = 1.25

_out = io.StringIO()


def say(line: str = "") -> None:
    print(line, flush=True)
    _out.write(line + "\n")


class GsdFailed(Exception):
    pass


# CPU seconds (user + system) of each command run by `alternate`, by name: on a machine
# other work shares, a process's own CPU time moves less than its wall time.
CPU: dict[str, list[float]] = {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start, done


def alternate(
    commands: dict[str, list[str]],
    cwd: Path,
    rounds: int,
    check: Callable[[str, subprocess.CompletedProcess[bytes]], None],
) -> dict[str, list[float]]:
    """Run every command once per round, rotating the order each round."""
    names = list(commands)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            cpu = _children_cpu()
            seconds, done = run_once(commands[name], cwd)
            CPU.setdefault(name, []).append(_children_cpu() - cpu)
            check(name, done)
            times[name].append(seconds)
    return times


def expect_ok(
    summary_re: str | None = None,
) -> Callable[[str, subprocess.CompletedProcess[bytes]], None]:
    def check(name: str, done: subprocess.CompletedProcess[bytes]) -> None:
        err = done.stderr.decode(errors="replace")
        if done.returncode != 0:
            raise GsdFailed(f"{name}: exit {done.returncode}\n{err}")
        if summary_re and name.startswith("gsd") and not re.search(summary_re, err):
            raise GsdFailed(f"{name}: unexpected summary {err.strip()!r}")

    return check


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
    fmt = "  ".join(f"{{:>{w}}}" for w in widths)
    say(fmt.format(*header))
    say(fmt.format(*("-" * w for w in widths)))
    for row in rows:
        say(fmt.format(*row))


def verdict(ok: bool) -> str:
    return "MET" if ok else "MISSED"


# --- hook: one plan -------------------------------------------------------------------------


def bench_hook(tmp: Path, rounds: int, importtime_runs: int) -> dict[str, float]:
    root = generate.make_project(tmp / "hook", 30, per_phase=5)
    plan = ".planning/phases/003-p3/003-05-PLAN.md"
    imports = (
        "import gsd.cli.app, gsd.io.plans.project, gsd.io.plans.validate, gsd.output.render,"
        " gsd.io.plans.sources"
    )
    commands = {
        "floor: real python -c pass": [REAL_PY, "-c", "pass"],
        "venv python -c pass": [str(VENV_PY), "-c", "pass"],
        "venv python: import gsd modules only": [str(VENV_PY), "-c", imports],
        "gsd validate PLAN": [str(GSD), "validate", plan],
    }
    say("== hook: one plan (the git-hook case) ==")
    say(f"project: 30 plans in 6 phases of 5; subject: gsd validate {plan}")
    check = expect_ok(r"0 errors, 0 warnings in 1 file\b")
    alternate(commands, root, 2, check)  # warm-up, not timed
    times = alternate(commands, root, rounds, check)
    floor = statistics.median(times["floor: real python -c pass"])
    venv_floor = statistics.median(times["venv python -c pass"])
    rows = []
    for name, values in times.items():
        med = statistics.median(values)
        rows.append(
            [name, ms(med), ms(min(values)), f"{med / floor:.2f}x", f"{med / venv_floor:.2f}x"]
        )
    say(f"{rounds} alternating rounds (order rotated each round) after 2 warm-up rounds")
    table(
        ["command", "median ms", "min ms", "vs real floor", "vs venv floor"],
        rows,
    )
    gsd = statistics.median(times["gsd validate PLAN"])
    ratio = gsd / floor
    strict = gsd / venv_floor
    say(f"floor binary: {REAL_PY} (realpath of {VENV_PY})")
    say(
        f"hook ratio against the venv interpreter's own `-c pass` (same binary, same site "
        f"set-up as gsd; the stricter floor): {strict:.2f}x, target <= {HOOK_TARGET:.0f}x: "
        f"{verdict(strict <= HOOK_TARGET)}"
    )
    say(
        f"  (against the real binary started directly, which also loads its own site-packages: "
        f"{ratio:.2f}x)"
    )
    say()
    importtime(root, plan, importtime_runs)
    return {"hook_ratio": ratio, "hook_ratio_venv": gsd / venv_floor}


_IMPORT_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|( *)(\S+)")


def importtime(root: Path, plan: str, runs: int) -> None:
    """`python -X importtime` of `gsd validate PLAN`: median per module over `runs`."""
    selfs: dict[str, list[int]] = {}
    cumuls: dict[str, list[int]] = {}
    top_level_totals: list[int] = []
    for _ in range(runs):
        argv = [str(VENV_PY), "-X", "importtime", str(GSD), "validate", plan]
        done = subprocess.run(argv, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        total = 0
        for line in done.stderr.decode(errors="replace").splitlines():
            match = _IMPORT_LINE.match(line)
            if not match:
                continue
            own, cumulative, indent, name = match.groups()
            selfs.setdefault(name, []).append(int(own))
            cumuls.setdefault(name, []).append(int(cumulative))
            if len(indent) == 1:  # a top-level import: its cumulative covers its subtree
                total += int(cumulative)
        top_level_totals.append(total)
    med_cumul = {n: statistics.median(v) for n, v in cumuls.items()}
    med_self = {n: statistics.median(v) for n, v in selfs.items()}
    say(f"== import time of `gsd validate PLAN` (python -X importtime, median of {runs} runs) ==")
    say(
        f"all imports: {statistics.median(top_level_totals) / 1000:.1f} ms "
        f"({len(med_cumul)} modules)"
    )
    top = sorted(med_cumul.items(), key=lambda kv: -kv[1])[:10]
    table(
        ["module", "cumulative ms", "self ms"],
        [[n, f"{c / 1000:.1f}", f"{med_self[n] / 1000:.1f}"] for n, c in top],
    )
    packages: dict[str, float] = {}
    for name, own in med_self.items():
        packages[name.split(".")[0]] = packages.get(name.split(".")[0], 0) + own
    heavy = sorted(packages.items(), key=lambda kv: -kv[1])[:8]
    say(
        "self time summed by top-level package: "
        + ", ".join(f"{n} {t / 1000:.1f} ms" for n, t in heavy)
    )
    say()


# --- bulk: N plans --------------------------------------------------------------------------


def bench_bulk(tmp: Path, sizes: list[int], runs_for: Callable[[int], int]) -> dict[str, float]:
    say("== bulk: gsd validate of N generated plans (phases of 50 plans) ==")
    say("gsd uses one process per CPU on trees of 400+ plans; `ratio --jobs 1` is one process")
    say(f"floor: {REAL_PY} bench/floor_bulk.py (read + regex split of the same files)")
    rows = []
    results: dict[int, tuple[float, float]] = {}
    fastest: dict[int, float] = {}
    cpu_ratios: dict[int, float] = {}
    floor_fastest: dict[int, float] = {}
    for n in sizes:
        start = time.perf_counter()
        root = generate.make_project(tmp / f"bulk-{n}", n)
        made = time.perf_counter() - start
        commands = {
            "floor": [REAL_PY, str(FLOOR_BULK)],
            "gsd": [str(GSD), "validate"],
            "gsd -j1": [str(GSD), "validate", "--jobs", "1"],
        }
        check = expect_ok(rf"0 errors, 0 warnings in {n} files\b")
        run_once(commands["floor"], root)  # warm-up: directory and page caches
        runs = runs_for(n)
        CPU.clear()
        times = alternate(commands, root, runs, check)
        cpu_ratio = statistics.median(CPU["gsd -j1"]) / statistics.median(CPU["floor"])
        floor = statistics.median(times["floor"])
        gsd = statistics.median(times["gsd"])
        one = statistics.median(times["gsd -j1"])
        results[n] = (floor, gsd)
        cpu_ratios[n] = cpu_ratio
        fastest[n] = min(times["gsd"])
        floor_fastest[n] = min(times["floor"])
        size_mb = sum(f.stat().st_size for f in root.rglob("*-PLAN.md")) / 2**20
        rows.append(
            [
                f"{n:,}",
                f"{size_mb:.1f}",
                str(runs),
                ms(floor),
                ms(min(times["floor"])),
                ms(gsd),
                ms(min(times["gsd"])),
                f"{gsd / floor:.2f}x",
                f"{one / floor:.2f}x",
                f"{cpu_ratio:.2f}x",
                f"{gsd / n * 1e6:.0f}",
                f"{floor / n * 1e6:.0f}",
            ]
        )
        say(f"  {n:,} plans: generated in {made:.1f} s, {runs} alternating runs done")
    say()
    table(
        [
            "plans",
            "MB",
            "runs",
            "floor med ms",
            "floor min ms",
            "gsd med ms",
            "gsd min ms",
            "ratio",
            "ratio --jobs 1",
            "cpu ratio -j1",
            "gsd us/plan",
            "floor us/plan",
        ],
        rows,
    )
    say()
    say("growth: marginal gsd cost per plan between consecutive sizes (fixed startup removed)")
    by_median: list[float] = []
    by_min: list[float] = []
    steps = []
    for a, b in zip(sizes, sizes[1:], strict=False):
        by_median.append((results[b][1] - results[a][1]) / (b - a))
        by_min.append((fastest[b] - fastest[a]) / (b - a))
        steps.append([f"{a:,} -> {b:,}", f"{by_median[-1] * 1e6:.0f}", f"{by_min[-1] * 1e6:.0f}"])
    out: dict[str, float] = {}
    if steps:
        table(["step", "us/plan (medians)", "us/plan (minimums)"], steps)
    if len(steps) == 1:
        say("one step only: growth needs three sizes or more (run without --quick)")
    elif steps:
        g_median = by_median[-1] / by_median[0]
        g_min = by_min[-1] / by_min[0]
        growth = max(g_median, g_min)
        out["growth"] = growth
        say(
            f"last step / first step: {g_median:.2f} from medians, {g_min:.2f} from minimums "
            f"(linear if both <= {LINEAR_TOLERANCE}): {verdict(growth <= LINEAR_TOLERANCE)}"
        )
    biggest = sizes[-1]
    ratio = results[biggest][1] / results[biggest][0]
    out["bulk_ratio"] = ratio
    say(
        f"bulk ratio at {biggest:,} plans (median gsd / median floor): {ratio:.2f}x, "
        f"target <= {BULK_TARGET:.0f}x: {verdict(ratio <= BULK_TARGET)}"
    )
    say(f"  (fastest gsd / fastest floor: {fastest[biggest] / floor_fastest[biggest]:.2f}x)")
    out["bulk_cpu_ratio_j1"] = cpu_ratios[biggest]
    say(
        f"one process (--jobs 1), CPU seconds (user + system) median / the floor's: "
        f"{cpu_ratios[biggest]:.2f}x, target <= {BULK_TARGET:.0f}x: "
        f"{verdict(cpu_ratios[biggest] <= BULK_TARGET)}"
    )
    say()
    return out


def profile_validate(root: Path, top: int = 15) -> None:
    """cProfile of gsd.io.plans.validate.validate on a tree, in this process and with
    jobs=1 (no workers, whose time a profile of the parent would not see), imports excluded."""
    from gsd.io.plans.project import Project
    from gsd.io.plans.validate import validate

    say(f"== in-process gsd.io.plans.validate.validate on {root.name}: garbage collector share ==")
    paused: list[float] = []
    gen2 = [0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            paused.append(time.perf_counter())
        else:
            paused[-1] = time.perf_counter() - paused[-1]
            gen2[0] += info["generation"] == 2

    gc.collect()
    gc.callbacks.append(on_gc)
    start = time.perf_counter()
    try:
        validate(Project(root), [".planning"], jobs=1)
    finally:
        gc.callbacks.remove(on_gc)
    took = time.perf_counter() - start
    say(
        f"validate() took {took:.2f} s without the profiler; the GC ran {len(paused)} times "
        f"({gen2[0]} of them full, generation-2 collections), {sum(paused):.2f} s in all"
    )
    say()
    gc.collect()
    say(f"== cProfile of validate(jobs=1) on {root.name} (top {top} by cumtime) ==")
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    report = validate(Project(root), [".planning"], jobs=1)
    profiler.disable()
    took = time.perf_counter() - start
    say(
        f"{report.files} files, {len(report.diagnostics)} findings, {took:.2f} s under the profiler"
    )
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(top)
    _print_stats(text.getvalue())
    say("-- the same profile, top 10 by tottime (time spent in the function itself) --")
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(10)
    _print_stats(text.getvalue())
    say()


def _print_stats(report: str) -> None:
    lines = report.splitlines()
    start_at = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    for line in lines[start_at:]:
        if line.strip():
            say(line.replace(str(REPO) + "/", ""))


# --- main -----------------------------------------------------------------------------------


def git_state() -> str:
    """The commit of the checkout, and whether gsd/ differs from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "gsd"], cwd=REPO, capture_output=True, text=True
        )
    except OSError:
        return "unknown (no git)"
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    state = "with local changes in gsd/" if dirty.stdout.strip() else "gsd/ as committed"
    return f"commit {head.stdout.strip()}, {state}"


def machine() -> None:
    version = subprocess.run(
        [REAL_PY, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    say(f"gsd benchmark, {datetime.date.today().isoformat()}")
    say(
        f"machine: {platform.system()} {platform.machine()}, nproc {os.cpu_count()}, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    say(f"python {version}: {REAL_PY}")
    say(f"gsd: {GSD} (console script, interpreter {VENV_PY})")
    say(f"gsd source: {git_state()}")
    if os.path.realpath(sys.executable) != REAL_PY:
        say(f"note: bench/run.py itself runs on {sys.executable}")
    say()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and smaller trees")
    parser.add_argument(
        "--only",
        choices=["hook", "bulk", "task", "wave", "starts", "state", "agents", "files", "plan"],
        help="run one benchmark",
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile validate() on the largest bulk tree"
    )
    args = parser.parse_args(argv)
    if not GSD.exists():
        print(f"bench: {GSD} not found; run `make venv` first", file=sys.stderr)
        return 2
    machine()
    source = git_state()
    # Measure gsd as installed: with bytecode compiled, as `pip install` leaves it.
    # (Where PYTHONDONTWRITEBYTECODE is set, Python would otherwise recompile every
    # gsd module on every run, while the standard library's stay precompiled.)
    subprocess.run([str(VENV_PY), "-m", "compileall", "-q", str(REPO / "gsd")], check=True)
    say("gsd bytecode compiled (python -m compileall gsd) before timing")
    began = time.perf_counter()
    results: dict[str, float] = {}
    task_start = -1
    with tempfile.TemporaryDirectory(prefix="gsd-bench-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            if args.only in (None, "hook"):
                results.update(bench_hook(tmp, 5 if args.quick else 21, 1 if args.quick else 5))
            if args.only in (None, "bulk"):
                sizes = [100, 300] if args.quick else [100, 1000, 3000, 10000]
                runs = (lambda n: 1) if args.quick else (lambda n: 3 if n >= 10000 else 5)
                results.update(bench_bulk(tmp, sizes, runs))
                if args.profile:
                    profile_validate(tmp / f"bulk-{sizes[-1]}")
            if args.only in (None, "task"):
                task_start = len(_out.getvalue())
                results.update(task.bench_task(tmp, quick=args.quick, say=say, table=table))
            if args.only in (None, "agents"):
                results.update(
                    agent_collections.bench_agents(tmp, quick=args.quick, say=say, table=table)
                )
            if args.only in (None, "wave"):
                results.update(parallel.bench_wave(tmp, quick=args.quick, say=say, table=table))
                if args.profile:
                    waveprofile.profile_wave(tmp, 30, say=say, table=table)
            if args.only in (None, "starts"):
                results.update(starts.bench_starts(tmp, quick=args.quick, say=say, table=table))
            if args.only in (None, "state"):
                results.update(state.bench_state(tmp, quick=args.quick, say=say, table=table))
            if args.only in (None, "files"):
                results.update(manyfiles.bench_files(tmp, quick=args.quick, say=say, table=table))
            if args.only in (None, "plan"):
                results.update(plan.bench_plan(tmp, quick=args.quick, say=say, table=table))
        except (GsdFailed, task.TaskFailed, starts.StartFailed, state.StateFailed) as exc:
            say(f"bench: gsd failed: {exc}")
            return 1
    say("== summary ==")
    checks = [
        ("hook_ratio_venv", "hook: gsd validate PLAN / venv python -c pass", "x", HOOK_TARGET),
        ("bulk_ratio", "bulk: gsd validate / read + regex split", "x", BULK_TARGET),
        ("bulk_cpu_ratio_j1", "bulk: gsd validate -j1, CPU / the floor's", "x", BULK_TARGET),
        ("growth", "bulk: growth (last/first marginal, worse of med/min)", "", LINEAR_TOLERANCE),
        *[
            (
                f"task_ratio_{n}",
                f"task: gsd own / git floor, {n:,} files",
                "x",
                task.ratio_target(n),
            )
            for n in (100, 2_000, 20_000)
        ],
        *[
            (f"task_git_{n}", f"task: git processes per task, {n:,} files (floor: 4)", "", math.inf)
            for n in (100, 2_000, 20_000)
        ],
        *[
            (
                f"wave_ratio_{n}",
                f"wave: gsd's wave / agents alone, {n} plan(s)",
                "x",
                parallel.RATIO_TARGET if n > 1 else math.inf,
            )
            for n in parallel.SIZES
        ],
        *[
            (
                f"wave_command_ratio_{n}",
                f"wave: whole command / agents alone, {n} plan(s)",
                "x",
                parallel.COMMAND_TARGET if n > 1 else math.inf,
            )
            for n in parallel.SIZES
        ],
        *starts.summary_rows(),
        ("state_check_s", "state: gsd sync --check, 1,000 done plans", " s", state.CHECK_TARGET_S),
        ("state_check_growth", "state: sync --check, 1,000 / 200 plans", "x", math.inf),
        (
            "state_merge_ratio",
            "state: gsd sync after a merge, 1,000 / 10 plans",
            "x",
            state.MERGE_TARGET,
        ),
        ("state_merge_cpu_ratio", "state: the same, CPU", "x", math.inf),
        (
            "state_merge_cached_ratio",
            "state: execute-phase's cached derive, 1,000 / 10 plans",
            "x",
            math.inf,
        ),
        (
            "state_execute_ratio",
            "state: execute-phase of a 1-task plan, 1,000 / 10 plans",
            "x",
            state.MERGE_TARGET,
        ),
        ("state_execute_cpu_ratio", "state: the same, CPU", "x", math.inf),
        *[
            (
                f"files_ratio_{n}",
                f"files: gsd own / git add -A && commit, task of {n:,} new files",
                "x",
                manyfiles.RATIO_TARGET if n == 30_000 else math.inf,
            )
            for n in (500, 10_000, 30_000)
        ],
        *[
            (
                f"plan_ratio_{n}",
                f"plan: gsd execute-phase, 1-task plan / git script, {n:,} files",
                "x",
                plan.RATIO_TARGET if n == 20_000 else math.inf,
            )
            for n in (100, 1_000, 20_000)
        ],
    ]
    rows = [
        [
            label,
            f"{results[key]:.2f}{unit}",
            f"<= {target:g}{unit}" if target != math.inf else "-",
            verdict(results[key] <= target) if target != math.inf else "(figure)",
        ]
        for key, label, unit, target in checks
        if key in results
    ]
    if "agents_list_s" in results:
        rows.append(
            [
                f"agents: gsd agents list, {results['agents_list_files']:,.0f} files",
                f"{results['agents_list_s']:.2f} s, {results['agents_list_peak_mb']:.1f} MiB",
                "-",
                "(figure)",
            ]
        )
    printed = "64 MiB" if args.quick else "1 GiB"
    for variant, label in task.MEMORY_LABELS.items():
        if f"task_memory_{variant}" in results:
            peak, limit = results[f"task_memory_{variant}"], task.MEMORY_TARGET_MB
            rows.append(
                [
                    f"task: gsd peak RSS, agent prints {printed} of {label}",
                    f"{peak:.1f} MB",
                    f"< {limit:g} MB",
                    verdict(peak < limit),
                ]
            )
    if rows:
        table(["measure", "measured", "target", "verdict"], rows)
    say(f"total bench time {time.perf_counter() - began:.0f} s")
    if git_state() != source:  # the checkout moved while the benchmark ran
        say(f"warning: gsd source changed during the run: now {git_state()}")
    out_dir = BENCH / "out"
    out_dir.mkdir(exist_ok=True)
    (out_dir / "results.txt").write_text(_out.getvalue())
    if task_start >= 0:  # kept apart too, so a later hook or bulk run does not overwrite it
        text = _out.getvalue()
        (out_dir / "task.txt").write_text(text[: text.index("\n\n") + 2] + text[task_start:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
