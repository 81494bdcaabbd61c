"""Task Reports and GSD markers read out of an agent's text (gsd.formats.taskreport)."""

from __future__ import annotations

import pytest

from gsd.core.models import TaskReport
from gsd.formats.taskreport import markers, parse_task_report

pytestmark = pytest.mark.unit  # `make test-fast` runs these

# --- Task Report ------------------------------------------------------------------

FULL = TaskReport(
    status="success",
    files_created=["src/a.py"],
    files_modified=["src/b.py", "src/c.py"],
    files_deleted=[],
    validation="pass",
    errors=None,
    key_interfaces="f() in src/a.py",
    patterns="none",
    warnings="none",
    complete=True,
    downstream="- Key Interfaces Introduced: f() in src/a.py\n- Patterns Established: none\n"
    "- Warnings: none",
)
PER_LINE = """\
### Task Report
- Status: success
- Files Created: src/a.py
- Files Modified: src/b.py, src/c.py
- Files Deleted: none
- Validation: pass
- Errors: none
### Downstream Context
- Key Interfaces Introduced: f() in src/a.py
- Patterns Established: none
- Warnings: none
"""
TEMPLATE = """\
```
### Task Report
- Status: success | partial | failure
- Files Created: ...
- Files Modified: ...
- Files Deleted: ...
- Validation: pass | fail | skipped
- Errors: ...
### Downstream Context
- Key Interfaces Introduced: ...
- Patterns Established: ...
- Warnings: ...
```
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(PER_LINE, FULL, id="per-line"),
        pytest.param(
            "### Task Report\n- Status: success\n"
            "- Files Created: src/a.py | Files Modified: src/b.py, src/c.py | Files Deleted: none\n"
            "- Validation: pass\n- Errors: none\n### Downstream Context\n"
            "- Key Interfaces Introduced: f() in src/a.py\n- Patterns Established: none\n"
            "- Warnings: none\n",
            FULL,
            id="compact-one-line",
        ),
        pytest.param(
            "## TASK REPORT\n* **Status:** Success\n* **Files Created**: `src/a.py`\n"
            "* **Files Modified:** `src/b.py`, `src/c.py`\n* **Files Deleted:** None\n"
            "* **Validation:** PASS — pytest -q\n* **Errors:** None.\n"
            "**Downstream Context**\n* **Key Interfaces Introduced:** f() in src/a.py\n"
            "* **Patterns Established:** none\n* **Warnings:** none\n",
            FULL._replace(
                downstream="* **Key Interfaces Introduced:** f() in src/a.py\n"
                "* **Patterns Established:** none\n* **Warnings:** none"
            ),
            id="bold-and-case",
        ),
        pytest.param(
            "Here is the plan you gave me:\n"
            + TEMPLATE
            + "\nWorking...\n\n"
            + PER_LINE
            + "\n## TASK COMPLETE\n",
            FULL,
            id="template-echo-then-report",
        ),
        pytest.param("```\n" + PER_LINE + "```\n## TASK COMPLETE\n", FULL, id="fenced-report"),
        pytest.param(
            PER_LINE.replace(
                "- Files Modified: src/b.py, src/c.py",
                "- Files Modified:\n  - src/b.py\n  - src/c.py",
            ),
            FULL,
            id="sub-bullets",
        ),
        pytest.param(
            "### Task Report\nStatus:   partial\nFiles Created: none\n"
            "Validation: fail (2 tests)\nErrors: test_x fails: AssertionError\n",
            TaskReport(
                status="partial",
                files_created=[],
                files_modified=[],
                files_deleted=[],
                validation="fail",
                errors="test_x fails: AssertionError",
                key_interfaces="",
                patterns="",
                warnings="",
                complete=False,
            ),
            id="missing-fields-not-complete",
        ),
        pytest.param(
            "### Task Report\n- Status: done-ish\n- Validation: not run\n",
            TaskReport(
                status="done-ish",
                files_created=[],
                files_modified=[],
                files_deleted=[],
                validation="not run",
                errors=None,
                key_interfaces="",
                patterns="",
                warnings="",
                complete=False,
            ),
            id="raw-values",
        ),
        pytest.param("All done, no report.\n## TASK COMPLETE\n", None, id="no-report"),
        pytest.param(TEMPLATE, None, id="template-only"),
        pytest.param("### Task Report\n\nI could not finish.\n", None, id="heading-only"),
        pytest.param("", None, id="empty"),
    ],
)
def test_parse_task_report(text: str, expected: TaskReport | None) -> None:
    assert parse_task_report(text) == expected


def test_last_report_wins() -> None:
    first = PER_LINE.replace("Status: success", "Status: failure")
    assert parse_task_report(first + "\nretrying\n\n" + PER_LINE) == FULL
    assert parse_task_report(PER_LINE + "\nretrying\n\n" + first).status == "failure"  # type: ignore[union-attr]


def test_prose_after_report_is_not_a_field() -> None:
    report = parse_task_report(PER_LINE + "That is all. Status: unknown\n")
    assert report == FULL


def test_paths_drop_a_purpose_suffix() -> None:
    text = PER_LINE.replace(
        "- Files Created: src/a.py\n- Files Modified: src/b.py, src/c.py\n- Files Deleted: none",
        "- Files Created: src/a.py \u2014 the loader\n"
        "- Files Modified: `src/b.py` - typed it; src/c.py \u2013 docs\n"
        "- Files Deleted: none \u2014 nothing removed",
    )
    assert parse_task_report(text) == FULL


def test_crlf_report() -> None:
    assert parse_task_report(PER_LINE.replace("\n", "\r\n")) == FULL


@pytest.mark.parametrize(
    ("tail", "downstream"),
    [
        pytest.param(
            "### Downstream Context\n\n- Key Interfaces Introduced:\n  - `load(path) -> Config`"
            "\n  - `save(cfg)`\n- Patterns Established: none\n- Warnings: slow on NFS\n\n"
            "## TASK COMPLETE\n",
            "- Key Interfaces Introduced:\n  - `load(path) -> Config`\n  - `save(cfg)`\n"
            "- Patterns Established: none\n- Warnings: slow on NFS",
            id="kept-as-written-up-to-the-marker",
        ),
        pytest.param(
            "**Downstream Context**\n- Warnings: none\nThat is all from me.\n",
            "- Warnings: none",
            id="prose-after-it-is-not-part-of-it",
        ),
        pytest.param("\n## TASK COMPLETE\n", "", id="none"),
    ],
)
def test_downstream_context_is_kept_raw(tail: str, downstream: str) -> None:
    head = PER_LINE.split("### Downstream Context")[0]
    report = parse_task_report(head + tail)
    assert report is not None and report.downstream == downstream


# --- markers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("work\n## TASK COMPLETE\n", ["## TASK COMPLETE"], id="task-complete"),
        pytest.param("## PLAN COMPLETE", ["## PLAN COMPLETE"], id="plan-complete-no-newline"),
        pytest.param(
            "  ##   CHECKPOINT REACHED  \nverify X\n",
            ["## CHECKPOINT REACHED"],
            id="checkpoint-spaces",
        ),
        pytest.param(
            "## FAILED: tests do not pass\n", ["## FAILED: tests do not pass"], id="failed-reason"
        ),
        pytest.param("## FAILED\n", ["## FAILED"], id="failed-bare"),
        pytest.param("## FAILED:   \n", ["## FAILED"], id="failed-empty-reason"),
        pytest.param(
            "## FAILED: a\r\n## TASK COMPLETE\r\n",
            ["## FAILED: a", "## TASK COMPLETE"],
            id="order-and-crlf",
        ),
        pytest.param("print `## TASK COMPLETE` after a success report\n", [], id="inline"),
        pytest.param(
            "### TASK COMPLETE\n## Task Complete\n## TASK COMPLETED\n", [], id="not-markers"
        ),
        pytest.param("## FAILED tests\n", [], id="failed-without-colon"),
        pytest.param("", [], id="empty"),
    ],
)
def test_markers(text: str, expected: list[str]) -> None:
    assert markers(text) == expected
