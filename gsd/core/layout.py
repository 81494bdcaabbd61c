"""Where gsd's files live: every path under `.planning/` and `.git/gsd/`, computed, no I/O.

Two trees. `.planning/` is the user's, committed: plans, STATE.md, ROADMAP.md, the
roster, config.json, and the logs gsd writes there (one file a plan, SPEC 0, so that a
wave's branches merge without a conflict). `.git/gsd/` is gsd's own and never
committed; part of it belongs to one checkout (its `git_dir`: a linked worktree has its
own), part is shared by every worktree of the repository (the `common_dir`). What is
shared is what two runs in two worktrees must see alike: the run lock, the registry of
running agents and the plans' worktrees. A lock or a registry looked up in a checkout's
own `git_dir` would miss a run started from another worktree.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import NamedTuple

PLANNING = ".planning"
PHASES = "phases"
LOGS = "logs"  # the per-plan logs
PHASE_LOG_PREFIX = "phase-"  # `logs/phase-{NN}.jsonl`: a phase's events no plan owns
STATE_FILE = "STATE.md"
ROADMAP_FILE = "ROADMAP.md"
ROSTER_FILE = "available_agents.md"
CONFIG_FILE = "config.json"
APPROVALS_FILE = "approvals.jsonl"
WORKFLOWS = "workflows"  # the project's overrides of the bundled prompt templates
LEGACY_EXECUTION_LOG = "execution-log.jsonl"  # older versions' shared logs: read, not written
LEGACY_ERROR_LOG = "specialist-errors.jsonl"

GSD = "gsd"  # the folder under .git/
LOCK_NAME = "run.lock"


def plan_log_name(plan_id: str) -> str:
    """`{plan}.jsonl`, in `.planning/logs/`: one plan's events and errors."""
    return f"{plan_id}.jsonl"


def phase_log_name(phase_number: str) -> str:
    """`phase-{NN}.jsonl`, in `.planning/logs/`: what a run logged for no one plan."""
    return f"{PHASE_LOG_PREFIX}{phase_number}.jsonl"


def planning_path(planning_rel: str, *parts: str) -> str:
    """A path under `.planning/` as git names it (posix, relative to the checkout)."""
    return str(PurePosixPath(planning_rel, *parts))


class GitLayout(NamedTuple):
    """gsd's folders under `.git/`: `git_dir` is this checkout's, `common_dir` the one all
    of the repository's worktrees share (they are the same in a main checkout)."""

    git_dir: Path
    common_dir: Path

    # -- this checkout's --------------------------------------------------------------

    @property
    def checkpoints(self) -> Path:
        """The signed records of the checkpoints taken in this checkout."""
        return self.git_dir / GSD / "checkpoints"

    @property
    def journal(self) -> Path:
        """Log lines a run wrote and has not committed yet (a crash replays them)."""
        return self.git_dir / GSD / "journal"

    def run_folder(self, plan_id: str, task: int) -> Path:
        """One task's prompt, output and RESULT, kept for `gsd errors` and a post-mortem."""
        return self.git_dir / GSD / "runs" / f"{plan_id}-{task}"

    # -- shared by every worktree ----------------------------------------------------------

    @property
    def lock(self) -> Path:
        """One run at a time in a repository, whichever worktree it starts from."""
        return self.common_dir / GSD / LOCK_NAME

    @property
    def running(self) -> Path:
        """The registry of agents running now (a crashed run's are ended by the next)."""
        return self.common_dir / GSD / "running"

    @property
    def worktrees(self) -> Path:
        """The gsd-owned worktrees, one a plan, until the plan is merged back."""
        return self.common_dir / GSD / "worktrees"

    def worktree(self, plan_id: str) -> Path:
        return self.worktrees / plan_id
