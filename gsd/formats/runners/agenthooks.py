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
  PreToolUse gets `tool_name`, `tool_input` (Bash: `command`, sdk-tools.d.ts
  `BashInput`) and answers a deny as `hookSpecificOutput: {hookEventName: "PreToolUse",
  permissionDecision: "deny", permissionDecisionReason}` (the binary's `KC` reader of
  hook output). SessionEnd gets `reason` ("When a session is ending ... Exit code 0 -
  command completes successfully"). SubagentStop gets `stop_hook_active`, `agent_id`,
  `agent_type`, `agent_transcript_path` and `last_assistant_message` ("Text content of
  the last assistant message before stopping"); exit 0 shows nothing to the model.
  PreCompact gets `trigger` ("manual"/"auto") and `custom_instructions`: "Exit code 0 -
  stdout appended as custom compact instructions". `systemMessage`, a field of every
  event's JSON answer, is for the user (a SessionEnd hook's is shown nowhere but the
  debug log: the binary's `qIn` writes only a failed hook's output).
- Gemini CLI 0.61.0 (@google/gemini-cli, bundle/docs/hooks/reference.md; the AfterTool
  handling in bundle/chunk-5FZXKDXH.js): the same base fields plus `timestamp`; AfterTool
  adds `tool_name`, `tool_input` (write_file and replace: `file_path`, docs/reference/
  tools.md), `tool_response`. Exit 0 with stdout JSON `{"decision": "deny", "reason": ..}`
  replaces the tool result the model sees with "Tool result blocked: <reason>"; SessionStart
  takes `hookSpecificOutput.additionalContext`. Stdout must hold nothing but that JSON.
  BeforeTool (`tool_input` of run_shell_command: `command`) takes the same deny, "sent
  to the agent as a tool error"; SessionEnd (`reason`), AfterAgent (`prompt`,
  `prompt_response`, `stop_hook_active`) and PreCompress (`trigger`) take
  `systemMessage`, shown to the user (a deny from AfterAgent would force a retry).
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
# The shell tool, which the before-a-tool hook watches for plan writes.
SHELL_MATCHERS = {"claude": "Bash", "gemini": "run_shell_command"}
# Event names: Claude Code's PostToolUse and Gemini CLI's AfterTool fire after a tool ran.
EDIT_EVENTS = {"claude": "PostToolUse", "gemini": "AfterTool"}
START_EVENT = "SessionStart"  # the same name in both
# A hook's time limit: Claude Code counts seconds, Gemini CLI milliseconds.
TIMEOUTS = {"claude": 60, "gemini": 60_000}


POST_EDIT = "post-edit"
SESSION_START = "session-start"
SESSION_END = "session-end"
PRE_TOOL = "pre-tool"
AFTER_AGENT = "after-agent"
PRE_COMPACT = "pre-compact"
# Every hook gsd can install, in the order the settings list them; `gsd hooks install`
# without `--hook` installs DEFAULT_HOOKS (and keeps any other gsd hook already there).
HOOK_NAMES = (POST_EDIT, SESSION_START, SESSION_END, PRE_TOOL, AFTER_AGENT, PRE_COMPACT)
DEFAULT_HOOKS = (POST_EDIT, SESSION_START)

# name -> (each CLI's event, each CLI's matcher or None, what the hook does)
_HOOKS: dict[str, tuple[dict[str, str], dict[str, str] | None, str]] = {
    POST_EDIT: (EDIT_EVENTS, EDIT_MATCHERS, "gsd validates a plan file the agent wrote or edited"),
    SESSION_START: (
        {"claude": START_EVENT, "gemini": START_EVENT},
        None,  # no matcher: every kind of start
        "gsd status, in a few lines, for the agent",
    ),
    SESSION_END: (
        {"claude": "SessionEnd", "gemini": "SessionEnd"},
        None,
        "a one-screen summary of what gsd ran, for the user",
    ),
    PRE_TOOL: (
        {"claude": "PreToolUse", "gemini": "BeforeTool"},
        SHELL_MATCHERS,
        "gsd denies a shell command that writes a plan file (use Write/Edit)",
    ),
    AFTER_AGENT: (
        {"claude": "SubagentStop", "gemini": "AfterAgent"},
        None,
        "gsd checks a delegated answer for its Task Report (advisory)",
    ),
    PRE_COMPACT: (
        {"claude": "PreCompact", "gemini": "PreCompress"},
        None,
        "gsd saves a state snapshot before the context is compacted",
    ),
}


def hook_groups(
    cli: str, command: str, names: tuple[str, ...] = DEFAULT_HOOKS
) -> dict[str, dict[str, Any]]:
    """The settings entries for `cli`, by event, each running `<command> hooks run
    <cli>-<what>` (`command`: the gsd program as a shell word or words), for the hooks
    `names` (in HOOK_NAMES' order)."""
    named = cli == "gemini"  # Gemini CLI shows `name` in /hooks panel; Claude Code has none
    groups: dict[str, dict[str, Any]] = {}
    for what in HOOK_NAMES:
        if what not in names:
            continue
        events, matchers, about = _HOOKS[what]
        entry: dict[str, Any] = {"type": "command", "command": f"{command} hooks run {cli}-{what}"}
        if named:
            entry = {"name": f"gsd-{what}", **entry, "description": about}
        group: dict[str, Any] = {"matcher": matchers[cli]} if matchers else {}
        groups[events[cli]] = {**group, "hooks": [{**entry, "timeout": TIMEOUTS[cli]}]}
    return groups


class HookInput(NamedTuple):
    """What gsd reads of a hook's stdin ('' for a field the event does not send)."""

    event: str  # hook_event_name
    cwd: str  # the agent's working directory
    tool: str  # tool_name
    file_path: str  # tool_input.file_path
    command: str = ""  # tool_input.command: the shell tools' command line
    session_id: str = ""
    answer: str = ""  # SubagentStop's last_assistant_message, AfterAgent's prompt_response
    prompt: str = ""  # AfterAgent's prompt (claude sends its sub-agent's in the transcript)
    agent_transcript: str = ""  # SubagentStop's agent_transcript_path
    agent_type: str = ""  # SubagentStop's agent_type
    trigger: str = ""  # PreCompact/PreCompress: manual or auto
    reason: str = ""  # SessionEnd: why the session ended


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
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    answer = data.get("last_assistant_message", data.get("prompt_response"))
    found = HookInput(
        event=_text(data.get("hook_event_name")),
        cwd=_text(data.get("cwd")),
        tool=_text(data.get("tool_name")),
        file_path=_text(tool_input.get("file_path")),
        command=_text(tool_input.get("command")),
        session_id=_text(data.get("session_id")),
        answer=_text(answer),
        prompt=_text(data.get("prompt")),
        agent_transcript=_text(data.get("agent_transcript_path")),
        agent_type=_text(data.get("agent_type")),
        trigger=_text(data.get("trigger")),
        reason=_text(data.get("reason")),
    )
    paths = (("cwd", found.cwd), ("tool_input.file_path", found.file_path))
    for name, value in (*paths, ("agent_transcript_path", found.agent_transcript)):
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


def deny_tool(cli: str, reason: str) -> Answer:
    """Refuse a tool call before it runs, `reason` going to the model, as `cli` documents."""
    if cli == "claude":  # PreToolUse's own JSON: the call is not made, the reason is its result
        output = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
        return Answer(0, stdout=json.dumps({"hookSpecificOutput": output}) + "\n")
    # Gemini CLI's BeforeTool: "reason ... is sent to the agent as a tool error"
    return Answer(0, stdout=json.dumps({"decision": "deny", "reason": reason}) + "\n")


def tell_user(text: str) -> Answer:
    """Show `text` to the user (`systemMessage`, read by both CLIs on every event); it
    blocks nothing and the model does not see it."""
    from gsd.core.visible import visible  # plan ids, log lines: anyone's text

    return Answer(0, stdout=json.dumps({"systemMessage": visible(text, lines=True)}) + "\n")


def before_compaction(cli: str, text: str) -> Answer:
    """What a hook says before the context is compacted: Claude Code appends a PreCompact
    hook's plain stdout to the compaction's instructions, so the summary keeps `text` for
    the model; Gemini CLI's PreCompress takes only `systemMessage`, shown to the user."""
    if cli == "claude":
        return Answer(0, stdout=text + "\n")
    return tell_user(text)


_TRANSCRIPT_BYTES = 4 << 20  # of a sub-agent's transcript, read at most


def transcript_texts(path: str) -> tuple[str, str]:
    """A Claude Code transcript's (JSONL) first user text and last assistant text."""
    import os
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would never end
            return "", ""
        with open(path, "rb") as handle:
            data = handle.read(_TRANSCRIPT_BYTES)
    except OSError:
        return "", ""
    first = last = ""
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        message = record.get("message") if isinstance(record, dict) else None
        if not isinstance(message, dict):
            continue
        text = _content_text(message.get("content"))
        if message.get("role") == "user" and text and not first:
            first = text
        elif message.get("role") == "assistant" and text:
            last = text
    return first, last


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
    return "\n".join(p for p in parts if isinstance(p, str))
