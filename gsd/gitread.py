"""git without GitPython: its program, its environment, task commits read from `git log`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# The program GitPython would start: GIT_PYTHON_GIT_EXECUTABLE, or `git` found on PATH
# (gsd.git still imports GitPython, whose import checks that the program runs).
GIT = os.environ.get("GIT_PYTHON_GIT_EXECUTABLE") or "git"

# The environment of every git command: a parent git's GIT_DIR, GIT_INDEX_FILE, ... (gsd
# run from a hook) would point gsd's commands elsewhere. Identity, transport, global config
# choices and tracing are the user's and stay (pre-commit's no_git_env keeps the same kind).
_KEPT_GIT_VARS = (
    "GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "GIT_SSH",
    "GIT_ASKPASS", "GIT_EXEC_PATH", "GIT_PYTHON_", "GIT_TRACE", "GIT_SSL_", "GIT_HTTP_",
    "GIT_ALLOW_PROTOCOL", "GIT_TERMINAL_PROMPT",
)  # fmt: skip
# Config no git command of gsd's follows, whoever set it: an fsmonitor is a program git
# runs on every status, add and commit, and an agent without a sandbox can plant one
# while another plan's git command is already reading the config (a check before each
# command cannot close that window).
NEVER = ("-c", "core.fsmonitor=false")
# One record per commit: its sha, NUL, its `Gsd-Task` trailer values, one a line.
_TASK_LOG = "--format=%H%x00%(trailers:key=Gsd-Task,valueonly,unfold)%x1e"


def git_env(*, read_only: bool = False) -> dict[str, str]:
    """os.environ without the GIT_* variables that redirect git, in the C locale (gsd
    reads git's messages); with GIT_OPTIONAL_LOCKS=0 for commands that only read."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("GIT_") or name.startswith(_KEPT_GIT_VARS)
    }
    env["LANGUAGE"] = "C"
    env["LC_ALL"] = "C"
    if read_only:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


def task_log_args(since: str | None = None, *, plan_branches: bool = False) -> list[str]:
    """`git log`'s arguments for the task commits reachable from HEAD (since `since`),
    and with `plan_branches` from the `gsd/*` branches too."""
    revs = [f"{since}..HEAD" if since else "HEAD"]
    if plan_branches:
        revs.append("--branches=gsd/*")
    return [_TASK_LOG, *revs]


def parse_task_log(out: str) -> dict[str, str]:
    """`Gsd-Task` trailer value -> the newest commit carrying it, from `task_log_args`'s log."""
    tasks: dict[str, str] = {}
    for record in out.split("\x1e"):
        sha, _, values = record.strip().partition("\0")
        for value in values.splitlines():
            if value.strip():
                tasks.setdefault(value.strip(), sha)
    return tasks


def committed_tasks(root: Path, *, plan_branches: bool = False) -> dict[str, str]:
    """`Gsd-Task` trailer value -> newest commit carrying it, reachable from HEAD (and the
    `gsd/*` branches); empty when `root` is in no repository, before the first commit, or
    when git cannot run. For commands that only look (`gsd status`): no GitPython."""
    try:
        done = subprocess.run(
            [GIT, *NEVER, "log", *task_log_args(plan_branches=plan_branches)],
            cwd=root, env=git_env(read_only=True), stdin=subprocess.DEVNULL,
            capture_output=True,
        )  # fmt: skip
    except OSError:  # git is not installed: nothing is known to be committed
        return {}
    if done.returncode != 0:
        return {}
    return parse_task_log(done.stdout.decode("utf-8", "surrogateescape"))
