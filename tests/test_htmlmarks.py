"""Marks on the HTML report's bars (issue 24): a reviewed attempt shows its verdict, a
rolled-back attempt with a salvage shows a salvage mark whose hover text names the ref,
a soft success keeps its colour and says why; log text is escaped as the rest."""

from __future__ import annotations

from typing import Any

import pytest
from lxml import etree
from lxml import html as lxml_html

from gsd.commands.report import build, timeline
from gsd.output.htmlreport import colour, render
from tests.test_htmlreport import result

pytestmark = pytest.mark.unit  # `make test-fast` runs these

VERIFIED = "timed out, but its checks pass: accepted (salvage.accept_timeout_when_verified)"
HOSTILE = "refs/gsd/salvage/01-02/1/1\x1b[31m<script>alert(1)</script>&"


def review(ts: str, plan: str, task: int, attempt: int, verdict: str) -> dict[str, Any]:
    return {
        "ts": ts,
        "event": "review",
        "plan": plan,
        "task": task,
        "attempt": attempt,
        "reviewer": "critic",
        "runner": "codex",
        "round": attempt,
        "verdict": verdict,
        "findings": ["src/a.py:1: say fixed"] if verdict == "changes" else [],
    }


def rollback(ts: str, plan: str, task: int, salvage: str | None) -> dict[str, Any]:
    kept = {"salvage": salvage} if salvage else {}
    return {"ts": ts, "event": "rollback", "plan": plan, "task": task, "checkpoint": "c", **kept}


EVENTS: list[dict[str, Any]] = [
    {"ts": "2026-11-24T10:00:00.000Z", "event": "run-start", "phase": "01"},
    {"ts": "2026-11-24T10:00:00.100Z", "event": "wave-start", "wave": 1, "plans": ["01-01"]},
    review("2026-11-24T10:00:01.900Z", "01-01", 1, 1, "changes"),
    result("2026-11-24T10:00:02.000Z", "01-01", 1, 1, False, 1.8, error="review-changes"),
    rollback("2026-11-24T10:00:02.100Z", "01-01", 1, "refs/gsd/salvage/01-01/1/1"),
    review("2026-11-24T10:00:03.900Z", "01-01", 1, 2, "approve"),
    result("2026-11-24T10:00:04.000Z", "01-01", 1, 2, True, 1.8),
    result("2026-11-24T10:00:06.000Z", "01-02", 1, 1, False, 1.5, error="timeout"),
    rollback("2026-11-24T10:00:06.100Z", "01-02", 1, HOSTILE),
    result("2026-11-24T10:00:09.000Z", "01-02", 1, 2, False, 2.5, error="nonzero-exit"),
    rollback("2026-11-24T10:00:09.100Z", "01-02", 1, None),  # nothing to keep
    result(
        "2026-11-24T10:00:12.000Z",
        "01-02",
        1,
        3,
        True,
        2.5,
        soft_success=True,
        soft_reason=VERIFIED,
    ),
    {"ts": "2026-11-24T10:00:12.100Z", "event": "wave-end", "wave": 1},
]


def svg_of(events: list[dict[str, Any]] = EVENTS) -> tuple[str, Any]:
    text = render(build(events), timeline(events), "gsd report: marks")
    doc = lxml_html.document_fromstring(text)
    return text, doc.xpath("//*[local-name()='svg']")[0]


def titles(element: Any) -> list[str]:
    return [t.text for t in element.xpath("./*[local-name()='title']")]


def test_a_reviewed_attempt_shows_its_verdict() -> None:
    _, svg = svg_of()
    bars = svg.xpath(".//*[local-name()='rect'][@class='attempt']")
    assert [b.get("data-review") for b in bars] == ["changes", "approve", None, None, None]
    marks = svg.xpath(".//*[local-name()='text'][starts-with(@class, 'review')]")
    assert [m.get("class") for m in marks] == ["review verdict-changes", "review verdict-approve"]
    assert [titles(m) for m in marks] == [
        ["01-01 task 1 attempt 1: review verdict changes"],
        ["01-01 task 1 attempt 2: review verdict approve"],
    ]
    assert [m.text for m in marks] == ["\u21bb", "\u2713"]


def test_a_review_that_failed_and_a_rejection_show_as_such() -> None:
    events = [
        review("2026-11-24T10:00:01.000Z", "01-01", 1, 1, "error"),
        result("2026-11-24T10:00:02.000Z", "01-01", 1, 1, False, 1.0, error="review-failed"),
        review("2026-11-24T10:00:03.000Z", "01-01", 2, 1, "reject"),
        result("2026-11-24T10:00:04.000Z", "01-01", 2, 1, False, 1.0, error="review-rejected"),
    ]
    text, svg = svg_of(events)
    marks = svg.xpath(".//*[local-name()='text'][starts-with(@class, 'review')]")
    assert [m.get("class") for m in marks] == ["review verdict-error", "review verdict-reject"]
    assert "review: reject" in text and "review: error" in text  # the legend


def test_a_salvaged_attempt_shows_a_mark_naming_its_ref() -> None:
    _, svg = svg_of()
    dots = svg.xpath(".//*[local-name()='circle'][@class='salvage']")
    assert len(dots) == 2  # the rollback that kept nothing has none
    assert dots[0].get("data-ref") == "refs/gsd/salvage/01-01/1/1"
    assert titles(dots[0]) == [
        "01-01 task 1 attempt 1: rolled back, its changes kept under "
        "refs/gsd/salvage/01-01/1/1 (gsd salvage show)"
    ]
    bars = svg.xpath(".//*[local-name()='rect'][@class='attempt']")
    assert [bool(b.get("data-salvage")) for b in bars] == [True, False, True, False, False]


def test_log_text_in_a_mark_is_escaped() -> None:
    text, svg = svg_of()
    assert "\x1b" not in text and "<script>" not in text
    assert not svg.xpath("//script") and not lxml_html.document_fromstring(text).xpath("//script")
    (dot,) = [d for d in svg.xpath(".//*[local-name()='circle']") if "01-02" in d.get("data-ref")]
    assert dot.get("data-ref") == "refs/gsd/salvage/01-02/1/1^[[31m<script>alert(1)</script>&"
    etree.fromstring(text.split("\n", 1)[1].encode())  # still well-formed XML


def test_a_soft_success_keeps_its_colour_and_says_why() -> None:
    _, svg = svg_of()
    bar = svg.xpath(".//*[local-name()='rect'][@class='attempt']")[-1]
    assert bar.get("data-outcome") == "soft success"
    assert bar.get("fill") == colour("soft success")
    (title,) = titles(bar)
    assert f"soft success ({VERIFIED})" in title


def test_marks_follow_the_log_across_runs() -> None:
    """With every run shown, attempt numbers repeat: marks go by the log's order."""
    again = [{**e, "ts": e["ts"].replace("10:", "11:", 1)} for e in EVENTS]
    bars = timeline(EVENTS + again, last_run_only=False).attempts
    assert [b.review for b in bars] == ["changes", "approve", "", "", ""] * 2
    assert [bool(b.salvage) for b in bars] == [True, False, True, False, False] * 2
