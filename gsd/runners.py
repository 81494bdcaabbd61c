"""Runners: the argv for claude / gemini / codex / command, and reading what they print.

Pure functions, no I/O: the caller writes the prompt file, spawns the program
through `gsd.proc` with the prompt on stdin, and hands the captured output back
to `parse_output`; `gsd.result` reads the Task Report and judges the run
(SPEC section 5).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # gsd.agents imports pydantic; keep `import gsd.runners` light
    from gsd.agents import Agent

# --- argv -------------------------------------------------------------------------

# Claude Code built-in tool names (CLI reference: `--tools "Bash,Edit,Read"`).
# `--tools` fixes the set the model sees, `--allowedTools` pre-approves it so a
# headless run never stops at a prompt, and `--disallowedTools` is the deny list,
# which wins over every mode (deny rules apply even under bypassPermissions).
# MultiEdit only appears in the deny list: older releases had it, and a deny rule
# naming a tool that no longer exists is harmless.
_CLAUDE_READ = ("Read", "Glob", "Grep")
_CLAUDE_WEB = ("WebSearch", "WebFetch")
_CLAUDE_SHELL = ("Bash",)
_CLAUDE_WRITE = ("Write", "Edit", "NotebookEdit")
_CLAUDE_DENY_WRITE = ("Write", "Edit", "MultiEdit", "NotebookEdit")

# `--permission-mode` (default, acceptEdits, plan, bypassPermissions, ...) per tier.
# read+shell sets `default` explicitly so a user's settings.json `defaultMode` (say
# bypassPermissions) cannot widen it; in print mode nobody can answer a permission
# prompt, so only the pre-approved tools run.
_CLAUDE_MODE = {
    "read-only": "plan",
    "read+shell": "default",
    "read+write": "acceptEdits",
    "full": "bypassPermissions",
}

# Gemini CLI: the `-p` text is "appended to stdin input" (cli-reference; headless.md:
# stdin content is prepended to the prompt), so the whole prompt goes to stdin and
# argv carries only this fixed line after it.
GEMINI_INSTRUCTION = "Carry out the task above, then print the Task Report as instructed."
# `--approval-mode` choices: default, auto_edit, yolo, plan (cli-reference). In
# headless `default` mode, tools that need approval are refused, which would
# drop the shell too; `--allowed-tools run_shell_command` (deprecated in favour of
# the policy engine, but still accepted, and honoured headless since PR #9114)
# lets exactly the shell through.
_GEMINI_MODE = {
    "read-only": "plan",
    "read+shell": "default",
    "read+write": "auto_edit",
    "full": "yolo",
}

# Codex has no "shell without writes" switch: `codex exec` does not ask for command
# or edit approvals (docs/exec.md), and its commands run inside the sandbox.
# read+shell therefore uses `read-only`, whose commands may run but cannot write;
# read+write cannot be denied the shell, so gsd's git check after the run (SPEC 6)
# is what holds that tier.
_CODEX_SANDBOX = {
    "read-only": "read-only",
    "read+shell": "read-only",
    "read+write": "workspace-write",
    "full": "danger-full-access",
}


def check_model(model: str) -> str:
    """The model name, or ValueError when it could be read as an option or split."""
    if (
        not model
        or model.startswith("-")
        or any(ch.isspace() or not ch.isprintable() for ch in model)
    ):
        raise ValueError(
            f"unusable model name {model!r}: empty, starts with '-', "
            "or holds whitespace or control characters"
        )
    return model


def build_argv(agent: Agent, model: str | None) -> list[str]:
    """The argv that runs `agent` (SPEC 5 table): never a shell, never the prompt.

    `model` is the model to ask for, None for no model flag; the caller chooses it
    (GSD_DEFAULT_MODEL, else the agent's `model`). Only claude has a turn limit
    flag, from the agent's `max_turns`. The prompt goes to the program's stdin.
    ValueError for a model name that could be read as an option or split.
    """
    if model is not None:
        check_model(model)
    tier = agent.tier
    runner = agent.runner
    if runner == "claude":
        # `-p` without a positional prompt reads the prompt from stdin
        argv = ["claude", "-p", "--output-format", "json"]
        if model is not None:
            argv += ["--model", model]
        if agent.max_turns is not None:
            argv += ["--max-turns", str(agent.max_turns)]
        argv += _claude_tier_flags(tier, _has_web(agent))
    elif runner == "gemini":
        argv = ["gemini", "-p", GEMINI_INSTRUCTION, "--output-format", "json"]
        if model is not None:
            argv += ["-m", model]
        argv += ["--approval-mode", _GEMINI_MODE[tier]]
        if tier == "read+shell":
            argv += ["--allowed-tools", "run_shell_command"]
    elif runner == "codex":
        # `codex exec --help`: "if `-` is used, instructions are read from stdin"
        argv = ["codex", "exec", "-", "--json"]
        if model is not None:
            argv += ["-m", model]
        # Codex refuses to run outside a git repository "to avoid destructive
        # changes"; gsd always runs in a repository or worktree and checkpoints it
        # first, so the check adds nothing and could only refuse a run.
        argv += ["--sandbox", _CODEX_SANDBOX[tier], "--skip-git-repo-check"]
    else:  # runner: command; the Agent model insists on a non-empty `command`
        argv = list(agent.command or ())
    return argv


def run_env(
    agent_name: str,
    *,
    repo: str,
    prompt_file: str,
    result_file: str,
    phase: str,
    plan: str,
    task: int,
) -> dict[str, str]:
    """The variables gsd adds for every runner (SPEC 5); the caller merges os.environ.

    ValueError for a NUL character, which no program can receive in its environment.
    """
    env = {
        "GSD_PHASE": phase,
        "GSD_PLAN": plan,
        "GSD_TASK": str(task),
        "GSD_SPECIALIST": agent_name,
        "GSD_PROMPT_FILE": prompt_file,
        "GSD_RESULT_FILE": result_file,
        "GSD_REPO": repo,
    }
    for key, value in env.items():
        if "\x00" in value:
            raise ValueError(f"{key} holds a NUL character")
    return env


def _has_web(agent: Agent) -> bool:
    from gsd.agents import WEB_TOOLS

    return bool(WEB_TOOLS & set(agent.tools))


def _claude_tier_flags(tier: str, web: bool) -> list[str]:
    mode = ["--permission-mode", _CLAUDE_MODE[tier]]
    if tier == "full":
        return mode
    read = [*_CLAUDE_READ, *(_CLAUDE_WEB if web else ())]
    granted, denied = {
        "read-only": (read, [*_CLAUDE_SHELL, *_CLAUDE_DENY_WRITE]),
        "read+shell": ([*read, *_CLAUDE_SHELL], [*_CLAUDE_DENY_WRITE]),
        "read+write": ([*read, *_CLAUDE_WRITE], [*_CLAUDE_SHELL]),
    }[tier]
    if not web:
        denied += _CLAUDE_WEB
    tools = ",".join(granted)
    return [*mode, "--tools", tools, "--allowedTools", tools, "--disallowedTools", ",".join(denied)]


# --- runner output ----------------------------------------------------------------


class RunnerOutput(NamedTuple):
    """What a runner said, read from its structured output when there is one."""

    text: str  # the agent's final text (the raw stdout when nothing structured)
    is_error: bool
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    structured: bool  # the runner's JSON (or the command's result file) was found


def parse_output(runner: str, stdout: str, result_file_text: str | None = None) -> RunnerOutput:
    """Read one run's output; never raises on bad input (structured=False, text=stdout).

    claude  `--output-format json`: one object `{"type": "result", "subtype",
            "is_error", "result", "total_cost_usd", "usage": {...}}`; the last line
            that is such an object wins, so log lines before it do no harm. A
            subtype other than `success` (`error_max_turns`, `error_during_execution`)
            is an error even when `is_error` is false. Input tokens count the cache:
            input_tokens + cache_creation_input_tokens + cache_read_input_tokens.
    gemini  `--output-format json`: `{"response", "stats": {"models": {name:
            {"tokens": {"prompt", "candidates", ...}}}}, "error"?}`; tokens are
            summed over models (prompt -> input, candidates -> output); an `error`
            object (`{"type", "message", "code"}`) is an error.
    codex   `exec --json` JSONL: the text of the last `item.completed` agent_message;
            usage summed over `turn.completed` events (input_tokens already holds
            cached_input_tokens); `turn.failed` is an error, and so is an `error`
            event not followed by a `turn.completed` (Codex reports its stream
            reconnects as `error` events and then finishes normally).
    command the optional JSON object the program writes to $GSD_RESULT_FILE:
            `{"result": str, "is_error": bool, "input_tokens": int,
            "output_tokens": int, "cost_usd": float}`, every key optional; without
            `result` the text is stdout. No file, or no object in it: raw stdout.
    """
    try:
        found = _PARSERS[runner](stdout, result_file_text) if runner in _PARSERS else None
    except (ValueError, TypeError, AttributeError, RecursionError):
        found = None
    return found or RunnerOutput(stdout, False, None, None, None, False)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _json_lines(text: str) -> Iterator[Any]:
    """Each line of `text` that is a JSON object or array on its own, in order."""
    for line in text.splitlines():
        line = line.strip()
        if line[:1] in ("{", "[") and (value := _loads(line)) is not None:
            yield value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _total(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _claude(stdout: str, _result_file: str | None) -> RunnerOutput | None:
    result: dict[str, Any] | None = None
    candidates = [*_json_lines(stdout), _loads(stdout.strip())]
    for value in candidates:
        # `--verbose` prints a JSON array of messages whose last one is the result
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict) and item.get("type") == "result":
                result = item
    if result is None:
        return None
    usage = result.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    base = _int(usage.get("input_tokens"))
    cache = [
        _int(usage.get("cache_creation_input_tokens")),
        _int(usage.get("cache_read_input_tokens")),
    ]
    subtype = result.get("subtype")
    is_error = result.get("is_error") is True or (isinstance(subtype, str) and subtype != "success")
    text = result.get("result")
    cost = result.get("total_cost_usd", result.get("cost_usd"))  # cost_usd: old name
    return RunnerOutput(
        text if isinstance(text, str) else "",
        is_error,
        _total([base, *cache]) if base is not None else None,
        _int(usage.get("output_tokens")),
        _float(cost),
        True,
    )


_GEMINI_KEYS = ("response", "stats", "error")
# A pretty-printed object starts at column 0; its inner lines are indented.
_TOP_OBJECT_RE = re.compile(r"^\{", re.MULTILINE)


def _gemini(stdout: str, _result_file: str | None) -> RunnerOutput | None:
    obj = _loads(stdout.strip())
    if not (isinstance(obj, dict) and any(k in obj for k in _GEMINI_KEYS)):
        obj = None
        decoder = json.JSONDecoder()
        for match in reversed(list(_TOP_OBJECT_RE.finditer(stdout))):
            try:
                value, _end = decoder.raw_decode(stdout, match.start())
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict) and any(k in value for k in _GEMINI_KEYS):
                obj = value
                break
    if obj is None:
        return None
    error = obj.get("error")
    response = obj.get("response")
    text = response if isinstance(response, str) else ""
    if not text and isinstance(error, dict) and isinstance(error.get("message"), str):
        text = error["message"]
    prompts: list[int | None] = []
    candidates: list[int | None] = []
    stats = obj.get("stats")
    models = stats.get("models") if isinstance(stats, dict) else None
    for model_stats in models.values() if isinstance(models, dict) else ():
        tokens = model_stats.get("tokens") if isinstance(model_stats, dict) else None
        if isinstance(tokens, dict):
            prompts.append(_int(tokens.get("prompt")))
            candidates.append(_int(tokens.get("candidates")))
    return RunnerOutput(text, bool(error), _total(prompts), _total(candidates), None, True)


def _codex(stdout: str, _result_file: str | None) -> RunnerOutput | None:
    structured = failed = False
    pending_error: str | None = None
    message: str | None = None
    failure = ""
    inputs: list[int | None] = []
    outputs: list[int | None] = []
    for event in _json_lines(stdout):
        kind = event.get("type") if isinstance(event, dict) else None
        if not isinstance(kind, str):
            continue
        if kind.startswith(("thread.", "turn.", "item.")) or kind == "error":
            structured = True
        if kind == "item.completed" and isinstance(event.get("item"), dict):
            item = event["item"]
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                message = item["text"]
        elif kind == "turn.completed":
            pending_error = None
            usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
            inputs.append(_int(usage.get("input_tokens")))
            outputs.append(_int(usage.get("output_tokens")))
        elif kind == "turn.failed":
            failed = True
            error = event.get("error")
            failure = str(error.get("message", "")) if isinstance(error, dict) else ""
        elif kind == "error":
            pending_error = str(event.get("message", ""))
    if not structured:
        return None
    is_error = failed or pending_error is not None
    text = message if message is not None else (failure or pending_error or "")
    return RunnerOutput(text, is_error, _total(inputs), _total(outputs), None, True)


def _command(stdout: str, result_file: str | None) -> RunnerOutput | None:
    data = _loads(result_file.strip()) if result_file else None
    if not isinstance(data, dict):
        return None
    result = data.get("result")
    return RunnerOutput(
        result if isinstance(result, str) else stdout,
        data.get("is_error") is True,
        _int(data.get("input_tokens")),
        _int(data.get("output_tokens")),
        _float(data.get("cost_usd")),
        True,
    )


_PARSERS = {"claude": _claude, "gemini": _gemini, "codex": _codex, "command": _command}
