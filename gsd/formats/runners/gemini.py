"""Gemini CLI as a runner: its argv, its policy and settings files per tier, and its JSON output."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from gsd.core.models import RunnerOutput
from gsd.core.safety.policy import BASELINE, Policy, ShellRule, WriteRule, applies, spelled_out
from gsd.formats.runners.claude import GSD_MCP_TOOLS
from gsd.formats.runners.output import int_or_none, json_lines, loads, total

if (
    TYPE_CHECKING
):  # gsd.formats.agents imports pydantic; keep `import gsd.formats.runners.invocation` light
    from gsd.formats.agents import Agent

# Gemini CLI: the `-p` text is "appended to input on stdin" (gemini-cli 0.61.0
# `--help`), so the whole prompt goes to stdin and argv carries only this fixed line.
INSTRUCTION = "Carry out the task above, then print the Task Report as instructed."
# `--approval-mode` choices (0.61.0): default, auto_edit, yolo, plan. Headless, a tool
# that would need approval is refused; what else a tier may use is said by a policy
# file (`--policy`, the policy engine; `--allowed-tools` is deprecated in 0.61.0).
_MODE = {
    "read-only": "plan",
    "read+shell": "default",
    "read+write": "auto_edit",
    "full": "yolo",
}
# Tool names of gemini-cli 0.61.0; its policy loader warns "Unrecognized tool name"
# about any other (tests/test_clis.py checks).
_SHELL = "run_shell_command"
_WRITE = ("write_file", "replace")
_WEB = ("web_fetch", "google_web_search")
# --policy files load in the USER tier (2.x); 999 is that tier's highest priority,
# so only an administrator's policy (tier 3) outranks gsd's rules.
_PRIORITY = 999
# gemini-cli 0.61.0 starts every sub-agent (codebase_investigator, the agents of
# `.gemini/agents`, remote ones) through one tool, `invoke_agent` (AGENT_TOOL_NAME,
# registered while `enableAgents`, on by default); its policy check tries that name
# and then the sub-agent's, so one deny rule on it stops them all. A specialist is one
# level of delegation: denied unless config.json `specialists.allow_subagents`.
SUBAGENT_TOOL = "invoke_agent"
_SUBAGENTS_DENIED = (
    f'[[rule]]\ntoolName = "{SUBAGENT_TOOL}"\ndecision = "deny"\npriority = {_PRIORITY}\n'
    'denyMessage = "gsd: a specialist does not start sub-agents; do the task yourself '
    '(config.json specialists.allow_subagents)"\n'
)

# gemini-cli 0.61.0's home: `$GEMINI_CLI_HOME`, else HOME; its user settings are
# `<home>/.gemini/settings.json` (gsd.io.confine.clihome gives a spawn a private one)
HOME_VARIABLE = "GEMINI_CLI_HOME"
STATE = ".gemini"
SETTINGS_FILE = "settings.json"


def build_argv(agent: Agent, model: str | None) -> list[str]:
    """gemini's argv: the fixed instruction (the prompt is on stdin), JSON output, the
    model when given and the tier's approval mode."""
    # --skip-trust: "Trust the current workspace for this session" (0.61.0). In a
    # folder not trusted before, headless gemini exits 55, and an untrusted
    # workspace turns plan/auto_edit/yolo into default; gsd's worktree is its own.
    argv = ["gemini", "-p", INSTRUCTION, "--output-format", "stream-json", "--skip-trust"]
    if model is not None:
        argv += ["-m", model]
    return argv + ["--approval-mode", _MODE[agent.tier]]


# gsd's own MCP server (`gemini mcp add gsd gsd mcp`) serves an agent of a run
# read-only tools only (never its `--allow-run` tools), so every tier may call them.
# gemini-cli 0.61.0 asks before an MCP tool runs (refused headless) and in plan mode,
# gsd's read-only tier, offers none to the model (policies/plan.toml: read-only MCP
# tools "ask_user", interactive only): gsd allows them by name (`mcp_gsd_status`: with
# `mcpName` and bare names the policy loader warns "Unrecognized tool name"), never the
# whole server.
_GSD_MCP_ALLOWED = (
    "[[rule]]\ntoolName = ["
    + ", ".join(json.dumps(f"mcp_gsd_{name}") for name in GSD_MCP_TOOLS)
    + f']\ndecision = "allow"\npriority = {_PRIORITY - 1}\n'
)


def policy(
    tier: str,
    web: bool,
    rules: Policy = BASELINE,
    worktree: str | None = None,
    subagents: bool = False,
) -> str:
    """Policy-engine TOML (gemini-cli 0.61.0 `[[rule]]`: toolName, decision, priority,
    commandPrefix / commandRegex / argsPattern, denyMessage): the tier's tools (the
    sub-agent tool denied unless `subagents`), then gsd's safety policy
    (`safety_rules`). The tier's allow rule is one step below the deny rules, so a
    denied command stays denied whatever the tier allows."""
    allow: list[str] = []
    deny: list[str] = []
    if tier == "read+shell":
        allow.append(_SHELL)
    elif tier != "full":
        deny.append(_SHELL)
    if tier in ("read-only", "read+shell"):
        deny += _WRITE
    if not web and tier != "full":
        deny += _WEB
    blocks = []
    for decision, names, priority in (("deny", deny, _PRIORITY), ("allow", allow, _PRIORITY - 1)):
        if names:
            quoted = ", ".join(json.dumps(name) for name in names)
            blocks.append(
                f'[[rule]]\ntoolName = [{quoted}]\ndecision = "{decision}"\npriority = {priority}\n'
            )
    if not subagents:
        blocks.append(_SUBAGENTS_DENIED)
    blocks.append(_GSD_MCP_ALLOWED)
    blocks += safety_rules(rules, tier, worktree)
    return "# written by gsd for one run\n" + "\n".join(blocks)


def safety_rules(rules: Policy, tier: str, worktree: str | None) -> list[str]:
    """gsd's safety policy as `[[rule]]` blocks: a command by `commandPrefix` (gemini
    matches the words, then a space or the end) or, when its last word may go on,
    `commandRegex`; a file by an `argsPattern` over write_file's and replace's
    `file_path` (gemini matches the pattern against the arguments as stable JSON,
    each top-level `"key":value` between NUL characters). A path may be relative or
    absolute: a rule on a name holds at any depth, one on a folder or a path only
    under `worktree` (a rule on `.git` anywhere in an absolute path would deny every
    file of a worktree kept under a `.git/`, as older gsd versions kept them). Tiers
    without the shell or without write tools deny those tools whole already."""
    return [
        _deny_block(tool, f"{field} = {json.dumps(value)}", why)
        for tool, field, value, why in safety_matches(rules, tier, worktree)
    ]


def safety_matches(rules: Policy, tier: str, worktree: str | None) -> list[tuple[str, ...]]:
    """Each rule of `safety_rules` as (toolName in TOML, field, its value, why)."""
    shell, write = applies(tier)
    found: list[tuple[str, ...]] = []
    for rule in rules.shell if shell else ():
        field, value = (
            ("commandRegex", _regex(rule.words)) if rule.open_end else ("commandPrefix", rule.words)
        )
        found.append((json.dumps(_SHELL), field, value, f"`{rule.words}` {rule.why}"))
        for regex in other_spellings(rule):
            found.append((json.dumps(_SHELL), "commandRegex", regex, f"`{rule.words}` {rule.why}"))
    tools = "[" + ", ".join(json.dumps(name) for name in _WRITE) + "]"
    for path_rule in rules.write if write else ():
        pattern = _path_pattern(path_rule, worktree)
        found.append((tools, "argsPattern", pattern, f"{path_rule.glob} {path_rule.why}"))
    return found


# how gemini-cli 0.61.0 ends a commandPrefix: a space, the closing quote or an escaped one
_WORD_END = '(?:[\\s"]|\\\\")'


def other_spellings(rule: ShellRule) -> list[str]:
    """A SPELLED_OUT rule's other spellings as `commandRegex` values (gemini matches one
    after `"command":"`, so each is anchored at the command's start; `[^"]*` stays
    inside the command's JSON string): git's options before the subcommand
    (`git -C dir push`), and the words after anything that ends a word (`env git push`,
    `/usr/bin/git push`, `true && git push`, `sh -c 'git push'`)."""
    found = spelled_out(rule)
    if found is None:
        return []
    program, rest = found
    options = f'{_regex(program)} -[^"]* {_regex(rest)}{_WORD_END}'
    anywhere = f"[^\"]*[\\s;&|(/'`]{_regex(rule.words)}{_WORD_END}"
    return [options, anywhere]


def _deny_block(tool: str, match: str, why: str) -> str:
    message = json.dumps(f"gsd's safety policy: {why}")
    return (
        f'[[rule]]\ntoolName = {tool}\n{match}\ndecision = "deny"\n'
        f"priority = {_PRIORITY}\ndenyMessage = {message}\n"
    )


# What a path's JSON text may hold: anything but the closing quote and the NUL markers.
# gemini-cli 0.61.0 refuses a pattern with a quantified group (`isSafeRegExp`: "Unsafe
# regex pattern (potential ReDoS)"), so an optional part is written `(?:|...)`.
_ANY = '[^"\\x00]'
_SEGMENT = '[^"/\\x00]'


def _regex(text: str) -> str:
    """`text` matched literally by a JavaScript RegExp (no flags)."""
    return re.sub(r"[.*+?^${}()|[\]\\/]", r"\\\g<0>", text)


def _glob(glob: str) -> str:
    """A gitignore glob as a regex over one JSON-encoded path."""
    parts = re.split(r"(\*\*|\*|\?)", glob)
    wild = {"**": f"{_ANY}*", "*": f"{_SEGMENT}*", "?": _SEGMENT}
    return "".join(wild.get(part, _regex(part)) for part in parts)


def _path_pattern(rule: WriteRule, worktree: str | None) -> str:
    tail = _glob(rule.name) + (f"(?:|/{_ANY}*)" if rule.folder else "")
    if "/" not in rule.name and not rule.folder:
        return f'\\x00"file_path":"(?:|{_ANY}*/){tail}"\\x00'
    root = f"(?:|{_regex(json.dumps(worktree)[1:-1])}/)" if worktree else ""
    return f'\\x00"file_path":"{root}(?:|{_SEGMENT}{_ANY}*/){tail}"\\x00'


# what gemini's settings reader (strip-json-comments) takes out: a comment outside a string
_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)


def user_settings(
    text: str, max_turns: int | None, hooks: Mapping[str, Any] | None = None
) -> str | None:
    """The user's settings `text` (comments and all, as gemini-cli 0.61.0 reads it; an
    empty text is no settings) with `model.maxSessionTurns` set to `max_turns` when
    given and `hooks` (event -> one group, `agenthooks.hook_groups`) after its own;
    None when `text` holds no JSON object. Everything else the user set (the auth
    type, `security.auth.selectedType`; MCP servers) is kept as it was. gemini runs
    the user's hooks when the folder is trusted at run time (`--skip-trust`), while
    the project's settings.json of a folder untrusted at start is never read: this is
    how gsd's hooks reach a run."""
    stripped = _COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else " ", text)
    settings = loads(stripped) if stripped.strip() else {}
    if not isinstance(settings, dict):
        return None
    if max_turns is not None:
        model = settings.get("model")
        model = {**(model if isinstance(model, dict) else {}), "maxSessionTurns": max_turns}
        settings["model"] = model
    if hooks:
        own = settings.get("hooks")
        merged = dict(own) if isinstance(own, dict) else {}
        for event, group in hooks.items():
            groups = merged.get(event)
            merged[event] = [*(groups if isinstance(groups, list) else []), group]
        settings["hooks"] = merged
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


_KEYS = ("response", "stats", "error")
# A pretty-printed object starts at column 0; its inner lines are indented.
_TOP_OBJECT_RE = re.compile(r"^\{", re.MULTILINE)


def parse_output(text: str) -> RunnerOutput | None:
    """`--output-format stream-json` or `json` (gemini-cli 0.61.0), or None when `text`
    holds neither: the stream's events (`parse_stream`) when there are any, else the
    one JSON object:

    `{"response", "stats": {"models": {name: {"tokens": {"prompt", "candidates",
    "thoughts", "tool", "cached", ...}}}}, "error"?}` on stdout, but a failure's
    `{"session_id", "error": {"type", "message", "code"}}` on stderr (the caller reads
    stderr when stdout has no such object). Tokens are summed over models: prompt
    (which holds cached) + tool -> input, candidates + thoughts -> output. An `error`
    object is an error; its code 429 a rate limit.
    """
    streamed = parse_stream(text)
    if streamed is not None:
        return streamed
    obj = _last_object(text)
    if obj is None:
        return None
    error = obj.get("error")
    response = obj.get("response")
    said = response if isinstance(response, str) else ""
    if not said and isinstance(error, dict) and isinstance(error.get("message"), str):
        said = error["message"]
    inputs: list[int | None] = []
    outputs: list[int | None] = []
    stats = obj.get("stats")
    models = stats.get("models") if isinstance(stats, dict) else None
    for model_stats in models.values() if isinstance(models, dict) else ():
        tokens = model_stats.get("tokens") if isinstance(model_stats, dict) else None
        if isinstance(tokens, dict):
            inputs += [int_or_none(tokens.get("prompt")), int_or_none(tokens.get("tool"))]
            outputs += [int_or_none(tokens.get("candidates")), int_or_none(tokens.get("thoughts"))]
    code = error.get("code") if isinstance(error, dict) else None
    limited = code == 429 or code == "RESOURCE_EXHAUSTED"
    return RunnerOutput(
        text=said,
        is_error=bool(error),
        input_tokens=total(inputs),
        output_tokens=total(outputs),
        cost_usd=None,
        structured=True,
        rate_limited=limited,
    )


_EVENTS = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})


def parse_stream(text: str) -> RunnerOutput | None:
    """`--output-format stream-json` JSONL (gemini-cli 0.61.0, StreamJsonFormatter): the
    agent's text is its `message` events of role `assistant` (`content`, `delta`) put
    together; the `result` event (`status` success or error, `error: {type, message}`,
    `stats: {total_tokens, input_tokens, output_tokens, ...}`) closes the run: tokens
    are input_tokens and the rest of total_tokens (thoughts and tool tokens included).
    An `error` event (`severity`, `message`) or a result of status error is an error.
    None when no such event is in `text`."""
    seen = False
    said: list[str] = []
    result: dict[str, Any] | None = None
    failure = ""
    for event in json_lines(text):
        kind = event.get("type") if isinstance(event, dict) else None
        if kind not in _EVENTS or "timestamp" not in event:  # every event has one
            continue
        seen = True
        if kind == "message" and event.get("role") == "assistant":
            said.append(str(event.get("content") or ""))
        elif kind == "error" and event.get("severity") == "error":
            failure = str(event.get("message") or "")
        elif kind == "result":
            result = event
    if not seen:
        return None
    stats = result.get("stats") if result is not None else None
    stats = stats if isinstance(stats, dict) else {}
    inputs, whole = int_or_none(stats.get("input_tokens")), int_or_none(stats.get("total_tokens"))
    outputs = int_or_none(stats.get("output_tokens"))
    if whole is not None and inputs is not None:
        outputs = whole - inputs
    error = result.get("error") if result is not None else None
    if isinstance(error, dict):
        failure = str(error.get("message") or failure)
    is_error = result is None or result.get("status") == "error" or bool(failure)
    limited = is_error and ("429" in failure or "quota" in failure.lower())
    return RunnerOutput(
        text="".join(said) or failure,
        is_error=is_error,
        input_tokens=inputs,
        output_tokens=outputs,
        cost_usd=None,
        structured=True,
        rate_limited=limited,
    )


def _last_object(text: str) -> dict[str, Any] | None:
    """The whole text as gemini's object, else the last top-level one in it (log lines
    before it, or a pretty-printed object after them)."""
    obj = loads(text.strip())
    if isinstance(obj, dict) and any(k in obj for k in _KEYS):
        return obj
    decoder = json.JSONDecoder()
    for match in reversed(list(_TOP_OBJECT_RE.finditer(text))):
        try:
            value, _end = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and any(k in value for k in _KEYS):
            return value
    return None
