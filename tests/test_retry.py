"""The retry ladder's decision after a failed attempt (gsd.core.verdict.outcomes)."""

from __future__ import annotations

import pytest

from gsd.core.verdict.outcomes import Rung, TaskOutcome, next_rung

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def failed(error_type: str, *, attempt: int = 1, rate_limited: bool = False) -> TaskOutcome:
    blank = TaskOutcome.blank("01-01", 1, "python-pro", attempt)
    return blank._replace(error_type=error_type, exit_code=1, rate_limited=rate_limited)


@pytest.mark.parametrize(
    ("outcome", "retries", "fallback_on_error", "on_fallback", "rung"),
    [
        pytest.param(failed("timeout"), 2, True, False, "retry", id="timeout-retried"),
        pytest.param(
            failed("timeout-kill", attempt=2), 2, True, False, "retry", id="timeout-kill-retried"
        ),
        pytest.param(
            failed("timeout", attempt=3), 2, True, False, "fallback", id="retries-spent-fallback"
        ),
        pytest.param(
            failed("timeout", attempt=3), 2, False, False, "stop", id="retries-spent-no-fallback"
        ),
        pytest.param(
            failed("nonzero-exit", rate_limited=True),
            1,
            False,
            False,
            "retry",
            id="rate-limit-retried",
        ),
        pytest.param(failed("nonzero-exit"), 2, True, False, "fallback", id="not-transient"),
        pytest.param(failed("nonzero-exit"), 2, True, True, "stop", id="on-fallback-already"),
        pytest.param(failed("validation-failed"), 2, True, False, "stop", id="validation-final"),
        pytest.param(failed("policy-violation"), 2, True, False, "stop", id="policy-final"),
        pytest.param(
            failed("timeout", attempt=2), 1, True, True, "stop", id="fallback-gets-one-attempt"
        ),
    ],
)
def test_next_rung(
    outcome: TaskOutcome, retries: int, fallback_on_error: bool, on_fallback: bool, rung: Rung
) -> None:
    decided = next_rung(
        outcome, retries=retries, fallback_on_error=fallback_on_error, on_fallback=on_fallback
    )
    assert decided == rung
