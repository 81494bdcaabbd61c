"""gsd-executor, the demo's generalist fallback: does any file-changing task of phase 01.

gsd sends it the tasks that name no specialist (plan 01-01 task 2) and the tasks a
specialist failed on after its retries (plan 01-02 task 1, where python-pro hangs).
It works from a clean checkpoint: nothing of the failed attempts survives.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import demo_work as work  # noqa: E402

if __name__ == "__main__":
    sys.exit(work.do_task(shell=True))
