"""How gsd runs every git command: its program, a scrubbed environment, a timeout, whole errors.

(`gsd doctor` asks `git --version` as it asks any program's, through `gsd.io.proc`.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from gsd.core.errors import GsdError, UsageError
from gsd.io import hookjail

# The program: GIT_PYTHON_GIT_EXECUTABLE (GitPython's variable, still honoured for those
# who set it), or `git` found on PATH.
GIT = os.environ.get("GIT_PYTHON_GIT_EXECUTABLE") or "git"

# The environment of every git command: a parent git's GIT_DIR, GIT_INDEX_FILE, ... (gsd
# run from a hook) would point gsd's commands elsewhere. Identity, transport, global config
# choices and tracing are the user's and stay (pre-commit's no_git_env keeps the same kind).
_KEPT_GIT_VARS = (
    "GIT_AUTHOR_",
    "GIT_COMMITTER_",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_KEY_",
    "GIT_CONFIG_VALUE_",
    "GIT_SSH",
    "GIT_ASKPASS",
    "GIT_EXEC_PATH",
    "GIT_PYTHON_",
    "GIT_TRACE",
    "GIT_SSL_",
    "GIT_HTTP_",
    "GIT_ALLOW_PROTOCOL",
    "GIT_TERMINAL_PROMPT",
)
# Config no git command of gsd's follows, whoever set it: an fsmonitor is a program git
# runs on every status, add and commit, and an agent without a sandbox can plant one
# while another plan's git command is already reading the config (a check before each
# command cannot close that window).
NEVER = ("-c", "core.fsmonitor=false")
# How long one git command may take, hooks included (a commit runs pre-commit, commit-msg
# and post-commit; a merge post-merge; any ref or index write reference-transaction and
# post-index-change): long enough for a hook that runs a test suite, short enough that a
# hook waiting on a terminal nobody watches ends as an error instead of a hang.
TIMEOUT_VAR = "GSD_GIT_TIMEOUT"
DEFAULT_TIMEOUT_S = 600.0
_GRACE_S = 5.0  # after SIGTERM (git removes its lock files), before SIGKILL
# One record per commit: its sha, NUL, its `Gsd-Task` trailer values, one a line.
_TASK_LOG = "--format=%H%x00%(trailers:key=Gsd-Task,valueonly,unfold)%x1e"
EXIT_NOT_FOUND = 127  # the status of a git that could not be started


class GitRun(NamedTuple):
    """One finished git command: its arguments (after `git`), status and output."""

    args: tuple[str, ...]
    status: int
    out: bytes
    err: bytes

    @property
    def stdout(self) -> str:
        return text(self.out)

    @property
    def stderr(self) -> str:
        return text(self.err)


def git_env(*, read_only: bool = False, index_file: Path | None = None) -> dict[str, str]:
    """os.environ without the GIT_* variables that redirect git, in the C locale (gsd
    reads git's messages); with GIT_OPTIONAL_LOCKS=0 for commands that only read, and
    GIT_INDEX_FILE only when gsd names an index itself (`hook_index`)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("GIT_") or name.startswith(_KEPT_GIT_VARS)
    }
    env["LANGUAGE"] = "C"
    env["LC_ALL"] = "C"
    if read_only:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    if index_file is not None:
        env["GIT_INDEX_FILE"] = str(index_file)
    return env


def git_timeout() -> float:
    """Seconds one git command may take: GSD_GIT_TIMEOUT, or DEFAULT_TIMEOUT_S."""
    given = os.environ.get(TIMEOUT_VAR, "").strip()
    if not given:
        return DEFAULT_TIMEOUT_S
    try:
        seconds = float(given)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise UsageError(
            f"{TIMEOUT_VAR}={given!r} is not a number of seconds",
            hint=f"set e.g. 900, or unset it for {DEFAULT_TIMEOUT_S:g}",
        )
    return seconds


def start(
    args: Sequence[str],
    *,
    cwd: Path,
    read_only: bool = False,
    stdin: bool = False,
    index_file: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start `git ARGS` in `cwd` (finish it with `finish`): two can run side by side.
    An OSError (no git, no `cwd`) goes to the caller."""
    git_timeout()  # a bad GSD_GIT_TIMEOUT is refused before git runs, not after
    return subprocess.Popen(
        [GIT, *NEVER, *hookjail.config_args(cwd), *args],
        cwd=cwd,
        env=git_env(read_only=read_only, index_file=index_file),
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # its own session: a Ctrl-C at the terminal is gsd's to handle (end the agents,
        # roll back), not a signal that kills a commit half way; and on a timeout the
        # whole group, git and the hook it runs, is ended
        start_new_session=True,
    )


def finish(
    process: subprocess.Popen[bytes],
    args: Sequence[str],
    *,
    cwd: Path,
    input: bytes | None = None,
    timeout_s: float | None = None,
) -> GitRun:
    """Wait for a started git command, never longer than `timeout_s` (default
    `git_timeout()`): past it git and its hooks are ended and a one-line GsdError names
    the command."""
    limit = git_timeout() if timeout_s is None else timeout_s
    try:
        out, err = process.communicate(input, timeout=limit)
    except subprocess.TimeoutExpired:
        _end(process)
        raise GsdError(
            f"git {describe(args)} gave no answer in {limit:g} s in {cwd}; gsd ended it",
            hint=f"a hook waiting or hung? check the repository's hooks, or set {TIMEOUT_VAR} "
            "to more seconds",
        ) from None
    return GitRun(tuple(args), process.returncode, out, err)


def run(
    args: Sequence[str],
    *,
    cwd: Path,
    input: bytes | None = None,
    read_only: bool = False,
    index_file: Path | None = None,
    timeout_s: float | None = None,
) -> GitRun:
    """`git ARGS` in `cwd`, to the end (see `start` and `finish`). A git that cannot be
    started is a result with status 127 and the reason as stderr, not an exception."""
    try:
        process = start(
            args, cwd=cwd, read_only=read_only, stdin=input is not None, index_file=index_file
        )
    except OSError as exc:
        said = f"{GIT}: {exc.strerror or exc}"
        return GitRun(tuple(args), EXIT_NOT_FOUND, b"", said.encode())
    return finish(process, args, cwd=cwd, input=input, timeout_s=timeout_s)


def _end(process: subprocess.Popen[bytes]) -> None:
    """End git and whatever it started (a hook): SIGTERM, which lets git remove its lock
    files, then SIGKILL; output still open after that (a hook's own daemon) is let go."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            process.communicate(timeout=_GRACE_S)
            return
        except (subprocess.TimeoutExpired, ValueError, OSError):
            continue
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def failure(
    done: GitRun,
    where: Path,
    *,
    what: str | None = None,
    hint: str | None = None,
    error: type[GsdError] = GsdError,
) -> GsdError:
    """The error of a failed git command: one line (what failed, where, git's first
    reason) whose `details` keep the command and git's WHOLE stderr, for logs."""
    reason = first_reason(done.stderr) or f"exit status {done.status}"
    what = what or f"git {describe(done.args)} failed in {where}"
    return error(f"{what}: {reason}", hint=hint, details=details(done.args, done))


def describe(args: Sequence[str]) -> str:
    """A command as errors name it: `commit`, `merge gsd/01-02`, `ls-tree abc123`."""
    command, rest = (args[0], args[1:]) if args else ("", ())
    return " ".join([command, *[a for a in rest[:1] if not a.startswith("-")]])


def first_reason(stderr: str) -> str:
    """The first line of git's stderr that says what went wrong."""
    for line in stderr.splitlines():
        line = line.strip()
        if line and not line.startswith("hint:"):
            for prefix in ("fatal: ", "error: "):
                line = line.removeprefix(prefix)
            return line
    return ""


def details(args: Sequence[str], done: GitRun | tuple[int, str, str]) -> str:
    """A failed command and everything it said (GsdError.details): `git ARGS (exit N)`,
    then git's whole stderr."""
    status, err = (done.status, done.stderr) if isinstance(done, GitRun) else (done[0], done[2])
    shown = " ".join(" ".join((a if len(a) < 200 else a[:200] + "...").split()) for a in args)
    return f"git {shown} (exit {status})\n{err.strip()}"


def text(data: bytes) -> str:
    """git's output as text; bytes that are not UTF-8 survive a round trip."""
    return data.decode("utf-8", "surrogateescape")


def hook_index(root: Path) -> Path | None:
    """The index a git hook was handed (GIT_INDEX_FILE: `git commit -a` and `git commit
    PATH` build a temporary one) when it is the index of the repository at `root`; None
    otherwise, and outside hooks: a hook of another repository names that one's index."""
    given = os.environ.get("GIT_INDEX_FILE")
    if not given:
        return None
    index = Path(os.path.abspath(given))  # relative to the hook's directory, the top level
    if index.parent == Path(os.path.abspath(root / ".git")) and index.is_file():
        return index  # the common case, without asking git: `root` is the top level
    done = run(["rev-parse", "--absolute-git-dir", "--git-common-dir"], cwd=root, read_only=True)
    dirs = {Path(os.path.abspath(root / line)) for line in done.stdout.splitlines()}
    if done.status == 0 and index.parent in dirs and index.is_file():
        return index
    return None


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
    when git cannot run. For commands that only look (`gsd status`): no Git object."""
    done = run(["log", *task_log_args(plan_branches=plan_branches)], cwd=root, read_only=True)
    if done.status != 0:
        return {}
    return parse_task_log(done.stdout)
