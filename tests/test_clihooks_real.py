"""The real Claude Code and Gemini CLI load the settings `gsd hooks install` writes.

The pinned CLIs (tests/clis/pins.txt, `make clis`) run headless with no credentials:
each reads the project's settings.json and fires its SessionStart hooks before it needs
the network, so the hook gsd installed really runs and its answer is parsed. The
post-edit hooks need a model to call a tool, so tests/test_clihooks.py feeds them the
documented JSON instead.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, Project, git
from tests.test_clis import cli_bin, run_cli  # noqa: F401 (cli_bin is a fixture)


@pytest.fixture
def calls(tmp_path: Path) -> Path:
    return tmp_path / "calls.log"


@pytest.fixture
def hooked(project: Project, gsd, tmp_path: Path, calls: Path) -> Project:
    """A git project with a plan and both CLIs' hooks, run by a gsd that logs each call."""
    program = tmp_path / "bin" / "gsd"
    program.parent.mkdir()
    program.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {shlex.quote(str(calls))}\n'
        f'PYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)} -m gsd "$@"\n'
    )
    program.chmod(0o755)
    git(project.root, "init", "-q")  # a root for both CLIs' project searches
    project.plan("01-01")
    assert gsd("hooks", "install", "--claude", "--gemini", "--gsd", str(program)).code == 0
    return project


def test_claude_code_runs_the_session_start_hook(cli_bin: Path, hooked, calls, tmp_path) -> None:  # noqa: F811
    home = tmp_path / "home"
    ran = run_cli(
        cli_bin,
        ["claude", "-p", "--debug", "hooks"],
        hooked.root,
        home,
        until="Not logged in|Invalid API key",
    )
    assert "hooks run claude-session-start" in calls.read_text(), ran.stderr
    debug = "".join(p.read_text() for p in (home / ".claude" / "debug").glob("*.txt"))
    assert re.search(
        r"Hook SessionStart \(.*claude-session-start\) provided additionalContext", debug
    )


def test_claude_code_refuses_settings_with_comments(cli_bin: Path, hooked, calls, tmp_path) -> None:  # noqa: F811
    """Why gsd writes plain JSON and refuses to rewrite a file with comments."""
    path = hooked.root / ".claude" / "settings.json"
    path.write_text("// mine\n" + path.read_text())
    home = tmp_path / "home"
    run_cli(
        cli_bin,
        ["claude", "-p", "--debug", "hooks"],
        hooked.root,
        home,
        until="Not logged in|Invalid API key",
    )
    debug = "".join(p.read_text() for p in (home / ".claude" / "debug").glob("*.txt"))
    assert "settings.json: : Invalid or malformed JSON" in debug
    assert not calls.exists()


def test_gemini_cli_runs_the_session_start_hook(cli_bin: Path, hooked, calls, tmp_path) -> None:  # noqa: F811
    done = "Hook execution for SessionStart: 1 hooks executed successfully"
    ran = run_cli(
        cli_bin,
        ["gemini", "-p", "hi", "--debug"],
        hooked.root,
        tmp_path / "home",
        until=done,
        GEMINI_API_KEY="not-a-key",
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )
    assert "hooks run gemini-session-start" in calls.read_text(), ran.stderr[-2000:]
    assert done in ran.stderr
    assert "gsd-post-edit" in ran.stderr  # its project-hooks warning names both of gsd's
    settings = json.loads((hooked.root / ".gemini" / "settings.json").read_text())
    assert {"AfterTool", "SessionStart"} <= set(settings["hooks"])
