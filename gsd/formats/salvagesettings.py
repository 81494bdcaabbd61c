"""config.json's `salvage` section (issue 24): how long salvaged attempts are kept, and
whether a timed-out attempt whose checks pass is accepted."""

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


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise PydanticCustomError("gsd_setting", "true or false")


Days = Annotated[float | None, PlainValidator(_days)]
Flag = Annotated[bool, PlainValidator(_flag)]


class SalvageSettings(BaseModel):
    """`salvage.keep_days`: salvage refs older than this are deleted at a run's start
    (None: kept until `gsd checkpoints prune`). `salvage.accept_timeout_when_verified`: a
    timed-out attempt that changed files and whose `<automated>` checks then pass is
    accepted as a soft success instead of rolled back (gsd.run.taskassess)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    keep_days: Days = None
    accept_timeout_when_verified: Flag = False
