"""Runners: the argv, files and variables each runner needs, and reading what it prints.

Pure functions, no I/O: the caller writes the prompt file, spawns the program
through `gsd.io.process.proc` with the prompt on stdin, and hands the captured output back
to `parse_output`; `gsd.formats.taskreport` reads the Task Report and `gsd.core.verdict.judge`
judges the run (SPEC section 5). Each runner's own flags and output are its module's:
`gsd.formats.runners.claude`, `gemini` and `codex`, and `resultfile` for `command`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from gsd.core.models import RunnerOutput
from gsd.core.safety.policy import BASELINE, Policy, applies
from gsd.formats.runners import claude, codex, gemini, resultfile
from gsd.formats.runners.output import raw_output

if (
    TYPE_CHECKING
):  # gsd.formats.agents imports pydantic; keep `import gsd.formats.runners.invocation` light
    from gsd.formats.agents import Agent

# --- argv -------------------------------------------------------------------------


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


def build_argv(
    agent: Agent,
    model: str | None,
    *,
    as_root: bool | None = None,
    policy: Policy = BASELINE,
    confined: bool = False,
    subagents: bool = False,
) -> list[str]:
    """The argv that runs `agent` (SPEC 5 table): never a shell, never the prompt.

    `model` is the model to ask for, None for no model flag; the caller chooses it
    (GSD_DEFAULT_MODEL, else the agent's `model`). Only claude has a turn limit
    flag, from the agent's `max_turns` (gemini's is a setting: `runner_files`). The
    prompt goes to the program's stdin. `as_root` (default: whether gsd runs as uid
    0) picks claude's full-tier flags. Files a runner reads (gemini's policy) add
    their own arguments: `runner_files(...).argv`. `policy` is gsd's safety policy
    (`gsd.core.safety.policy`), in claude's deny list and codex's sandbox overrides.
    `confined`: gsd's Landlock sandbox confines the spawn (codex then runs without
    its own sandbox, which cannot start inside gsd's: `gsd.formats.runners.codex`).
    `subagents` (config.json `specialists.allow_subagents`) leaves the runner's
    sub-agent tools to the agent; else claude denies them and codex turns them off
    (gemini's are denied in its policy file: `runner_files`).
    ValueError for a model name that could be read as an option or split.
    """
    if model is not None:
        check_model(model)
    if agent.runner == "claude":
        root = _is_root() if as_root is None else as_root
        return claude.build_argv(agent, model, as_root=root, policy=policy, subagents=subagents)
    if agent.runner == "gemini":
        return gemini.build_argv(agent, model)
    if agent.runner == "codex":
        return codex.build_argv(agent, model, subagents=subagents, confined=confined)
    return list(agent.command or ())  # runner: command; the Agent model insists on one


class RunnerFiles(NamedTuple):
    """What one spawn of a runner needs beside its argv: files gsd writes into the
    spawn's run folder (.git/gsd/runs/{plan}-{task}/), variables and arguments added."""

    files: dict[str, str]  # file name in the run folder -> its text
    env: dict[str, str]
    argv: list[str]  # appended to the runner's argv


def runner_files(
    agent: Agent,
    run_dir: Path,
    *,
    policy: Policy = BASELINE,
    worktree: Path | None = None,
    subagents: bool = False,
) -> RunnerFiles:
    """The files, variables and arguments a spawn of `agent` needs (pure: the caller
    writes the files into `run_dir`, a folder only its owner can write).

    gemini: a policy file (`--policy`: the shell allowed for read+shell, writes
    denied below read+write, the web denied to agents without web tools, sub-agents
    (`invoke_agent`) denied unless `subagents`, and gsd's
    safety `policy`, whose folder rules hold under `worktree`, the spawn's working
    folder). An agent's `max_turns` and gsd's hooks go into gemini's user settings in
    a private home (gsd.io.confine.clihome.gemini_home), not here.
    Other runners need nothing.
    """
    if agent.runner != "gemini":
        return RunnerFiles(files={}, env={}, argv=[])
    files: dict[str, str] = {}
    env: dict[str, str] = {}
    argv: list[str] = []
    files["gemini-policy.toml"] = gemini.policy(
        agent.tier, agent.web, policy, None if worktree is None else str(worktree), subagents
    )
    argv += ["--policy", str(run_dir / "gemini-policy.toml")]
    return RunnerFiles(files=files, env=env, argv=argv)


def codex_mechanism(tier: str, confined: bool) -> str:
    """What holds a codex spawn of `tier`, in words (for the dry run)."""
    rules = f"execpolicy rules ($CODEX_HOME/rules/{codex.RULES_FILE})"
    if confined:
        return f"{rules}; codex --sandbox danger-full-access inside gsd's Landlock sandbox"
    return (
        f"{rules}; codex --sandbox "
        + {
            "read-only": "read-only: no writes at all",
            "workspace-write": "workspace-write: .git read-only, no network, no /tmp",
            "danger-full-access": "danger-full-access: gsd's git checks hold the rest",
        }[codex.SANDBOX[tier]]
    )


class PolicyView(TypedDict):
    """What of the safety policy reaches a runner (`policy_view`), as the dry run shows it."""

    mechanism: str
    rules: list[str]
    baseline: int
    extra: int


def policy_view(agent: Agent, policy: Policy, *, confined: bool = False) -> PolicyView:
    """What of `policy` reaches `agent`'s runner (for the dry run): `mechanism` in
    words, `rules` in the runner's own grammar, how many are the baseline's and how
    many config.json's. A tier without the shell or write tools needs fewer rules."""
    rules: list[str] = []
    shell, write = applies(agent.tier)
    if agent.runner in ("claude", "gemini") and not (shell or write):
        how = f"{agent.runner}: none needed, the {agent.tier} tier has no shell and no write tools"
    elif agent.runner == "claude":
        rules = claude.policy_rules(policy, agent.tier)
        how = "claude --disallowedTools (permission deny rules)"
    elif agent.runner == "gemini":
        matches = gemini.safety_matches(policy, agent.tier, None)
        rules = [f"{field} = {value}" for _tool, field, value, _why in matches]
        how = "gemini --policy file (policy-engine deny rules, priority 999)"
    elif agent.runner == "codex":
        rules = [rule.words for rule in policy.shell]
        how = codex_mechanism(agent.tier, confined)
    else:
        how = "a command agent: nothing in the runner; gsd's sandbox and git checks hold it"
    return PolicyView(
        mechanism=how,
        rules=rules,
        baseline=len(policy.texts()) - policy.extra,
        extra=policy.extra,
    )


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


# --- runner output ----------------------------------------------------------------


def parse_output(
    runner: str, stdout: str, result_file_text: str | None = None, stderr: str = ""
) -> RunnerOutput:
    """Read one run's output; never raises on bad input (structured=False, text=stdout).

    Each runner's module says what it reads: `claude.parse_output` its JSON result,
    `gemini.parse_output` its JSON object (on stdout, else a failure's on stderr),
    `codex.parse_output` its JSONL events, `resultfile.parse_output` the object a
    `command` agent wrote to $GSD_RESULT_FILE. No such output: the raw stdout.
    """
    try:
        found = None
        if runner == "claude":
            found = claude.parse_output(stdout)
        elif runner == "gemini":
            found = gemini.parse_output(stdout) or gemini.parse_output(stderr)
        elif runner == "codex":
            found = codex.parse_output(stdout)
        elif runner == "command":
            found = resultfile.parse_output(stdout, result_file_text)
    except (ValueError, TypeError, AttributeError, RecursionError):
        found = None
    return found or raw_output(stdout)
