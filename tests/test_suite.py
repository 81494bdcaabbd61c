"""The test suite's own shape: `make test-fast` runs the unit-level tests, most of the suite."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO

# `make test-fast` is the edit-test loop: it must hold enough of the suite to trust.
MIN_UNIT_SHARE = 0.40


def collected(*args: str) -> int:
    """How many tests `pytest --collect-only` selects (its `-qq` lines: `file: count`)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-qq", "-p", "no:randomly", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    counts = re.findall(r"^tests/\S+\.py: (\d+)$", done.stdout, re.M)
    assert counts, done.stdout[-2000:] + done.stderr[-2000:]
    return sum(map(int, counts))


def test_the_unit_marker_selects_most_of_the_suite() -> None:
    unit, total = collected("-m", "unit"), collected()
    assert total > 1000, f"only {total} tests collected"
    assert unit >= MIN_UNIT_SHARE * total, f"make test-fast runs {unit} of {total} tests"
    assert unit < total  # the rest, runs of agents and real CLIs, is `make test`'s
