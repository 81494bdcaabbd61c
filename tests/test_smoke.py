"""The demo project validates cleanly through the CLI, and its finished work meets its
plans' must_haves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def test_demo_validates(gsd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO / "examples" / "demo")
    result = gsd("validate")
    assert result.code == 0, result.out + result.err
    assert result.out == ""
    assert "0 errors, 0 warnings in 3 files" in result.err


def test_project_fixture_writes_a_valid_plan(project, gsd) -> None:
    project.plan("01-01")
    result = gsd("validate")
    assert result.code == 0, result.out
    assert Path(".planning/phases/01-alpha/01-01-PLAN.md").is_file()


def test_the_demo_work_meets_every_must_have(gsd, tmp_path, monkeypatch) -> None:
    """`make demo` printed three `must_haves: N failed` warnings: `@~/.claude/...`
    references and key links that named no file (issue 21, trap 4)."""
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "examples" / "demo", demo)
    bin_dir = demo / "agents" / "bin"
    every_task = "import demo_work\nfor work in demo_work.WORK.values():\n    work()\n"
    env = {**os.environ, "GSD_REPO": str(demo), "PYTHONPATH": str(bin_dir)}
    subprocess.run([sys.executable, "-c", every_task], cwd=demo, env=env, check=True)
    for plan in ("01-01", "01-02"):  # a run writes these before 01-03, which reads them
        (demo / f".planning/phases/01-greeting-service/{plan}-SUMMARY.md").write_text("#\n")
    monkeypatch.chdir(demo)
    result = gsd("verify", "1")
    assert result.code == 0, result.out
    assert "FAIL" not in result.out
    assert "not looked at (verification.outside_references: skip)" in result.out
