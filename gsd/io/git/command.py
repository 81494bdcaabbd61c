"""How gsd runs every git command: its program, a scrubbed environment, a timeout, whole
errors; and one worktree's commands, checked, waiting out another git's index.lock, two
side by side (`GitExec`, which `gsd.io.git.repo.Git` drives).

(`gsd doctor` asks `git --version` as it asks any program's, through `gsd.io.process.proc`.)
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from gsd.core.errors import GsdError, UsageError
from gsd.io.git import hookjail

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
EXIT_NOT_FOUND = 127  # the status of a git that could not be started


class GitResult(NamedTuple):
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


def _start(
    args: Sequence[str],
    *,
    cwd: Path,
    read_only: bool = False,
    stdin: bool = False,
    index_file: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start `git ARGS` in `cwd` (finish it with `_finish`): two can run side by side.
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


def _finish(
    process: subprocess.Popen[bytes],
    args: Sequence[str],
    *,
    cwd: Path,
    input: bytes | None = None,
    timeout_s: float | None = None,
) -> GitResult:
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
    return GitResult(tuple(args), process.returncode, out, err)


def call(
    args: Sequence[str],
    *,
    cwd: Path,
    input: bytes | None = None,
    read_only: bool = False,
    index_file: Path | None = None,
    timeout_s: float | None = None,
) -> GitResult:
    """`git ARGS` in `cwd`, to the end (see `_start` and `_finish`), whatever its status:
    the caller reads it. A git that cannot be started is a result with status 127 and
    the reason as stderr, not an exception."""
    try:
        process = _start(
            args, cwd=cwd, read_only=read_only, stdin=input is not None, index_file=index_file
        )
    except OSError as exc:
        said = f"{GIT}: {exc.strerror or exc}"
        return GitResult(tuple(args), EXIT_NOT_FOUND, b"", said.encode())
    return _finish(process, args, cwd=cwd, input=input, timeout_s=timeout_s)


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
    done: GitResult,
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


def details(args: Sequence[str], done: GitResult) -> str:
    """A failed command and everything it said (GsdError.details): `git ARGS (exit N)`,
    then git's whole stderr."""
    status, err = done.status, done.stderr
    shown = " ".join(" ".join((a if len(a) < 200 else a[:200] + "...").split()) for a in args)
    return f"git {shown} (exit {status})\n{err.strip()}"


def text(data: bytes) -> str:
    """git's output as text; bytes that are not UTF-8 survive a round trip."""
    return data.decode("utf-8", "surrogateescape")


# Commands that only read: with GIT_OPTIONAL_LOCKS=0 their index refresh takes no
# index.lock, so gsd's own `git status` never makes another git (or gsd) fail.
_READ_ONLY = frozenset(
    "status diff diff-tree ls-files for-each-ref rev-parse log merge-base cat-file rev-list".split()
)
_LOCKED = re.compile(r"Unable to create '(?P<path>[^']*\.lock)': File exists")
LOCK_WAIT_S = 10.0  # how long a command waits, in all, for another git's index.lock


class GitExec:
    """The git commands of one worktree: each started as `_start` starts any, its
    status checked, run again while another git holds the index.lock."""

    def __init__(self, root: Path, git_dir: Path, common_dir: Path) -> None:
        self._root = root
        self._git_dir = git_dir
        self._common_dir = common_dir

    def checked(
        self, command: str, *args: str, ok: tuple[int, ...] = (0,), input: str | None = None
    ) -> GitResult:
        """`git COMMAND ARGS` in the worktree, to the end; a status outside `ok` is a
        GsdError whose `details` hold git's whole stderr. Another git's index.lock is
        waited for."""
        return self.finish(self.start(command, *args, input=input), (command, *args), ok, input)

    def start(self, command: str, *args: str, input: str | None = None) -> subprocess.Popen[bytes]:
        """Start a git command (its result is `finish`'s): two can run side by side."""
        from gsd.io.git import (
            guard as gitguard,  # hashlib: not on `gsd status`'s path, which needs no Git
        )

        guard = gitguard.active_guard(self._common_dir)
        if guard is not None:
            guard.check()  # a hook or config an agent planted meanwhile goes before git runs
        try:
            return _start(
                (command, *args),
                cwd=self._root,
                stdin=input is not None,
                read_only=command in _READ_ONLY,
            )
        except OSError as exc:
            raise GsdError("git is not installed or not on PATH", hint="install git") from exc

    def finish(
        self,
        process: subprocess.Popen[bytes],
        argv: tuple[str, ...],
        ok: tuple[int, ...] = (0,),
        input: str | None = None,
    ) -> GitResult:
        """The result of a command `start` began; run again while another git holds a
        lock it needs (up to LOCK_WAIT_S), a GsdError when its status is not in `ok`.
        Past `git_timeout()` (a hung hook) git and its hooks are ended (`_finish`)."""
        data = input.encode("utf-8", "surrogateescape") if input is not None else None
        result = _finish(process, argv, cwd=self._root, input=data)
        waited, delay = 0.0, 0.05
        while result.status != 0 and _LOCKED.search(result.stderr):
            if waited >= LOCK_WAIT_S:
                raise self._lock_error(argv, result)
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, max(LOCK_WAIT_S - waited, 0.01))
            result = _finish(self.start(*argv, input=input), argv, cwd=self._root, input=data)
        if result.status not in ok:
            raise self._error(argv, result)
        return result

    def side(self, *commands: tuple[str, ...]) -> Side:
        """These commands started beside the current one (`with`)."""
        return Side(self, *commands)

    def _error(self, argv: tuple[str, ...], result: GitResult) -> GsdError:
        err = result.stderr
        why = first_reason(err) or f"exit status {result.status}"
        hint = "the log has git's whole message"
        if "identity unknown" in err or "tell me who you are" in err:
            hint = "set git config user.name and user.email"
        return GsdError(
            f"git {describe(argv)} failed in {self._root}: {why}",
            hint=hint,
            details=details(argv, result),
        )

    def wait_for_index_lock(self, deadline: float, argv: tuple[str, ...]) -> None:
        """Wait (with backoff) until no other git holds this worktree's index.lock."""
        delay = 0.05
        lock = self._git_dir / "index.lock"
        while lock_held(self._git_dir) is not None:
            if time.monotonic() >= deadline:
                held = f"{lock} still there after {LOCK_WAIT_S:g} s"
                raise self._lock_error(argv, GitResult(argv, 128, b"", held.encode()))
            time.sleep(min(delay, max(deadline - time.monotonic(), 0.01)))
            delay *= 2

    def _lock_error(self, argv: tuple[str, ...], result: GitResult) -> GsdError:
        match = _LOCKED.search(result.stderr)
        lock = match["path"] if match else str(self._git_dir / "index.lock")
        return GsdError(
            f"another git process holds {lock}; gsd waited {LOCK_WAIT_S:g} s for it",
            hint="let it finish (an editor's git status?), or delete the file if no git is "
            "running, then run gsd again",
            details=details(argv, result),
        )


def lock_held(git_dir: Path) -> Path | None:
    """The worktree's index.lock (`git_dir`/index.lock) when it exists, else None."""
    lock = git_dir / "index.lock"
    return lock if os.path.lexists(lock) else None


class Side:
    """Git commands run beside the current one (`with`): their outputs, in order, from
    `results()`; on an error they are ended and waited for, never left behind."""

    def __init__(self, runner: GitExec, *commands: tuple[str, ...]) -> None:
        self._runner = runner
        self._commands = commands
        self._started: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Side:
        self._started = [self._runner.start(*argv) for argv in self._commands]
        return self

    def results(self) -> list[str]:
        done = [
            self._runner.finish(p, argv).stdout
            for p, argv in zip(self._started, self._commands, strict=True)
        ]
        self._started = []
        return done

    def __exit__(self, *exc: object) -> None:
        for process in self._started:
            if process.returncode is None:
                process.kill()
            try:
                process.communicate()
            except (OSError, ValueError):  # already read to the end
                pass


def split(out: str) -> list[str]:
    """NUL-separated git output (`-z`) as a list, without empty entries."""
    return [item.strip("\n") for item in out.split("\0") if item.strip("\n")]


def literal(path: str) -> str:
    """A pathspec that matches `path` exactly (no glob, no magic)."""
    return f":(literal){path}"
