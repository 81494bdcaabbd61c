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
from tests.hostile import Scene, assert_nothing_lost, assert_user_work_intact, task_xml

INTERRUPTIONS = 20
SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
# wave 1: 01-01 and 01-02 side by side, three tasks each; wave 2: 01-03, two tasks
TASKS = {"01-01": 3, "01-02": 3, "01-03": 2}
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


def expected_exits(signum: int) -> set[int]:
    """What gsd may exit with: the signal's own code once its handler is in place, the
    signal itself when it lands before (interpreter start-up), 0 when the run had
    already finished."""
    handled = {signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGINT: 130}
    return {0, -signum} | ({handled[signum]} if signum in handled else set())


def test_twenty_interruptions_at_random_instants_lose_nothing(scene: Scene) -> None:
    root = scene.root
    seed = int(os.environ.get("GSD_SOAK_SEED") or random.randrange(2**32))
    print(f"soak seed {seed} (GSD_SOAK_SEED={seed} repeats these instants)")
    rng = random.Random(seed)
    before = scene.user_work()
    history = []
    for number in range(INTERRUPTIONS):
        signum = SIGNALS[number % len(SIGNALS)]
        started = scene.start("execute-phase", "1")
        instant = rng.uniform(0.1, 3.0)
        time.sleep(instant)
        if started.process.poll() is None:
            started.process.send_signal(signum)
        code, _, err = started.finish(timeout=180)
        committed = hostile.committed_anywhere(root)
        history.append(f"{number}: {signum.name} at {instant:.2f}s -> {code}, "
                       f"{sum(committed.values())} task(s) committed")  # fmt: skip
        print(history[-1])
        assert code in expected_exits(signum), f"{history[-1]}\n{err[-3000:]}"
        assert max(committed.values(), default=0) <= 1, f"a task committed twice: {committed}"
        assert_user_work_intact(root, before)
    final = scene.run("execute-phase", "1")
    assert final.returncode == 0, "\n".join(history) + "\n" + final.stderr
    assert_nothing_lost(root, before, tasks=EVERY_TASK, token=scene.token)
