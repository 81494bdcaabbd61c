"""The verdict on one attempt at a task, by SPEC 5's rules: one function a rule, no I/O."""

from __future__ import annotations

import re
from typing import NamedTuple

from gsd.core.errors import EXIT_KILLED, EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_TIMEOUT
from gsd.core.models import RunnerOutput, TaskReport


class Verdict(NamedTuple):
    """Did the task succeed, and if not, which SPEC 6 error_type and why."""

    success: bool
    soft_success: bool
    error_type: str | None
    reason: str


# What claude, gemini and codex print when an API rate, usage or capacity limit stopped
# them, from their own packages: claude-code 2.1.330 ("API Error: Request rejected
# (429)", rate_limit_error, overloaded_error, "You've hit your limit", "Usage limit
# reached", "You've hit your monthly spend limit", "Out of usage credits"),
# gemini-cli 0.61.0 (429, RESOURCE_EXHAUSTED, "You have exhausted your daily quota on
# this model.", "exhausted your capacity", MODEL_CAPACITY_EXHAUSTED, "[Rate limit
# exceeded]"), codex 0.169.0 ("You've hit your usage limit.", "Quota exceeded. Check
# your plan and billing details.", "Usage limit reached.", "Selected model is at
# capacity.", "server overloaded", "rate limit exceeded").
_RATE_LIMIT_RE = re.compile(
    # HTTP 429 only as an HTTP status (never a line number such as `app.py:429`)
    r"\(429\)|\b(?:error|status|code)\W{0,3}429\b|\b429 too many"
    r"|rate[ _-]?limit(?:ed|_error| exceeded)|RESOURCE_EXHAUSTED|too many requests"
    r"|usage limit reached"
    r"|hit your (?:\w+ )*limit|spend limit|out of (?:usage )?credits"
    r"|exceeded your current quota|quota exceeded|exhausted your (?:\w+ )*(?:quota|capacity)"
    r"|capacity exceeded|CAPACITY_EXHAUSTED|is at capacity|overloaded_error|server overloaded"
    r"|api error:? \S* ?overloaded",
    re.IGNORECASE,
)


def rate_limited(verdict: Verdict, output: RunnerOutput, stderr: str = "") -> bool:
    """A failed run the runner ended because of a rate or usage limit: SPEC 7 step 5
    retries it like a timeout. Its error_type stays SPEC 6's (`nonzero-exit`, or
    `unknown` when the runner still exited 0); only the runner's own words are read:
    its structured error (HTTP 429/529), its text and the end of its stderr (the caller
    passes a CLI's stderr only: a `command` agent's is its own program's output)."""
    if verdict.error_type not in ("nonzero-exit", "unknown"):
        return False
    if output.rate_limited:
        return True
    return any(_RATE_LIMIT_RE.search(text[-4000:]) for text in (output.text, stderr))


def judge(
    *,
    exit_code: int,
    timed_out: bool,
    output: RunnerOutput,
    report: TaskReport | None,
    markers: list[str],
    changed_files: bool,
) -> Verdict:
    """The result of one spawn, by SPEC 5's tiers. The first rule that applies decides
    (`markers`: the GSD markers in the agent's text, in order; `gsd.formats.taskreport`
    reads them and the report):

    1. Timeout (`timed_out`, or exit 124 / 137): a complete Task Report with
       Status success, and no runner error, is a soft success (accepted, flagged);
       anything else is `timeout` (124) or `timeout-kill` (137).
    2. Exit 127 / 126 with nothing printed (no structured output, report or
       marker): the program never ran, `spawn-failed`.
    3. Tier 1, structured output: the runner said is_error -> failure
       (`nonzero-exit`, or `unknown` when it still exited 0).
    4. Tier 2, the Task Report: Status success -> success when the exit status is
       0, and also after a non-zero exit when the report is complete (Claude Code's
       `classifyHandoffIfNeeded is not defined` crash after a finished run is not
       a failure by itself); otherwise `nonzero-exit`. Status failure ->
       `report-failure` and partial -> `report-partial`, whatever the exit status;
       anything else (missing, unreadable) -> `nonzero-exit`, or `unknown` on exit 0.
    5. Tier 3, the last GSD marker: TASK / PLAN COMPLETE -> success on exit 0,
       `nonzero-exit` otherwise; FAILED or CHECKPOINT REACHED -> failure.
    6. Tier 4, evidence: exit 0 and a non-empty diff -> success.
    7. Otherwise: a non-zero exit is `nonzero-exit`; exit 0 with clean structured
       output but no report, marker or change is `unknown`; exit 0 with nothing
       usable at all is `result-unparsable`.

    A success here is what the agent's output says; whether the task is done is
    decided after it, against git (`gsd.core.verdict.done`: files the report claims but the
    commit lacks, writes the runner denied, a plan file that fails validation).
    """
    return (
        _by_timeout(exit_code, timed_out, output, report)
        or _by_spawn_failure(exit_code, output, report, markers)
        or _by_runner_error(exit_code, output)
        or _by_report(exit_code, report)
        or _by_marker(exit_code, markers[-1] if markers else None)
        or _by_evidence(exit_code, output, changed_files)
    )


# the soft successes of a timeout: what the log, SUMMARY.md and `gsd report` say of each
REPORTED_SOFT = "timed out after printing a complete success Task Report"
VERIFIED_SOFT = "timed out, but its checks pass: accepted (salvage.accept_timeout_when_verified)"
TIMEOUTS = ("timeout", "timeout-kill")


def verified(timed_out: Verdict) -> Verdict:
    """A timeout (`timed_out`) whose attempt changed files and whose `<automated>` checks
    then passed, with config `salvage.accept_timeout_when_verified`: a soft success. The
    caller has made sure of all that (and the change policy still applies after it)."""
    del timed_out  # a timeout's verdict is all it replaces
    return _succeeded(VERIFIED_SOFT, soft=True)


def _succeeded(reason: str, *, soft: bool = False) -> Verdict:
    return Verdict(success=True, soft_success=soft, error_type=None, reason=reason)


def _failed(error_type: str, reason: str) -> Verdict:
    return Verdict(success=False, soft_success=False, error_type=error_type, reason=reason)


def _failing(exit_code: int) -> str:
    """A failure's error_type when no rule names one: it exited 0 or it did not."""
    return "nonzero-exit" if exit_code != 0 else "unknown"


def _by_timeout(
    exit_code: int, timed_out: bool, output: RunnerOutput, report: TaskReport | None
) -> Verdict | None:
    """Rule 1: a run that timed out is a soft success only after a complete success
    Task Report and no runner error; else `timeout` or `timeout-kill`."""
    if not (timed_out or exit_code in (EXIT_TIMEOUT, EXIT_KILLED)):
        return None
    runner_error = output.structured and output.is_error
    if report is not None and report.status == "success" and report.complete and not runner_error:
        return _succeeded(REPORTED_SOFT, soft=True)
    kind = "timeout-kill" if exit_code == EXIT_KILLED else "timeout"
    return _failed(kind, f"timed out (exit {exit_code}) without a complete success Task Report")


def _by_spawn_failure(
    exit_code: int, output: RunnerOutput, report: TaskReport | None, markers: list[str]
) -> Verdict | None:
    """Rule 2: exit 127 / 126 with nothing printed: the program never ran."""
    if (
        exit_code in (EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE)
        and not output.structured
        and report is None
        and not markers
    ):
        return _failed("spawn-failed", f"the runner could not be started (exit {exit_code})")
    return None


def _by_runner_error(exit_code: int, output: RunnerOutput) -> Verdict | None:
    """Rule 3 (tier 1): the runner's structured output said is_error."""
    if not (output.structured and output.is_error):
        return None
    return _failed(
        _failing(exit_code),
        f"the runner reported an error (exit {exit_code}): {_snippet(output.text)}",
    )


def _by_report(exit_code: int, report: TaskReport | None) -> Verdict | None:
    """Rule 4 (tier 2): the Task Report's Status, with the exit status and whether the
    report is complete."""
    if report is None:
        return None
    if report.status == "success":
        if exit_code == 0:
            return _succeeded("Task Report: success")
        if report.complete:
            return _succeeded(
                f"exit {exit_code} after a complete success Task Report (the run had finished)"
            )
        return _failed(
            "nonzero-exit", f"exit {exit_code} and the success Task Report is incomplete"
        )
    detail = f"; errors: {report.errors}" if report.errors else ""
    kind = _REPORTED.get(report.status) or _failing(exit_code)
    return _failed(kind, f"Task Report status: {report.status or 'missing'}{detail}")


# a Task Report's own Status of failure, by its own error type whatever the exit status
_REPORTED = {"failure": "report-failure", "partial": "report-partial"}


def _by_marker(exit_code: int, last: str | None) -> Verdict | None:
    """Rule 5 (tier 3): the last GSD marker the agent printed."""
    if last is None:
        return None
    if last in ("## TASK COMPLETE", "## PLAN COMPLETE"):
        if exit_code == 0:
            return _succeeded(f"marker {last}")
        return _failed("nonzero-exit", f"exit {exit_code} after {last}")
    return _failed(_failing(exit_code), f"marker {last}")


def _by_evidence(exit_code: int, output: RunnerOutput, changed_files: bool) -> Verdict:
    """Rules 6 and 7 (tier 4 and the rest): exit 0 and a non-empty diff is a success;
    anything else a failure that says what was missing."""
    if exit_code != 0:
        return _failed("nonzero-exit", f"exit {exit_code} without a success Task Report")
    if changed_files:
        return _succeeded("exit 0 and the task changed files")
    if output.structured:
        return _failed(
            "unknown", "the runner finished without a Task Report, a GSD marker or any change"
        )
    return _failed(
        "result-unparsable", "exit 0 but no structured output, Task Report, GSD marker or change"
    )


def _snippet(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
