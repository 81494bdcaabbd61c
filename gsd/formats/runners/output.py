"""The lenient JSON readers every runner's parser shares, and a runner's raw output as a
RunnerOutput (gsd.core.models)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from gsd.core.models import RunnerOutput


def permission_denials(value: Any) -> tuple[tuple[str, str], ...]:
    """claude-code's `permission_denials` (2.1.330's result object): a list of
    `{"tool_name", "tool_use_id", "tool_input": {"file_path" | "notebook_path" |
    "command" | ...}}` read as (tool, its file or command) pairs; anything else is
    skipped."""
    found: list[tuple[str, str]] = []
    for item in value if isinstance(value, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("tool_name"), str):
            continue
        given = item.get("tool_input")
        given = given if isinstance(given, dict) else {}
        target = next((given[k] for k in _TARGETS if isinstance(given.get(k), str)), "")
        found.append((item["tool_name"], target))
    return tuple(found)


_TARGETS = ("file_path", "notebook_path", "path", "command")


def raw_output(stdout: str) -> RunnerOutput:
    """Output with nothing structured in it: the text is stdout, nothing is counted."""
    return RunnerOutput(
        text=stdout,
        is_error=False,
        input_tokens=None,
        output_tokens=None,
        cost_usd=None,
        structured=False,
    )


def loads(text: str) -> Any:
    """The JSON value `text` holds, or None when it holds none."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def json_lines(text: str) -> Iterator[Any]:
    """Each line of `text` that is a JSON object or array on its own, in order."""
    for line in text.splitlines():
        line = line.strip()
        if line[:1] in ("{", "[") and (value := loads(line)) is not None:
            yield value


def int_or_none(value: Any) -> int | None:
    """A count (tokens, a status): an integer of 0 or more, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def float_or_none(value: Any) -> float | None:
    """An amount (a cost): a finite number of 0 or more, else None (JSON as Python
    reads it allows NaN and Infinity)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        amount = float(value)
        return amount if math.isfinite(amount) and amount >= 0 else None
    return None


def total(values: list[int | None]) -> int | None:
    """The sum of the known values, or None when none is known."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None
