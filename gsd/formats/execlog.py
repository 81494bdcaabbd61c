"""The run logs: one JSON object per event, per plan in `.planning/logs/`, appended under a lock.

Layout (SPEC 6): `.planning/logs/{plan_id}.jsonl` holds one plan's events and its error
records (gsd.formats.errorlog), in order, and is written only where that plan's task commits are
made (its branch, or the checkout a plan runs in place in): two plan branches never touch
the same log line, so merging them never conflicts. `.planning/logs/phase-{NN}.jsonl`
holds what happened on the branch `gsd execute-phase` merges into (the run and wave
events, merges, and the lines of plan runs that stopped in their worktree); it is never
written on a plan's branch. `.planning/execution-log.jsonl` and
`.planning/specialist-errors.jsonl` are the shared logs of older versions: still read.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path, PurePath
from typing import Any

from gsd.core import layout
from gsd.core.utc import utc_stamp
from gsd.formats.files import append_line, json_line, jsonl_objects, read_lines_file

# One line of a run log as read back: free-form JSON (old logs, newer fields), read with
# `.get` by `gsd report` and `gsd errors`.
LogEvent = dict[str, Any]

EVENTS = (
    "run-start",
    "wave-start",
    "proposal",
    "spawn",
    "review",
    "result",
    "retry",
    "fallback",
    "commit",
    "rollback",
    "merge",
    "checkpoint-paused",
    "plan-complete",
    "wave-end",
    "run-end",
)


# kinds of event that belong to no plan: never written on a plan's branch
PHASE_EVENTS = frozenset({"run-start", "wave-start", "wave-end", "run-end"})


def step_of(e: LogEvent) -> str:
    """The retry ladder's step of an attempt's `spawn`, `result`, `retry` or `fallback`
    event ("" for a task's first attempt, and in logs older than the ladder)."""
    step = e.get("step")
    return step if isinstance(step, str) and step != "first" else ""


def soft_words(e: LogEvent) -> str:
    """How a soft success's `result` event is shown: `soft success`, and why when the
    log says (`soft_reason`: a timeout accepted on its Task Report or on its checks)."""
    reason = e.get("soft_reason")
    return f"soft success: {reason}" if isinstance(reason, str) and reason else "soft success"


def log_files(planning: Path) -> list[Path]:
    """Every per-plan and phase log in `.planning/logs/`, by name."""
    folder = planning / layout.LOGS
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.jsonl") if p.is_file())


def utc_now() -> str:
    """Now, as ISO-8601 UTC with milliseconds: events of one second keep their order."""
    moment = datetime.now(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def event(kind: str, **fields: Any) -> dict[str, Any]:
    """One event record: `ts` and `event` first, then `fields` in the order given.

    ValueError for a kind not in EVENTS, or a field named `event`; `ts` may be given.
    """
    if kind not in EVENTS:
        raise ValueError(f"unknown event {kind!r}; expected one of {', '.join(EVENTS)}")
    if "event" in fields:
        raise ValueError("a field may not be named 'event': it holds the kind")
    return {"ts": fields.pop("ts", None) or utc_now(), "event": kind, **fields}


def to_line(record: dict[str, Any]) -> str:
    """The record as one JSON line, without the newline; paths and times become text."""
    return json.dumps(record, ensure_ascii=False, default=_jsonable)


def _jsonable(value: Any) -> Any:
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, datetime):
        return utc_stamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    raise TypeError(f"cannot log a {type(value).__name__} as JSON: {value!r}")


def append(path: Path, record: dict[str, Any]) -> None:
    """Add `record` as one line at the end of the log (locked; never rewrites)."""
    line = json_line(record, to_line)  # TypeError before the file is touched
    append_line(path, line)


def parse(
    text: str, name: str = layout.LEGACY_EXECUTION_LOG
) -> tuple[list[dict[str, Any]], list[str]]:
    """Records in file order, and a warning per line that is not one.

    A last line without its newline is a write cut short by a crash: skipped silently.
    (Once a later append has closed it, it is a bad line like any other.) Unknown
    event kinds are kept: a newer gsd may log kinds this one does not know.
    """

    def is_event(data: dict[str, Any]) -> str | None:
        return None if isinstance(data.get("event"), str) else 'not an event: no "event" name'

    return jsonl_objects(text, name, is_event)


def read(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The log at `path`, as `parse` sees it; a missing file is an empty log."""
    text = read_lines_file(path, "execution log")
    return ([], []) if text is None else parse(text, path.name)


def split_log(text: str, name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """A per-plan log's lines: (events, error records as raw objects, warnings). A line
    is an event when it has an "event" name, an error record when it has "error_type"."""
    events: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []

    def sort(data: dict[str, Any]) -> str | None:
        if isinstance(data.get("event"), str):
            events.append(data)
        elif "error_type" in data:
            errors.append(data)
        else:
            return 'neither an event (no "event" name) nor an error record (no "error_type")'
        return None

    _, warnings = jsonl_objects(text, name, sort)
    return events, errors, warnings


def read_split(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """`split_log` of the file at `path` (warnings name it from .planning/); missing: empty."""
    text = read_text(path)
    return ([], [], []) if text is None else split_log(text, log_name(path))


def read_text(path: Path) -> str | None:
    """A run log's text (None: missing), read as `read_split` reads it."""
    return read_lines_file(path, "run log")


def log_name(path: Path) -> str:
    """How warnings name a run log: from .planning/ (`logs/01-02.jsonl`)."""
    return f"{layout.LOGS}/{path.name}" if path.parent.name == layout.LOGS else path.name


def read_all(planning: Path) -> tuple[list[LogEvent], list[str]]:
    """Every event of every log (the legacy `execution-log.jsonl` first, then
    `.planning/logs/`), in time order (lines of one time keep their file order); and a
    warning per line that is not one."""
    events, warnings = read(planning / layout.LEGACY_EXECUTION_LOG)
    for path in log_files(planning):
        found, _, bad = read_split(path)
        events += found
        warnings += bad
    return sorted(events, key=lambda e: str(e.get("ts", ""))), warnings
