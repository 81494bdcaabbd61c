"""`gsd hooks install|uninstall --claude|--gemini` and `gsd hooks run`, fed what the CLIs send.

The hook commands are run as the CLIs run them: the `command` string from the written
settings.json through `sh -c`, in the project, with the CLI's JSON on stdin. The inputs
follow each CLI's documented shape:

- Claude Code 2.1.330: https://code.claude.com/docs/en/hooks ("PostToolUse input",
  "SessionStart input"); the Write/Edit `tool_input` fields are in
  @anthropic-ai/claude-code/sdk-tools.d.ts (FileWriteInput, FileEditInput).
- Gemini CLI 0.61.0: @google/gemini-cli/bundle/docs/hooks/reference.md ("Base input
  schema", "AfterTool", "SessionStart"); write_file/replace arguments in
  bundle/docs/reference/tools.md.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gsd.formats.runners import clisettings
from tests.conftest import REPO, plan_text

PLAN = ".planning/phases/01-alpha/01-01-PLAN.md"
BROKEN = plan_text().replace("type: execute", "type: bogus")  # GSD003 on line 4

# What a user's project may already hold: other keys, other hooks on the same events.
CLAUDE_BEFORE: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "npx prettier -w"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
    "model": "opus",
}
GEMINI_BEFORE: dict[str, Any] = {
    "general": {"vimMode": True},
    "hooks": {
        "AfterTool": [
            {
                "matcher": "write_file",
                "hooks": [{"name": "fmt", "type": "command", "command": "./fmt.sh"}],
            }
        ],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "x"}]}],
    },
}


def claude_post_edit(cwd: Path, file_path: str, tool: str = "Write") -> dict[str, Any]:
    """Claude Code's PostToolUse input (code.claude.com/docs/en/hooks)."""
    tool_input = {"file_path": file_path, "content": "..."}
    if tool == "Edit":
        tool_input = {"file_path": file_path, "old_string": "a", "new_string": "b"}
    return {
        "session_id": "abc123",
        "transcript_path": "/home/u/.claude/projects/p/00893aaf.jsonl",
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": {"filePath": file_path, "success": True},
        "tool_use_id": "toolu_01ABC123",
    }


def gemini_after_tool(cwd: Path, file_path: str, tool: str = "write_file") -> dict[str, Any]:
    """Gemini CLI's AfterTool input (bundle/docs/hooks/reference.md)."""
    return {
        "session_id": "s-1",
        "transcript_path": "/home/u/.gemini/tmp/p/chats/session.json",
        "cwd": str(cwd),
        "hook_event_name": "AfterTool",
        "timestamp": "2026-11-24T10:00:00.000Z",
        "tool_name": tool,
        "tool_input": {"file_path": file_path, "content": "..."},
        "tool_response": {"llmContent": f"Successfully wrote to {file_path}", "returnDisplay": ""},
    }


def session_start(cli: str, cwd: Path) -> dict[str, Any]:
    """SessionStart input: Claude Code's has `source` and `model`; Gemini CLI's `source`."""
    base = {
        "session_id": "s-1",
        "transcript_path": "/t.jsonl",
        "cwd": str(cwd),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    return (
        {**base, "model": "claude-sonnet-4-6"}
        if cli == "claude"
        else {**base, "timestamp": "2026-11-24T10:00:00.000Z"}
    )


@pytest.fixture
def program(tmp_path: Path) -> Path:
    """A gsd program that runs this checkout's gsd (what the settings will name)."""
    path = tmp_path / "bin" / "gsd"
    path.parent.mkdir(parents=True)
    path.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)} -m gsd "$@"\n'
    )
    path.chmod(0o755)
    return path


def settings_path(root: Path, cli: str) -> Path:
    return root / clisettings.SETTINGS[cli]


def command_for(root: Path, cli: str, event: str) -> str:
    """The command gsd installed for `event`, read back from the settings file."""
    data = json.loads(settings_path(root, cli).read_text())
    commands = [
        h["command"] for g in data["hooks"][event] for h in g["hooks"] if clisettings.is_ours(h)
    ]
    assert len(commands) == 1, commands
    return commands[0]


Done = subprocess.CompletedProcess[str]


def fire(command: str, payload: str | dict[str, Any], cwd: Path) -> Done:
    """Run a hook command as the CLIs do: a shell line, the JSON on stdin."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        ["sh", "-c", command], input=text, cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def installed(project, gsd, program: Path):
    """The project with both CLIs' hooks installed over settings that hold the user's."""
    for cli, before in (("claude", CLAUDE_BEFORE), ("gemini", GEMINI_BEFORE)):
        project.write(clisettings.SETTINGS[cli], json.dumps(before, indent=2) + "\n")
    result = gsd("hooks", "install", "--claude", "--gemini", "--gsd", str(program))
    assert result.code == 0, result.err
    return project


# -- install / uninstall -----------------------------------------------------------------


@pytest.mark.parametrize(("cli", "before"), [("claude", CLAUDE_BEFORE), ("gemini", GEMINI_BEFORE)])
def test_install_keeps_the_users_settings_and_uninstall_restores_them(
    installed, gsd, cli: str, before: dict[str, Any]
) -> None:
    path = settings_path(installed.root, cli)
    data = json.loads(path.read_text())
    assert list(data) == list(before)  # other keys kept, in their order
    assert clisettings.without_hooks(data) == before
    for event, groups in before["hooks"].items():
        assert data["hooks"][event][: len(groups)] == groups  # the user's come first, as were
    edit_event = "PostToolUse" if cli == "claude" else "AfterTool"
    assert command_for(installed.root, cli, edit_event).endswith(f"hooks run {cli}-post-edit")
    assert command_for(installed.root, cli, "SessionStart").endswith(f"{cli}-session-start")

    written = path.read_bytes()
    again = gsd("hooks", "install", f"--{cli}", "--gsd", str(REPO / "no-such"))
    assert again.code == 2 and "not an executable" in again.err  # --gsd is checked
    again = gsd("hooks", "install", f"--{cli}", "--gsd", command_for_program(installed.root, cli))
    assert again.code == 0 and "already" in again.out
    assert path.read_bytes() == written  # idempotent: not even rewritten

    removed = gsd("hooks", "uninstall", f"--{cli}")
    assert removed.code == 0, removed.err
    assert path.read_text() == json.dumps(before, indent=2) + "\n"  # byte for byte
    assert "nothing to do" in gsd("hooks", "uninstall", f"--{cli}").out


def command_for_program(root: Path, cli: str) -> str:
    return shlex.split(command_for(root, cli, "SessionStart"))[0]


def test_gemini_entries_carry_name_and_millisecond_timeout(installed) -> None:
    data = json.loads(settings_path(installed.root, "gemini").read_text())
    ours = [h for g in data["hooks"]["AfterTool"] for h in g["hooks"] if clisettings.is_ours(h)]
    assert ours[0]["name"] == "gsd-post-edit" and ours[0]["timeout"] == 60_000
    group = [g for g in data["hooks"]["AfterTool"] if ours[0] in g["hooks"]][0]
    assert group["matcher"] == "write_file|replace"
    claude = json.loads(settings_path(installed.root, "claude").read_text())
    group = claude["hooks"]["PostToolUse"][-1]
    assert group["matcher"] == "Write|Edit|MultiEdit"
    assert "name" not in group["hooks"][0] and group["hooks"][0]["timeout"] == 60


def test_a_users_hook_added_to_gsds_group_survives_uninstall(installed, gsd) -> None:
    path = settings_path(installed.root, "claude")
    data = json.loads(path.read_text())
    data["hooks"]["SessionStart"][0]["hooks"].append({"type": "command", "command": "echo hi"})
    path.write_text(json.dumps(data, indent=4) + "\n")
    assert gsd("hooks", "uninstall", "--claude").code == 0
    after = json.loads(path.read_text())
    users = {"type": "command", "command": "echo hi"}
    assert after["hooks"]["SessionStart"] == [{"hooks": [users]}]
    assert path.read_text().startswith('{\n    "')  # the file's indent is kept


def test_install_creates_the_file_and_uninstall_removes_what_only_gsd_wrote(project, gsd) -> None:
    assert gsd("hooks", "install", "--claude").code == 0
    path = settings_path(project.root, "claude")
    assert set(json.loads(path.read_text())["hooks"]) == {"PostToolUse", "SessionStart"}
    result = gsd("hooks", "uninstall", "--claude")
    assert result.code == 0 and "held gsd's hooks only" in result.out
    assert not path.exists()


def test_a_bare_program_name_is_written_as_it_is(project, gsd) -> None:
    result = gsd("hooks", "install", "--claude", "--gsd", "gsd-not-installed-here")
    assert result.code == 0 and "no gsd-not-installed-here on PATH" in result.err
    command = command_for(project.root, "claude", "SessionStart")
    assert command == "gsd-not-installed-here hooks run claude-session-start"


def test_an_emptied_hooks_section_goes_but_a_users_empty_one_stays(project, gsd) -> None:
    path = project.write(clisettings.SETTINGS["gemini"], '{"hooks": {"BeforeTool": []}, "x": 1}\n')
    assert gsd("hooks", "install", "--gemini").code == 0
    assert gsd("hooks", "uninstall", "--gemini").code == 0
    assert json.loads(path.read_text()) == {"hooks": {"BeforeTool": []}, "x": 1}
    path.write_text('{"x": 1}\n')
    assert gsd("hooks", "install", "--gemini").code == 0
    assert gsd("hooks", "uninstall", "--gemini").code == 0
    assert json.loads(path.read_text()) == {"x": 1}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        pytest.param('{\n  // mine\n  "a": 1\n}\n', "has comments", id="comments"),
        pytest.param("{not json", "is not JSON", id="not-json"),
        pytest.param("[1]", "not an object", id="array"),
        pytest.param('{"hooks": []}', "`hooks` is not an object", id="hooks-list"),
        pytest.param('{"hooks": {"Stop": {}}}', "`hooks.Stop` is not a list", id="event-object"),
    ],
)
def test_a_settings_file_gsd_cannot_edit_is_one_line_and_untouched(
    project, gsd, text: str, said: str
) -> None:
    path = project.write(clisettings.SETTINGS["claude"], text)
    result = gsd("hooks", "install", "--claude")
    assert result.code != 0 and said in result.err
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) <= 2
    assert path.read_text() == text


def test_without_flags_hooks_install_is_still_the_git_hook(git_project, gsd, program) -> None:
    result = gsd("hooks", "install", "--gsd", str(program))
    assert result.code == 0 and "pre-commit" in result.out
    assert not (git_project.root / ".claude").exists()
    assert "pre-commit" in gsd("hooks", "uninstall").out


# -- the hook commands -------------------------------------------------------------------


def test_claude_post_edit_blocks_a_broken_plan_with_exit_2(installed) -> None:
    command = command_for(installed.root, "claude", "PostToolUse")
    plan = installed.plan("01-01", BROKEN)
    done = fire(command, claude_post_edit(installed.root, str(plan)), installed.root)
    assert done.returncode == 2, done.stderr
    assert "GSD003" in done.stderr and PLAN in done.stderr and done.stdout == ""
    edit = claude_post_edit(installed.root, PLAN, tool="Edit")  # a relative path too
    assert fire(command, edit, installed.root).returncode == 2


def test_gemini_after_tool_denies_a_broken_plan_in_json(installed) -> None:
    command = command_for(installed.root, "gemini", "AfterTool")
    plan = installed.plan("01-01", BROKEN)
    done = fire(command, gemini_after_tool(installed.root, str(plan), "replace"), installed.root)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)  # stdout is that JSON and nothing else
    assert answer["decision"] == "deny" and "GSD003" in answer["reason"]
    assert "was saved" in answer["reason"]  # the reason replaces the tool's own result


@pytest.mark.parametrize("cli", ["claude", "gemini"])
def test_a_good_plan_and_a_non_plan_file_pass_silently(installed, cli: str) -> None:
    event = "PostToolUse" if cli == "claude" else "AfterTool"
    command = command_for(installed.root, cli, event)
    make = claude_post_edit if cli == "claude" else gemini_after_tool
    good = installed.plan("01-01")
    other = installed.write("src/x.py", "print(1)\n")
    outside = installed.write("notes/01-01-PLAN.md", BROKEN)  # not under .planning/
    for path in (good, other, outside):
        done = fire(command, make(installed.root, str(path)), installed.root)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), path


@pytest.mark.parametrize("cli", ["claude", "gemini"])
@pytest.mark.parametrize("payload", ["{not json", "[]", ""])
def test_bad_input_is_one_line_and_never_blocks(installed, cli: str, payload: str) -> None:
    event = "PostToolUse" if cli == "claude" else "AfterTool"
    done = fire(command_for(installed.root, cli, event), payload, installed.root)
    assert done.returncode == 1  # not 2: neither CLI blocks on it (user-only warning)
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith(f"gsd hooks run {cli}-post-edit: hook input is")


@pytest.mark.parametrize("cli", ["claude", "gemini"])
def test_session_start_gives_the_status_in_a_few_lines(installed, cli: str) -> None:
    installed.plan("01-01")
    installed.plan("01-02", plan="02", depends_on="[01-01]", wave=2)
    command = command_for(installed.root, cli, "SessionStart")
    done = fire(command, session_start(cli, installed.root), installed.root)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart"
    text = answer["additionalContext"]
    assert "phase 01-alpha: 0/2 plans done; next: 01-01" in text
    assert "blockers: none" in text and len(text.splitlines()) <= 14


def test_session_start_outside_a_project_says_nothing(tmp_path: Path, program: Path) -> None:
    command = f"{shlex.quote(str(program))} hooks run claude-session-start"
    elsewhere = tmp_path / "empty"
    elsewhere.mkdir()
    done = fire(command, session_start("claude", elsewhere), elsewhere)
    assert (done.returncode, done.stdout) == (0, "")


def test_an_unknown_hook_name_is_one_line_and_not_blocking(gsd) -> None:
    result = gsd("hooks", "run", "codex-post-edit")
    assert result.code == 1 and "no hook named 'codex-post-edit'" in result.err
