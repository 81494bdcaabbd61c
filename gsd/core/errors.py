"""The one error hierarchy; each error carries the exit code the CLI returns. Exit
statuses: gsd's own, and those of a program gsd runs."""

from __future__ import annotations

# Exit codes, one table for the whole tool (SPEC section 8).
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_PAUSED = 4
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

# What became of a program gsd runs, as shells report it: a program that cannot be found
# or executed (gsd's launcher and `gsd.io.process.proc` report one that never ran the same way).
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
# A supervised program gsd ended after its timeout.
EXIT_TIMEOUT = 124  # ended by SIGTERM after the timeout (GNU timeout's status)
EXIT_KILLED = 137  # needed SIGKILL after the grace period (128 + 9)

# What Ctrl-C prints, whichever path (git-hook fast path or Click) was running.
INTERRUPTED = "gsd: interrupted (a run resumes where it stopped when started again)"

# `error_type` of a failed task attempt in .planning/specialist-errors.jsonl (SPEC 6).
ERROR_TYPES = (
    "timeout",
    "timeout-kill",
    "nonzero-exit",
    "spawn-failed",
    "validation-failed",
    "policy-violation",
    "checkpoint-failed",
    "result-unparsable",
    "merge-conflict",
    "budget-exceeded",
    "report-failure",  # the Task Report said Status: failure
    "report-partial",  # ... or Status: partial
    "report-mismatch",  # the Task Report names files the task's commit lacks
    "permission-denied",  # the runner denied the writes of a task that changed nothing
    "plan-invalid",  # a *-PLAN.md the task wrote fails `gsd validate`
    "resource-limit",  # it went over config.json's sandbox.memory or sandbox.processes
    "review-changes",  # its reviewer asked for changes (retried up to review.max_rounds)
    "review-rejected",  # its reviewer rejected the work
    "review-failed",  # its reviewer crashed, timed out or answered no Review Report
    "proposal-failed",  # a plan-first task's read-only step wrote no usable proposal
    "scope-violation",  # a plan-first task changed a file outside its approved proposal
    "unknown",
)


class GsdError(Exception):
    """An error a user can cause: printed as one line, never a traceback."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, hint: str | None = None, details: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details  # what a log keeps beside the line, e.g. git's whole stderr

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


def logged(exc: BaseException) -> str:
    """An error as a log keeps it: its line, then whatever it carries beside it (a failed
    git command's argv and whole stderr), not just the first line."""
    details = getattr(exc, "details", "")
    return f"{exc}\n{details}" if details else str(exc)


class Interrupted(Exception):
    """gsd was asked to stop (SIGINT, SIGTERM or SIGHUP) and has: agents ended, open
    attempts rolled back, Session Continuity written. Exits 128 + the signal's number."""

    def __init__(self, signum: int, where: str = "") -> None:
        import signal

        self.signum = signum
        self.exit_code = 128 + signum
        self.name = signal.Signals(signum).name
        super().__init__(f"interrupted by {self.name}" + (f" {where}" if where else ""))


class UsageError(GsdError):
    """Bad arguments, or a target that does not exist."""


class InputError(GsdError):
    """A file gsd must read is missing, unreadable or malformed."""
