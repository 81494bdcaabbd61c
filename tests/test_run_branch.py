"""The run's branch (issue 20): gsd merges only into the branch the run started on, and
`gsd sync` waits its turn behind a live run (the run lock, as `gsd approve`).

Real git, a real gsd process, an agent (`runner: command`) that waits while the test acts
in the user's checkout as the user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, git

AGENT_FILE = """\
---
name: {name}
description: "test agent"
tools: [read_file, write_file, replace, run_shell_command]
timeout_mins: 1
runner: command
command: ["{python}", "{script}", "{control}"]
---
Test persona.
"""
# Says it started, waits for `go` (at most a minute), writes its file, reports.
AGENT = """\
import os, sys, time
control = sys.argv[1]
open(os.path.join(control, "started"), "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(control, "go")) and time.monotonic() < deadline:
    time.sleep(0.05)
os.makedirs("src", exist_ok=True)
open("src/x.txt", "w").write("hello\\n")
print("### Task Report\\n- Status: success\\n- Files Created: src/x.txt\\n"
      "- Files Modified: none\\n- Files Deleted: none\\n- Validation: pass\\n- Errors: none\\n"
      "### Downstream Context\\n- Key Interfaces Introduced: none\\n"
      "- Patterns Established: none\\n- Warnings: none\\n")
"""
STATE = """\
# Project State

## Current Position

Phase: 1 of 1 (Alpha)
Status: Ready to execute

### Blockers/Concerns

None yet.
"""
TASK = """\
<task type="auto" specialist="worker">
<name>Task 1: say hello</name>
<files>src/x.txt</files>
<action>Write src/x.txt.</action>
<verify><automated>true</automated></verify>
<done>Done.</done>
</task>"""


@pytest.fixture
def control(tmp_path: Path) -> Path:
    folder = tmp_path / "control"
    folder.mkdir()
    return folder


@pytest.fixture
def repo(git_project, tmp_path: Path, control: Path) -> Path:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    for name in ("worker", "gsd-executor"):
        git_project.write(
            f"agents/{name}.md",
            AGENT_FILE.format(name=name, python=sys.executable, script=script, control=control),
        )
    git_project.write(".planning/available_agents.md", "- **worker**: test\n")
    git_project.write(
        ".planning/config.json",
        json.dumps(
            {
                "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
                "voltagent": {"fallback_on_error": False},
                "sandbox": {"writable": [str(control)]},
            }
        ),
    )
    git_project.write(".planning/STATE.md", STATE)
    git_project.plan("01-01", tasks=TASK, files_modified="[src/x.txt]")
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    return git_project.root


def start_gsd(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gsd", *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        assert process.poll() is None, "gsd ended first"
        time.sleep(0.05)


def subjects(root: Path, branch: str) -> list[str]:
    return git(root, "log", "--format=%s", branch).splitlines()


def test_a_branch_switched_mid_run_gets_no_merge_and_the_run_stops(repo, control) -> None:
    process = start_gsd(repo, "execute-phase", "1")
    wait_for(control / "started", process)
    git(repo, "switch", "-q", "-c", "elsewhere")  # the user, while the agent works
    (control / "go").touch()
    out, err = process.communicate(timeout=300)
    assert process.returncode == 2, err
    lines = [line for line in err.splitlines() if line.startswith("gsd: error:")]
    assert len(lines) == 1 and "moved from branch main to elsewhere" in lines[0], err
    # nothing merged or committed on either branch; the plan's work waits on its branch
    assert subjects(repo, "main") == ["plans", "initial"]
    assert subjects(repo, "elsewhere") == ["plans", "initial"]
    assert "feat(01-01): Task 1: say hello" in subjects(repo, "gsd/01-01")
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "elsewhere"
    # back on main, the next run merges it there
    git(repo, "switch", "-q", "main")
    git(repo, "stash", "-u", "-q")  # the stopped run's log lines, carried over
    rerun = start_gsd(repo, "execute-phase", "1")
    _, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert "Merge branch 'gsd/01-01'" in "\n".join(subjects(repo, "main"))
    assert subjects(repo, "elsewhere") == ["plans", "initial"]


def test_sync_waits_for_a_live_run_like_approve(repo, control) -> None:
    process = start_gsd(repo, "execute-phase", "1")
    wait_for(control / "started", process)
    state = (repo / ".planning/STATE.md").read_bytes()
    sync = subprocess.run(
        [sys.executable, "-m", "gsd", "sync"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sync.returncode == 2, sync.stderr
    assert "another gsd run holds" in sync.stderr and len(sync.stderr.splitlines()) <= 2
    assert (repo / ".planning/STATE.md").read_bytes() == state  # sync wrote nothing
    check = subprocess.run(
        [sys.executable, "-m", "gsd", "sync", "--check"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode in (0, 1), check.stderr  # --check reads only: never locked out
    (control / "go").touch()
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert git(repo, "status", "--porcelain", "--", ".planning/STATE.md") == ""
    assert (
        "Plan: 1 of 1" in (repo / ".planning/STATE.md").read_text()
        or "complete" in (repo / ".planning/STATE.md").read_text().lower()
    )
