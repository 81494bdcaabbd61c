"""Issue 20: gsd writes (and carries forward) no path through a symbolic link, at any level.

A real hostile `runner: command` agent replaces, in its worktree, `.planning/logs`,
`.planning/` itself, its phase folder, STATE.md, ROADMAP.md or its plan's SUMMARY.md with
a link to a folder or file outside the repository; git carries the link on with the task
commit and the merge. Whatever gsd then does, nothing outside changes (hashed before and
after), and the run says what it refused in one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from gsd.formats import nofollow
from gsd.formats.files import append_line, write_atomic
from tests.conftest import git
from tests.hostile import run_gsd

AGENT = """\
import os, shutil, sys
mode, outside = sys.argv[1], sys.argv[2]
plan, task = os.environ["GSD_PLAN"], os.environ["GSD_TASK"]
os.makedirs("src", exist_ok=True)
with open(f"src/t{plan}_{task}.py", "w") as handle:
    handle.write("# done\\n")
where = {
    "logs": ".planning/logs",
    "planning": ".planning",
    "phase": ".planning/phases/01-alpha",
    "state": ".planning/STATE.md",
    "roadmap": ".planning/ROADMAP.md",
    "summary": ".planning/phases/01-alpha/01-01-SUMMARY.md",
}.get(mode)
if where is None:
    print("### Task Report\\n- Status: success\\n- Files Created: src/t01-01_1.py")
    sys.exit(0)
target = os.path.join(outside, "dir" if mode in ("logs", "planning", "phase") else "file.md")
if os.path.isdir(where) and not os.path.islink(where):
    shutil.rmtree(where)
elif os.path.lexists(where):
    os.unlink(where)
os.makedirs(os.path.dirname(where) or ".", exist_ok=True)
os.symlink(target, where)
print("### Task Report")
print("- Status: success")
print(f"- Files Created: src/t{plan}_{task}.py")
print("- Files Modified: none")
print("- Files Deleted: none")
print("- Validation: pass")
print("- Errors: none")
"""

AGENT_FILE = """\
---
name: {name}
description: "links its way out"
tools: [read_file, write_file, replace, run_shell_command]
timeout_mins: 1
runner: command
command: ["{python}", "{script}", "{mode}", "{outside}"]
---
Test persona.
"""

TASK = """\
<task type="auto" specialist="worker">
<name>Task 1</name>
<files>src/t01-01_1.py</files>
<action>Write it.</action>
<verify><automated>true</automated></verify>
<done>Done.</done>
</task>"""

STATE = "# Project State\n\n## Current Position\n\nPhase: 1 of 1 (Alpha)\nStatus: Ready\n"
ROADMAP = "# Roadmap\n\n- [ ] **Phase 1: Alpha**\n\n### Phase 1: Alpha\n\nPlans:\n- [ ] 01-01\n"


def digest(folder: Path) -> dict[str, str]:
    """Every path under `folder` (links and folders included) with its content's hash."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            found[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[rel] = "dir"
    return found


def hostile_project(git_project, tmp_path: Path, mode: str) -> tuple[Path, Path]:
    root = git_project.root
    outside = tmp_path / "outside"
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    for name in ("worker", "gsd-executor"):
        git_project.write(
            f"agents/{name}.md",
            AGENT_FILE.format(
                name=name, python=sys.executable, script=script, mode=mode, outside=outside
            ),
        )
    git_project.write(".planning/available_agents.md", "- **worker**: test\n")
    git_project.write(
        ".planning/config.json",
        json.dumps(
            {
                "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
                "voltagent": {"fallback_on_error": False},
            }
        ),
    )
    git_project.write(".planning/STATE.md", STATE)
    git_project.write(".planning/ROADMAP.md", ROADMAP)
    git_project.plan("01-01", tasks=TASK, files_modified="[src/t01-01_1.py]")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")
    # what the links point at: a copy of .planning (so a followed link finds plans), files
    shutil.copytree(root / ".planning", outside / "dir")
    (outside / "dir" / "logs").mkdir()
    (outside / "dir" / "logs" / "01-01.jsonl").write_text('{"outside": "untouched"}\n')
    (outside / "file.md").write_text("OUTSIDE: the user's own notes\n")
    return root, outside


@pytest.mark.parametrize("mode", ["logs", "planning", "phase", "state", "roadmap", "summary"])
def test_a_planted_link_makes_gsd_write_nothing_outside(git_project, tmp_path, mode) -> None:
    root, outside = hostile_project(git_project, tmp_path, mode)
    before = digest(outside)
    outputs = []
    for _ in range(2):  # a rerun must not append more either
        done = run_gsd(root, "execute-phase", "1")
        outputs.append(done.stdout + done.stderr)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert digest(outside) == before, outputs
    state = root / ".planning/STATE.md"
    if not state.is_symlink() and state.exists():
        assert "OUTSIDE" not in state.read_text()  # the outside text is never carried in
    # the run says what it refused, in one line (`.planning` made a link is also a policy
    # violation today: put back before gsd writes there)
    lines = [line for out in outputs for line in out.splitlines() if line.startswith("gsd: ")]
    said = [line for line in lines if "symbolic link" in line or "policy-violation" in line]
    assert said, outputs
    assert all(line.startswith("gsd: ") for line in said), said


@pytest.mark.parametrize("planted", [".planning/logs", ".planning"])
def test_a_link_already_in_the_checkout_is_refused_in_one_line(
    git_project, tmp_path, planted
) -> None:
    """Whatever the order of events (a merge, the user, another tool): the link is there
    when gsd starts, and the run stops at its first write below it, writing nothing."""
    root, outside = hostile_project(git_project, tmp_path, "none")
    target = outside / "dir" if planted == ".planning" else outside / "dir" / "logs"
    link = root / planted
    shutil.rmtree(link, ignore_errors=True)
    link.symlink_to(target)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "linked")
    before = digest(outside)
    done = run_gsd(root, "execute-phase", "1")
    assert digest(outside) == before
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if "symbolic link" in line]
    assert len(lines) == 1 and lines[0].startswith("gsd: error: "), done.stderr
    assert "Traceback" not in done.stderr


def test_every_level_of_a_write_refuses_a_link(tmp_path) -> None:
    root = tmp_path / "root"
    (root / ".planning" / "logs").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    nofollow.trust(root)
    append_line(root / ".planning/logs/a.jsonl", b"{}\n")  # a real folder: written
    assert (root / ".planning/logs/a.jsonl").read_bytes() == b"{}\n"
    shutil.rmtree(root / ".planning/logs")
    (root / ".planning/logs").symlink_to(outside)
    (root / "STATE.md").symlink_to(outside / "state.md")
    for write in (
        lambda: append_line(root / ".planning/logs/a.jsonl", b"{}\n"),
        lambda: append_line(root / ".planning/logs/deeper/a.jsonl", b"{}\n"),
        lambda: write_atomic(root / ".planning/logs/x.md", "x"),
        lambda: write_atomic(root / "STATE.md", "x"),
        lambda: append_line(root / "STATE.md", b"x\n"),
    ):
        with pytest.raises(Exception, match="symbolic link"):
            write()
    assert list(outside.iterdir()) == []
    with pytest.raises(nofollow.LinkInPath):
        nofollow.read_bytes(root / "STATE.md")


def test_a_fifo_in_a_logs_place_is_refused_not_filled(tmp_path) -> None:
    root = tmp_path / "root"
    (root / ".planning/logs").mkdir(parents=True)
    nofollow.trust(root)
    os.mkfifo(root / ".planning/logs/01-01.jsonl")
    with pytest.raises(Exception, match="not a regular file"):
        append_line(root / ".planning/logs/01-01.jsonl", b"{}\n")
