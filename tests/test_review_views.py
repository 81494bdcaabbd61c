"""Every verdict of the review gate (issue 24) where a user reads results: the SUMMARY.md
committed in git, `gsd report` as text, Markdown, HTML and JUnit XML. Real `runner:
command` authors and reviewers (tests/test_review.py) in real repositories."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from tests import test_review
from tests.conftest import git
from tests.test_review import configure, mode

reviewed = test_review.reviewed  # the fixture: plan 01-01, one task reviewed by `reviewer`

SUMMARY = ".planning/phases/01-alpha/01-01-SUMMARY.md"

# A reviewer whose one finding holds what each format must escape.
HOSTILE = """\
import sys
sys.stdin.read()
print("### Review Report\\n- Verdict: reject\\n- Findings:")
print("  - src/t.py:1: <b>bold</b> & ]]> | pipe \\x1b[31mred\\x1b[0m \\u202eevil")
"""


def report(gsd, fmt: str) -> str:
    result = gsd("report", "--format", fmt)
    assert result.code == 0, result.err
    return str(result.out)


def junit_cases(gsd) -> dict[str, etree._Element]:
    root = etree.fromstring(report(gsd, "junit").encode())
    return {case.get("name"): case for case in root.iter("testcase")}


def html_rows(gsd) -> list[list[str]]:
    page = report(gsd, "html").removeprefix("<!DOCTYPE html>\n")
    root = etree.fromstring(page.encode())
    table = root.find(".//table[@class='reviews']")
    assert table is not None
    assert root.find(".//table[@class='reviews']//b") is None  # agent text, never markup
    return [[cell.text or "" for cell in row] for row in table.iter("tr")]


def test_changes_then_approve_is_in_summary_and_every_report(reviewed, gsd, tmp_path) -> None:
    root = reviewed.root
    configure(reviewed, in_place=True)
    mode(tmp_path, "adaptive")
    assert gsd("execute-phase", "1").code == 0

    summary = git(root, "show", f"HEAD:{SUMMARY}")  # as committed, not only on disk
    section = summary.split("## Reviews\n\n", 1)[1].split("\n\n", 1)[0]
    assert section.splitlines() == [
        "- **Task 1, round 1:** changes - reviewer reviewer (command), attempt 1 by worker",
        "  - src/t.py:1: say fixed",
        "- **Task 1, round 2:** approve - reviewer reviewer (command), attempt 2 by worker",
    ]

    text = report(gsd, "text")
    assert "changes by reviewer (command, round 1)" in text  # the timeline's rows
    assert "approve by reviewer (command, round 2)" in text
    reviews = text.split("Reviews\n", 1)[1]
    assert "src/t.py:1: say fixed" in reviews and "no findings" in reviews
    markdown = report(gsd, "markdown")
    rows = [x for x in markdown.split("## Reviews\n", 1)[1].splitlines() if "| 01-01 " in x]
    assert len(rows) == 2 and "src/t.py:1: say fixed" in rows[0] and "approve" in rows[1]

    assert html_rows(gsd)[1:] == [
        ["01-01", "1", "1", "1", "reviewer", "command", "changes", "src/t.py:1: say fixed"],
        ["01-01", "1", "2", "2", "reviewer", "command", "approve", "no findings"],
    ]
    (case,) = junit_cases(gsd).values()
    assert case.find("failure") is None
    assert case.findtext("system-out").splitlines() == [
        "review round 1 of attempt 1: reviewer (command): changes: src/t.py:1: say fixed",
        f"attempt 1: worker: review-changes ({_seconds(case, 0)} s)",
        "review round 2 of attempt 2: reviewer (command): approve: no findings",
        f"attempt 2 (review-changes): worker: ok ({_seconds(case, 1)} s)",  # the ladder step
    ]


def _seconds(case: etree._Element, n: int) -> str:
    """The seconds the `n`th attempt line of a test case gives (measured, not known)."""
    lines = [x for x in case.findtext("system-out").splitlines() if x.startswith("attempt")]
    return lines[n].rsplit("(", 1)[1].split(" s)")[0]


def test_a_rejected_task_fails_with_its_findings_in_every_report(reviewed, gsd, tmp_path) -> None:
    root = reviewed.root
    mode(tmp_path, "reject")
    assert gsd("execute-phase", "1").code == 1
    assert not (root / SUMMARY).exists()  # the plan did not complete

    (case,) = junit_cases(gsd).values()
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "review-rejected"
    assert failure.get("message") == (
        "review-rejected (attempt 1): reviewer reviewer (command, round 1) rejected the "
        "work: src/t.py:1: not good"
    )
    assert "reject: src/t.py:1: not good" in failure.text
    assert "reject by reviewer (command, round 1)" in report(gsd, "text")
    assert html_rows(gsd)[1][6:] == ["reject", "src/t.py:1: not good"]


def test_a_crashed_review_is_an_error_in_every_report(reviewed, gsd, tmp_path) -> None:
    mode(tmp_path, "crash")
    assert gsd("execute-phase", "1").code == 1
    (case,) = junit_cases(gsd).values()
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == "review-failed"
    assert "gave no usable review: it exited 3: about to fail" in failure.get("message")
    assert "error by reviewer (command, round 1)" in report(gsd, "text")
    assert html_rows(gsd)[1][6:] == ["error", "it exited 3: about to fail"]


def test_a_reviewers_findings_are_escaped_wherever_printed(reviewed, gsd, tmp_path) -> None:
    (tmp_path / "reviewer.py").write_text(HOSTILE)
    assert gsd("execute-phase", "1").code == 1
    finding = "src/t.py:1: <b>bold</b> & ]]> | pipe ^[[31mred^[[0m \\u202eevil"
    for fmt in ("text", "markdown"):
        out = report(gsd, fmt)
        assert "\x1b" not in out and "\u202e" not in out
    assert "<b>bold</b> & ]]> | pipe" in report(gsd, "text")  # its colour codes not obeyed
    assert "<b>bold</b> & ]]> \\| pipe" in report(gsd, "markdown")
    assert html_rows(gsd)[1][7] == finding
    (case,) = junit_cases(gsd).values()  # it parses: the XML holds the text escaped
    finding = finding.replace("^[", "\\x1b")  # what XML cannot hold, as Python writes it
    assert finding in case.find("failure").get("message")
    assert finding in case.findtext("system-out")


def test_a_summary_reads_reviews_of_earlier_runs_from_the_logs(reviewed, gsd, tmp_path) -> None:
    """A plan finished in a second run: its SUMMARY still has the first run's verdict."""
    root = reviewed.root
    configure(reviewed, in_place=True)
    mode(tmp_path, "reject")
    assert gsd("execute-phase", "1").code == 1
    mode(tmp_path, "approve")
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    summary = git(root, "show", f"HEAD:{SUMMARY}")
    assert "- **Task 1, round 1:** reject - reviewer reviewer (command), attempt 1" in summary
    assert "  - src/t.py:1: not good" in summary
    assert "approve - reviewer reviewer (command)" in summary
    assert Path(root / SUMMARY).read_text() == summary + (
        "\n" if not summary.endswith("\n") else ""
    )


def test_an_approvers_verdict_on_a_proposal_names_no_attempt() -> None:
    """A plan-first proposal is judged before any attempt: its review line says so."""
    from gsd.commands.reportreviews import review_line

    event = {"event": "review", "proposal": True, "round": 1, "reviewer": "lead"}
    said = review_line({**event, "runner": "codex", "verdict": "approve", "findings": []})
    assert said == "proposal review round 1: lead (codex): approve: no findings"
    attempt = {**event, "proposal": False, "attempt": 2, "runner": "codex", "verdict": "approve"}
    assert review_line(attempt).startswith("review round 1 of attempt 2: lead (codex)")
