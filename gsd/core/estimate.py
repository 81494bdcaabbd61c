"""What a task will cost, from what its agent cost before (issue 25, "cost known before
a run"): pure figures over past delegations, no I/O (`gsd.io.plans.history` reads them).

A task's estimate rests on the successful attempts of the same agent on the same runner
(a failed attempt stops anywhere, from before the spawn to a budget's abort: its figures
say nothing of what the work costs). Each figure (tokens, cost, seconds) is the median
of the runs that reported it, with a range: the lowest and highest, or the 10th and 90th
percentiles once there are `PERCENTILES_FROM` runs or more.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import NamedTuple

PERCENTILES_FROM = 10  # runs from which the range is p10-p90 rather than min-max


class Sample(NamedTuple):
    """One past successful delegation: its agent, its runner (None: a log written before
    gsd recorded it, counted for the agent on any runner), when it ended and what it
    used (None: not reported)."""

    agent: str
    runner: str | None
    ts: str
    tokens: int | None
    cost_usd: float | None
    seconds: float | None
    plan: str = ""
    task: int = 0


class Spread(NamedTuple):
    """One figure over past runs: the median and a range (`kind` min-max or p10-p90)."""

    median: float
    low: float
    high: float
    runs: int
    kind: str

    def to_json(self) -> dict[str, object]:
        return self._asdict()


class Estimate(NamedTuple):
    """A task's estimate: the runs it rests on (0: no history) and each figure's spread
    (None where no run reported it)."""

    runs: int
    tokens: Spread | None = None
    cost_usd: Spread | None = None
    seconds: Spread | None = None

    @property
    def no_history(self) -> bool:
        return self.runs == 0

    def to_json(self) -> dict[str, object]:
        figures = {
            k: (v.to_json() if v else None) for k, v in self._asdict().items() if k != "runs"
        }
        return {"runs": self.runs, "history": not self.no_history, **figures}


class PhaseEstimate(NamedTuple):
    """The phase's total: the sum of its tasks' medians (each figure over the tasks that
    have it), how many tasks it counts and how many have no history."""

    tasks: int
    no_history: int
    tokens: float | None
    cost_usd: float | None
    seconds: float | None

    def to_json(self) -> dict[str, object]:
        return {**self._asdict(), "basis": "sum of the tasks' medians"}


def percentile(values: Sequence[float], fraction: float) -> float:
    """The `fraction` (0-1) percentile of sorted `values`, linearly interpolated."""
    if len(values) == 1:
        return float(values[0])
    place = fraction * (len(values) - 1)
    below = int(place)
    above = min(below + 1, len(values) - 1)
    return float(values[below] + (values[above] - values[below]) * (place - below))


def spread(values: Iterable[float | int | None]) -> Spread | None:
    """The median and range of the values reported (None: none was)."""
    known = sorted(float(v) for v in values if v is not None)
    if not known:
        return None
    median = float(statistics.median(known))
    if len(known) >= PERCENTILES_FROM:
        low, high, kind = percentile(known, 0.1), percentile(known, 0.9), "p10-p90"
    else:
        low, high, kind = known[0], known[-1], "min-max"
    return Spread(median=median, low=low, high=high, runs=len(known), kind=kind)


def matching(samples: Iterable[Sample], agent: str, runner: str | None) -> list[Sample]:
    """The samples of `agent` on `runner` (and the agent's samples that name no runner)."""
    return [s for s in samples if s.agent == agent and s.runner in (runner, None)]


def estimate(samples: Iterable[Sample], agent: str, runner: str | None) -> Estimate:
    """A task's estimate from the past runs of its agent on its runner."""
    mine = matching(samples, agent, runner)
    return Estimate(
        runs=len(mine),
        tokens=spread(s.tokens for s in mine),
        cost_usd=spread(s.cost_usd for s in mine),
        seconds=spread(s.seconds for s in mine),
    )


def phase_total(estimates: Sequence[Estimate]) -> PhaseEstimate:
    """The phase's total over its tasks' estimates (`PhaseEstimate`)."""

    def total(figures: list[Spread | None]) -> float | None:
        known = [f.median for f in figures if f is not None]
        return round(sum(known), 6) if known else None

    return PhaseEstimate(
        tasks=len(estimates),
        no_history=sum(1 for e in estimates if e.no_history),
        tokens=total([e.tokens for e in estimates]),
        cost_usd=total([e.cost_usd for e in estimates]),
        seconds=total([e.seconds for e in estimates]),
    )
