"""How `gsd diff` shows a challenge report (`gsd challenge`) added or changed: its items
by heading; text for a terminal, Markdown for a pull request, JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gsd.commands.diff import ChallengeDiff
from gsd.formats.challengereport import render_report
from gsd.formats.prompt import fenced


def as_dicts(challenges: Iterable[ChallengeDiff]) -> list[dict[str, object]]:
    """The `challenges` of `gsd diff --format json`: each field's items, by field name."""
    return [
        {
            "status": c.status,
            "path": c.path,
            "readable": c.report is not None or c.status == "removed",
            "items": {field: list(items) for field, items in c.report.by_field()}
            if c.report is not None
            else None,
        }
        for c in challenges
    ]


def text_lines(challenges: Iterable[ChallengeDiff]) -> list[str]:
    """A section after the plans: each report's status and path, its items by heading."""
    out = []
    for challenge in challenges:
        out += ["", f"challenge {challenge.status}  {challenge.path}"]
        out += [f"  {line}" for line in _said(challenge)]
    return out


def markdown_lines(challenges: Iterable[ChallengeDiff], code: Callable[[str], str]) -> list[str]:
    """A section per report: its status and path (`code`: a code span holding any
    text), then its items by heading in a fence (the agent's words: no Markdown, no
    @mention of theirs is rendered)."""
    out = []
    for challenge in challenges:
        out += ["", f"### Challenge report {code(challenge.path)} ({challenge.status})", ""]
        if challenge.report is None:
            out.append(_said(challenge)[0])
        else:
            out.append(fenced(render_report(challenge.report), "markdown"))
    return out


def _said(challenge: ChallengeDiff) -> list[str]:
    if challenge.status == "removed":
        return ["removed"]
    report = challenge.report
    if report is None:
        return ["no Challenge Report gsd can read in it"]
    lines = []
    for field, items in report.by_field():
        lines.append(f"{field}: " + ("none" if not items else str(len(items))))
        lines += [f"  - {item}" for item in items]
    return lines
