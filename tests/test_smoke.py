"""The demo project validates cleanly through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO


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
