"""config.json's `retry` section: the retry ladder's steps and counts (README "Retries").

`"retry": {"steps": ["immediate", {"step": "with_context", "count": 2}, "fallback"]}`:
each step is a name (one attempt) or `{"step": NAME, "count": N}` (N attempts), taken in
order after a failure (gsd.core.verdict.outcomes.next_step). Without `steps`, the ladder
is `specialists.max_retries` immediate retries, then `fallback` when
`voltagent.fallback_on_error`, as before the section existed; with them,
`voltagent.fallback_on_error: false` still turns the fallback off.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator
from pydantic_core import PydanticCustomError

from gsd.core.verdict.outcomes import STEPS, Step, default_ladder
from gsd.core.words import suggested

_NAMES = ", ".join(f'"{name}"' for name in STEPS[:-1]) + f' or "{STEPS[-1]}"'
WORDS = f'a list of steps, each {_NAMES} or {{"step": NAME, "count": N}} with N of 1 or more'


def step_problem(item: Any) -> str:
    """What is wrong with one item of `retry.steps` ("" when it is a step)."""
    name, count = (item.get("step"), item.get("count", 1)) if isinstance(item, dict) else (item, 1)
    if isinstance(item, dict) and set(item) - {"step", "count"}:
        extra = sorted(set(item) - {"step", "count"})[0]
        return f"{json.dumps(extra)} is not a key of a step{suggested(extra, ('step', 'count'))}"
    if not isinstance(name, str) or name not in STEPS:
        close = suggested(name, STEPS) if isinstance(name, str) else ""
        return f"{json.dumps(name)} is not a step{close}"
    whole = isinstance(count, int) and not isinstance(count, bool)
    if not whole or count < 1:
        return f"the count of {json.dumps(name)} is {json.dumps(count)}"
    if name == "fallback" and count != 1:
        return '"fallback" hands the task over once: its count is 1'
    return ""


def _check_steps(value: Any) -> tuple[Step, ...] | None:
    """The steps expanded, one per attempt; a one-line error for the first bad item."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise PydanticCustomError("gsd_setting", WORDS)
    for item in value:
        problem = step_problem(item)
        if problem:
            raise PydanticCustomError("gsd_setting", f"{WORDS} ({problem})")
    ladder = [step for item in value for step in _expanded(item)]
    if ladder.count("fallback") > 1:
        raise PydanticCustomError("gsd_setting", f'{WORDS} ("fallback" given twice)')
    return tuple(ladder)


def _expanded(item: Any) -> list[Step]:
    if isinstance(item, dict):
        return [item["step"]] * int(item.get("count", 1))
    return [item]


Steps = Annotated[tuple[Step, ...] | None, PlainValidator(_check_steps)]


class RetrySettings(BaseModel):
    """The retry ladder (README "Retries"); None: the ladder of `max_retries` and
    `fallback_on_error`."""

    model_config = ConfigDict(extra="allow", frozen=True)
    steps: Steps = None

    def ladder(self, retries: int, fallback_on_error: bool) -> tuple[Step, ...]:
        """Every attempt after the first, in order: `steps`, or the default ladder.
        `voltagent.fallback_on_error: false` turns every fallback off, a `fallback` step
        of `steps` too (gsd-executor runs on claude, which may not be installed)."""
        if self.steps is None:
            return default_ladder(retries, fallback_on_error)
        return tuple(s for s in self.steps if fallback_on_error or s != "fallback")
