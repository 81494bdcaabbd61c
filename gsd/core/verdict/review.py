"""The review gate's decisions (issue 24): who reviews a task, on which runner, and
what a reviewer's verdict makes of the attempt. No I/O: the run asks, this answers.

A task is reviewed when it says `review="AGENT"`, or when config.json's `review.agent`
is set and its `when` picks the task: `"all"`, or any of `specialists` (the task's
specialist by name), `domains` (a word of the specialist's name, `security` for
`security-auditor`, or the plan's `domain`/`subsystem` field) and `paths` (globs over
the task's `<files>`). `review="none"` opts a task out.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from gsd.core.specialists import NULL_NAMES

Verdict = Literal["approve", "changes", "reject"]
VERDICTS: tuple[Verdict, ...] = ("approve", "changes", "reject")

# an attempt's error type after its review: changes asked (retried while rounds are
# left), rejected, or no usable answer (a crash, a timeout, an unparsable report)
CHANGES = "review-changes"
REJECTED = "review-rejected"
FAILED = "review-failed"
ERROR_TYPES = (CHANGES, REJECTED, FAILED)

# which runner a reviewer goes to when neither config nor its agent file differ from
# the author's: the first of these that is not the author's
OTHER_RUNNERS = ("claude", "codex", "gemini")


class Review(NamedTuple):
    """What one review of an attempt came to."""

    reviewer: str  # the agent's name
    runner: str
    round: int  # 1 for the first review of the task
    verdict: Verdict | None  # None: the review failed (see `problem`)
    findings: tuple[str, ...] = ()  # `file:line: what`, as the reviewer wrote them
    problem: str = ""  # why the review failed: crashed, timed out, unparsable

    @property
    def error_type(self) -> str | None:
        """The attempt's error type after this review; None when it approved."""
        if self.verdict is None:
            return FAILED
        return {"approve": None, "changes": CHANGES, "reject": REJECTED}[self.verdict]

    def details(self) -> str:
        """The one line an error log keeps of a review that did not approve."""
        who = f"reviewer {self.reviewer} ({self.runner}, round {self.round})"
        if self.verdict is None:
            return f"{who} gave no usable review: {self.problem}"
        said = "; ".join(self.findings) or "no findings given"
        what = "asked for changes" if self.verdict == "changes" else "rejected the work"
        return f"{who} {what}: {said}"

    def line(self) -> str:
        """How the review is said on the terminal."""
        said = self.verdict or f"error: {self.problem}"
        if self.verdict in ("changes", "reject"):
            said += f" ({len(self.findings)} finding{'s' if len(self.findings) != 1 else ''})"
        return f"review by {self.reviewer} ({self.runner}, round {self.round}): {said}"

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> Review:
        """The review a plan log's `review` event records (`event`'s inverse); a field
        missing or of the wrong type reads as nothing said."""
        verdict = event.get("verdict")
        findings = event.get("findings")
        number = event.get("round")
        return cls(
            reviewer=str(event.get("reviewer") or "?"),
            runner=str(event.get("runner") or "?"),
            round=number if isinstance(number, int) and not isinstance(number, bool) else 0,
            verdict=verdict if verdict in VERDICTS else None,
            findings=tuple(str(f) for f in findings) if isinstance(findings, list) else (),
            problem=str(event.get("problem") or ("" if verdict in VERDICTS else "unknown")),
        )

    def event(self) -> dict[str, Any]:
        """The fields of the plan's `review` log event."""
        return {
            "reviewer": self.reviewer,
            "runner": self.runner,
            "round": self.round,
            "verdict": self.verdict or "error",
            "findings": list(self.findings),
            **({"problem": self.problem} if self.problem else {}),
        }


def reviewer_for(
    attribute: str | None,
    configured: str | None,
    when: str | Mapping[str, Sequence[str]],
    *,
    specialist: str | None,
    files: Sequence[str],
    plan_domains: Sequence[str] = (),
) -> str | None:
    """The reviewer's agent name for a task, or None when it is not reviewed: its own
    `review=` first (`none` opts out), else config's `review.agent` when `when` picks it."""
    if attribute is not None:
        return None if attribute.strip().lower() in NULL_NAMES else attribute
    if not configured:
        return None
    return configured if picks(when, specialist, files, plan_domains) else None


def picks(
    when: str | Mapping[str, Sequence[str]],
    specialist: str | None,
    files: Sequence[str],
    plan_domains: Sequence[str] = (),
) -> bool:
    """Whether config's `review.when` picks a task (see the module's docstring)."""
    if isinstance(when, str):
        return when == "all"
    name = specialist or ""
    if name in when.get("specialists", ()):
        return True
    words = {w.lower() for w in re.split(r"[-_.:]+", name) if w}
    words |= {d.lower() for d in plan_domains}
    if words & {d.lower() for d in when.get("domains", ())}:
        return True
    globs = when.get("paths", ())
    return any(fnmatch.fnmatchcase(path, glob) for path in files for glob in globs)


def reviewer_runner(configured: str | None, own: str, author: str) -> str | None:
    """The runner the reviewer runs on: config's `review.runner`; else its agent's own
    when that differs from the author's (a `command` agent is a program: always its
    own); else the first other CLI (author is not reviewer). None: its own runner."""
    if configured:
        return None if configured == own else configured
    if own != author or own == "command":
        return None
    return next(r for r in OTHER_RUNNERS if r != author)


def rounds_used(error_types: Sequence[str | None]) -> int:
    """How many reviews a task's attempts so far asked for changes."""
    return sum(1 for kind in error_types if kind == CHANGES)
