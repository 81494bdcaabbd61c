"""Twenty interruptions of a two-wave phase at random instants, each followed by a resume
(issue 10): every task is committed exactly once and the user loses nothing.

The instants come from a seeded generator; the seed is printed (shown when the test fails)
and `GSD_SOAK_SEED=N` repeats a run. No assertion depends on how long anything took.
"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest

from tests import hostile
from tests.hostile import (
    Scene,
    assert_nothing_lost,
    assert_user_work_intact,
    task_xml,
)

INTERRUPTIONS = 20
SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
# wave 1: 01-01 and 01-02 side by side, four tasks each; wave 2: 01-03, three tasks.
# Enough work that most of the interruptions land in a run that has some left.
TASKS = {"01-01": 4, "01-02": 4, "01-03": 3}
EVERY_TASK = tuple(f"{plan}-{n}" for plan, count in TASKS.items() for n in range(1, count + 1))


@pytest.fixture
def scene(git_project, tmp_path: Path):
    made = hostile.make_scene(git_project, tmp_path)
    for plan, count in TASKS.items():
        files = [f"src/t{plan}_{n}.py" for n in range(1, count + 1)]
        wave = {"wave": 2, "depends_on": '["01-01", "01-02"]'} if plan == "01-03" else {}
        hostile.rewrite_plan(
            made,
            plan,
            tasks="\n".join(task_xml(plan, n) for n in range(1, count + 1)),
            files_modified="[" + ", ".join(files) + "]",
            **wave,
        )
    for task_id in EVERY_TASK:
        made.steer(task_id, "nap")  # 0.05 to 0.5 s, then the task's file
    yield made
    hostile.kill_all(made.token)


def expected_exits(signum: int, agents_ran: bool) -> set[int]:
    """What gsd may exit with: 0 when the run had already finished; for SIGKILL, the
    signal; for the others, the signal's own code (143, 129, 130), or, when no agent of
    the run had started yet (the handlers may not be in place during the interpreter's
    start-up), the signal itself."""
    if signum == signal.SIGKILL:
        return {0, -signum}
    handled = {signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGINT: 130}[signum]
    return {0, handled} if agents_ran else {0, handled, -signum}


def spawns(scene: Scene) -> int:
    """How many agents have started so far, in every run (each notes its pid)."""
    return sum(len(p.read_text().split()) for p in scene.control.glob("spawned-*"))


def wait_for_an_instant(scene: Scene, started: hostile.Started, rng: random.Random) -> str:
    """Half the time a random instant from the start (start-up, recovery, the first
    spawns), else a random instant after the k-th agent of this run started (a spawn, a
    commit, a merge): on any machine, the run is somewhere in the middle. Says which."""
    if rng.random() < 0.5:
        instant = rng.uniform(0.05, 1.0)
        time.sleep(instant)
        return f"at {instant:.2f}s"
    k, extra = rng.randint(1, 3), rng.uniform(0.0, 0.4)
    goal = spawns(scene) + k
    deadline = time.monotonic() + 120
    while spawns(scene) < goal and started.process.poll() is None:
        assert time.monotonic() < deadline, "no agent started in 120 s"
        time.sleep(0.02)
    time.sleep(extra)
    return f"{extra:.2f}s after agent {k}"


def test_twenty_interruptions_at_random_instants_lose_nothing(scene: Scene) -> None:
    root = scene.root
    seed = int(os.environ.get("GSD_SOAK_SEED") or random.randrange(2**32))
    print(f"soak seed {seed} (GSD_SOAK_SEED={seed} repeats these instants)")
    rng = random.Random(seed)
    before = scene.user_work()
    history = []
    for number in range(INTERRUPTIONS):
        signum = SIGNALS[number % len(SIGNALS)]
        left_before, spawned = hostile.checkpoint_tags(root), spawns(scene)
        started = scene.start("execute-phase", "1")
        when = wait_for_an_instant(scene, started, rng)
        agents_ran = spawns(scene) > spawned
        if started.process.poll() is None:
            started.process.send_signal(signum)
        code, _, err = started.finish(timeout=180)
        committed = hostile.committed_anywhere(root)
        done = f"{sum(committed.values())} of {len(EVERY_TASK)} tasks committed"
        history.append(f"{number}: {signum.name} {when} -> {code}, {done}")
        print(history[-1])
        assert code in expected_exits(signum, agents_ran), f"{history[-1]}\n{err[-3000:]}"
        assert max(committed.values(), default=0) <= 1, f"a task committed twice: {committed}"
        assert_user_work_intact(root, before)
        if code == 128 + signum:  # handled: its own open attempts went with their tags
            new = set(hostile.checkpoint_tags(root)) - set(left_before)
            assert not new, f"{history[-1]}: left {sorted(new)}"
    final = scene.run("execute-phase", "1")
    assert final.returncode == 0, "\n".join(history) + "\n" + final.stderr
    assert_nothing_lost(root, before, tasks=EVERY_TASK, token=scene.token)
