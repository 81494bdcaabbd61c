"""Running git in one worktree: each command checked, index.lock waited for, two side by side."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from gsd.core.errors import GsdError
from gsd.io import gitguard, gitread
from gsd.io.gitread import details, first_reason

# Commands that only read: with GIT_OPTIONAL_LOCKS=0 their index refresh takes no
# index.lock, so gsd's own `git status` never makes another git (or gsd) fail.
_READ_ONLY = {
    "status",
    "diff",
    "diff-tree",
    "ls-files",
    "for-each-ref",
    "rev-parse",
    "log",
    "merge-base",
    "cat-file",
    "rev-list",
}
_LOCKED = re.compile(r"Unable to create '(?P<path>[^']*\.lock)': File exists")
LOCK_WAIT_S = 10.0  # how long a command waits, in all, for another git's index.lock


class Result(NamedTuple):
    """One finished git command: its exit status, stdout and stderr as text."""

    status: int
    out: str
    err: str


class GitRunner:
    """The git commands of one worktree: started by gsd.io.gitread, checked, retried
    while another git holds the index.lock."""

    def __init__(self, root: Path, git_dir: Path, common_dir: Path) -> None:
        self._root = root
        self._git_dir = git_dir
        self._common_dir = common_dir

    def run(
        self, command: str, *args: str, ok: tuple[int, ...] = (0,), input: str | None = None
    ) -> Result:
        """Run `git COMMAND ARGS` in the worktree; a status outside `ok` is a GsdError
        whose `details` hold git's whole stderr. Another git's index.lock is waited for."""
        return self.finish(self.start(command, *args, input=input), (command, *args), ok, input)

    def start(self, command: str, *args: str, input: str | None = None) -> subprocess.Popen[bytes]:
        """Start a git command (its result is `finish`'s): two can run side by side."""
        guard = gitguard.active_guard(self._common_dir)
        if guard is not None:
            guard.check()  # a hook or config an agent planted meanwhile goes before git runs
        try:
            return gitread.start(
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
    ) -> Result:
        """The result of a command `start` began; run again while another git holds a
        lock it needs (up to LOCK_WAIT_S), a GsdError when its status is not in `ok`."""
        data = input.encode() if input is not None else None
        result = self._wait(process, argv, data)
        waited, delay = 0.0, 0.05
        while result.status != 0 and _LOCKED.search(result.err):
            if waited >= LOCK_WAIT_S:
                raise self._lock_error(argv, result)
            time.sleep(delay)
            waited += delay
            delay = min(delay * 2, max(LOCK_WAIT_S - waited, 0.01))
            result = self._wait(self.start(*argv, input=input), argv, data)
        if result.status not in ok:
            raise self._error(argv, result)
        return result

    def side(self, *commands: tuple[str, ...]) -> Side:
        """These commands started beside the current one (`with`)."""
        return Side(self, *commands)

    def _wait(
        self, process: subprocess.Popen[bytes], argv: tuple[str, ...], data: bytes | None
    ) -> Result:
        """A started command's result; past `gitread.git_timeout()` (a hung hook) git and
        its hooks are ended and a one-line GsdError names the command."""
        done = gitread.finish(process, argv, cwd=self._root, input=data)
        return Result(done.status, done.stdout, done.stderr)

    def _error(self, argv: tuple[str, ...], result: Result) -> GsdError:
        what = gitread.describe(argv)
        why = first_reason(result.err) or f"exit status {result.status}"
        hint = "the log has git's whole message"
        if "identity unknown" in result.err or "tell me who you are" in result.err:
            hint = "set git config user.name and user.email"
        return GsdError(
            f"git {what} failed in {self._root}: {why}", hint=hint, details=details(argv, result)
        )

    def wait_for_index_lock(self, deadline: float, argv: tuple[str, ...]) -> None:
        """Wait (with backoff) until no other git holds this worktree's index.lock."""
        delay = 0.05
        lock = self._git_dir / "index.lock"
        while lock_held(self._git_dir) is not None:
            if time.monotonic() >= deadline:
                held = f"{lock} still there after {LOCK_WAIT_S:g} s"
                raise self._lock_error(argv, Result(status=128, out="", err=held))
            time.sleep(min(delay, max(deadline - time.monotonic(), 0.01)))
            delay *= 2

    def _lock_error(self, argv: tuple[str, ...], result: Result) -> GsdError:
        match = _LOCKED.search(result.err)
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

    def __init__(self, runner: GitRunner, *commands: tuple[str, ...]) -> None:
        self._runner = runner
        self._commands = commands
        self._started: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Side:
        self._started = [self._runner.start(*argv) for argv in self._commands]
        return self

    def results(self) -> list[str]:
        done = [
            self._runner.finish(p, argv).out
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


def one_line(text: str) -> str:
    """`text` with every run of whitespace, newlines included, as one space."""
    return " ".join(text.split())


def some(paths: Iterable[str], limit: int = 3) -> str:
    """The first `limit` paths, comma separated, and how many more."""
    items = list(paths)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
