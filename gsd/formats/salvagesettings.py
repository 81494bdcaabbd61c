"""config.json's `salvage` section (issue 24): how long salvaged attempts are kept."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator
from pydantic_core import PydanticCustomError


def _days(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    raise PydanticCustomError("gsd_setting", "a number of days > 0, or null (kept until pruned)")


Days = Annotated[float | None, PlainValidator(_days)]


class SalvageSettings(BaseModel):
    """`salvage.keep_days`: salvage refs older than this are deleted at a run's start
    (None: kept until `gsd checkpoints prune`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    keep_days: Days = None
