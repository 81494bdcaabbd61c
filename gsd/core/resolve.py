"""Which agent runs a task: SPEC section 3's resolution steps, each with its reason."""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Mapping
from typing import NamedTuple

from gsd.core.flags import env_flag
from gsd.core.specialists import EXECUTOR, classify
from gsd.core.words import suggested


class Resolution(NamedTuple):
    """The agent a task runs on, and why."""

    requested: str | None  # the specialist as the plan wrote it
    agent: str  # the agent that will run
    fallback_reason: str | None  # why it is not the requested specialist (None: it is)
    steps: tuple[str, ...]  # every decision taken, in order


def disabled_agents(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """`GSD_DISABLED_AGENTS=a,b`: agents never to run (tasks naming them fall back)."""
    raw = environ.get("GSD_DISABLED_AGENTS", "")
    return frozenset(name.strip() for name in raw.split(",") if name.strip())


def resolve_specialist(
    requested: str | None,
    *,
    roster: Collection[str] | None,
    agents: Mapping[str, object],  # name -> agent (gsd.formats.agents): looked up by name only
    use_specialists: bool = True,
    disabled: Collection[str] = frozenset(),
    skipped: Mapping[str, str] | None = None,
) -> Resolution:
    """Resolve a task's specialist (SPEC section 3).

    1. empty, missing or null -> gsd-executor
    2. malformed name -> gsd-executor (the raw name never reaches a program)
    3. not in available_agents.md, or no roster -> gsd-executor
    4. disabled by GSD_DISABLED_AGENTS -> gsd-executor
    5. otherwise the specialist, if gsd can find its agent file by name or `ns:name`
       alias; `skipped` (name -> "path: why") says when its file exists but was skipped.
    `workflow.use_specialists: false` sends every task to gsd-executor first of all.
    """
    steps: list[str] = []

    def fallback(reason: str) -> Resolution:
        steps.append(f"-> {EXECUTOR}: {reason}")
        return Resolution(requested, EXECUTOR, reason, tuple(steps))

    shown = repr(requested) if requested is not None else "none"
    steps.append(f"specialist as written: {shown}")
    if not use_specialists:
        return fallback("workflow.use_specialists is false")
    standing = classify(requested, roster)
    if standing == "empty":
        steps.append("step 1: empty or null")
        return Resolution(requested, EXECUTOR, None, (*steps, f"-> {EXECUTOR}"))
    steps.append("step 1: not empty or null")
    if standing == "malformed":
        return fallback("malformed name (allowed: letters, digits and _.:-)")
    steps.append("step 2: well-formed")
    if standing == "no-roster":
        return fallback("no .planning/available_agents.md (run `gsd agents sync`)")
    if standing == "not-in-roster":
        assert roster is not None and requested is not None  # a roster without the name
        return fallback("not in .planning/available_agents.md" + suggested(requested, roster))
    steps.append("step 3: in the roster")
    assert requested is not None  # "listed": a well-formed name
    name = requested
    if name in disabled:
        return fallback("disabled by GSD_DISABLED_AGENTS")
    steps.append("step 4: not disabled")
    if name not in agents:
        if skipped is None:
            skipped = getattr(agents, "skipped", {})  # an AgentSet knows its skipped files
        why = skipped.get(name)
        if why is not None:
            return fallback(f"its agent file was skipped: {why} (see `gsd agents check`)")
        close = suggested(name, agents)
        return fallback(f"no agent file for it (see `gsd agents list`){close}")
    steps.append(f"step 5: runs as {name}")
    return Resolution(requested, name, None, tuple(steps))


def debug_print(label: str, resolution: Resolution) -> None:
    """With DEBUG=true, every decision goes to stderr."""
    if env_flag("DEBUG"):
        for step in resolution.steps:
            sys.stderr.write(f"[gsd] resolve {label}: {step}\n")
