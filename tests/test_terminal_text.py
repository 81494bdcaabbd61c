"""Issue 20: an agent's text reaches a person's terminal only as visible characters.

A real hostile `runner: command` agent writes escape sequences into its Task Report
(`Errors:`, the Downstream Context a SUMMARY.md carries), its stdout
and its stderr: window titles (OSC 0/2), the clipboard (OSC 52), clear screen with a
fake "all tests passed" (CSI 2J), the alternate screen (CSI ?1049h), a bare CR that
overwrites a line, BEL, a C1 CSI and bidi overrides. gsd runs under a real pty (the
terminal path, live lines included) and what reaches the terminal is checked byte by byte.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gsd.core.visible import visible
from tests.conftest import REPO, git

# every way the issue lists of steering a terminal, in one line of agent text
HOSTILE = (
    "\x1b]0;pwned-title\x07 \x1b]2;title2\x1b\\ \x1b]52;c;cm0gLXJmIH4=\x07 "
    "\x1b[2J\x1b[Hall tests passed \x1b[?1049h alt \x07bell "
    "\u202eevil\u202c \u2066iso\u2069 \u009b31mred fake\rOVERWRITE"
)
SHOWN = "^[]0;pwned-title^G"  # what a person sees instead of a retitled window

AGENT = """\
import os, sys
hostile = {hostile!r}
plan, task = os.environ["GSD_PLAN"], os.environ["GSD_TASK"]
os.makedirs("src", exist_ok=True)
with open(f"src/t{{plan}}_{{task}}.py", "w") as handle:
    handle.write("# done\\n")
sys.stderr.write("stderr: " + hostile + "\\n")
status = "failure" if task == "2" else "success"
print("stdout: " + hostile)
print("### Task Report")
print("- Status: " + status)
print(f"- Files Created: src/t{{plan}}_{{task}}.py")
print("- Files Modified: none")
print("- Files Deleted: none")
print("- Validation: pass")
print("- Errors: " + hostile)
print("### Downstream Context")
print("- Key Interfaces Introduced: " + hostile)
print("- Patterns Established: " + hostile)
print("- Warnings: " + hostile)
if status == "failure":
    sys.exit(1)
"""

AGENT_FILE = """\
---
name: {name}
description: "hostile terminal agent"
tools: [read_file, write_file, replace, run_shell_command]
timeout_mins: 1
runner: command
command: ["{python}", "{script}"]
---
Test persona.
"""

TASK = """\
<task type="auto" specialist="worker">
<name>Task {n}</name>
<files>src/t01-01_{n}.py</files>
<action>Write it.</action>
<verify><automated>true</automated></verify>
<done>Done.</done>
</task>"""

# the one control sequence gsd itself writes to a terminal: live lines redrawn
OWN = re.compile(rb"\x1b\[\d+F\x1b\[J")
C1 = re.compile("[\u0080-\u009f]")
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def hostile(git_project, tmp_path):
    """One plan of two tasks: task 1 succeeds, task 2 fails; both write `HOSTILE` everywhere."""
    root = git_project.root
    script = tmp_path / "agent.py"
    script.write_text(AGENT.format(hostile=HOSTILE))
    for name in ("worker", "gsd-executor"):
        git_project.write(
            f"agents/{name}.md", AGENT_FILE.format(name=name, python=sys.executable, script=script)
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
    git_project.write(
        ".planning/STATE.md",
        textwrap.dedent("""\
        # Project State

        ## Current Position

        Phase: 1 of 1 (Alpha)
        Status: Ready to execute
        """),
    )
    git_project.plan(
        "01-01",
        tasks=TASK.format(n=1) + "\n" + TASK.format(n=2),
        files_modified="[src/t01-01_1.py, src/t01-01_2.py]",
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")
    return git_project


def on_pty(cwd: Path, *args: str, timeout: float = 180) -> tuple[int, bytes]:
    """`gsd ARGS` with stdin, stdout and stderr on a real pty; its exit code and every byte
    the terminal got."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm-256color", "COLUMNS": "200"}
    env.pop("CI", None)  # live lines on, as for a person at a terminal
    main, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "gsd", *args],
        cwd=cwd,
        env=env,
        stdin=child,
        stdout=child,
        stderr=child,
    )
    os.close(child)
    got = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: every writer closed its end
                break
            if not chunk:
                break
            got += chunk
        elif process.poll() is not None and not select.select([main], [], [], 0.2)[0]:
            break
    os.close(main)
    return process.wait(timeout=30), bytes(got)


def assert_harmless(shown: bytes, *, visible_form: bool = True) -> None:
    """No byte from the agent that a terminal acts on, and the text still there to read."""
    ours = OWN.sub(b"", shown)
    assert b"\x1b" not in ours, ours[max(0, ours.find(b"\x1b") - 80) :][:200]
    assert b"\x07" not in ours
    text = ours.decode("utf-8", errors="replace")
    assert not C1.search(text), C1.search(text)
    assert not BIDI.search(text), BIDI.search(text)
    assert re.search(rb"\r(?!\n)", ours) is None, "a bare CR that overwrites a line"
    if visible_form:
        assert SHOWN.encode() in ours, ours[-3000:]


def test_execute_phase_errors_status_and_report_show_agent_text_visibly(hostile) -> None:
    root = hostile.root
    code, shown = on_pty(root, "execute-phase", "1")
    assert code != 0  # task 2 reported a failure
    assert_harmless(shown)
    assert b"^[[2J" in shown and b"^[]52;c;" in shown and b"\\u202e" in shown
    assert b"M-^[31m" in shown  # the C1 CSI, as `cat -v` shows its byte
    # the records a person cats: STATE.md's blocker, the SUMMARY.md of a rerun's plan
    assert_harmless((root / ".planning/STATE.md").read_bytes())
    for args in (
        ["errors"],
        ["errors", "--format", "markdown"],
        ["status"],
        ["report"],
        ["report", "--format", "markdown"],
    ):
        code, shown = on_pty(root, *args)
        assert code == 0, shown
        assert_harmless(shown, visible_form=args[0] == "errors")
    for args in (["verify", "1"], ["diff", "HEAD~1", "HEAD"], ["show", "01-01"]):
        code, shown = on_pty(root, *args)
        assert b"Traceback" not in shown and code in (0, 1), shown
        assert_harmless(shown, visible_form=False)


@pytest.mark.parametrize("fmt", ["json", "junit", "html"])
def test_machine_formats_on_a_terminal_carry_no_control_byte(hostile, fmt) -> None:
    root = hostile.root
    on_pty(root, "execute-phase", "1")
    for command in (["errors"], ["report"]) if fmt != "junit" else (["report"],):
        if command == ["errors"] and fmt == "html":
            continue
        code, shown = on_pty(root, *command, "--format", fmt)
        assert code == 0, shown
        assert_harmless(shown, visible_form=False)


def test_visible_shows_every_steering_character_as_cat_v_does() -> None:
    assert visible("a\x1b[2Jb\x07c\rd\x7f\x00") == "a^[[2Jb^Gc^Md^?^@"
    assert visible("\u009b31m") == "M-^[31m"
    assert visible("x\u202ey\u2066z") == "x\\u202ey\\u2066z"
    assert visible("one\ntwo\tthree") == "one^Jtwo^Ithree"
    assert visible("one\r\ntwo\tthree\r", lines=True) == "one\ntwo\tthree^M"
    assert visible("héllo wörld 日本 🎉") == "héllo wörld 日本 🎉"


def test_mcp_tools_text_shows_agent_text_visibly(hostile) -> None:
    pytest.importorskip("mcp.server.mcpserver", reason="the MCP SDK 2.x is not installed")
    from tests.test_mcp import call_tools

    root = hostile.root
    on_pty(root, "execute-phase", "1")
    _, results = call_tools(root, [("errors", {}), ("status", {}), ("report", {})])
    for result in results:
        text = "".join(part.text for part in result.content)
        assert_harmless(text.encode(), visible_form=result is results[0])
    assert SHOWN in "".join(part.text for part in results[0].content)


def test_a_summary_carries_an_agents_text_visibly() -> None:
    """SUMMARY.md is cat'ed by people: an attempt's failure details and a deviation with
    escapes come out as `cat -v` shows them (the agent's file names too)."""
    from tests.test_summary import outcome, render

    text = render(
        [
            outcome(1, success=False, error_type="report-failure", details=HOSTILE, commit=None),
            outcome(1, attempt=2, deviations=[HOSTILE], changed=["src/\x1b]0;x\x07.py"]),
        ]
    )
    assert_harmless(text.encode())
    assert "^[]0;x^G" in text
