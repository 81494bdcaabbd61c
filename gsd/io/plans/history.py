"""Past delegations as the estimates read them (`gsd.core.estimate`): every successful
attempt's `result` event in this repository's logs (`.planning/logs/`, and an older
`.planning/execution-log.jsonl`), read through `gsd.formats.execlog`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from gsd.core.estimate import Sample
from gsd.formats import execlog
from gsd.formats.execlog import LogEvent


def read(planning: Path) -> tuple[list[Sample], list[LogEvent], list[str]]:
    """The samples of every log under `planning`, every event (in time order) and a
    warning per bad line."""
    events, warnings = execlog.read_all(planning)
    return samples(events), events, warnings


def samples(events: Iterable[LogEvent]) -> list[Sample]:
    """A sample per successful attempt's `result` event (a line two logs both hold
    counts once: a plan's log merged back beside an older copy)."""
    found: dict[tuple[object, ...], Sample] = {}
    for e in events:
        if e.get("event") != "result" or e.get("success") is not True:
            continue
        key = (e.get("ts"), e.get("plan"), e.get("task"), e.get("attempt"), e.get("agent"))
        found.setdefault(key, sample(e))
    return list(found.values())


def sample(e: LogEvent) -> Sample:
    """One `result` event as a sample: its tokens are the budget's count (input +
    output), or in logs older than budgets the runner's own two counts added."""
    runner = e.get("runner")
    return Sample(
        agent=str(e.get("agent") or "?"),
        runner=runner if isinstance(runner, str) else None,
        ts=str(e.get("ts") or ""),
        tokens=tokens(e),
        cost_usd=_amount(e.get("cost_usd")),
        seconds=_amount(e.get("duration_s")),
        plan=str(e.get("plan") or ""),
        task=e["task"] if _count(e.get("task")) is not None else 0,
    )


def tokens(e: LogEvent) -> int | None:
    """An attempt's tokens: its `tokens` (input + output, against the budget), else its
    runner's input and output counts added; None when it reported none."""
    counted = _count(e.get("tokens"))
    if counted is not None:
        return counted
    known = [
        c for c in (_count(e.get("input_tokens")), _count(e.get("output_tokens"))) if c is not None
    ]
    return sum(known) if known else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _amount(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value) if value >= 0 else None
