"""A whole run's budget (issue 25: `--budget-usd`, `--budget-tokens`, config `budget`).

What the run spent is what its `result` events record (each attempt's tokens, the
budget's count, and its cost), added up as they are logged: the plans of a wave run
side by side, so under a lock. No task starts once the spend is at or past the budget
(its plan stops: `budget-exceeded`); a delegation is given what is left as its token
abort threshold (its stream is watched: past it the agent is stopped, rolled back and
its changes salvaged, as a token budget's abort is) and as its cost limit (a cost is
known only from the runner's final count: past it, the attempt is rolled back the same way).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from gsd.core.models import Plan
from gsd.core.safety.budget import RunBudget, Spent, left, spent_line
from gsd.core.verdict.outcomes import TaskOutcome
from gsd.io.dispatch import TaskDispatch

if TYPE_CHECKING:
    from gsd.formats.settings import Settings
    from gsd.run.context import RunEffects

ERROR_TYPE = "budget-exceeded"  # the per-delegation token abort's type, reused


def decide(settings: Settings, usd: float | None, tokens: int | None) -> RunBudget:
    """The run's budget: each figure from the command line (`usd`, `tokens`), else
    config.json `budget`."""
    config = settings.budget
    usd_source = "--budget-usd"
    if usd is None and config.usd is not None:
        usd, usd_source = config.usd, "config.json budget.usd"
    tokens_source = "--budget-tokens"
    if tokens is None and config.tokens is not None:
        tokens, tokens_source = config.tokens, "config.json budget.tokens"
    return RunBudget(
        usd=usd,
        tokens=tokens,
        usd_source=usd_source if usd is not None else "",
        tokens_source=tokens_source if tokens is not None else "",
    )


class RunSpend:
    """What the run's delegations used so far, against its budget."""

    def __init__(self, budget: RunBudget) -> None:
        self.budget = budget
        self._spent = Spent()
        self._lock = threading.Lock()

    @property
    def spent(self) -> Spent:
        with self._lock:
            return self._spent

    def add(self, outcome: TaskOutcome) -> None:
        """One attempt's `result` event: its tokens (the budget's count, else its
        runner's input and output) and cost added."""
        tokens = outcome.tokens
        if tokens is None and (outcome.input_tokens or outcome.output_tokens):
            tokens = (outcome.input_tokens or 0) + (outcome.output_tokens or 0)
        with self._lock:
            self._spent = self._spent.plus(tokens, outcome.cost_usd)

    def exhausted(self) -> str | None:
        """Why no task may start now (None: the budget has room, or there is none)."""
        return spent_line(self.spent, self.budget) if self.budget.limited else None

    def bounded(self, dispatch: TaskDispatch) -> TaskDispatch:
        """`dispatch` with what is left of the run's budget as its limits: a token abort
        threshold no higher than the tokens left (its warn budget no higher either),
        and the dollars left."""
        if not self.budget.limited or dispatch.runner is None:
            return dispatch
        tokens, usd = left(self.spent, self.budget)
        if usd is not None:
            source = f"the run's budget of ${self.budget.usd:,.2f} ({self.budget.usd_source})"
            dispatch = dispatch._replace(budget_usd=usd, budget_usd_source=source)
        own = dispatch.budget_abort
        if tokens is None or (own is not None and own <= tokens):
            return dispatch
        warn = dispatch.budget_warn
        return dispatch._replace(
            budget_abort=tokens,
            budget_warn=tokens if warn is None else min(warn, tokens),
            budget_source=(
                f"what was left of the run's budget of {self.budget.tokens:,} tokens, "
                f"{self.budget.tokens_source}"
            ),
        )


def stopped(spend: RunSpend, effects: RunEffects, plan: Plan, task: int) -> TaskOutcome | None:
    """The task that does not start because the run's budget is spent: logged in the
    run's log (`gsd errors`, STATE.md's blocker), returned as a failure before any agent
    ran (its plan stops on it, nothing to roll back); None when it may start."""
    why = spend.exhausted()
    if why is None:
        return None
    details = f"{why}; task {task} not started (raise the budget, then run again)"
    effects.journal.error(plan.phase, plan.id, ERROR_TYPE, details, f"before task {task}")
    return TaskOutcome.failed_early(plan.id, task, "gsd", 0, error_type=ERROR_TYPE, details=details)
