"""config.json's `gates` section (issue 24): which tasks are gated plan-first, and who
approves their proposals.

`"gates": {"plan_first": true}` gates the specialist-delegation design's critical
domains (security, database, authentication); an object `{"domains": [...],
"specialists": [...], "paths": [...]}` picks tasks exactly as `review.when` does
(`gsd.core.verdict.review.picks`); absent (or false), only tasks that say
`plan-first="true"` are gated. `approver` is "human" (`gsd approve PLAN --task N`) or
an agent's name, which runs read-only on `runner` (by default a runner other than the
author's) and answers with a Review Report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator
from pydantic_core import PydanticCustomError

from gsd.core.models import RUNNERS
from gsd.core.specialists import NAME_RE
from gsd.core.words import suggested

HUMAN = "human"
DOMAINS = ("security", "database", "authentication")  # the design's plan_approval_required
WHEN_KEYS = ("specialists", "domains", "paths")
_WORDS = 'true, false, or an object of "specialists", "domains" and "paths" lists'


def _plan_first(value: Any) -> bool | dict[str, list[str]]:
    if isinstance(value, bool) or value is None:
        return bool(value)
    lists = isinstance(value, dict) and all(
        k in WHEN_KEYS and isinstance(v, list) and all(isinstance(i, str) for i in v)
        for k, v in value.items()
    )
    if lists and value:
        return dict(value)
    wrong = [k for k in value if k not in WHEN_KEYS] if isinstance(value, dict) else []
    close = suggested(wrong[0], WHEN_KEYS).replace("{", "").replace("}", "") if wrong else ""
    raise PydanticCustomError("gsd_setting", _WORDS + close)


def _approver(value: Any) -> str:
    if isinstance(value, str) and (value == HUMAN or NAME_RE.fullmatch(value)):
        return value
    raise PydanticCustomError("gsd_setting", '"human" or an agent\'s name, e.g. "security-lead"')


def _runner(value: Any) -> str | None:
    if value is None or (isinstance(value, str) and value in RUNNERS):
        return value
    close = suggested(value, RUNNERS) if isinstance(value, str) else ""
    words = f"one of {', '.join(RUNNERS)}, or null (another runner than the author's)"
    raise PydanticCustomError("gsd_setting", (words + close).replace("{", "").replace("}", ""))


PlanFirst = Annotated[bool | dict[str, list[str]], PlainValidator(_plan_first)]
Approver = Annotated[str, PlainValidator(_approver)]
GateRunner = Annotated[str | None, PlainValidator(_runner)]


class GateSettings(BaseModel):
    """`gates.plan_first`, `gates.approver`, `gates.runner` (see the module's notes)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    plan_first: PlanFirst = False
    approver: Approver = HUMAN
    runner: GateRunner = None  # the approver agent's runner; None: another than the author's

    def when(self) -> Mapping[str, Sequence[str]] | None:
        """What config picks as `review.when` would (None: config gates nothing)."""
        if self.plan_first is True:
            return {"domains": DOMAINS}
        return self.plan_first or None
