"""config.json's `budget` section (issue 25): what a whole run may spend, `{"usd": N,
"tokens": N}`; `--budget-usd`/`--budget-tokens` replace either figure for one run
(gsd.run.runbudget). Not `budgets`: those are each delegation's token budgets per runner."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator
from pydantic_core import PydanticCustomError


def _usd(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if math.isfinite(value) and value > 0:
            return float(value)
    raise PydanticCustomError("gsd_setting", "an amount in US dollars > 0, or null (no limit)")


def _tokens(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise PydanticCustomError("gsd_setting", "a whole number of tokens of 1 or more, or null")


class BudgetSettings(BaseModel):
    """`budget.usd` and `budget.tokens`: the run stops before a task once its spend is at
    or past either, and a delegation that crosses what is left is stopped (None: no limit)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    usd: Annotated[float | None, PlainValidator(_usd)] = None
    tokens: Annotated[int | None, PlainValidator(_tokens)] = None
