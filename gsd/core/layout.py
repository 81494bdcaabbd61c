"""Where gsd's files live: every path under `.planning/`, `.git/gsd/`, the user's state
folder (the signing key, the plan worktrees); no I/O.

Two trees in the repository. `.planning/` is the user's and committed: plans, STATE.md,
ROADMAP.md, the roster, config.json, and the logs gsd writes there (a file a plan, SPEC 0, so that a
wave's branches merge without a conflict). `.git/gsd/` is gsd's own and never committed.
Part of it belongs to one checkout, under its `git_dir` (a linked worktree has its own);
part is shared by every worktree of the repository, under the `common_dir`: what two runs
started from two worktrees must see alike, the run lock and the registry of running
agents. Each function's parameter says which of the two it wants. The key that signs
checkpoint records and the plans' worktrees live outside every repository (SPEC 0 of
2026-11-27: Claude Code refuses every edit under a `.git/` folder, and many tools skip
such paths).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path, PurePosixPath

from gsd.core.ids import task_key

# -- .planning/ --------------------------------------------------------------------------

PLANNING = ".planning"
PHASES = "phases"
MILESTONES = "milestones"  # shipped milestones; `v1.0-phases/` in it holds v1.0's phases
ARCHIVED_PHASES_SUFFIX = "-phases"
STATE_FILE = "STATE.md"
ROADMAP_FILE = "ROADMAP.md"
ROSTER_FILE = "available_agents.md"
CONFIG_FILE = "config.json"
APPROVALS = f"{PLANNING}/approvals.jsonl"  # as git names it, from the checkout's root
WORKFLOWS = "workflows"  # the project's own versions of the bundled prompt templates
LOGS = "logs"  # a log a plan, and a log a phase for what no one plan owns
PHASE_LOG_PREFIX = "phase-"
LEGACY_EXECUTION_LOG = "execution-log.jsonl"  # older versions' shared logs: read, not written
LEGACY_ERROR_LOG = "specialist-errors.jsonl"


def archived_milestone(path: str) -> str | None:
    """The milestone (`v1.0`) whose archive holds a plan's path
    (`.planning/milestones/v1.0-phases/01-x/01-01-PLAN.md`), or None for a current one."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    for i in range(len(parts) - 2):
        if parts[i] == PLANNING and parts[i + 1] == MILESTONES:
            return archive_version(parts[i + 2])
    return None


def archive_version(name: str) -> str | None:
    """`v1.0` for the archive folder `v1.0-phases` under `.planning/milestones/`, else None."""
    version = name.removesuffix(ARCHIVED_PHASES_SUFFIX)
    return version if name != version and _version_re().fullmatch(version) else None


@cache
def _version_re() -> re.Pattern[str]:
    return re.compile(r"v[\d.]+")


def plan_log(planning: Path, plan_id: str) -> Path:
    """`.planning/logs/{plan}.jsonl`: one plan's events and errors."""
    return planning / LOGS / f"{plan_id}.jsonl"


def phase_log(planning: Path, phase_number: str) -> Path:
    """`.planning/logs/phase-{NN}.jsonl`: what a run logged for no one plan."""
    return planning / LOGS / f"{PHASE_LOG_PREFIX}{phase_number}.jsonl"


# -- .git/gsd/ of one checkout -----------------------------------------------------------

GSD = "gsd"
GIT = ".git"  # a repository's git directory (in a linked worktree: a file naming it)
WORKTREES = "worktrees"


def checkpoints_dir(git_dir: Path) -> Path:
    """The signed records of the checkpoints taken in this checkout."""
    return git_dir / GSD / "checkpoints"


def journal_dir(git_dir: Path) -> Path:
    """Log lines a run wrote and has not committed yet (the next run commits them)."""
    return git_dir / GSD / "journal"


JOURNAL_PLANS = "plans"  # journal/plans/{plan}.jsonl: a plan's own lines, until committed


def journal_plan_log(git_dir: Path, plan_id: str) -> Path:
    """A plan's own log lines in the journal (its `spawn` events: which attempt a killed
    run was making)."""
    return journal_dir(git_dir) / JOURNAL_PLANS / f"{plan_id}.jsonl"


def run_dir(git_dir: Path, plan_id: str, task: int) -> Path:
    """One task's prompt, output and RESULT, kept for `gsd errors` and a post-mortem."""
    return git_dir / GSD / "runs" / task_key(plan_id, task)


def compact_snapshot(git_dir: Path, session_id: str) -> Path:
    """The state an agent CLI's session had when its context was compacted (the
    pre-compact hook), one file a session."""
    return git_dir / GSD / "snapshots" / f"{_session_name(session_id)}.md"


def session_summary(git_dir: Path, session_id: str) -> Path:
    """What gsd ran, as an agent CLI's session ended (the session-end hook)."""
    return git_dir / GSD / "sessions" / f"{_session_name(session_id)}.md"


def _session_name(session_id: str) -> str:
    """An agent CLI's session id as a safe file name (no `/`, no leading dot)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:80].lstrip(".") or "session"


def displaced_dir(git_dir: Path) -> Path:
    """Where files an agent left in the user's checkout are moved aside to, not deleted."""
    return git_dir / GSD / "displaced"


# -- .git/gsd/ shared by every worktree ----------------------------------------------------


def lock_file(common_dir: Path) -> Path:
    """One run at a time in a repository, whichever worktree it starts from."""
    return common_dir / GSD / "run.lock"


def running_dir(common_dir: Path) -> Path:
    """The registry of agents running now (a crashed run's are ended by the next)."""
    return common_dir / GSD / "running"


def background_dir(common_dir: Path) -> Path:
    """Runs `gsd mcp --allow-run` started in the background: each one's record and output."""
    return common_dir / GSD / "background"


def legacy_worktrees_dir(common_dir: Path) -> Path:
    """Where gsd put the plans' worktrees before 2026-11-27: found and removed, never used."""
    return common_dir / GSD / WORKTREES


# -- the user's own state, outside every repository ----------------------------------------


PRIVATE = "private"


def private_dir(state_home: Path) -> Path:
    """gsd's own secrets (the record-signing key): a folder no agent may read from inside
    its sandbox (gsd.io.confine.sandbox hides it), outside every repository (`state_home` is
    $XDG_STATE_HOME, or ~/.local/state)."""
    return state_home / GSD / PRIVATE


def record_key_file(state_home: Path) -> Path:
    """The key checkpoint records are signed with, in gsd's private folder."""
    return private_dir(state_home) / "record-key"


def legacy_record_key_file(state_home: Path) -> Path:
    """Where the key lived before 2026-11-28: moved to `record_key_file` on first use."""
    return state_home / GSD / "record-key"


def default_worktrees_base(state_home: Path) -> Path:
    """The folder every repository's plan worktrees go under unless configured:
    `$XDG_STATE_HOME/gsd/worktrees` (`~/.local/state/gsd/worktrees`)."""
    return state_home / GSD / WORKTREES


def repo_key(common_dir: Path) -> str:
    """One repository's folder name under a worktrees base: its folder's name and a short
    hash of its git directory (`common_dir`, absolute and resolved), so that two clones
    of one project never share a folder. Never `.git`, `.` or `..`."""
    name = common_dir.parent.name if common_dir.name == GIT else common_dir.name
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name.removesuffix(GIT)).strip(".") or "repo"
    import hashlib  # 3 ms at import: not on the git hook's path

    digest = hashlib.sha256(str(common_dir).encode("utf-8", "surrogateescape")).hexdigest()
    return f"{name[:40]}-{digest[:12]}"


def plan_worktrees_dir(base: Path, common_dir: Path) -> Path:
    """The folder one repository's plan worktrees live in: `{base}/{repo_key}`."""
    return base / repo_key(common_dir)


def plan_worktree(folder: Path, plan_id: str) -> Path:
    """A plan's worktree in its repository's folder (`plan_worktrees_dir`)."""
    return folder / plan_id
