"""What an attempt at a task came to, the commit a finished task left (plain data), and
what follows a failed attempt: the retry ladder (SPEC 7 step 5)."""

from __future__ import annotations

from typing import Literal, NamedTuple

from gsd.core.models import TaskReport
from gsd.core.verdict.review import ERROR_TYPES as REVIEW_ERRORS
from gsd.core.verdict.review import Review


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
    review: Review | None = None  # what its reviewer said (the review gate, issue 24)
    step: str = "first"  # the retry ladder's step that made this attempt (STEPS), or "first"
    verify_output: str | None = None  # the failed `<automated>` check's output file (under .git)
    salvage: str | None = None  # the ref a rolled-back attempt's changes are kept under
    # why a soft success was accepted (gsd.core.verdict.judge's REPORTED_SOFT, VERIFIED_SOFT)
    soft_reason: str | None = None

    @classmethod
    def blank(cls, plan: str, task: int, agent: str, attempt: int = 1) -> TaskOutcome:
        """An attempt with nothing on record yet: not a success, nothing changed, run,
        measured or committed. The one place every field is given: each builder fills
        in what it knows with `_replace` (the run's settle step, the logs' attempts,
        `failed_early`, `from_commit`)."""
        return cls(
            plan=plan,
            task=task,
            agent=agent,
            success=False,
            soft_success=False,
            error_type=None,
            details="",
            commit=None,
            changed=[],
            deviations=[],
            exit_code=None,
            duration_s=0.0,
            input_tokens=None,
            output_tokens=None,
            cost_usd=None,
            attempt=attempt,
            checkpoint=None,
            report=None,
        )

    @classmethod
    def failed_early(
        cls, plan: str, task: int, agent: str, attempt: int, *, error_type: str, details: str
    ) -> TaskOutcome:
        """An attempt that failed before its agent ran: nothing changed, nothing to report."""
        return cls.blank(plan, task, agent, attempt)._replace(
            error_type=error_type, details=details
        )

    @classmethod
    def from_commit(cls, plan: str, commit: TaskCommit) -> TaskOutcome:
        """A task committed with no attempt on record (its log lost): what the commit says."""
        return cls.blank(plan, commit.task, commit.agent or "?")._replace(
            success=True, commit=commit.sha, changed=list(commit.changed)
        )


class TaskCommit(NamedTuple):
    """A task's commit on a plan's branch (its `Gsd-Task` trailer), and what it changed."""

    task: int
    sha: str
    agent: str  # its `Gsd-Specialist` trailer
    added: tuple[str, ...]  # files the commit created
    changed: tuple[str, ...]  # every file it added, modified or deleted


# The retry ladder (SPEC 7 step 5) ------------------------------------------------------

# retried (SPEC 7 step 5), as are failures the runner blamed on a rate limit
TRANSIENT = frozenset({"timeout", "timeout-kill"})
# never retried nor handed to the fallback: the same work would fail the same way
# (a delegation past its token budget's abort threshold would be stopped again); a
# review's changes are retried by the review gate's own count (`review.max_rounds`)
FINAL = frozenset(
    {"validation-failed", "policy-violation", "budget-exceeded", "proposal-failed", *REVIEW_ERRORS}
)

Rung = Literal["retry", "fallback", "stop"]


def next_rung(
    failed: TaskOutcome, *, retries: int, fallback_on_error: bool, on_fallback: bool
) -> Rung:
    """What follows the failed attempt `failed`: the same agent again while a transient
    failure has retries left (`specialists.max_retries`), else the fallback agent
    (gsd-executor) when `voltagent.fallback_on_error` and the task is not `on_fallback`
    already, else nothing: the failure is the task's."""
    transient = failed.error_type in TRANSIENT or failed.rate_limited
    if transient and failed.attempt <= retries:
        return "retry"
    if fallback_on_error and failed.error_type not in FINAL and not on_fallback:
        return "fallback"
    return "stop"


# The retry ladder as config (`retry.steps`): an ordered list of steps, each one attempt.

Step = Literal["immediate", "with_context", "fallback"]
STEPS: tuple[Step, ...] = ("immediate", "with_context", "fallback")
# no step at all: a review's rejection or failure is final (its changes are retried by
# the review gate, outside the ladder)
NEVER_AGAIN = frozenset({"policy-violation", "budget-exceeded", *REVIEW_ERRORS})


def default_ladder(retries: int, fallback_on_error: bool) -> tuple[Step, ...]:
    """The ladder when config.json gives no `retry.steps`: `specialists.max_retries`
    immediate retries, then one fallback when `voltagent.fallback_on_error` (the rungs
    `next_rung` decides, step by step)."""
    again: Step = "immediate"
    last: tuple[Step, ...] = ("fallback",) if fallback_on_error else ()
    return (again,) * retries + last


def next_step(
    failed: TaskOutcome, ladder: tuple[Step, ...], used: int, *, on_fallback: bool
) -> tuple[Step | None, int]:
    """The step of the attempt after the failed attempt `failed`, when `used` steps of
    `ladder` are spent, and how many are spent then; None: the failure is the task's.

    Each step is one attempt, taken in order; a step that does not fit the failure is
    passed over (and spent): `immediate` (the same prompt again) fits only a transient
    failure; `with_context` (the prompt with what went wrong) fits any failure but a
    policy violation, a budget's abort or a review's verdict, a failed `<verify>` check
    included; `fallback` (gsd-executor, the first prompt) fits what `next_rung` hands
    over, unless the task is on gsd-executor already."""
    for at in range(used, len(ladder)):
        if _fits(ladder[at], failed, on_fallback):
            return ladder[at], at + 1
    return None, len(ladder)


def _fits(step: Step, failed: TaskOutcome, on_fallback: bool) -> bool:
    if step == "immediate":  # as `next_rung` retries
        return failed.error_type in TRANSIENT or failed.rate_limited
    if failed.error_type in NEVER_AGAIN:
        return False
    if step == "fallback":
        return failed.error_type not in FINAL and not on_fallback
    return True
