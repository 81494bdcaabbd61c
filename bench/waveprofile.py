"""wave --profile (bench/waveprofile.py): what a plan of a wave costs besides its agent.

Run by `bench/run.py --only wave --profile`. One `gsd execute-phase 1` of bench/parallel.py's
project (N plans, one task each, agents that sleep 1 s, 3 at a time) runs in a child
process whose gsd has timing wrappers around the steps of a plan: its worktree (added,
removed), the task's checkpoint, the spawn (the agent's 1 s included: its own run is
the floor's), the assessment (verdict, `<verify>`, the policy), the task commit, the
plan's checks, SUMMARY.md (written, then committed on the branch), the merge and the
STATE.md/ROADMAP.md derivation inside it. Wall time per call, summed per step over the
run's plans and divided by N: the plan threads' steps overlap each other (3 at a time),
the merges run on the main thread beside them.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from parallel import AGENT_SH, GSD, SLEEP_S, Say, Table, git_environment, make_project

# (label, module, attribute): a function, or "Class.method"
STEPS = [
    ("worktree add", "gsd.io.git.worktree", "Worktrees.open"),
    ("worktree remove", "gsd.io.git.worktree", "Worktrees.close"),
    ("checkpoint", "gsd.run.taskrun", "prepare"),
    ("spawn (agent 1 s incl.)", "gsd.run.taskrun", "spawn_agent"),
    ("assess", "gsd.run.taskrun", "assess"),
    ("commit or roll back", "gsd.run.taskrun", "_settle"),
    ("plan checks (must-haves)", "gsd.run.plans", "check_complete_plan"),
    ("SUMMARY.md text", "gsd.run.plans", "plan_summary"),
    ("SUMMARY.md commit", "gsd.run.plans", "_commit_plan_docs"),
    ("run_tasks (task steps + prompt)", "gsd.run.plans", "run_tasks"),
    ("the plan in its thread (waits for a slot incl.)", "gsd.run.waves", "run_in_worktree"),
    ("merge (main thread)", "gsd.run.waves", "merge_plan"),
    ("derive STATE/ROADMAP (in merges)", "gsd.run.bookkeeping", "Books.derive"),
]


def child(argv: list[str]) -> None:
    """In the child: wrap every step, run gsd, write the totals to argv[0]."""
    import importlib

    out = Path(argv[0])
    totals: dict[str, list[float]] = {label: [] for label, _, _ in STEPS}
    lock = threading.Lock()

    def timed(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                with lock:
                    totals[label].append(time.perf_counter() - began)

        return wrapper

    for label, module_name, attribute in STEPS:
        owner: Any = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, name, timed(label, getattr(owner, name)))
    from gsd.cli.entry import main

    sys.argv = ["gsd", "execute-phase", "1"]
    began = time.perf_counter()
    try:
        main()
    except SystemExit as done:
        if done.code not in (0, None):
            raise
    finally:
        totals["whole command (in process)"] = [time.perf_counter() - began]
        own, children = (
            resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        )
        totals["CPU: gsd's own process"] = [own.ru_utime + own.ru_stime]
        totals["CPU: the programs it started"] = [children.ru_utime + children.ru_stime]
        out.write_text(json.dumps(totals))


def profile_wave(tmp: Path, plans: int, *, say: Say, table: Table) -> None:
    script = tmp / "wave-agent.sh"
    script.write_text(AGENT_SH.format(sleep=SLEEP_S))
    root = tmp / f"wave-profile-{plans}"
    make_project(root, plans, script)
    result = tmp / f"wave-profile-{plans}.json"
    here = Path(__file__).resolve().parent
    code = (
        f"import sys; sys.path.insert(0, {str(here)!r}); "
        "import waveprofile; waveprofile.child(sys.argv[1:])"
    )
    python = GSD.parent / "python"
    with git_environment(tmp / "wave-home"):
        done = subprocess.run([str(python), "-c", code, str(result)], cwd=root, capture_output=True)
    if done.returncode != 0:
        say(f"wave profile failed: {done.stderr.decode(errors='replace')[-500:]}")
        return
    totals: dict[str, list[float]] = json.loads(result.read_text())
    say(f"== wave profile: {plans} plans, wall time per plan of each step (ms) ==")
    rows = [
        [label, str(len(times)), f"{sum(times) * 1000 / plans:.0f}"]
        for label, times in totals.items()
        if times
    ]
    table(["step", "calls", "ms per plan"], rows)
