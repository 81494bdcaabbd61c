"""python-pro, the demo's Python specialist: does the Python tasks of phase 01.

It is deliberately broken on one task: on plan 01-02 task 1 it writes a draft of
src/names.py, then hangs and ignores SIGTERM. gsd times it out, needs SIGKILL to end it
(exit 137, `timeout-kill`), rolls the draft back, retries once (`specialists.max_retries`)
and then falls back to gsd-executor, which does the task.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import demo_work as work  # noqa: E402

HANGS_ON = ("01-02", "1")
MINE = {("01-01", "1"), ("01-01", "2"), ("01-02", "1"), ("01-03", "1")}


def hang() -> None:
    work.say(f"plan {work.PLAN} task {work.TASK}: drafting src/names.py")
    work.write(
        "src/names.py", "def normalize_name(raw: str) -> str:\n    raise NotImplementedError\n"
    )
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    work.say("stuck: waiting forever and ignoring SIGTERM (only SIGKILL ends this)")
    while True:
        time.sleep(3600)


def main() -> int:
    if (work.PLAN, work.TASK) == HANGS_ON:
        hang()
    if (work.PLAN, work.TASK) not in MINE:
        return work.report(
            "failure", errors=f"plan {work.PLAN} task {work.TASK} is not Python work"
        )
    return work.do_task(shell=True)


if __name__ == "__main__":
    sys.exit(main())
