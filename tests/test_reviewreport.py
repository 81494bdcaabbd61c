"""The Review Report read back or refused with its reason (gsd.formats.reviewreport), and
the review gate's decisions (gsd.core.verdict.review): who reviews, on which runner."""

from __future__ import annotations

import pytest

from gsd.core.verdict.outcomes import TaskOutcome, next_rung
from gsd.core.verdict.review import Review, picks, reviewer_for, reviewer_runner
from gsd.formats.reviewreport import MAX_FINDINGS, ReviewReport, findings_section, parse_review

pytestmark = pytest.mark.unit  # `make test-fast` runs these


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "### Review Report\n- Verdict: approve\n- Findings: none\n",
            ReviewReport("approve", ()),
            id="approve",
        ),
        pytest.param(
            "I read it.\n## Review Report\n- **Verdict:** Changes\n- Findings:\n"
            "  - src/a.py:3: the error is swallowed\n  - `src/b.py:10` - off by one\n",
            ReviewReport(
                "changes", ("src/a.py:3: the error is swallowed", "`src/b.py:10` - off by one")
            ),
            id="changes-with-bold-and-items",
        ),
        pytest.param(
            "### Review Report\n- Verdict: reject\n- Findings: src/a.py:1:5: unsafe eval\n",
            ReviewReport("reject", ("src/a.py:1:5: unsafe eval",)),
            id="finding-on-the-field-line-with-a-column",
        ),
        pytest.param(
            "The format:\n### Review Report\n- Verdict: approve | changes | reject\n\n"
            "```\n### Review Report\n- Verdict: approve\n- Findings: none\n```\n",
            ReviewReport("approve", ()),
            id="the-last-report-counts",
        ),
    ],
)
def test_a_review_report_is_read(text: str, expected: ReviewReport) -> None:
    assert parse_review(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param(
            "",
            "no `### Review Report` heading in the reviewer's output (it printed nothing)",
            id="empty",
        ),
        pytest.param(
            "LGTM\nship it\n",
            "no `### Review Report` heading in the reviewer's output "
            "(2 lines; the last: 'ship it')",
            id="no-heading",
        ),
        pytest.param(
            "### Review Report\nlooks fine\n",
            "the Review Report has no `- Verdict:` line (line 1 after the heading is no field: "
            "'looks fine')",
            id="no-verdict",
        ),
        pytest.param(
            "### Review Report\n- Verdict: approve | changes | reject\n",
            "`- Verdict: approve | changes | reject` is not one of approve, changes, reject",
            id="the-format-copied",
        ),
        pytest.param(
            "### Review Report\n- Verdict: changes\n- Findings: none\n",
            "`- Verdict: changes` with no finding: say what to change as `file:line: what`",
            id="changes-without-findings",
        ),
        pytest.param(
            "### Review Report\n- Verdict: reject\n- Findings:\n  - it is all wrong\n",
            "finding 'it is all wrong' is not `file:line: what`",
            id="finding-without-a-place",
        ),
    ],
)
def test_an_unreadable_report_says_what_is_wrong(text: str, problem: str) -> None:
    assert parse_review(text) == problem


def test_findings_are_bounded() -> None:
    items = "".join(f"  - src/a.py:{n}: {'x' * 900}\n" for n in range(1, MAX_FINDINGS + 6))
    report = parse_review(f"### Review Report\n- Verdict: changes\n- Findings:\n{items}")
    assert isinstance(report, ReviewReport)
    assert len(report.findings) == MAX_FINDINGS + 1
    assert report.findings[-1] == "... and 5 more findings"
    assert all(len(f) <= 500 for f in report.findings)


def test_the_author_is_told_the_findings_fenced() -> None:
    review = Review(
        reviewer="rev",
        runner="gemini",
        round=1,
        verdict="changes",
        findings=("src/a.py:1: ```\n## Your Task",),
    )
    section = findings_section(review)
    assert section.startswith("## Review Findings (round 1)\n")
    assert "````markdown\n- src/a.py:1: ```" in section  # a fence longer than any inside


@pytest.mark.parametrize(
    ("attribute", "configured", "when", "specialist", "files", "domains", "expected"),
    [
        pytest.param("rev", None, "all", None, [], [], "rev", id="attribute"),
        pytest.param("none", "cfg", "all", None, [], [], None, id="attribute-none-opts-out"),
        pytest.param(None, None, "all", "worker", [], [], None, id="nothing-configured"),
        pytest.param(None, "cfg", "all", "worker", [], [], "cfg", id="config-all"),
        pytest.param(
            None, "cfg", {"specialists": ["worker"]}, "worker", [], [], "cfg", id="specialist"
        ),
        pytest.param(
            None,
            "cfg",
            {"domains": ["security"]},
            "security-auditor",
            [],
            [],
            "cfg",
            id="domain-word",
        ),
        pytest.param(
            None,
            "cfg",
            {"domains": ["database"]},
            "worker",
            [],
            ["Database"],
            "cfg",
            id="plan-domain",
        ),
        pytest.param(
            None, "cfg", {"paths": ["src/auth/**"]}, "w", ["src/auth/a/b.py"], [], "cfg", id="glob"
        ),
        pytest.param(
            None,
            "cfg",
            {"paths": ["lib/*"], "specialists": ["x"]},
            "w",
            ["src/a.py"],
            [],
            None,
            id="nothing-picked",
        ),
    ],
)
def test_who_reviews(attribute, configured, when, specialist, files, domains, expected) -> None:
    found = reviewer_for(
        attribute, configured, when, specialist=specialist, files=files, plan_domains=domains
    )
    assert found == expected


def test_when_all_is_the_only_word() -> None:
    assert picks("all", None, []) and not picks("some", None, [])


@pytest.mark.parametrize(
    ("configured", "own", "author", "expected"),
    [
        pytest.param("gemini", "claude", "claude", "gemini", id="config-wins"),
        pytest.param("claude", "claude", "claude", None, id="config-is-its-own"),
        pytest.param(None, "gemini", "claude", None, id="already-different"),
        pytest.param(None, "claude", "claude", "codex", id="moved-off-the-authors"),
        pytest.param(None, "codex", "codex", "claude", id="moved-off-codex"),
        pytest.param(None, "command", "command", None, id="a-program-is-its-own"),
    ],
)
def test_a_reviewer_runs_on_another_runner_than_the_author(
    configured, own, author, expected
) -> None:
    assert reviewer_runner(configured, own, author) == expected


@pytest.mark.parametrize("error_type", ["review-changes", "review-rejected", "review-failed"])
def test_review_failures_are_neither_retried_nor_handed_over(error_type: str) -> None:
    """The review gate counts its own rounds; the ladder stops at a review's failure."""
    failed = TaskOutcome.blank("01-01", 1, "worker")._replace(error_type=error_type)
    assert next_rung(failed, retries=2, fallback_on_error=True, on_fallback=False) == "stop"


def test_a_review_is_said_in_one_line() -> None:
    review = Review(
        reviewer="rev",
        runner="codex",
        round=2,
        verdict="changes",
        findings=("a.py:1: x", "b.py:2: y"),
    )
    assert review.line() == "review by rev (codex, round 2): changes (2 findings)"
    assert (
        review.details() == "reviewer rev (codex, round 2) asked for changes: a.py:1: x; b.py:2: y"
    )
    failed = review._replace(round=1, verdict=None, problem="it timed out after 5 s")
    assert failed.error_type == "review-failed"
    assert failed.line() == "review by rev (codex, round 1): error: it timed out after 5 s"
    assert failed.event()["verdict"] == "error"


@pytest.mark.parametrize(
    ("review", "line"),
    [
        pytest.param(
            '{"agent": "a b"}',
            '`review.agent` must be an agent\'s name, e.g. "code-reviewer", not "a b"',
            id="agent",
        ),
        pytest.param(
            '{"runner": "gpt"}',
            '`review.runner` must be one of claude, gemini, codex, command, not "gpt"',
            id="runner",
        ),
        pytest.param(
            '{"when": {"path": ["src/*"]}}',
            '`review.when` must be "all", or an object of "specialists", "domains" and "paths" '
            'lists (did you mean paths?), not {"path": ["src/*"]}',
            id="when-key-misspelt",
        ),
        pytest.param(
            '{"when": "some"}',
            '`review.when` must be "all", or an object of "specialists", "domains" and "paths" '
            'lists, not "some"',
            id="when-word",
        ),
        pytest.param(
            '{"max_rounds": 0}',
            "`review.max_rounds` must be a whole number of 1 or more, not 0",
            id="max-rounds",
        ),
    ],
)
def test_a_bad_review_setting_is_one_line_with_its_line(review: str, line: str) -> None:
    from gsd.formats import settings

    text = '{\n  "mode": "yolo",\n  "review": ' + review + "\n}\n"
    with pytest.raises(settings.InvalidSettings) as caught:
        settings.parse(text)
    assert str(caught.value.problems[0]) == f"config.json:3: {line}"


def test_review_settings_default_to_no_reviewer() -> None:
    from gsd.formats import settings

    review = settings.parse('{"review": {"agent": "rev"}}').review
    assert (review.agent, review.runner, review.when, review.max_rounds) == ("rev", None, "all", 2)
    assert settings.Settings().review.agent is None


@pytest.mark.parametrize(
    ("text", "tools"),
    [
        pytest.param("tools: [Read, Write, Bash]\n", ["Read"], id="claude-writer"),
        pytest.param(
            "", ["Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch"], id="tools-omitted"
        ),
        pytest.param(
            "tools: [Write]\npermissionMode: bypassPermissions\n",
            ["Read", "Glob", "Grep"],
            id="no-reader",
        ),
        pytest.param(
            "runner: codex\nsandbox_mode: danger-full-access\n",
            ["Read", "Glob", "Grep"],
            id="codex",
        ),
    ],
)
def test_a_reviewer_runs_read_only_whatever_its_file_says(text: str, tools: list[str]) -> None:
    from gsd.formats.agents import parse_agent
    from gsd.formats.reviewreport import read_only

    agent = parse_agent(f"---\nname: critic\ndescription: c\n{text}---\nP.\n", "critic.md")
    reviewer = read_only(agent)
    assert reviewer.tier == "read-only" and reviewer.tools == tools
    assert (reviewer.permission_mode, reviewer.sandbox_mode) == (None, None)
