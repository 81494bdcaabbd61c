"""An agent's result, in SPEC section 5's tiers: Task Report, GSD markers, the verdict."""

from __future__ import annotations

import re
from typing import NamedTuple

from gsd.formats.lines import fence_of, fenced_ranges
from gsd.formats.runners import RunnerOutput
from gsd.io.proc import EXIT_KILLED, EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_TIMEOUT

# --- Task Report ------------------------------------------------------------------


class TaskReport(NamedTuple):
    """The Task Report and Downstream Context an agent prints last (workflows/task-report.md)."""

    status: str  # success | partial | failure, or the raw value; "" when missing
    files_created: list[str]
    files_modified: list[str]
    files_deleted: list[str]
    validation: str  # pass | fail | skipped, or the raw value
    errors: str | None  # None for `none`
    key_interfaces: str
    patterns: str
    warnings: str
    complete: bool  # all six Task Report fields were present
    # the Downstream Context block as the agent wrote it, for the tasks after it; ""
    # when the report has none
    downstream: str = ""


_FIELD_NAME = (
    r"(?:status|files\s+created|files\s+modified|files\s+deleted|validation|errors?"
    r"|key\s+interfaces(?:\s+introduced)?|patterns(?:\s+established)?|warnings?)"
)
_BOLD = r"(?:\*\*|__)?"
_FIELD_RE = re.compile(rf"^{_BOLD}\s*({_FIELD_NAME})\s*{_BOLD}\s*:\s*{_BOLD}", re.IGNORECASE)
# `Files Created: a | Files Modified: b`: split at a bar only when a field name follows.
_SPLIT_RE = re.compile(rf"\s*\|\s*(?={_BOLD}\s*{_FIELD_NAME}\s*{_BOLD}\s*:)", re.IGNORECASE)
_BULLET_RE = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+")
_KEYS = {
    "status": "status",
    "files created": "files_created",
    "files modified": "files_modified",
    "files deleted": "files_deleted",
    "validation": "validation",
    "error": "errors",
    "errors": "errors",
    "key interfaces": "key_interfaces",
    "key interfaces introduced": "key_interfaces",
    "patterns": "patterns",
    "patterns established": "patterns",
    "warning": "warnings",
    "warnings": "warnings",
}
_REPORT_FIELDS = (
    "status",
    "files_created",
    "files_modified",
    "files_deleted",
    "validation",
    "errors",
)
_NONE = {"none", "n/a", "na", "-", "\u2014", "nothing", ""}
_STATUSES = {"success", "partial", "failure"}
_VALIDATIONS = {
    "pass": "pass",
    "passed": "pass",
    "fail": "fail",
    "failed": "fail",
    "skipped": "skipped",
    "skip": "skipped",
}


def _heading(line: str, title: str) -> bool:
    """`### Task Report`, `## task report`, `**Task Report**`: a heading with this title."""
    if title.split()[-1] not in line.lower():
        return False
    match = re.fullmatch(r"\s*(#{1,6})?\s*(\*\*)?\s*(.*?)\s*(\*\*)?\s*:?\s*", line)
    if match is None or not (match.group(1) or (match.group(2) and match.group(4))):
        return False
    return " ".join(match.group(3).lower().split()) == title


# A report is a dozen lines; what follows the heading beyond this is not read.
_MAX_REPORT_LINES = 200


def parse_task_report(text: str) -> TaskReport | None:
    """The LAST Task Report in `text` outside fenced code (else the last one inside a
    fence: agents often fence their whole report), or None when there is none.

    A runner may echo the prompt, whose template reads `Status: success | partial |
    failure`: a block whose Status holds `|` is a template, not a report. Lenient
    about bullets (`-`, `*`, `+`, numbers, none), case, spacing, `**bold**` names and
    the compact `Files Created: a | Files Modified: b` line as well as one field a line.
    Continuation lines (indented or bulleted, without a field name) extend the field
    above them. File lists split on commas; `none` is the empty list.
    """
    # Walk back over the places that name a Task Report and parse only from there:
    # an agent's output can be megabytes of short lines (a list of them costs ~20x).
    lowered = text.lower()
    end = len(text)
    fenced: list[tuple[int, int]] | None = None  # read once, at the first heading found
    in_fence: TaskReport | None = None  # the last report inside fenced code
    while (found := lowered.rfind("task report", 0, end)) >= 0:
        end = found
        line_start = text.rfind("\n", 0, found) + 1
        line_end = text.find("\n", found)
        if not _heading(text[line_start : line_end if line_end >= 0 else len(text)], "task report"):
            continue
        block = text[line_start:].replace("\r\n", "\n").split("\n", _MAX_REPORT_LINES)
        report = _report_block(block[1:_MAX_REPORT_LINES])
        if report is None:
            continue
        fenced = fenced_ranges(text) if fenced is None else fenced
        if not any(first <= line_start <= last for first, last in fenced):
            return report
        in_fence = in_fence or report
    # Agents often fence their whole report; one shown as an example in code counts
    # only when no report stands outside code.
    return in_fence


def _report_block(lines: list[str]) -> TaskReport | None:
    values: dict[str, list[str]] = {}
    current: str | None = None
    downstream_at: int | None = None  # the line after the Downstream Context heading
    end = len(lines)
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped:
            continue
        if _heading(stripped, "downstream context"):
            current = None
            if downstream_at is None:
                downstream_at = number + 1
            continue
        if stripped.startswith("#") or fence_of(stripped) is not None:
            end = number
            break  # the next section, a GSD marker, or the end of a fenced report
        body = _BULLET_RE.sub("", line, count=1).strip()
        segments = _SPLIT_RE.split(body)
        if _FIELD_RE.match(segments[0]):
            for segment in segments:
                match = _FIELD_RE.match(segment)
                if match is None:  # pragma: no cover - the split only cuts before a name
                    continue
                current = _KEYS[" ".join(match.group(1).lower().split())]
                values.setdefault(current, []).append(segment[match.end() :].strip())
            continue
        if line[:1].isspace() or _BULLET_RE.match(line):
            if current is not None:
                values[current].append(body)
            continue
        if values:
            end = number
            break  # prose after the report ends it
    if not values or "|" in "".join(values.get("status", [])):
        return None
    downstream = "" if downstream_at is None else "\n".join(lines[downstream_at:end]).strip()
    return TaskReport(
        status=_status(values.get("status")),
        files_created=_paths(values.get("files_created")),
        files_modified=_paths(values.get("files_modified")),
        files_deleted=_paths(values.get("files_deleted")),
        validation=_validation(values.get("validation")),
        errors=_errors(values.get("errors")),
        key_interfaces=_joined(values.get("key_interfaces")),
        patterns=_joined(values.get("patterns")),
        warnings=_joined(values.get("warnings")),
        complete=all(key in values for key in _REPORT_FIELDS),
        downstream=downstream,
    )


def _clean(value: str) -> str:
    return value.strip().strip("*_`'\"").strip()


def _joined(parts: list[str] | None) -> str:
    return "\n".join(p for p in (parts or []) if p).strip()


def _first_word(parts: list[str] | None) -> tuple[str, str]:
    raw = _clean(parts[0]) if parts else ""
    words = raw.split()
    return raw, (words[0].lower().strip(".,;:!*_`") if words else "")


def _status(parts: list[str] | None) -> str:
    raw, word = _first_word(parts)
    return word if word in _STATUSES else raw


def _validation(parts: list[str] | None) -> str:
    raw, word = _first_word(parts)
    return _VALIDATIONS.get(word, raw)


def _errors(parts: list[str] | None) -> str | None:
    joined = _joined(parts)
    return None if _clean(joined).lower().rstrip(".") in _NONE else joined


# `src/a.py — the loader`: a description after a spaced dash is not part of the path
_PURPOSE_RE = re.compile(r"\s+[-\u2013\u2014]\s.*", re.DOTALL)


def _paths(parts: list[str] | None) -> list[str]:
    items = []
    for part in parts or []:
        for item in re.split(r"[,;]", part):
            item = _clean(_PURPOSE_RE.sub("", item))
            if item.lower().rstrip(".") not in _NONE:
                items.append(item)
    return items


# --- markers ----------------------------------------------------------------------

_MARKER_RE = re.compile(
    r"^[ \t]*##[ \t]+(?:(TASK COMPLETE|PLAN COMPLETE|CHECKPOINT REACHED)"
    r"|FAILED(?:[ \t]*:[ \t]*(.*?))?)[ \t\r]*$",
    re.MULTILINE,
)


def markers(text: str) -> list[str]:
    """The GSD markers standing on their own lines, in order, normalised.

    `## TASK COMPLETE`, `## PLAN COMPLETE`, `## CHECKPOINT REACHED`, and `## FAILED`
    or `## FAILED: reason`. Upper case, as upstream GSD greps for them.
    """
    found = []
    for match in _MARKER_RE.finditer(text):
        if match.group(1):
            found.append(f"## {match.group(1)}")
        else:
            reason = (match.group(2) or "").strip()
            found.append(f"## FAILED: {reason}" if reason else "## FAILED")
    return found


# --- verdict ----------------------------------------------------------------------


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
    changed_files: bool,
) -> Verdict:
    """The result of one spawn, by SPEC 5's tiers. The first rule that applies decides:

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
       a failure by itself); otherwise `nonzero-exit`. Status partial, failure or
       anything else -> failure (`nonzero-exit`, or `unknown` on exit 0).
    5. Tier 3, the last GSD marker: TASK / PLAN COMPLETE -> success on exit 0,
       `nonzero-exit` otherwise; FAILED or CHECKPOINT REACHED -> failure.
    6. Tier 4, evidence: exit 0 and a non-empty diff -> success.
    7. Otherwise: a non-zero exit is `nonzero-exit`; exit 0 with clean structured
       output but no report, marker or change is `unknown`; exit 0 with nothing
       usable at all is `result-unparsable`.
    """
    found = markers(output.text)
    return (
        _by_timeout(exit_code, timed_out, output, report)
        or _by_spawn_failure(exit_code, output, report, found)
        or _by_runner_error(exit_code, output)
        or _by_report(exit_code, report)
        or _by_marker(exit_code, found[-1] if found else None)
        or _by_evidence(exit_code, output, changed_files)
    )


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
        return _succeeded("timed out after printing a complete success Task Report", soft=True)
    kind = "timeout-kill" if exit_code == EXIT_KILLED else "timeout"
    return _failed(kind, f"timed out (exit {exit_code}) without a complete success Task Report")


def _by_spawn_failure(
    exit_code: int, output: RunnerOutput, report: TaskReport | None, found: list[str]
) -> Verdict | None:
    """Rule 2: exit 127 / 126 with nothing printed: the program never ran."""
    if (
        exit_code in (EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE)
        and not output.structured
        and report is None
        and not found
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
    return _failed(_failing(exit_code), f"Task Report status: {report.status or 'missing'}{detail}")


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
