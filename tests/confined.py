"""A phase of one plan whose agent is a hostile Python program, for the launcher's tests.

The agent (`runner: command`, full tier) and the task's `<automated>` check run
`agent.py` from the test's folder: the check with the argument `verify`. Each writes what
it tried and saw as JSON into the control folder, which config `sandbox.writable`
opens to it (the only place outside its worktree where it may write); `seen(...)` reads
that back. The agent then writes its task file and prints a successful Task Report.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import Project, git
from tests.hostile import LANDLOCK

# The two ways an agent runs: in gsd's Landlock sandbox, and with config turning it off
# (what holds then: the launcher's own session, no_new_privs, capabilities dropped).
SANDBOXES = [
    pytest.param({}, id="landlock", marks=pytest.mark.skipif(not LANDLOCK, reason="no Landlock")),
    pytest.param({"sandbox": {"enabled": False}}, id="sandbox-off"),
]

AGENT_FILE = """\
---
name: {name}
description: "test agent"
tools: [read_file, write_file, replace, run_shell_command]
timeout_mins: 1
runner: command
command: ["{python}", "{script}"]
---
Test persona.
"""

TASK = """\
<task type="auto" specialist="worker">
<name>Task 1: do it</name>
<files>src/task.txt</files>
<action>Write src/task.txt.</action>
<verify><automated>"{python}" "{script}" verify</automated></verify>
<done>Done.</done>
</task>"""

STATE = "# Project State\n\n## Current Position\n\nPhase: 1 of 1 (Alpha)\nStatus: Ready\n"

# Every agent program starts with this; its body then fills `seen` and calls `finish()`.
PRELUDE = """\
import ctypes, errno, fcntl, json, os, struct, subprocess, sys

CONTROL = {control!r}
ROLE = sys.argv[1] if len(sys.argv) > 1 else "agent"
seen = {{}}


def attempt(what, action):
    try:
        result = action()
        seen[what] = "done" if result is None else result
    except OSError as exc:
        seen[what] = errno.errorcode.get(exc.errno, str(exc.errno))


def status_fields():
    fields = {{}}
    for line in open("/proc/self/status"):
        name, _, value = line.partition(":")
        if name.startswith("Cap") or name == "NoNewPrivs":
            fields[name] = value.strip()
    return fields


def finish():
    with open(os.path.join(CONTROL, ROLE + ".json"), "w") as handle:
        json.dump(seen, handle, indent=1, sort_keys=True)
    if ROLE == "agent":
        os.makedirs("src", exist_ok=True)
        with open("src/task.txt", "w") as handle:
            handle.write("done\\n")
        print("### Task Report\\n- Status: success\\n- Files Created: src/task.txt\\n"
              "- Files Modified: none\\n- Files Deleted: none\\n- Validation: pass\\n"
              "- Errors: none\\n")

"""


def hostile_phase(git_project: Project, tmp_path: Path, body: str, **config: object) -> Path:
    """The committed phase (plan 01-01, one task) whose agents run `body`; returns the
    control folder. `config` adds to config.json (e.g. `sandbox={"enabled": False}`)."""
    control = tmp_path / "control"
    control.mkdir()
    script = tmp_path / "agent.py"
    script.write_text(PRELUDE.format(control=str(control)) + textwrap.dedent(body) + "\nfinish()\n")
    for name in ("worker", "gsd-executor"):
        text = AGENT_FILE.format(name=name, python=sys.executable, script=script)
        git_project.write(f"agents/{name}.md", text)
    git_project.write(".planning/available_agents.md", "- **worker**: test\n")
    sandbox = {"writable": [str(control)], **config.pop("sandbox", {})}  # type: ignore[dict-item]
    settings = {"specialists": {"kill_grace_seconds": 1, "max_retries": 0}, "sandbox": sandbox}
    git_project.write(".planning/config.json", json.dumps({**settings, **config}))
    git_project.write(".planning/STATE.md", STATE)
    task = TASK.format(python=sys.executable, script=script)
    git_project.plan("01-01", tasks=task, files_modified="[src/task.txt]")
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    return control


def seen(control: Path, role: str = "agent") -> dict[str, object]:
    """What the agent (or its check, `verify`) wrote down; {} when it never got that far."""
    path = control / f"{role}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def task_committed(root: Path) -> bool:
    out = git(root, "log", "--all", "--format=%(trailers:key=Gsd-Task,valueonly)")
    return "01-01-1" in out.split()
