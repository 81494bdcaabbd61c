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
