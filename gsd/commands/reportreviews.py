"""The review gate's verdicts (issue 24) as `gsd report` shows them, from the plans'
`review` log events: a timeline row's outcome, a row per review, a task's review lines
in its test case and the failure message of a task its review failed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gsd.core.verdict.review import ERROR_TYPES, Review

if TYPE_CHECKING:
    from gsd.formats.execlog import LogEvent


@dataclass(frozen=True)
class ReviewRow:
    """One review of an attempt: who reviewed it on which runner, the round, the verdict
    (`error` when the review failed) and the findings (or why it failed), one line."""

    plan: object
    task: object
    attempt: object
    round: object
    reviewer: str
    runner: str
    verdict: str
    findings: str


def review_rows(events: Iterable[LogEvent]) -> list[ReviewRow]:
    """A row per `review` event, in the log's order."""
    rows = []
    for e in events:
        if e.get("event") != "review":
            continue
        said = Review.from_event(e)
        rows.append(
            ReviewRow(
                plan=e.get("plan", ""),
                task=e.get("task", ""),
                attempt=e.get("attempt", ""),
                round=e.get("round", ""),
                reviewer=said.reviewer,
                runner=said.runner,
                verdict=said.verdict or "error",
                findings=_said(said),
            )
        )
    return rows


def outcome(e: LogEvent) -> str:
    """A `review` event's outcome in the timeline: `changes by reviewer (codex, round 1)`."""
    said = Review.from_event(e)
    what = "proposal " if e.get("proposal") else ""
    return f"{what}{said.verdict or 'error'} by {said.reviewer} ({said.runner}, round {said.round})"


def proposal_outcome(e: LogEvent) -> str:
    """A plan-first task's `proposal` event in the timeline: the file committed, its
    approval by a person, or why the proposal failed."""
    if e.get("problem"):
        return f"failed: {' '.join(str(e['problem']).split())[:200]}"
    if e.get("approved"):
        return f"{e.get('file', '')} approved by {e['approved']}"
    return f"{e.get('file', '')} committed"


def review_line(e: LogEvent) -> str:
    """`review round 1 of attempt 1: reviewer (codex): changes: src/a.py:3: ...` (of a
    proposal: `proposal review round 1: ...`)."""
    said = Review.from_event(e)
    if e.get("proposal"):  # an approver's verdict on a plan-first proposal: no attempt yet
        head = f"proposal review round {said.round}"
    else:
        head = f"review round {said.round} of attempt {e.get('attempt', '?')}"
    return f"{head}: {said.reviewer} ({said.runner}): {said.verdict or 'error'}: {_said(said)}"


def failure_details(error_type: str, reviews: Sequence[LogEvent]) -> str:
    """Why a task whose last attempt failed its review failed: what the last review said
    (`Review.details`); empty when its error is not a review's or no review is logged."""
    if error_type not in ERROR_TYPES or not reviews:
        return ""
    return " ".join(Review.from_event(reviews[-1]).details().split())


def _said(review: Review) -> str:
    if review.verdict is None:
        return " ".join(review.problem.split())
    return "; ".join(" ".join(f.split()) for f in review.findings) or "no findings"
