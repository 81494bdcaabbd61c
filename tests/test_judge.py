"""SPEC 5's verdict on an attempt, and rate limits (gsd.core.verdict.judge)."""

from __future__ import annotations

import pytest

from gsd.core.models import RunnerOutput, TaskReport
from gsd.core.verdict.judge import Verdict, judge, rate_limited
from gsd.formats.taskreport import markers
from tests.test_taskreport import FULL

pytestmark = pytest.mark.unit  # `make test-fast` runs these

# --- judge ------------------------------------------------------------------------

OK_REPORT = FULL
INCOMPLETE = FULL._replace(complete=False)
PARTIAL = FULL._replace(status="partial", errors="one test fails")
NOTHING_COUNTED = {"input_tokens": None, "output_tokens": None, "cost_usd": None}
CLEAN = RunnerOutput(text="", is_error=False, structured=True, **NOTHING_COUNTED)
RAW = RunnerOutput(text="", is_error=False, structured=False, **NOTHING_COUNTED)
ERRORED = RunnerOutput(text="max turns", is_error=True, structured=True, **NOTHING_COUNTED)


def text(t: str, structured: bool = False) -> RunnerOutput:
    return RunnerOutput(text=t, is_error=False, structured=structured, **NOTHING_COUNTED)


COMPLETE = text("## TASK COMPLETE")
HANDOFF = text("Error: classifyHandoffIfNeeded is not defined", True)
# what judge decides: (success, soft_success, error_type)
OK = (True, False, None)
SOFT = (True, True, None)


def failed(error_type: str) -> tuple[bool, bool, str]:
    return (False, False, error_type)


@pytest.mark.parametrize(
    ("exit_code", "timed_out", "output", "report", "changed", "expected"),
    [
        # timeouts
        pytest.param(124, True, CLEAN, OK_REPORT, True, SOFT, id="soft-success"),
        pytest.param(137, True, RAW, OK_REPORT, False, SOFT, id="soft-success-after-kill"),
        pytest.param(124, False, CLEAN, OK_REPORT, True, SOFT, id="soft-success-by-exit-status"),
        pytest.param(
            124, True, CLEAN, INCOMPLETE, True, failed("timeout"), id="timeout-incomplete-report"
        ),
        pytest.param(124, True, CLEAN, PARTIAL, True, failed("timeout"), id="timeout-partial"),
        pytest.param(124, True, COMPLETE, None, True, failed("timeout"), id="timeout-marker-only"),
        pytest.param(
            124, True, ERRORED, OK_REPORT, True, failed("timeout"), id="timeout-runner-error"
        ),
        pytest.param(137, True, RAW, None, False, failed("timeout-kill"), id="timeout-kill"),
        pytest.param(-9, True, RAW, None, False, failed("timeout"), id="timed-out-flag"),
        # spawn
        pytest.param(127, False, RAW, None, False, failed("spawn-failed"), id="spawn-failed"),
        pytest.param(126, False, RAW, None, False, failed("spawn-failed"), id="not-executable"),
        pytest.param(
            127, False, RAW, PARTIAL, False, failed("report-partial"), id="127-after-running"
        ),
        # tier 1
        pytest.param(1, False, ERRORED, OK_REPORT, True, failed("nonzero-exit"), id="runner-error"),
        pytest.param(
            0, False, ERRORED, OK_REPORT, True, failed("unknown"), id="runner-error-exit-0"
        ),
        pytest.param(
            0,
            False,
            ERRORED._replace(structured=False),
            OK_REPORT,
            True,
            OK,
            id="is-error-needs-structured",
        ),
        # tier 2
        pytest.param(0, False, CLEAN, OK_REPORT, False, OK, id="report-success"),
        pytest.param(0, False, RAW, INCOMPLETE, False, OK, id="incomplete-success-exit-0"),
        pytest.param(1, False, HANDOFF, OK_REPORT, True, OK, id="classifyHandoffIfNeeded"),
        pytest.param(
            1, False, RAW, INCOMPLETE, True, failed("nonzero-exit"), id="nonzero-incomplete-report"
        ),
        pytest.param(0, False, CLEAN, PARTIAL, True, failed("report-partial"), id="report-partial"),
        pytest.param(
            2, False, CLEAN, PARTIAL, True, failed("report-partial"), id="report-partial-nonzero"
        ),
        pytest.param(
            0,
            False,
            COMPLETE,
            FULL._replace(status="failure"),
            True,
            failed("report-failure"),
            id="report-beats-marker",
        ),
        pytest.param(
            1,
            False,
            CLEAN,
            FULL._replace(status="failure"),
            False,
            failed("report-failure"),
            id="report-failure-nonzero",
        ),
        pytest.param(
            0,
            False,
            CLEAN,
            FULL._replace(status=""),
            True,
            failed("unknown"),
            id="report-status-missing",
        ),
        pytest.param(
            3,
            False,
            CLEAN,
            FULL._replace(status="done-ish"),
            True,
            failed("nonzero-exit"),
            id="report-status-unreadable-nonzero",
        ),
        # tier 3
        pytest.param(
            0, False, text("done\n## TASK COMPLETE\n"), None, False, OK, id="marker-complete"
        ),
        pytest.param(
            0, False, text("## PLAN COMPLETE"), None, False, OK, id="marker-plan-complete"
        ),
        pytest.param(
            1, False, COMPLETE, None, True, failed("nonzero-exit"), id="marker-complete-nonzero"
        ),
        pytest.param(
            0, False, text("## FAILED: no db"), None, True, failed("unknown"), id="marker-failed"
        ),
        pytest.param(
            0,
            False,
            text("## TASK COMPLETE\n## FAILED: oops"),
            None,
            True,
            failed("unknown"),
            id="last-marker-wins",
        ),
        pytest.param(
            0,
            False,
            text("## CHECKPOINT REACHED"),
            None,
            True,
            failed("unknown"),
            id="marker-checkpoint",
        ),
        # tier 4 and nothing
        pytest.param(0, False, RAW, None, True, OK, id="evidence-diff"),
        pytest.param(
            0, False, text("I changed it", True), None, True, OK, id="evidence-structured"
        ),
        pytest.param(3, False, RAW, None, True, failed("nonzero-exit"), id="nonzero-with-diff"),
        pytest.param(0, False, CLEAN, None, False, failed("unknown"), id="clean-run-nothing-said"),
        pytest.param(
            0,
            False,
            text("hello"),
            None,
            False,
            failed("result-unparsable"),
            id="result-unparsable",
        ),
    ],
)
def test_judge(
    exit_code: int,
    timed_out: bool,
    output: RunnerOutput,
    report: TaskReport | None,
    changed: bool,
    expected: tuple[bool, bool, str | None],
) -> None:
    verdict = judge(
        exit_code=exit_code,
        timed_out=timed_out,
        output=output,
        report=report,
        markers=markers(output.text),
        changed_files=changed,
    )
    assert isinstance(verdict, Verdict)
    assert (verdict.success, verdict.soft_success, verdict.error_type) == expected
    assert verdict.reason


def test_judge_reason_carries_the_agents_errors() -> None:
    verdict = judge(
        exit_code=0, timed_out=False, output=CLEAN, report=PARTIAL, markers=[], changed_files=False
    )
    assert "partial" in verdict.reason and "one test fails" in verdict.reason


@pytest.mark.parametrize(
    ("text", "exit_code", "expected"),
    [
        ('API Error: 429 {"type":"rate_limit_error"}', 1, True),  # claude
        ("Claude AI usage limit reached|1700000000", 1, True),
        ("[API Error: RESOURCE_EXHAUSTED: quota]", 1, True),  # gemini
        ("exceeded retry limit, last status: 429 Too Many Requests", 1, True),  # codex
        # the packages' own strings: claude-code 2.1.330, gemini-cli 0.61.0, codex 0.169.0
        ("API Error: Request rejected (429) · rate limited", 1, True),
        ("You've hit your limit · resets 3pm (UTC)", 1, True),
        ("You've hit your monthly spend limit · /usage-credits to raise it", 1, True),
        ("Out of usage credits — buy more below to keep going.", 1, True),
        ('API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}', 1, True),
        ("You have exhausted your daily quota on this model.", 1, True),
        ("You have exhausted your capacity on this model", 1, True),
        ("[Rate limit exceeded] https://example.invalid", 1, True),
        ("You've hit your usage limit. Upgrade to Plus to continue using Codex", 1, True),
        ("Quota exceeded. Check your plan and billing details.", 1, True),
        ("Usage limit reached. You've reached your usage limit.", 1, True),
        ("Selected model is at capacity. Please try a different model.", 1, True),
        ("stream error: server overloaded", 1, True),
        ("def overloaded(x): pass  # a test failed", 1, False),
        # a task's own failing output, not the runner's limits
        ('File "app.py", line 429, in handler', 1, False),
        ("tests/test_api.py:429: AssertionError", 1, False),
        ("FAILED tests/test_limits.py::test_rate_limit_resets_daily", 1, False),
        ("the upload is over the usage limit of the fixture", 1, False),
        ("ValueError: bad input", 1, False),
        ("done, nothing about limits", 0, False),  # exit 0 with changes: a success
    ],
)
def test_rate_limited_failures_are_recognised(text: str, exit_code: int, expected: bool) -> None:
    output = RunnerOutput(text=text, is_error=True, structured=exit_code != 0, **NOTHING_COUNTED)
    verdict = judge(
        exit_code=exit_code,
        timed_out=False,
        output=output,
        report=None,
        markers=markers(text),
        changed_files=exit_code == 0,
    )
    assert rate_limited(verdict, output) is expected
