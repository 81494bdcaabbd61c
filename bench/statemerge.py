"""execute (bench/statemerge.py): the whole `gsd execute-phase N` of one new 1-task plan
in a finished, committed project of 10, 200 and 1,000 plans (issue 23: a merge into a
large project costs at most 1.3x what it costs in a small one).

Run by `bench/run.py` (`--only state`, after bench/state.py's figures). The project is
`generate.make_done_project`'s (every plan done, STATE.md and ROADMAP.md derived by `gsd
sync`), committed, plus a phase of one plan whose one task runs a command agent (a
`/bin/sh` script that writes one file and prints a Task Report: no sleep). Each run puts
the repository back to that commit untimed (`git reset --hard`, `git clean -fdx`, the
plan's branch deleted, worktrees pruned), then times `gsd execute-phase N` (argv list;
wall from time.perf_counter, CPU from the children's rusage: gsd and every git it
starts). Sizes alternate run by run.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable
from pathlib import Path

import generate
from parallel import AGENT_MD
from state import GSD, _med, _shape, _timed
from task import GIT_ENV, REPORT, git

AGENT_SH = (
    "mkdir -p src\necho x > src/new.txt\ncat <<EOF" + REPORT.format(path="src/new.txt") + "EOF\n"
)
PLAN = """\
---
phase: {phase}
plan: 01
type: execute
wave: 1
depends_on: []
files_modified: [src/new.txt]
autonomous: true
must_haves:
  truths: ["src/new.txt exists"]
---

<objective>Write one file.</objective>

<tasks>
<task type="auto" specialist="worker">
  <name>Task 1: write src/new.txt</name>
  <files>src/new.txt</files>
  <action>Write it.</action>
  <verify><automated>test -f src/new.txt</automated></verify>
  <done>It is there.</done>
</task>
</tasks>
"""


def make_project(root: Path, plans: int) -> str:
    """A finished project of `plans` plans and one new phase of one plan, committed on
    `main` (tag `base`); returns the new phase's number."""
    phases, per_phase = _shape(plans)
    generate.make_done_project(root, phases, per_phase)
    git(root.parent, "init", "-q", "-b", "main", str(root))
    _timed([str(GSD), "sync"], root)
    script = root.parent / f"agent-{plans}.sh"
    script.write_text(AGENT_SH)
    (root / "agents").mkdir(exist_ok=True)
    (root / "agents" / "worker.md").write_text(AGENT_MD.format(script=script))
    name = generate.phase_dir_name(phases + 1)
    folder = root / ".planning" / "phases" / name
    folder.mkdir()
    (folder / f"{name[:3]}-01-PLAN.md").write_text(PLAN.format(phase=name))
    (root / ".planning" / "available_agents.md").write_text("- **worker**: bench\n")
    config = {"voltagent": {"fallback_on_error": False}}
    (root / ".planning" / "config.json").write_text(json.dumps(config))
    git(root, "config", "commit.gpgsign", "false")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "project")
    git(root, "tag", "base")
    return name[:3]


def _reset(root: Path, phase: str) -> None:
    git(root, "reset", "-q", "--hard", "base")
    git(root, "clean", "-fdxq")
    git(root, "worktree", "prune")
    if git(root, "branch", "--list", f"gsd/{phase}-01").strip():
        git(root, "branch", "-q", "-D", f"gsd/{phase}-01")


def bench_execute(
    tmp: Path, sizes: list[int], rounds: int, say: Callable[[str], None], table: Callable
) -> dict[str, float]:
    say("== state: gsd execute-phase of one new 1-task plan in a finished project ==")
    saved = dict(os.environ)
    os.environ.update(GIT_ENV, HOME=str(tmp / "home"))
    (tmp / "home").mkdir(exist_ok=True)
    try:
        made = {n: (tmp / f"execute-{n}", make_project(tmp / f"execute-{n}", n)) for n in sizes}
        wall: dict[int, list[float]] = {n: [] for n in sizes}
        cpu: dict[int, list[float]] = {n: [] for n in sizes}
        for r in range(rounds):
            for n in sizes[r % len(sizes) :] + sizes[: r % len(sizes)]:
                root, phase = made[n]
                _reset(root, phase)
                seconds, used, _ = _timed([str(GSD), "execute-phase", phase], root)
                wall[n].append(seconds)
                cpu[n].append(used)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    table(
        ["plans", "execute-phase wall ms", "CPU ms (gsd and its git)"],
        [[f"{n:,}", _med(wall[n]), _med(cpu[n])] for n in sizes],
    )
    first, last = sizes[0], sizes[-1]
    ratio = {
        name: statistics.median(runs[last]) / statistics.median(runs[first])
        for name, runs in (("wall", wall), ("cpu", cpu))
    }
    say(
        f"{last:,} plans against {first:,}: execute-phase {ratio['wall']:.2f}x wall, "
        f"{ratio['cpu']:.2f}x CPU (target: at most 1.3x)"
    )
    return {"state_execute_ratio": ratio["wall"], "state_execute_cpu_ratio": ratio["cpu"]}
