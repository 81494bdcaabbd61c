"""Which tools `gsd mcp` serves: the run tools (gsd.cli.mcp_run) only with `--allow-run`,
and never to an agent a gsd run started. Standard library and gsd only: `gsd mcp`'s
first answers (gsd.cli.mcp_start) are chosen with it before the MCP SDK is imported."""

from __future__ import annotations

import os
from pathlib import Path

from gsd.core.errors import GsdError

RUN_TOOLS = ("execute_phase", "execute_plan", "run_status", "run_stop", "approve", "progress")
UNDER_AGENT = "GSD_TASK"  # set for every agent gsd spawns (gsd.formats.runners.invocation)


def under_a_run() -> str | None:
    """Why this server is an agent's, whose run must not be driven from inside: GSD_TASK
    in its environment (gsd sets it for every agent), or the live run of its repository
    among its ancestors (a CLI that passes its MCP servers no environment); else None."""
    if os.environ.get(UNDER_AGENT):
        return f"{UNDER_AGENT} is set"
    from gsd.io.lock import common_git_dir, live_holder

    try:
        holder = live_holder(common_git_dir(Path.cwd()))
    except (GsdError, OSError):
        return None
    pid = os.getppid()
    for _ in range(64):  # up the process tree to init
        if holder is None or pid <= 1:
            return None
        if pid == holder.get("pid"):
            return f"the gsd run (pid {pid}) started it"
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return None
    return None


def serves_run_tools(allow_run: bool) -> bool:
    return allow_run and under_a_run() is None


def refusal(name: str, allow_run: bool) -> str:
    """The one line a run tool's call gets when the server does not serve it."""
    why = under_a_run() if allow_run else None
    if why is not None:
        return (
            f"gsd: error: {name} is not served to an agent a gsd run started ({why}): "
            "only the read-only tools are"
        )
    return (
        f"gsd: error: {name} is a run tool, served only by `gsd mcp --allow-run` "
        "(register the server with it: claude mcp add gsd -- gsd mcp --allow-run)"
    )
