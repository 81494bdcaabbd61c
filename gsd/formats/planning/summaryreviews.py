"""The `## Reviews` section of a SUMMARY.md (the review gate, issue 24): every verdict
a task's reviewer gave, round by round, with its findings."""

from __future__ import annotations

from collections.abc import Iterable

from gsd.core.verdict.outcomes import TaskOutcome


def review_section(outcomes: Iterable[TaskOutcome]) -> list[str]:
    """`## Reviews` and its lines (`review_lines`); none when no attempt was reviewed."""
    outcomes = list(outcomes)
    if not any(outcome.review for outcome in outcomes):
        return []
    return ["## Reviews", "", *review_lines(outcomes), ""]


def review_lines(outcomes: Iterable[TaskOutcome]) -> list[str]:
    """A line per review of an attempt, task by task in the order they were reviewed:
    who reviewed on which runner, the round, the attempt and the verdict (or why the
    review failed), each finding an item under it. Agent text on one line each."""
    by_task: dict[int, list[TaskOutcome]] = {}
    for outcome in outcomes:
        if outcome.review is not None:
            by_task.setdefault(outcome.task, []).append(outcome)
    lines = []
    for task in sorted(by_task):
        for outcome in by_task[task]:
            review = outcome.review
            assert review is not None  # picked above
            said = review.verdict or f"error - {_one_line(review.problem)}"
            lines.append(
                f"- **Task {task}, round {review.round}:** {said} - reviewer "
                f"{_one_line(review.reviewer)} ({_one_line(review.runner)}), "
                f"attempt {outcome.attempt} by {outcome.agent}"
            )
            lines += [f"  - {_one_line(finding)}" for finding in review.findings]
    return lines


def _one_line(text: str) -> str:
    return " ".join(text.split())
