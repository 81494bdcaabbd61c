"""The Challenge Report (gsd.formats.challengereport): read back exactly or refused with
one line saying why; written back in its fixed format, inside NN-CHALLENGE.md."""

from __future__ import annotations

import pytest

from gsd.formats.challengereport import (
    MAX_ITEMS,
    ChallengeReport,
    parse_challenge,
    read_file,
    render_file,
    render_report,
)

pytestmark = pytest.mark.unit  # `make test-fast` runs these

FULL = """\
Some thoughts first.
### Challenge Report
- Assumptions:
  - 01-02: the API is versioned
  - `01-01`: the table exists
- Missing dependencies: 01-03 needs 01-01
- Too large:
  1. 01-01 task 2: schema and migrations at once
- Alternatives: none
"""


def test_a_full_report_is_read_field_by_field() -> None:
    report = parse_challenge(FULL)
    assert report == ChallengeReport(
        assumptions=("01-02: the API is versioned", "`01-01`: the table exists"),
        missing=("01-03 needs 01-01",),
        too_large=("01-01 task 2: schema and migrations at once",),
        alternatives=(),
    )
    assert isinstance(report, ChallengeReport) and report.total == 4


def test_the_last_report_counts_and_it_round_trips() -> None:
    quoted = "```\n### Challenge Report\n- Assumptions: none\n```\n"
    report = parse_challenge(quoted + FULL)
    assert isinstance(report, ChallengeReport) and len(report.assumptions) == 2
    assert parse_challenge(render_report(report)) == report
    text = render_file(
        report, phase="01-alpha", agent="a", runner="codex", when="now", plans=["p.md"]
    )
    assert read_file(text) == report and "does not commit this file" in text


def test_bold_fields_and_a_trailing_task_report_are_read() -> None:
    text = FULL.replace("- Assumptions:", "- **Assumptions**:") + "### Task Report\n- Status: x\n"
    report = parse_challenge(text)
    assert isinstance(report, ChallengeReport) and len(report.assumptions) == 2


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("LGTM", "no `### Challenge Report` heading in the agent's answer (1 line"),
        ("", "it printed nothing"),
        (FULL.replace("- Alternatives: none\n", ""), "no `- Alternatives:` line"),
        (FULL.replace("  - 01-02: the API", "  - the API"), "is not `PLAN-ID: what is"),
        (FULL.replace("01-01 task 2:", "task 2 of 01-01:"), "is not `PLAN-ID task N: why`"),
        (FULL + "- Too large: none\n", "`- Too large:` twice"),
        (FULL.replace("- Missing", "Stray words\n- Missing"), "line 4 after the heading"),
    ],
)
def test_an_unreadable_report_is_one_line_saying_why(text: str, words: str) -> None:
    said = parse_challenge(text)
    assert isinstance(said, str) and "\n" not in said
    assert words in said, said


def test_agent_text_is_made_visible_and_capped() -> None:
    many = "".join(f"  - idea {n}\n" for n in range(MAX_ITEMS + 5))
    text = FULL.replace("- Alternatives: none\n", "- Alternatives:\n" + many)
    text = text.replace("the API is versioned", "the \x1b]0;owned\x07 API " + "x" * 600)
    report = parse_challenge(text)
    assert isinstance(report, ChallengeReport)
    assert "\x1b" not in report.assumptions[0] and "^[" in report.assumptions[0]
    assert len(report.assumptions[0]) == 500 and report.assumptions[0].endswith("...")
    assert len(report.alternatives) == MAX_ITEMS + 1
    assert report.alternatives[-1] == "... and 5 more items"


def test_a_fence_in_an_item_cannot_break_out_of_the_file() -> None:
    report = ChallengeReport(alternatives=("use ``` fences ```` freely",))
    text = render_file(report, phase="01-x", agent="a", runner="claude", when="t", plans=[])
    assert read_file(text) == report
    assert "`````markdown\n### Challenge Report" in text
