"""Runners: the argv for claude / gemini / codex / command, and reading what they print.

Pure functions, no I/O: the caller writes the prompt file, spawns the program
through `gsd.io.proc` with the prompt on stdin, and hands the captured output back
to `parse_output`; `gsd.core.result` reads the Task Report and judges the run
(SPEC section 5).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # gsd.formats.agents imports pydantic; keep `import gsd.formats.runners` light
    from gsd.formats.agents import Agent

# --- argv -------------------------------------------------------------------------

# Claude Code built-in tool names (CLI reference: `--tools "Bash,Edit,Read"`).
# `--tools` fixes the set the model sees, `--allowedTools` pre-approves it so a
# headless run never stops at a prompt, and `--disallowedTools` is the deny list,
# which wins over every mode (deny rules apply even under bypassPermissions).
# Every name here is one claude-code 2.1.330 knows: a deny rule naming anything else
# ("MultiEdit", "LS", "NotebookRead") draws `Permission deny rule "MultiEdit" matches
# no known tool - check for typos.` in its debug log (tests/test_clis.py checks).
_CLAUDE_READ = ("Read", "Glob", "Grep")
_CLAUDE_WEB = ("WebSearch", "WebFetch")
_CLAUDE_SHELL = ("Bash",)
_CLAUDE_WRITE = ("Write", "Edit", "NotebookEdit")
# The full tier as root: what bypassPermissions would let through, pre-approved by
# name (subagents, the todo list and background shells included); anything else (an
# MCP tool) would need a prompt, which print mode answers with a refusal.
_CLAUDE_FULL = (*_CLAUDE_READ, *_CLAUDE_SHELL, *_CLAUDE_WRITE, *_CLAUDE_WEB,
                "Task", "TodoWrite", "BashOutput", "KillShell")  # fmt: skip

# `--permission-mode` per tier; claude-code 2.1.330's choices: acceptEdits, auto,
# bypassPermissions, manual, dontAsk, plan. read+shell uses `dontAsk` ("deny anything
# not pre-approved"): a user's settings.json `defaultMode` (say bypassPermissions)
# cannot widen it, and only the pre-approved tools run.
_CLAUDE_MODE = {
    "read-only": "plan",
    "read+shell": "dontAsk",
    "read+write": "acceptEdits",
    "full": "bypassPermissions",
}
# claude-code 2.1.330 refuses bypassPermissions for uid 0 ("--dangerously-skip-
# permissions cannot be used with root/sudo privileges for security reasons", exit 1)
# unless IS_SANDBOX=1 or CLAUDE_CODE_BUBBLEWRAP is set; IS_SANDBOX also changes its
# retries on 529 and its authentication, so gsd does not claim it. As root the full
# tier is acceptEdits with every built-in tool pre-approved: never wider than bypass.
_CLAUDE_ROOT_FULL_MODE = "acceptEdits"

# Gemini CLI: the `-p` text is "appended to input on stdin" (gemini-cli 0.61.0
# `--help`), so the whole prompt goes to stdin and argv carries only this fixed line.
GEMINI_INSTRUCTION = "Carry out the task above, then print the Task Report as instructed."
# `--approval-mode` choices (0.61.0): default, auto_edit, yolo, plan. Headless, a tool
# that would need approval is refused; what else a tier may use is said by a policy
# file (`--policy`, the policy engine; `--allowed-tools` is deprecated in 0.61.0).
_GEMINI_MODE = {
    "read-only": "plan",
    "read+shell": "default",
    "read+write": "auto_edit",
    "full": "yolo",
}
# Tool names of gemini-cli 0.61.0; its policy loader warns "Unrecognized tool name"
# about any other (tests/test_clis.py checks).
_GEMINI_SHELL = "run_shell_command"
_GEMINI_WRITE = ("write_file", "replace")
_GEMINI_WEB = ("web_fetch", "google_web_search")
# --policy files load in the USER tier (2.x); 999 is that tier's highest priority,
# so only an administrator's policy (tier 3) outranks gsd's rules.
_GEMINI_PRIORITY = 999

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


def build_argv(agent: Agent, model: str | None, *, as_root: bool | None = None) -> list[str]:
    """The argv that runs `agent` (SPEC 5 table): never a shell, never the prompt.

    `model` is the model to ask for, None for no model flag; the caller chooses it
    (GSD_DEFAULT_MODEL, else the agent's `model`). Only claude has a turn limit
    flag, from the agent's `max_turns` (gemini's is a setting: `runner_files`). The
    prompt goes to the program's stdin. `as_root` (default: whether gsd runs as uid
    0) picks claude's full-tier flags. Files a runner reads (gemini's policy) add
    their own arguments: `runner_files(...).argv`.
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
        root = _is_root() if as_root is None else as_root
        argv += _claude_tier_flags(tier, agent.web, root, claude_deny_rules(agent))
    elif runner == "gemini":
        # --skip-trust: "Trust the current workspace for this session" (0.61.0). In a
        # folder not trusted before, headless gemini exits 55, and an untrusted
        # workspace turns plan/auto_edit/yolo into default; gsd's worktree is its own.
        argv = ["gemini", "-p", GEMINI_INSTRUCTION, "--output-format", "json", "--skip-trust"]
        if model is not None:
            argv += ["-m", model]
        argv += ["--approval-mode", _GEMINI_MODE[tier]]
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


class RunnerFiles(NamedTuple):
    """What one spawn of a runner needs beside its argv: files gsd writes into the
    spawn's run folder (.git/gsd/runs/{plan}-{task}/), variables and arguments added."""

    files: dict[str, str]  # file name in the run folder -> its text
    env: dict[str, str]
    argv: list[str]  # appended to the runner's argv


# gemini-cli 0.61.0 reads system settings from $GEMINI_CLI_SYSTEM_SETTINGS_PATH, else here
GEMINI_SYSTEM_SETTINGS = "/etc/gemini-cli/settings.json"


def gemini_system_settings(environ: Mapping[str, str]) -> str:
    """The system settings file gemini would read: the caller passes its text to
    `runner_files`, so gsd's file keeps every setting an administrator made there."""
    return environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or GEMINI_SYSTEM_SETTINGS


def runner_files(
    agent: Agent,
    run_dir: Path,
    *,
    as_root: bool | None = None,
    system_settings: str | None = None,
) -> RunnerFiles:
    """The files, variables and arguments a spawn of `agent` needs (pure: the caller
    writes the files into `run_dir`, a folder only its owner can write).

    gemini: a policy file for every tier but full (`--policy`: the shell allowed for
    read+shell, writes denied below read+write, the web denied to agents without
    web tools), and, for an agent's `max_turns`, `model.maxSessionTurns` in a system
    settings file ($GEMINI_CLI_SYSTEM_SETTINGS_PATH; `system_settings` is the text
    of the one it replaces, whose settings are kept). gemini-cli 0.61.0 reads a
    system settings file only when it and every folder above it belong to root and
    no one else may write them: as another user the turn limit cannot be given, and
    none is written. Other runners need nothing.
    """
    if agent.runner != "gemini":
        return RunnerFiles(files={}, env={}, argv=[])
    files: dict[str, str] = {}
    env: dict[str, str] = {}
    argv: list[str] = []
    policy = _gemini_policy(agent.tier, agent.web)
    if policy:
        files["gemini-policy.toml"] = policy
        argv += ["--policy", str(run_dir / "gemini-policy.toml")]
    root = _is_root() if as_root is None else as_root
    if agent.max_turns is not None and root:
        files["gemini-settings.json"] = _gemini_settings(system_settings, agent.max_turns)
        env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"] = str(run_dir / "gemini-settings.json")
    return RunnerFiles(files=files, env=env, argv=argv)


def _gemini_policy(tier: str, web: bool) -> str:
    """Policy-engine TOML (gemini-cli 0.61.0 `[[rule]]`: toolName, decision, priority)."""
    allow: list[str] = []
    deny: list[str] = []
    if tier == "full":
        return ""
    if tier == "read+shell":
        allow.append(_GEMINI_SHELL)
    else:
        deny.append(_GEMINI_SHELL)
    if tier in ("read-only", "read+shell"):
        deny += _GEMINI_WRITE
    if not web:
        deny += _GEMINI_WEB
    rules = []
    for decision, names in (("allow", allow), ("deny", deny)):
        if names:
            quoted = ", ".join(json.dumps(name) for name in names)
            rules.append(f"[[rule]]\ntoolName = [{quoted}]\ndecision = \"{decision}\"\n"
                         f"priority = {_GEMINI_PRIORITY}\n")  # fmt: skip
    return "# written by gsd for one run\n" + "\n".join(rules)


def _gemini_settings(system_settings: str | None, max_turns: int) -> str:
    settings = _loads(system_settings) if system_settings else None
    if not isinstance(settings, dict):
        settings = {}
    model = settings.get("model")
    settings["model"] = {**(model if isinstance(model, dict) else {}), "maxSessionTurns": max_turns}
    return json.dumps(settings, indent=2) + "\n"


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


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
    """The variables gsd adds for every runner (SPEC 5); the caller merges os.environ."""
    return {
        "GSD_PHASE": phase,
        "GSD_PLAN": plan,
        "GSD_TASK": str(task),
        "GSD_SPECIALIST": agent_name,
        "GSD_PROMPT_FILE": prompt_file,
        "GSD_RESULT_FILE": result_file,
        "GSD_REPO": repo,
    }


# Names in real agent files' `disallowedTools` that claude-code 2.1.330 no longer knows
# (its debug log: `matches no known tool`); the tier already leaves out what they did.
_CLAUDE_GONE = frozenset({"MultiEdit", "LS", "NotebookRead", "SlashCommand"})
# A Claude Code permission rule: a tool name, optionally with a specifier in
# parentheses (`Bash(git push:*)`, `Read(./.env)`), or an MCP tool (`mcp__srv__tool`).
_CLAUDE_RULE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\([^(),\x00-\x1f]*\))?")


def claude_deny_rules(agent: Agent) -> list[str]:
    """The agent file's own `disallowedTools` (Claude Code's), for claude's deny list:
    rules claude parses, less the tools it no longer has. A rule of any other shape
    is left out; its tool, when gsd knows it, is already out of the tier."""
    return [
        rule
        for rule in agent.disallowed_tools
        if _CLAUDE_RULE_RE.fullmatch(rule) and rule.split("(")[0] not in _CLAUDE_GONE
    ]


def _claude_tier_flags(tier: str, web: bool, root: bool, own_deny: list[str]) -> list[str]:
    """Permission mode, granted and denied tools per tier; the agent's own deny rules
    (`disallowedTools`) are added to the deny list on every tier (deny rules hold even
    under bypassPermissions)."""
    own = ["--disallowedTools", ",".join(own_deny)] if own_deny else []
    if tier == "full":
        if not root:
            return ["--permission-mode", _CLAUDE_MODE[tier], *own]
        tools = ",".join(_CLAUDE_FULL)
        return ["--permission-mode", _CLAUDE_ROOT_FULL_MODE, "--allowedTools", tools, *own]
    read = [*_CLAUDE_READ, *(_CLAUDE_WEB if web else ())]
    granted, denied = {
        "read-only": (read, [*_CLAUDE_SHELL, *_CLAUDE_WRITE]),
        "read+shell": ([*read, *_CLAUDE_SHELL], [*_CLAUDE_WRITE]),
        "read+write": ([*read, *_CLAUDE_WRITE], [*_CLAUDE_SHELL]),
    }[tier]
    if not web:
        denied += _CLAUDE_WEB
    denied += [rule for rule in own_deny if rule not in denied]
    tools = ",".join(granted)
    mode = ["--permission-mode", _CLAUDE_MODE[tier]]
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
    # the runner's own structured error said rate or usage limit (HTTP 429 or 529)
    rate_limited: bool = False


def parse_output(
    runner: str, stdout: str, result_file_text: str | None = None, stderr: str = ""
) -> RunnerOutput:
    """Read one run's output; never raises on bad input (structured=False, text=stdout).

    claude  `--output-format json` (claude-code 2.1.330): one object `{"type":
            "result", "subtype", "is_error", "result", "errors"?, "api_error_status",
            "total_cost_usd", "usage": {...}}`; the last line that is such an object
            wins, so log lines before it do no harm. A subtype other than `success`
            (`error_max_turns`, `error_during_execution`) is an error even when
            `is_error` is false; an error result without `result` text says why in
            `errors: [...]`; `api_error_status` 429 or 529 is a rate limit. Input
            tokens count the cache: input_tokens + cache_creation_input_tokens +
            cache_read_input_tokens.
    gemini  `--output-format json` (gemini-cli 0.61.0): `{"response", "stats":
            {"models": {name: {"tokens": {"prompt", "candidates", "thoughts",
            "tool", "cached", ...}}}}, "error"?}` on stdout, but a failure's
            `{"session_id", "error": {"type", "message", "code"}}` on stderr, read
            when stdout has no such object. Tokens are summed over models: prompt
            (which holds cached) + tool -> input, candidates + thoughts -> output.
            An `error` object is an error; its code 429 a rate limit.
    codex   `exec --json` JSONL (codex 0.169.0): the text of the last
            `item.completed` agent_message; usage summed over `turn.completed`
            events; its input_tokens and output_tokens are the Responses API's,
            which already hold cached_input_tokens and reasoning_output_tokens
            (their breakdowns); `turn.failed` is an error, and so is an `error`
            event not followed by a `turn.completed` (Codex reports its stream
            reconnects as `error` events and then finishes normally).
    command the optional JSON object the program writes to $GSD_RESULT_FILE:
            `{"result": str, "is_error": bool, "input_tokens": int,
            "output_tokens": int, "cost_usd": float}`, every key optional; without
            `result` the text is stdout. No file, or no object in it: raw stdout.
    """
    try:
        found = None
        if runner == "gemini":
            found = _gemini(stdout, None) or _gemini(stderr, None)
        elif runner in _PARSERS:
            found = _PARSERS[runner](stdout, result_file_text)
    except (ValueError, TypeError, AttributeError, RecursionError):
        found = None
    return found or RunnerOutput(text=stdout, is_error=False, input_tokens=None,
                                 output_tokens=None, cost_usd=None, structured=False)  # fmt: skip


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
    text = text if isinstance(text, str) else ""
    errors = result.get("errors")
    if is_error and not text and isinstance(errors, list):
        text = "; ".join(str(e) for e in errors if e)
    status = _int(result.get("api_error_status"))
    if is_error and not text and status is not None:
        text = f"API error status {status}"
    cost = result.get("total_cost_usd", result.get("cost_usd"))  # cost_usd: old name
    return RunnerOutput(
        text=text,
        is_error=is_error,
        input_tokens=_total([base, *cache]) if base is not None else None,
        output_tokens=_int(usage.get("output_tokens")),
        cost_usd=_float(cost),
        structured=True,
        rate_limited=is_error and status in (429, 529),
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
    inputs: list[int | None] = []
    outputs: list[int | None] = []
    stats = obj.get("stats")
    models = stats.get("models") if isinstance(stats, dict) else None
    for model_stats in models.values() if isinstance(models, dict) else ():
        tokens = model_stats.get("tokens") if isinstance(model_stats, dict) else None
        if isinstance(tokens, dict):
            inputs += [_int(tokens.get("prompt")), _int(tokens.get("tool"))]
            outputs += [_int(tokens.get("candidates")), _int(tokens.get("thoughts"))]
    code = error.get("code") if isinstance(error, dict) else None
    limited = code == 429 or code == "RESOURCE_EXHAUSTED"
    return RunnerOutput(text=text, is_error=bool(error), input_tokens=_total(inputs),
                        output_tokens=_total(outputs), cost_usd=None, structured=True,
                        rate_limited=limited)  # fmt: skip


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
    return RunnerOutput(text=text, is_error=is_error, input_tokens=_total(inputs),
                        output_tokens=_total(outputs), cost_usd=None, structured=True)  # fmt: skip


def _command(stdout: str, result_file: str | None) -> RunnerOutput | None:
    data = _loads(result_file.strip()) if result_file else None
    if not isinstance(data, dict):
        return None
    result = data.get("result")
    return RunnerOutput(
        text=result if isinstance(result, str) else stdout,
        is_error=data.get("is_error") is True,
        input_tokens=_int(data.get("input_tokens")),
        output_tokens=_int(data.get("output_tokens")),
        cost_usd=_float(data.get("cost_usd")),
        structured=True,
    )


_PARSERS = {"claude": _claude, "gemini": _gemini, "codex": _codex, "command": _command}
