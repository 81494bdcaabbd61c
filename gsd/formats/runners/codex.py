"""Codex as a runner: its argv (the sandbox per tier) and its `exec --json` event stream."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from gsd.core.models import RunnerOutput
from gsd.core.safety.policy import GIT_PATHS, WRAPPERS, spelled_out
from gsd.formats.runners.output import int_or_none, json_lines, total

if (
    TYPE_CHECKING
):  # gsd.formats.agents imports pydantic; keep `import gsd.formats.runners.invocation` light
    from gsd.core.safety.policy import Policy
    from gsd.formats.agents import Agent

# Codex has no "shell without writes" switch: `codex exec` does not ask for command
# or edit approvals (docs/exec.md), and its commands run inside the sandbox.
# read+shell therefore uses `read-only`, whose commands may run but cannot write;
# read+write cannot be denied the shell, so gsd's git check after the run (SPEC 6)
# is what holds that tier. These are codex's own sandbox modes, passed when gsd's
# Landlock sandbox does not confine the run (`confined` False).
SANDBOX = {
    "read-only": "read-only",
    "read+shell": "read-only",
    "read+write": "workspace-write",
    "full": "danger-full-access",
}
# Under gsd's Landlock (`confined`), codex's own sandbox cannot start: codex 0.169.0
# runs each command through bubblewrap, whose user namespace needs a write to
# /proc/self/uid_map that Landlock denies ("bwrap: setting up uid map: Permission
# denied"), and its deprecated `use_legacy_landlock` backend refuses every
# filesystem-restricted command ("requires bubblewrap to isolate app-server
# sockets"). So every tier runs `danger-full-access` inside gsd's confinement, which
# holds the tier instead: read-only tiers write only their private tmp and codex's
# state, read+write also the worktree; `.git` and everything else stay unwritable.
CONFINED_SANDBOX = "danger-full-access"


def build_argv(
    agent: Agent, model: str | None, *, subagents: bool = False, confined: bool = False
) -> list[str]:
    """codex's argv: `exec` reading the prompt from stdin, JSONL events, the model when
    given, the tier's sandbox (codex's own, or none inside gsd's: `confined`), and its
    sub-agents off unless `subagents`."""
    # `codex exec --help`: "if `-` is used, instructions are read from stdin"
    argv = ["codex", "exec", "-", "--json"]
    if model is not None:
        argv += ["-m", model]
    mode = CONFINED_SANDBOX if confined else SANDBOX[agent.tier]
    # Codex refuses to run outside a git repository "to avoid destructive
    # changes"; gsd always runs in a repository or worktree and checkpoints it
    # first, so the check adds nothing and could only refuse a run.
    sandbox = ["--sandbox", mode, *policy_overrides(mode)]
    return [*argv, *sandbox, *subagent_flags(subagents), "--skip-git-repo-check"]


# Codex 0.169.0 starts sub-agents through its `multi_agent` feature (`codex features
# list`: "deprecated", on by default; it gives the model `spawn_agent`, `send_input`,
# `wait_agent` and `close_agent`) and its successor `multi_agent_v2` ("stable", off by
# default; a user's config.toml may turn it on). A specialist is one level of
# delegation: both are off unless config.json `specialists.allow_subagents`; then
# `agents.max_depth=1` keeps a sub-agent from starting its own ("Agent depth limit
# reached. Solve the task yourself.").
SUBAGENT_FEATURES = ("multi_agent", "multi_agent_v2")
ONE_LEVEL = "agents.max_depth=1"


def subagent_flags(subagents: bool) -> list[str]:
    """Codex's sub-agents off (`--disable` each feature), or allowed one level deep."""
    if subagents:
        return ["-c", ONE_LEVEL]
    return [arg for feature in SUBAGENT_FEATURES for arg in ("--disable", feature)]


# gsd's policy commands reach codex 0.169.0 as exec-policy rules (`prefix_rule(...,
# decision="forbidden")`): codex refuses a matching command before it runs, in every
# sandbox mode, danger-full-access included, and inside `bash -c "a && b"` too. It reads
# `.rules` files only from $CODEX_HOME/rules (and a trusted project's `.codex/rules`,
# which would trust the repository's own config and MCP servers), so each spawn gets a
# private CODEX_HOME (gsd.io.confine.clihome) whose `rules/` holds `exec_rules(policy)` beside
# the user's own rules. `workspace-write` also keeps `.git` read-only and, pinned here
# against a user's config.toml, the network off and /tmp out of the writable roots (its
# private $TMPDIR stays).
WORKSPACE_WRITE_PINS = (
    "sandbox_workspace_write.network_access=false",
    "sandbox_workspace_write.exclude_slash_tmp=true",
)
RULES_FILE = "gsd-policy.rules"


def policy_overrides(mode: str) -> list[str]:
    """`-c` overrides (they win over config.toml) that keep codex's sandbox `mode` as
    narrow as gsd's policy needs."""
    if mode == "workspace-write":
        return [arg for pin in WORKSPACE_WRITE_PINS for arg in ("-c", pin)]
    return []


def exec_rules(policy: Policy) -> str:
    """gsd's shell rules as a codex execpolicy file (Starlark): one forbidden
    `prefix_rule` per rule. A prefix rule matches whole words, so an open-ended rule
    (`rm -rf /*`) holds only for its exact words; gsd's Landlock confinement holds the
    rest (nothing outside the worktree is writable). A SPELLED_OUT rule also gets a
    rule per wrapper program (`env git push`) and `host_executable` for git's usual
    paths (`/usr/bin/git push`); git's options before the subcommand (`git -C dir
    push`) a prefix rule cannot express (no word matches any word): Landlock's TCP
    rules hold those."""
    lines = ["# gsd's safety policy (gsd.core.safety.policy), written for this run only"]
    programs: set[str] = set()
    for rule in policy.shell:
        words = rule.words.split()
        spellings = [words]
        if spelled_out(rule) is not None:
            spellings += [[wrapper, *words] for wrapper in WRAPPERS]
            programs.add(words[0])
        why = json.dumps(f"gsd policy: `{rule.words}` {rule.why}".strip())
        for spelling in spellings:
            pattern = ", ".join(json.dumps(word) for word in spelling)
            lines.append(
                f'prefix_rule(pattern=[{pattern}], decision="forbidden", justification={why})'
            )
    for program in sorted(programs & {"git"}):
        paths = ", ".join(json.dumps(path) for path in GIT_PATHS)
        lines.append(f"host_executable(name={json.dumps(program)}, paths=[{paths}])")
    return "\n".join(lines) + "\n"


def parse_output(stdout: str) -> RunnerOutput | None:
    """`exec --json` JSONL (codex 0.169.0), or None when stdout holds no event.

    The text of the last `item.completed` agent_message; usage summed over
    `turn.completed` events; its input_tokens and output_tokens are the Responses
    API's, which already hold cached_input_tokens and reasoning_output_tokens (their
    breakdowns); `turn.failed` is an error, and so is an `error` event not followed by
    a `turn.completed` (Codex reports its stream reconnects as `error` events and then
    finishes normally).
    """
    structured = failed = False
    pending_error: str | None = None
    message: str | None = None
    failure = ""
    inputs: list[int | None] = []
    outputs: list[int | None] = []
    for event in json_lines(stdout):
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
            inputs.append(int_or_none(usage.get("input_tokens")))
            outputs.append(int_or_none(usage.get("output_tokens")))
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
    return RunnerOutput(
        text=text,
        is_error=is_error,
        input_tokens=total(inputs),
        output_tokens=total(outputs),
        cost_usd=None,
        structured=True,
    )
