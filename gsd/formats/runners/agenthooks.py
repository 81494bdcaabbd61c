"""The agent CLIs' hook protocol: the JSON Claude Code and Gemini CLI send a hook, its answer.

What each CLI sends and expects, as read from their installed releases:

- Claude Code 2.1.330 (@anthropic-ai/claude-code, the hook events table in the
  claude-code-linux-x64 binary; https://code.claude.com/docs/en/hooks): a hook gets one
  JSON object on stdin with `session_id`, `transcript_path`, `cwd`, `hook_event_name`;
  PostToolUse adds `tool_name`, `tool_input` (Write and Edit: `file_path`, see
  sdk-tools.d.ts `FileWriteInput`/`FileEditInput`), `tool_response`, `tool_use_id`.
  "PostToolUse: Exit code 2 - show stderr to model immediately"; "SessionStart: Exit
  code 0 - stdout shown to Claude", or JSON `hookSpecificOutput.additionalContext` with
  `hookEventName: "SessionStart"`. Any other exit code shows stderr to the user only.
- Gemini CLI 0.61.0 (@google/gemini-cli, bundle/docs/hooks/reference.md; the AfterTool
  handling in bundle/chunk-5FZXKDXH.js): the same base fields plus `timestamp`; AfterTool
  adds `tool_name`, `tool_input` (write_file and replace: `file_path`, docs/reference/
  tools.md), `tool_response`. Exit 0 with stdout JSON `{"decision": "deny", "reason": ..}`
  replaces the tool result the model sees with "Tool result blocked: <reason>"; SessionStart
  takes `hookSpecificOutput.additionalContext`. Stdout must hold nothing but that JSON.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from gsd.core.errors import InputError

CLIS = ("claude", "gemini")

# The tools that write or edit a file, as each CLI's matcher names them (both read the
# matcher as a regular expression). Claude Code 2.1.330 lists its file-editing tools as
# Write, Edit, MultiEdit, NotebookEdit; a notebook is never a plan.
EDIT_MATCHERS = {"claude": "Write|Edit|MultiEdit", "gemini": "write_file|replace"}
# Event names: Claude Code's PostToolUse and Gemini CLI's AfterTool fire after a tool ran.
EDIT_EVENTS = {"claude": "PostToolUse", "gemini": "AfterTool"}
START_EVENT = "SessionStart"  # the same name in both
# A hook's time limit: Claude Code counts seconds, Gemini CLI milliseconds.
TIMEOUTS = {"claude": 60, "gemini": 60_000}


POST_EDIT = "post-edit"
SESSION_START = "session-start"


def hook_groups(cli: str, command: str) -> dict[str, dict[str, Any]]:
    """The settings entries for `cli`, by event, each running `<command> hooks run
    <cli>-<what>` (`command`: the gsd program as a shell word or words)."""
    named = cli == "gemini"  # Gemini CLI shows `name` in /hooks panel; Claude Code has none

    def hook(what: str, about: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "command", "command": f"{command} hooks run {cli}-{what}"}
        if named:
            entry = {"name": f"gsd-{what}", **entry, "description": about}
        return {**entry, "timeout": TIMEOUTS[cli]}

    edit = hook(POST_EDIT, "gsd validates a plan file the agent wrote or edited")
    start = hook(SESSION_START, "gsd status, in a few lines, for the agent")
    return {
        EDIT_EVENTS[cli]: {"matcher": EDIT_MATCHERS[cli], "hooks": [edit]},
        START_EVENT: {"hooks": [start]},  # no matcher: every kind of start
    }


class HookInput(NamedTuple):
    """What gsd reads of a hook's stdin."""

    event: str  # hook_event_name
    cwd: str  # the agent's working directory ('' when not sent)
    tool: str  # tool_name ('' for events without a tool)
    file_path: str  # tool_input.file_path ('' when the tool names no file)


class Answer(NamedTuple):
    """What the hook command prints and the exit code it ends with."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""


def parse_input(text: str) -> HookInput:
    """The fields gsd uses of the JSON object a CLI writes to a hook's stdin."""
    hint = "gsd hooks run reads the JSON an agent CLI sends on stdin"
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"hook input is not JSON ({exc})", hint=hint) from None
    except RecursionError:
        raise InputError("hook input is JSON nested too deeply to read", hint=hint) from None
    if not isinstance(data, dict):
        raise InputError(f"hook input is a JSON {type(data).__name__}, not an object")
    tool_input = data.get("tool_input")
    file_path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    found = HookInput(
        event=_text(data.get("hook_event_name")),
        cwd=_text(data.get("cwd")),
        tool=_text(data.get("tool_name")),
        file_path=_text(file_path),
    )
    for name, value in (("cwd", found.cwd), ("tool_input.file_path", found.file_path)):
        if "\0" in value:  # no path holds one: the OS refuses it
            raise InputError(f"hook input: {name} holds a NUL byte", hint=hint)
    return found


def block_edit(cli: str, message: str) -> Answer:
    """Hand `message` back to the model after an edit, the way `cli` documents it."""
    if cli == "claude":  # exit 2: stderr goes to the model; the edit stays on disk
        return Answer(2, stderr=message + "\n")
    # Gemini CLI: the JSON form, its preferred one; `reason` replaces the tool's result
    return Answer(0, stdout=json.dumps({"decision": "deny", "reason": message}) + "\n")


def add_context(cli: str, text: str) -> Answer:
    """Give the agent `text` at the start of a session (both CLIs take the same JSON)."""
    del cli  # the same shape for both; kept so that callers say which CLI they answer
    answer = {"hookSpecificOutput": {"hookEventName": START_EVENT, "additionalContext": text}}
    return Answer(0, stdout=json.dumps(answer) + "\n")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
