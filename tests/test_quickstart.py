"""README.md's quick start, run as a new user would: every `sh` block pasted into one shell,
with gsd on PATH and no claude, gemini or codex."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def quick_start() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Quick start") :]
    return section[: section.index("\n## ", 1)]


def shell_blocks(section: str) -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```$", section, flags=re.S | re.M)


def bare_path(tmp_path: Path) -> str:
    """A PATH with gsd (this checkout's) and the system's programs, and no agent CLI."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "gsd"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gsd "$@"\n')
    shim.chmod(0o755)
    for cli in ("claude", "gemini", "codex"):
        assert not any(Path(d, cli).exists() for d in ("/usr/bin", "/bin")), cli
    return f"{bin_dir}:/usr/bin:/bin"


def run(script: str, cwd: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": path, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_readme_quick_start_runs_a_two_plan_phase_without_an_ai(tmp_path: Path) -> None:
    section = quick_start()
    blocks = shell_blocks(section)
    assert re.search(r"^gsd execute-phase 1 ", "".join(blocks), flags=re.M), blocks
    path = bare_path(tmp_path)
    done = run("\n".join(blocks), tmp_path, path)
    assert done.returncode == 0, done.stdout + done.stderr
    project = tmp_path / "hello"
    assert sorted(p.name for p in project.glob("*.txt")) == ["both.txt", "bye.txt", "hello.txt"]
    assert "Phase 01-hello: 2/2 plans done" in done.stdout
    assert re.search(r"01-01 +wave 1 +done +tasks committed 2/2", done.stdout)
    assert re.search(r"01-02 +wave 2 +done +tasks committed 1/1", done.stdout)
    assert "0 errors, 0 warnings in 2 files" in done.stderr
    assert "next steps" in done.stderr  # what gsd init printed
    assert run("git status --porcelain", project, path).stdout == ""

    # Step 7: the one line that hands the agent to an AI runner.
    line = re.search(r"^```yaml\n(runner: claude) .*$", section, flags=re.M)
    assert line is not None
    agent = project / "agents" / "writer.md"
    text = re.sub(r"runner: command\ncommand: .*\n", line.group(1) + "\n", agent.read_text())
    agent.write_text(text)
    dry = run("git commit -qam claude && gsd execute-phase 1 --dry-run", project, path)
    assert dry.returncode == 0, dry.stderr
    assert "tier read+write, runner claude" in dry.stdout
