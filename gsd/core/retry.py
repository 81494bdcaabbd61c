"""The retry ladder (SPEC 7 step 5): what follows a failed attempt at a task."""

from __future__ import annotations

from typing import Literal

from gsd.core.outcomes import TaskOutcome

# retried (SPEC 7 step 5), as are failures the runner blamed on a rate limit
TRANSIENT = frozenset({"timeout", "timeout-kill"})
# never retried nor handed to the fallback: the same work would fail the same way
# (a delegation past its token budget's abort threshold would be stopped again)
FINAL = frozenset({"validation-failed", "policy-violation", "budget-exceeded"})

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
