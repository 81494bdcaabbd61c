"""STATE.md's Performance Metrics edits: gsd's rows in their tables, cells read and written
with the one table-row reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from gsd.formats.files import load_text
from gsd.formats.planning import metrics
from tests.test_state import ALL_FILES as STATE_FILES

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


_BATCH_ROWS = [("01-02", "6min", 1, 2), ("01-01", "3min", 2, 1), ("02-01", "-", 3, 0)]


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        pytest.param(METRICS.format(rows="| - | - | - | - |\n"), _BATCH_ROWS, id="placeholder"),
        pytest.param(METRICS.format(rows=""), _BATCH_ROWS, id="empty"),
        pytest.param(
            METRICS.format(rows="| Phase 1 P2 | 1min | 9 tasks | 9 files |\n| mine | x |\n"),
            _BATCH_ROWS,
            id="found-and-new-around-a-person-s-row",
        ),
        pytest.param(
            METRICS.format(rows="| Phase 02 P01 | 1min | 1 task | 1 file |\n"),
            [*_BATCH_ROWS, ("2-1", "9min", 1, 1)],
            id="two-spellings-of-one-plan-in-turn",
        ),
        pytest.param(
            "## Performance Metrics\n\n| Plan | Duration | Tasks | Files |\n|-|-|-|-|",
            _BATCH_ROWS,
            id="at-end-without-newline",
        ),
        pytest.param(
            METRICS.format(rows="| - | - | - | - |\n").replace("\n", "\r\n"), _BATCH_ROWS, id="crlf"
        ),
    ],
)
def test_rows_in_one_pass_are_the_rows_written_in_turn(
    text: str, rows: list[metrics.Metric]
) -> None:
    """Issue 23: `record_metrics` gives the bytes of `record_metric` row by row."""
    expected = text
    for plan_id, duration, tasks, files in rows:
        expected = metrics.record_metric(
            expected, plan_id=plan_id, duration=duration, tasks=tasks, files=files
        )
    assert metrics.record_metrics(text, rows) == expected


BY_PHASE = """\
## Performance Metrics

| Phase | Plans | Total | Avg/Plan |
|-------|-------|-------|----------|
{rows}
| Plan | Duration | Tasks | Files |
|------|----------|-------|-------|
"""


@pytest.mark.parametrize(
    "rows", ["| - | - | - | - |\n", "", "| 02 | 1 | 1min | 1min |\n| note | x |\n"]
)
def test_phase_rows_in_one_pass_are_the_rows_written_in_turn(rows: str) -> None:
    text = BY_PHASE.format(rows=rows)
    phases = [("01", 2, "4min", "2min"), ("02", 0, "-", "-"), ("03", 0, "-", "-")]
    done = [True, False, False]
    expected = text
    for (phase, plans, total, average), any_done in zip(phases, done, strict=True):
        if any_done or metrics.has_phase_metric(expected, phase):
            expected = metrics.record_phase_metric(
                expected, phase=phase, plans=plans, total=total, average=average
            )
    assert metrics.record_phase_metrics(text, phases, done) == expected


@pytest.mark.parametrize("path", STATE_FILES)
def test_every_state_file_gets_in_one_pass_what_it_gets_in_turn(path: Path) -> None:
    text = load_text(path)
    rows = [*_BATCH_ROWS, ("03-01", "2min", 1, 1), ("1-10", "1min", 4, 4)]
    expected = text
    for plan_id, duration, tasks, files in rows:
        expected = metrics.record_metric(
            expected, plan_id=plan_id, duration=duration, tasks=tasks, files=files
        )
    assert metrics.record_metrics(text, rows) == expected
    phases = [("01", 2, "4min", "2min"), ("02", 0, "-", "-"), ("3", 1, "1min", "1min")]
    done = [True, False, True]
    expected = text
    for (phase, plans, total, average), any_done in zip(phases, done, strict=True):
        if any_done or metrics.has_phase_metric(expected, phase):
            expected = metrics.record_phase_metric(
                expected, phase=phase, plans=plans, total=total, average=average
            )
    assert metrics.record_phase_metrics(text, phases, done) == expected
