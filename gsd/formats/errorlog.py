"""Error records: one JSON object per failure, in the plan's log `.planning/logs/{plan}.jsonl`.

The records share the per-plan logs with the events (gsd.formats.execlog says where each log is);
`.planning/specialist-errors.jsonl`, the shared log of older versions, is still read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gsd.core import ids, layout
from gsd.core.errors import ERROR_TYPES, UsageError
from gsd.core.utc import as_utc, utc_stamp
from gsd.formats import execlog
from gsd.formats.files import append_line, json_line, jsonl_objects, read_lines_file

DETAILS_WIDTH = 60  # text tables only; Markdown and JSON keep the whole text


def log_path(root: Path) -> Path:
    """Where older versions kept the shared error log (read only, for history)."""
    return root / layout.PLANNING / layout.LEGACY_ERROR_LOG


def parse_timestamp(text: str) -> datetime:
    """An ISO-8601 date or time as an aware UTC datetime; naive means UTC. ValueError if not."""
    text = text.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"  # Python 3.10's fromisoformat does not read "Z"
    return as_utc(datetime.fromisoformat(text))


class ErrorRecord(BaseModel):
    """One failure, in the field order of SPEC section 6; unknown keys are kept."""

    model_config = ConfigDict(extra="allow")

    timestamp: str = Field(default_factory=utc_stamp)
    phase: str
    plan: str
    task: str
    specialist: str
    error_type: str
    details: str = ""
    git_state: str = ""
    exit_code: int | None = None
    attempt: int = Field(default=1, ge=1)
    runner: str = ""
    duration_s: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @field_validator("timestamp", mode="before")
    @classmethod
    def _timestamp(cls, value: Any) -> Any:
        if isinstance(value, datetime):
            return utc_stamp(value)
        if isinstance(value, str):
            parse_timestamp(value)  # ValueError becomes a validation error
        return value

    @field_validator("phase", "plan", "task", mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        # Hand-written or older lines may say "task": 3; the log stores text.
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("error_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in ERROR_TYPES:
            expected = ", ".join(ERROR_TYPES)
            raise ValueError(f"unknown error_type {value!r}; expected one of {expected}")
        return value

    @field_validator("duration_s")
    @classmethod
    def _tenths(cls, value: float | None) -> float | None:
        return None if value is None else round(value, 1)

    @property
    def moment(self) -> datetime:
        return parse_timestamp(self.timestamp)


def to_line(record: ErrorRecord) -> str:
    """The record as one JSON line, without the newline."""
    return json.dumps(record.model_dump(mode="json"), ensure_ascii=False)


def _why(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    more = error.error_count() - 1
    return f"invalid record: {where + ': ' if where else ''}{message}" + (
        f" (and {more} more)" if more else ""
    )


def parse(text: str, name: str = layout.LEGACY_ERROR_LOG) -> tuple[list[ErrorRecord], list[str]]:
    """Records in file order, and a warning per line that is not one.

    A last line without its newline is a write cut short by a crash: skipped silently.
    (Once a later append has closed it, it is a bad line like any other.)
    """
    records: list[ErrorRecord] = []

    def is_record(data: dict[str, Any]) -> str | None:
        try:
            records.append(ErrorRecord.model_validate(data))
        except ValidationError as error:
            return _why(error)
        return None

    _, warnings = jsonl_objects(text, name, is_record)
    return records, warnings


def read(path: Path) -> tuple[list[ErrorRecord], list[str]]:
    """The log at `path`, as `parse` sees it; a missing file is an empty log."""
    text = read_lines_file(path, "error log")
    return ([], []) if text is None else parse(text, path.name)


def read_all(planning: Path) -> tuple[list[ErrorRecord], list[str]]:
    """Every error record of every log: the legacy `specialist-errors.jsonl` and each
    log in `.planning/logs/`, in timestamp order; and a warning per bad line (a line
    that is an event is no error record, and no warning either)."""
    _, records, warnings = read_logs(planning, events=False)
    return records, warnings


def read_logs(
    planning: Path, *, events: bool = True
) -> tuple[list[execlog.LogEvent], list[ErrorRecord], list[str]]:
    """Every log read once: the events (legacy `execution-log.jsonl` included, when
    `events`) and the error records, each in time order, and a warning per bad line."""
    found: list[dict[str, Any]] = []
    warnings: list[str] = []
    if events:
        found, warnings = execlog.read(planning / layout.LEGACY_EXECUTION_LOG)
    records, bad = read(planning / layout.LEGACY_ERROR_LOG)
    warnings += bad
    for path in execlog.log_files(planning):
        plan_events, plan_records, bad = _read_log(path)
        found += plan_events
        records += plan_records
        warnings += bad
    found.sort(key=lambda e: str(e.get("ts", "")))
    return found, sorted(records, key=lambda r: r.moment), warnings


# one log's text -> what `_read_log` made of it: a process that reads the same logs again
# (execute-phase derives after each merge, and a plan's SUMMARY reads its checkout's and
# its worktree's) reads them but parses each text once
_parsed: dict[tuple[str, str], tuple[list[execlog.LogEvent], list[ErrorRecord], list[str]]] = {}
_PARSED_KEPT = 8192


def _read_log(path: Path) -> tuple[list[execlog.LogEvent], list[ErrorRecord], list[str]]:
    """A per-plan log's events, error records and warnings, in file order (fresh lists;
    the events and records are shared with any earlier read of the same text: read them,
    never change them)."""
    text = execlog.read_text(path)
    if text is None:
        return [], [], []
    name = execlog.log_name(path)
    known = _parsed.get((name, text))
    if known is None:
        events, raw, warnings = execlog.split_log(text, name)
        records = []
        for data in raw:
            try:
                records.append(ErrorRecord.model_validate(data))
            except ValidationError as error:
                warnings.append(f"{name}: skipped: {_why(error)}")
        if len(_parsed) >= _PARSED_KEPT:
            _parsed.clear()
        known = _parsed[(name, text)] = (events, records, warnings)
    return list(known[0]), list(known[1]), list(known[2])


def append(path: Path, record: ErrorRecord) -> None:
    """Add `record` as one line at the end of the log (locked; never rewrites)."""
    append_line(path, json_line(record.model_dump(mode="json")))  # the bytes of to_line


def _plan_filter(text: str) -> tuple[str | None, str]:
    """("10", "02") for the plan id "10-02"; (None, "02") for the plan number "02"."""
    phase, number = ids.split_plan_id(text.strip())
    return (phase if "-" in text else None), number


def _same_number(a: str, b: str) -> bool:
    """Plan numbers `02` and `2` are one; anything else is compared as text."""
    if ids.PLAN_NUMBER_RE.fullmatch(a) and ids.PLAN_NUMBER_RE.fullmatch(b):
        return int(a) == int(b)
    return a.casefold() == b.casefold()


def _is_plan(record: ErrorRecord, wanted: str) -> bool:
    """Whether the record is of plan `wanted` ("02", or the id "10-02", "12A-03")."""
    want_phase, want_number = _plan_filter(wanted)
    have_phase, have_number = _plan_filter(record.plan)  # older logs wrote the whole id
    if not _same_number(want_number, have_number):
        return False
    return want_phase is None or ids.same_phase(want_phase, have_phase or record.phase)


def _phase_identity(text: str) -> tuple[str, object]:
    """Equal for two spellings of one phase exactly when `ids.same_phase` says so."""
    key = ids.phase_key(text.strip())
    return ("key", key) if key is not None else ("text", text.strip().casefold())


def _number_identity(text: str) -> object:
    """Equal for two plan numbers exactly when `_same_number` says so."""
    return int(text) if ids.PLAN_NUMBER_RE.fullmatch(text) else text.casefold()


def by_plan(records: Iterable[ErrorRecord]) -> Callable[[str], list[ErrorRecord]]:
    """`filter_records(records, plan=plan_id)` for many plans: the records grouped by
    plan in one pass, each plan's kept in their order (O(records + plans), not their
    product)."""
    kept = list(records)
    groups: dict[tuple[object, object], list[ErrorRecord]] = {}
    for record in kept:
        phase, number = _plan_filter(record.plan)
        key = (_number_identity(number), _phase_identity(phase or record.phase))
        groups.setdefault(key, []).append(record)

    def of(plan_id: str) -> list[ErrorRecord]:
        phase, number = _plan_filter(plan_id)
        if phase is None:  # a bare number: that plan in every phase
            return filter_records(kept, plan=plan_id)
        return list(groups.get((_number_identity(number), _phase_identity(phase)), ()))

    return of


def filter_records(
    records: Iterable[ErrorRecord],
    *,
    phase: str | None = None,
    plan: str | None = None,
    specialist: str | None = None,
    error_type: str | None = None,
    since: datetime | None = None,
) -> list[ErrorRecord]:
    """The records that match every filter given; `phase` takes any spelling of a phase
    (`1`, `01`, `1.0`, `01-setup`: gsd.core.ids.same_phase), `plan` "02" or the id "10-02"."""
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    kept: list[ErrorRecord] = []
    for record in records:
        if phase is not None and not ids.same_phase(phase, record.phase):
            continue
        if plan is not None and not _is_plan(record, plan):
            continue
        if specialist is not None and record.specialist.casefold() != specialist.casefold():
            continue
        if error_type is not None and record.error_type != error_type:
            continue
        if since is not None and record.moment < since:
            continue
        kept.append(record)
    return kept


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`--since`: an ISO date or time (UTC unless it says otherwise) or an age: 30m, 2h, 7d."""
    now = now or datetime.now(timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    match = _DURATION.fullmatch(text.strip().lower())
    try:
        if match:
            return now - timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
        return parse_timestamp(text)
    except (ValueError, OverflowError):
        raise UsageError(
            f"--since {text!r}: expected a date or time such as 2026-02-23 or "
            "2026-02-23T14:00:00Z, or an age such as 30m, 2h, 7d"
        ) from None


def _shorten(text: str, width: int = DETAILS_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def rows(records: Iterable[ErrorRecord], short: bool = False) -> list[dict[str, Any]]:
    """One table row per record; `short` cuts details to 60 characters for text tables.
    A `step` column (the retry ladder's step of the attempt) follows `attempt` when a
    record has one (older logs have none); a `salvage` column (the ref `gsd salvage
    show` takes) when any attempt was salvaged."""
    records = list(records)
    stepped = any(_step(record) for record in records)
    out: list[dict[str, Any]] = []
    salvaged = any(getattr(record, "salvage", None) for record in records)
    for record in records:
        details = " ".join(record.details.split())  # a table cell is one line
        out.append(
            {
                "time": record.timestamp,
                "phase": record.phase,
                "plan": record.plan,
                "task": record.task,
                "specialist": record.specialist,
                "type": record.error_type,
                "exit": "-" if record.exit_code is None else record.exit_code,
                "attempt": record.attempt,
                **({"step": _step(record) or "-"} if stepped else {}),
                "details": _shorten(details) if short else details,
            }
        )
        if salvaged:
            ref = str(getattr(record, "salvage", None) or "-")
            out[-1]["salvage"] = ref.removeprefix("refs/gsd/salvage/") if short else ref
    return out


def _step(record: ErrorRecord) -> str:
    """The retry ladder's step of the record's attempt ("" when not recorded)."""
    step = (record.model_extra or {}).get("step")
    return step if isinstance(step, str) else ""
