"""Token budgets per delegation: a warn budget and an abort threshold, and where a run stands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

BudgetStatus = Literal["within", "over", "aborted"]


class Budget(NamedTuple):
    """Tokens one attempt may use: past `warn` it is recorded, past `abort` it is stopped."""

    warn: int
    abort: int
    source: str  # where the figures come from: "default", "config.json budgets", an agent file


# The hub-and-spoke seed design's table (docs/inside/budgets.md) predates the pinned
# CLIs: gemini's 30,000 / 50,000 there stopped a gemini-cli 0.61.0 run at its 4th turn
# (every request re-sends about 12,000 tokens of system prompt and tool declarations, 48
# kB, measured against the scripted model server); codex's 40,000 / 60,000 would stop a
# codex 0.169.0 run at its 6th request (~10,000 tokens each, measured the same way, and
# counted in full by its usage). Both set as wide as claude's. Claude has no figure there
# and no measured run here: its streamed usage counts every cache read of every turn
# (claude-code re-sends its system prompt and tools each turn), so its default is an
# estimate set wider; see the docs.
DEFAULTS: Mapping[str, tuple[int, int]] = {
    "gemini": (200_000, 400_000),
    "codex": (200_000, 400_000),
    "claude": (200_000, 400_000),
}


def resolve_budget(
    runner: str,
    agent_budget: tuple[int, int] | None,
    agent_source: str,
    config_budgets: Mapping[str, tuple[int, int]],
) -> Budget | None:
    """The agent file's `token_budget` > config.json `budgets.<runner>` > the default for
    the runner; None for a runner with none (`command`: gsd cannot read its usage)."""
    if agent_budget is not None:
        return Budget(*agent_budget, source=f"{agent_source} token_budget")
    if runner in config_budgets:
        return Budget(*config_budgets[runner], source=f"config.json budgets.{runner}")
    if runner in DEFAULTS:
        return Budget(*DEFAULTS[runner], source="default")
    return None


def budget_status(
    tokens: int | None, budget: Budget | None, *, aborted: bool
) -> BudgetStatus | None:
    """Where an attempt's tokens stand against its budget (None: no budget or no count)."""
    if aborted:
        return "aborted"
    if budget is None or tokens is None:
        return None
    return "over" if tokens > budget.warn else "within"


class RunBudget(NamedTuple):
    """A whole run's budget (issue 25): `--budget-usd`/`--budget-tokens`, else config.json
    `budget`; None: no limit. Each source names where its figure came from."""

    usd: float | None = None
    tokens: int | None = None
    usd_source: str = ""
    tokens_source: str = ""

    @property
    def limited(self) -> bool:
        return self.usd is not None or self.tokens is not None


class Spent(NamedTuple):
    """What a run's delegations used so far (its `result` events' tokens and cost)."""

    tokens: int = 0
    cost_usd: float = 0.0

    def plus(self, tokens: int | None, cost_usd: float | None) -> Spent:
        return Spent(self.tokens + (tokens or 0), round(self.cost_usd + (cost_usd or 0.0), 6))


def spent_line(spent: Spent, budget: RunBudget) -> str | None:
    """Why no task may start: the run's spend is at or past its budget (None: it is not)."""
    if budget.usd is not None and spent.cost_usd >= budget.usd:
        return (
            f"the run has spent ${spent.cost_usd:,.2f} of its budget of ${budget.usd:,.2f} "
            f"({budget.usd_source})"
        )
    if budget.tokens is not None and spent.tokens >= budget.tokens:
        return (
            f"the run has used {spent.tokens:,} tokens of its budget of {budget.tokens:,} "
            f"({budget.tokens_source})"
        )
    return None


def left(spent: Spent, budget: RunBudget) -> tuple[int | None, float | None]:
    """What the next delegation may use of the run's budget: tokens and dollars (None:
    no limit)."""
    tokens = None if budget.tokens is None else max(budget.tokens - spent.tokens, 0)
    usd = None if budget.usd is None else max(round(budget.usd - spent.cost_usd, 6), 0.0)
    return tokens, usd
