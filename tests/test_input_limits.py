"""Input that used to crash gsd (issue 20): a NUL byte in a hook's `cwd`, JSON nested
100,000 deep on a hook's stdin, a config.json nested 50,000 deep. Each is one line and
the documented exit code, never `internal error` (exit 3). Run as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, git

HOOKS = ("claude-post-edit", "claude-session-start", "gemini-post-edit", "gemini-session-start")


def gsd(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gsd", *args],
        cwd=cwd,
        input=stdin,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def one_line(done: subprocess.CompletedProcess[str], code: int, words: str) -> None:
    assert done.returncode == code, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert words in done.stderr, done.stderr


@pytest.mark.parametrize("name", HOOKS)
def test_a_nul_byte_in_a_hooks_cwd_is_one_line_and_exit_1(git_project, name: str) -> None:
    given = {"cwd": "/tmp\0x", "tool_name": "Write", "tool_input": {"file_path": "a-PLAN.md"}}
    one_line(gsd(git_project.root, "hooks", "run", name, stdin=json.dumps(given)), 1, "NUL byte")


def test_a_nul_byte_in_the_edited_path_is_one_line_and_exit_1(git_project) -> None:
    given = {"cwd": str(git_project.root), "tool_input": {"file_path": "x\0/01-01-PLAN.md"}}
    done = gsd(git_project.root, "hooks", "run", "claude-post-edit", stdin=json.dumps(given))
    one_line(done, 1, "NUL byte")


@pytest.mark.parametrize("opening", ["[", '{"a":'])
@pytest.mark.parametrize("name", ["claude-post-edit", "gemini-session-start"])
def test_hook_input_nested_100k_deep_is_one_line_and_exit_1(
    git_project, name: str, opening: str
) -> None:
    closing = "]" if opening == "[" else "}"
    deep = opening * 100_000 + "1" + closing * 100_000
    one_line(gsd(git_project.root, "hooks", "run", name, stdin=deep), 1, "nested too deeply")


def test_a_config_nested_50k_deep_is_one_line_in_the_dry_run(git_project) -> None:
    git_project.plan("01-01")
    git_project.write(".planning/config.json", '{"a":' * 50_000 + "1" + "}" * 50_000)
    git(git_project.root, "add", "-A")
    done = gsd(git_project.root, "execute-phase", "1", "--dry-run")
    one_line(done, 2, "config.json: JSON nested too deeply to read")
