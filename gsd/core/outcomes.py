"""What an attempt at a task came to, and the commit a finished task left (plain data)."""

from __future__ import annotations

from typing import NamedTuple

from gsd.core.models import TaskReport


class TaskOutcome(NamedTuple):
    """What happened to one attempt at a task."""

    plan: str
    task: int
    agent: str
    success: bool
    soft_success: bool
    error_type: str | None
    details: str
    commit: str | None
    changed: list[str]
    deviations: list[str]
    exit_code: int | None
    duration_s: float
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    attempt: int
    checkpoint: str | None
    report: TaskReport | None
    rate_limited: bool = False  # a failure the runner blamed on a rate limit (retried)
    output: str | None = None  # the file that holds the agent's stdout (under .git)
    tokens: int | None = None  # input + output, as counted against the budget
    budget: str | None = None  # "within", "over" (past warn) or "aborted"; None: no budget
    budget_warn: int | None = None
    budget_abort: int | None = None
    # a writing tier's success that changed no file and claimed none (shown, not failed)
    no_change: bool = False


class TaskCommit(NamedTuple):
    """A task's commit on a plan's branch (its `Gsd-Task` trailer), and what it changed."""

    task: int
    sha: str
    agent: str  # its `Gsd-Specialist` trailer
    added: tuple[str, ...]  # files the commit created
    changed: tuple[str, ...]  # every file it added, modified or deleted
