"""The Task Report and the GSD markers an agent prints, read out of its text (SPEC 5 tiers 2, 3)."""

from __future__ import annotations

import re

from gsd.core.models import TaskReport
from gsd.formats.lines import fence_of, fenced_ranges

# --- Task Report ------------------------------------------------------------------


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
