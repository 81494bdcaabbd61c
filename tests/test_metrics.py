"""STATE.md's Performance Metrics edits: gsd's rows in their tables, cells read and written
with the one table-row reader."""

from __future__ import annotations

import pytest

from gsd.formats.planning import metrics

pytestmark = pytest.mark.unit  # `make test-fast` runs these

METRICS = """\
## Performance Metrics

**Recent Execution:**

| Plan | Duration | Tasks | Files |
|------|----------|-------|-------|
{rows}
*Updated after each plan completion*

## Accumulated Context
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            METRICS.format(rows="| Phase 01 P01 | 5min | 4 tasks | 3 files |\n"),
            METRICS.format(
                rows="| Phase 01 P01 | 5min | 4 tasks | 3 files |\n"
                "| Phase 01 P02 | 6min | 1 task | 2 files |\n"
            ),
            id="appended",
        ),
        pytest.param(
            METRICS.format(
                rows="| Phase 1 P2 | 1min | 9 tasks | 9 files |\n| Phase 01 P01 | x |\n"
            ),
            METRICS.format(
                rows="| Phase 01 P02 | 6min | 1 task | 2 files |\n| Phase 01 P01 | x |\n"
            ),
            id="replaced-in-place",
        ),
        pytest.param(
            METRICS.format(rows="| - | - | - | - |\n"),
            METRICS.format(rows="| Phase 01 P02 | 6min | 1 task | 2 files |\n"),
            id="placeholder-row",
        ),
        pytest.param(
            METRICS.format(rows=""),
            METRICS.format(rows="| Phase 01 P02 | 6min | 1 task | 2 files |\n"),
            id="no-rows-yet",
        ),
        pytest.param(
            "## Performance Metrics\n\n| Phase | Plans | Total | Avg/Plan |\n|--|--|--|--|\n",
            "## Performance Metrics\n\n| Phase | Plans | Total | Avg/Plan |\n|--|--|--|--|\n",
            id="no-plan-table",
        ),
        pytest.param(
            "## Other\n\n| Plan | Duration |\n|--|--|\n",
            "## Other\n\n| Plan | Duration |\n|--|--|\n",
            id="table-outside-the-section",
        ),
        pytest.param(
            "## Performance Metrics\n\n| Plan | Duration | Tasks | Files |\n|-|-|-|-|",
            "## Performance Metrics\n\n| Plan | Duration | Tasks | Files |\n|-|-|-|-|\n"
            "| Phase 01 P02 | 6min | 1 task | 2 files |",
            id="at-end-without-newline",
        ),
    ],
)
def test_record_metric(text: str, expected: str) -> None:
    assert metrics.record_metric(text, plan_id="01-02", duration="6min", tasks=1, files=2) == (
        expected
    )


def test_an_escaped_pipe_in_the_metrics_header_is_one_column() -> None:
    text = "## Performance Metrics\n\n| Plan | Duration \\| wall | Tasks | Files |\n|-|-|-|-|\n"
    assert metrics.record_metric(text, plan_id="01-02", duration="6min", tasks=1, files=2) == (
        text + "| Phase 01 P02 | - | 1 task | 2 files |\n"
    )
