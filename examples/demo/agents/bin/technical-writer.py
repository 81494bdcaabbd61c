"""technical-writer, the demo's documentation writer: writes README.md (plan 01-03 task 2).

Read+write tier, no shell: it reads the code to take every example from what the code
really returns, writes the README, and leaves the verify commands to gsd.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import demo_work as work  # noqa: E402

MINE = {("01-03", "2")}

if __name__ == "__main__":
    if (work.PLAN, work.TASK) not in MINE:
        sys.exit(
            work.report("failure", errors=f"plan {work.PLAN} task {work.TASK} is not documentation")
        )
    sys.exit(work.do_task(shell=False))
