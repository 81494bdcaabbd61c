"""The benchmarks still run (their figures are never asserted: see docs/PERFORMANCE.md)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_every_benchmark_runs_in_its_quick_form() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for part in (
        "== hook",
        "== bulk",
        "== task",
        "== wave",
        "== starts",
        "== state",
        "== agents",
        "== files",
        "== plan",
        "== summary ==",
    ):
        assert part in done.stdout
