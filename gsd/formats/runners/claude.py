"""Claude Code as a runner: its argv per tier (tools, permission mode, deny list) and its result."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gsd.core.models import RunnerOutput
from gsd.core.safety.policy import BASELINE, Policy, ShellRule, applies, spelled_out
from gsd.formats.runners.output import (
    float_or_none,
    int_or_none,
    json_lines,
    loads,
    permission_denials,
    total,
)

if (
    TYPE_CHECKING
):  # gsd.formats.agents imports pydantic; keep `import gsd.formats.runners.invocation` light
    from gsd.formats.agents import Agent

# Claude Code built-in tool names (CLI reference: `--tools "Bash,Edit,Read"`).
# `--tools` fixes the set the model sees, `--allowedTools` pre-approves it so a
# headless run never stops at a prompt, and `--disallowedTools` is the deny list,
# which wins over every mode (deny rules apply even under bypassPermissions).
# Every name here is one claude-code 2.1.330 knows: a deny rule naming anything else
# ("MultiEdit", "LS", "NotebookRead") draws `Permission deny rule "MultiEdit" matches
# no known tool - check for typos.` in its debug log (tests/test_clis.py checks).
_READ = ("Read", "Glob", "Grep")
_WEB = ("WebSearch", "WebFetch")
_SHELL = ("Bash",)
_WRITE = ("Write", "Edit", "NotebookEdit")
# The full tier as root: what bypassPermissions would let through, pre-approved by
# name (the todo list and background shells included); anything else (an MCP tool)
# would need a prompt, which print mode answers with a refusal.
_FULL = (*_READ, *_SHELL, *_WRITE, *_WEB, "TodoWrite", "BashOutput", "KillShell")
# The tools that start sub-agents in claude-code 2.1.330 (its tool list, `t_n` in the
# bundle): `Agent` (`Task` is its old name, an alias the deny-rule validator maps to
# it) and `Workflow` ("orchestrate subagents with deterministic JavaScript workflow").
# A specialist is one level of delegation: they are denied on every tier unless
# config.json `specialists.allow_subagents`; then `Agent` joins the tier's tools (the
# deny list still holds inside a sub-agent, and Claude Code gives a sub-agent no
# `Agent` tool of its own).
SUBAGENT_TOOLS = ("Agent", "Workflow")

# gsd's own MCP server (`gsd mcp`, registered as `gsd`: `claude mcp add gsd -- gsd mcp`)
# serves an agent of a run read-only tools only (its `--allow-run` tools never reach
# an agent: gsd.cli.mcp_gate.under_a_run), so every tier may call them. Outside
# bypassPermissions claude asks before an MCP tool runs, and print mode answers "Claude
# requested permissions to use mcp__gsd__status, but you haven't granted it yet"
# (claude-code 2.1.330 as root, tests/test_matrix.py): they are pre-approved by name,
# never the whole server (`mcp__gsd`), so a server registered with more tools gets no more.
GSD_MCP_TOOLS = (
    "validate",
    "show",
    "waves",
    "status",
    "context_chain",
    "errors",
    "report",
    "snapshot",
    "dry_run",
)
_MCP = tuple(f"mcp__gsd__{name}" for name in GSD_MCP_TOOLS)

# `--permission-mode` per tier; claude-code 2.1.330's choices: acceptEdits, auto,
# bypassPermissions, manual, dontAsk, plan. read+shell uses `dontAsk` ("deny anything
# not pre-approved"): a user's settings.json `defaultMode` (say bypassPermissions)
# cannot widen it, and only the pre-approved tools run.
_MODE = {
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
_ROOT_FULL_MODE = "acceptEdits"

# Names in real agent files' `disallowedTools` that claude-code 2.1.330 no longer knows
# (its debug log: `matches no known tool`); the tier already leaves out what they did.
_GONE = frozenset({"MultiEdit", "LS", "NotebookRead", "SlashCommand"})
# A Claude Code permission rule: a tool name, optionally with a specifier in
# parentheses (`Bash(git push:*)`, `Read(./.env)`), or an MCP tool (`mcp__srv__tool`).
_RULE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\([^(),\x00-\x1f]*\))?")


def build_argv(
    agent: Agent,
    model: str | None,
    *,
    as_root: bool,
    policy: Policy = BASELINE,
    subagents: bool = False,
) -> list[str]:
    """claude's argv: print mode with a JSON result, the model and turn limit when
    given, and the tier's permission flags (`as_root`: gsd runs as uid 0) with gsd's
    safety policy in the deny list, and the sub-agent tools unless `subagents`."""
    # `-p` without a positional prompt reads the prompt from stdin; stream-json (each API
    # call's usage as it comes, for the token budget) needs --verbose in print mode
    argv = ["claude", "-p", "--output-format", "stream-json", "--verbose"]
    if model is not None:
        argv += ["--model", model]
    if agent.max_turns is not None:
        argv += ["--max-turns", str(agent.max_turns)]
    own = [*policy_rules(policy, agent.tier), *deny_rules(agent)]
    if not subagents:
        own += SUBAGENT_TOOLS
    extra = ("Agent",) if subagents else ()
    return argv + _tier_flags(agent.tier, agent.web, as_root, list(dict.fromkeys(own)), extra)


def policy_rules(policy: Policy, tier: str) -> list[str]:
    """gsd's safety policy as Claude Code permission rules (code.claude.com/docs/en/
    permissions; grammar checked in claude-code 2.1.330's own validator): a command
    as `Bash(git push:*)` (the words, then anything after a space) or, when its last
    word may go on, `Bash(rm -rf /*)` (`*` matches any characters); a file as
    `Edit(...)`, a gitignore pattern relative to the working folder, which covers
    every tool that edits files (2.1.330 warns that `Write(path)` rules are "not
    matched by file permission checks - only Edit(path) rules are"). Deny rules hold
    in every permission mode, bypassPermissions included. A tier without the shell
    or without write tools needs neither kind."""
    shell, write = applies(tier)
    rules: list[str] = []
    if shell:
        rules += [f"Bash({r.words}*)" if r.open_end else f"Bash({r.words}:*)" for r in policy.shell]
        rules += [rule for r in policy.shell for rule in other_spellings(r)]
    if write:
        for rule in policy.write:
            where = rule.name if "/" in rule.name else f"**/{rule.name}"
            rules.append(f"Edit({where})")
            if rule.folder:
                rules.append(f"Edit({where}/**)")
    return rules


def other_spellings(rule: ShellRule) -> list[str]:
    """A SPELLED_OUT rule's other spellings as deny rules (`*` matches any characters;
    claude checks each command of `a && b` on its own): git's options before the
    subcommand (`Bash(git * push)`), anything before the words (a wrapper, `env FOO=1`),
    a path to the program, a quoted `sh -c` script."""
    found = spelled_out(rule)
    if found is None:
        return []
    program, rest = found
    forms = [f"{program} * {rest}", f"* {rule.words}", f"*/{rule.words}"]
    forms += [f"*'{rule.words}", f'*"{rule.words}']
    return [f"Bash({form}{tail})" for form in forms for tail in ("", " *")]


def deny_rules(agent: Agent) -> list[str]:
    """The agent file's own `disallowedTools` (Claude Code's), for claude's deny list:
    rules claude parses, less the tools it no longer has. A rule of any other shape
    is left out; its tool, when gsd knows it, is already out of the tier."""
    return [
        rule
        for rule in agent.disallowed_tools
        if _RULE_RE.fullmatch(rule) and rule.split("(")[0] not in _GONE
    ]


def _tier_flags(
    tier: str, web: bool, root: bool, own_deny: list[str], extra: tuple[str, ...] = ()
) -> list[str]:
    """Permission mode, granted and denied tools per tier; the agent's own deny rules
    (`disallowedTools`) and gsd's are added to the deny list on every tier (deny rules
    hold even under bypassPermissions); `extra` tools join every tier's granted ones."""
    own = ["--disallowedTools", ",".join(own_deny)] if own_deny else []
    if tier == "full":
        if not root:
            return ["--permission-mode", _MODE[tier], *own]
        tools = ",".join([*_FULL, *extra, *_MCP])
        return ["--permission-mode", _ROOT_FULL_MODE, "--allowedTools", tools, *own]
    read = [*_READ, *(_WEB if web else ()), *extra]
    granted, denied = {
        "read-only": (read, [*_SHELL, *_WRITE]),
        "read+shell": ([*read, *_SHELL], [*_WRITE]),
        "read+write": ([*read, *_WRITE], [*_SHELL]),
    }[tier]
    if not web:
        denied += _WEB
    denied += [rule for rule in own_deny if rule not in denied]
    tools = ",".join(granted)
    allowed = ",".join((*granted, *_MCP))
    mode = ["--permission-mode", _MODE[tier]]
    return [
        *mode,
        "--tools",
        tools,
        "--allowedTools",
        allowed,
        "--disallowedTools",
        ",".join(denied),
    ]


def parse_output(stdout: str) -> RunnerOutput | None:
    """`--output-format json` (claude-code 2.1.330), or None when stdout holds no result.

    One object `{"type": "result", "subtype", "is_error", "result", "errors"?,
    "api_error_status", "total_cost_usd", "usage": {...}}`; the last line that is such
    an object wins, so log lines before it do no harm. A subtype other than `success`
    (`error_max_turns`, `error_during_execution`) is an error even when `is_error` is
    false; an error result without `result` text says why in `errors: [...]`;
    `api_error_status` 429 or 529 is a rate limit; `permission_denials` lists the tool
    calls claude refused (`denied`). Input tokens count the cache:
    input_tokens + cache_creation_input_tokens + cache_read_input_tokens.
    """
    result: dict[str, Any] | None = None
    candidates = [*json_lines(stdout), loads(stdout.strip())]
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
    base = int_or_none(usage.get("input_tokens"))
    cache = [
        int_or_none(usage.get("cache_creation_input_tokens")),
        int_or_none(usage.get("cache_read_input_tokens")),
    ]
    subtype = result.get("subtype")
    is_error = result.get("is_error") is True or (isinstance(subtype, str) and subtype != "success")
    text = result.get("result")
    text = text if isinstance(text, str) else ""
    errors = result.get("errors")
    if is_error and not text and isinstance(errors, list):
        text = "; ".join(str(e) for e in errors if e)
    status = int_or_none(result.get("api_error_status"))
    if is_error and not text and status is not None:
        text = f"API error status {status}"
    cost = result.get("total_cost_usd", result.get("cost_usd"))  # cost_usd: old name
    return RunnerOutput(
        text=text,
        is_error=is_error,
        input_tokens=total([base, *cache]) if base is not None else None,
        output_tokens=int_or_none(usage.get("output_tokens")),
        cost_usd=float_or_none(cost),
        structured=True,
        rate_limited=is_error and status in (429, 529),
        denied=permission_denials(result.get("permission_denials")),
    )
