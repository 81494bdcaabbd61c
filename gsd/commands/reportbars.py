"""The run's timeline as bars (`gsd.commands.report.timeline` builds them; `gsd report
--format html` draws them), and their marks (issue 24), from the plans' log events: the
verdict of an attempt's review, the salvage ref a rolled-back attempt's changes are kept
under, and why a soft success was accepted (its bar keeps the colour of `soft success`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gsd.core.verdict.review import Review

if TYPE_CHECKING:
    from gsd.formats.execlog import LogEvent

SOFT = "soft success"


@dataclass(frozen=True)
class Bar:
    """One attempt on the timeline, in seconds from the run's first event."""

    plan: str
    task: str
    attempt: object
    agent: str
    outcome: str
    start: float
    end: float
    step: str = ""  # the retry ladder's step ("" for a task's first attempt)
    review: str = ""  # its review's verdict (approve, changes, reject, error); "": none
    salvage: str = ""  # the ref its changes are kept under, when it was rolled back
    note: str = ""  # why a soft success was accepted (the outcome is `soft success`)


@dataclass(frozen=True)
class WaveSpan:
    wave: object
    start: float
    end: float


@dataclass(frozen=True)
class Bars:
    """The run as bars (`timeline`): when it started, how long it took, its attempts,
    its waves and its plans in order."""

    start: str
    seconds: float
    attempts: list[Bar]
    waves: list[WaveSpan]
    plans: list[str]


def marked(bars: list[Bar], events: Sequence[LogEvent]) -> list[Bar]:
    """`bars`, a bar per `result` event of `events` in order (`timeline`'s), each with
    its marks: the `review` event logged just before it for the same plan, task and
    attempt, the `rollback` event after it that names a salvage ref, its soft reason."""
    reviews: dict[tuple[str, str, str], str] = {}  # a review waiting for its result
    last: dict[tuple[str, str], int] = {}  # the index of a task's latest result
    marks: list[list[str]] = []  # per result: review, salvage, soft reason ("" or None)
    soft: list[bool] = []
    for e in events:
        kind, task = e.get("event"), (str(e.get("plan", "?")), str(e.get("task", "?")))
        if kind == "review":
            verdict = Review.from_event(e).verdict or "error"
            reviews[(task[0], task[1], str(e.get("attempt", "")))] = verdict
        elif kind == "result":
            last[task] = len(marks)
            reason = e.get("soft_reason")
            review = reviews.pop((task[0], task[1], str(e.get("attempt", ""))), "")
            marks.append([review, "", reason if isinstance(reason, str) else ""])
            soft.append(bool(e.get("success") and e.get("soft_success")))
        elif kind == "rollback" and e.get("salvage") and task in last:
            marks[last[task]][1] = str(e.get("salvage"))
    if len(marks) != len(bars):  # not the same events: no marks rather than wrong ones
        return bars
    return [
        replace(
            bar,
            review=review,
            salvage=salvage,
            note=note if was_soft else "",
            outcome=SOFT if was_soft else bar.outcome,  # its colour, the reason beside it
        )
        for bar, (review, salvage, note), was_soft in zip(bars, marks, soft, strict=True)
    ]
