"""`.planning/execution-log.jsonl`: one JSON object per event of a run, appended under a lock."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from pathlib import Path, PurePath
from typing import Any

from gsd.files import append_line, jsonl_objects, read_lines_file
from gsd.utc import utc_stamp

LOG_NAME = "execution-log.jsonl"

EVENTS = (
    "run-start",
    "wave-start",
    "spawn",
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


def log_path(root: Path) -> Path:
    """Where a project keeps its execution log."""
    return root / ".planning" / LOG_NAME


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
    line = (to_line(record) + "\n").encode("utf-8")  # TypeError before the file is touched
    append_line(path, line)


def parse(text: str, name: str = LOG_NAME) -> tuple[list[dict[str, Any]], list[str]]:
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
