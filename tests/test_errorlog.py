"""The error log: locked appends, tolerant reads, filters, --since and table rows."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from gsd.core.errors import InputError, UsageError
from gsd.formats import errorlog
from gsd.formats.errorlog import ERROR_TYPES, ErrorRecord
from gsd.output.views import render_errors

pytestmark = pytest.mark.unit  # `make test-fast` runs these

FIELDS = [
    "timestamp",
    "phase",
    "plan",
    "task",
    "specialist",
    "error_type",
    "details",
    "git_state",
    "exit_code",
    "attempt",
    "runner",
    "duration_s",
]


def record(**fields: Any) -> ErrorRecord:
    values: dict[str, Any] = {
        "timestamp": "2026-02-23T14:32:15Z",
        "phase": "10",
        "plan": "02",
        "task": "3",
        "specialist": "python-pro",
        "error_type": "timeout",
        "details": "SIGTERM after 300s",
        "git_state": "checkpoint/10-02/20260223T143215-1",
        "exit_code": 124,
        "attempt": 1,
        "runner": "claude",
        "duration_s": 300.2,
    }
    values.update(fields)
    return ErrorRecord(**values)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / ".planning" / "specialist-errors.jsonl"


def test_append_then_read_round_trips(log: Path) -> None:
    written = [
        record(),
        record(error_type="spawn-failed", details="claude: not found — überall", exit_code=None),
        record(task="4", attempt=2, duration_s=None),
    ]
    for item in written:
        errorlog.append(log, item)
    assert errorlog.read(log) == (written, [])
    assert errorlog.log_path(log.parent.parent) == log


def test_written_line_keeps_spec_field_order_and_is_not_ascii_escaped(log: Path) -> None:
    errorlog.append(log, record(details="überall"))
    line = log.read_text(encoding="utf-8")
    assert line.endswith("}\n") and line.count("\n") == 1
    assert list(json.loads(line)) == FIELDS
    assert "überall" in line


def test_defaults_timestamp_now_and_rounds_duration() -> None:
    before = datetime.now(timezone.utc).replace(microsecond=0)
    made = ErrorRecord(
        phase="1", plan="1", task="1", specialist="x", error_type="unknown", duration_s=12.345
    )
    assert made.timestamp.endswith("Z")
    assert before <= made.moment <= datetime.now(timezone.utc)
    assert made.duration_s == 12.3
    assert made.attempt == 1 and made.exit_code is None


def test_datetime_and_numbers_are_stored_as_text() -> None:
    made = record(timestamp=datetime(2026, 2, 23, 15, 0, tzinfo=timezone(timedelta(hours=1))))
    assert made.timestamp == "2026-02-23T14:00:00Z"
    assert ErrorRecord.model_validate({**record().model_dump(), "task": 3}).task == "3"


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"error_type": "exploded"}, id="unknown-error-type"),
        pytest.param({"attempt": 0}, id="attempt-below-1"),
        pytest.param({"timestamp": "yesterday"}, id="bad-timestamp"),
        pytest.param({"duration_s": float("nan")}, id="nan-duration"),
        pytest.param({"specialist": None}, id="missing-specialist"),
    ],
)
def test_invalid_records_are_rejected(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        record(**fields)


def test_every_spec_error_type_is_accepted() -> None:
    assert [record(error_type=t).error_type for t in ERROR_TYPES] == list(ERROR_TYPES)


def test_extra_keys_from_newer_writers_survive_a_round_trip(log: Path) -> None:
    newer = {**record().model_dump(), "tokens": 1234, "model": "opus"}
    log.parent.mkdir(parents=True)
    log.write_text(json.dumps(newer) + "\n", encoding="utf-8")
    (got,), warnings = errorlog.read(log)
    assert warnings == []
    assert got.model_extra == {"tokens": 1234, "model": "opus"}
    errorlog.append(log, got)
    assert json.loads(log.read_text(encoding="utf-8").splitlines()[1]) == newer


def test_complete_last_line_without_newline_is_still_read(log: Path) -> None:
    log.parent.mkdir(parents=True)
    log.write_text(errorlog.to_line(record()), encoding="utf-8")
    assert errorlog.read(log) == ([record()], [])


def test_bad_lines_in_the_middle_are_warned_about_by_line_number(log: Path) -> None:
    lines = [
        errorlog.to_line(record(task="1")),
        "{not json",
        "",
        "[1, 2]",
        json.dumps({**record().model_dump(), "error_type": "exploded"}),
        json.dumps({**record().model_dump(), "attempt": 0, "phase": None}),
        errorlog.to_line(record(task="7")),
    ]
    log.parent.mkdir(parents=True)
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    records, warnings = errorlog.read(log)
    assert [r.task for r in records] == ["1", "7"]
    assert warnings[0].startswith("specialist-errors.jsonl:2: skipped: not valid JSON (")
    assert warnings[1:] == [
        "specialist-errors.jsonl:4: skipped: not a JSON object but list",
        "specialist-errors.jsonl:5: skipped: invalid record: error_type: unknown error_type "
        f"'exploded'; expected one of {', '.join(ERROR_TYPES)}",
        "specialist-errors.jsonl:6: skipped: invalid record: phase: Input should be a valid "
        "string (and 1 more)",
    ]
    assert all("\n" not in w for w in warnings)


def test_bad_complete_last_line_is_warned_about(log: Path) -> None:
    log.parent.mkdir(parents=True)
    log.write_text(errorlog.to_line(record()) + "\n{oops}\n", encoding="utf-8")
    records, warnings = errorlog.read(log)
    assert len(records) == 1
    assert [w.split(": skipped")[0] for w in warnings] == ["specialist-errors.jsonl:2"]


def test_append_creates_the_folder(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "specialist-errors.jsonl"
    errorlog.append(path, record())
    assert errorlog.read(path) == ([record()], [])


def test_missing_file_is_an_empty_log(log: Path) -> None:
    assert errorlog.read(log) == ([], [])
    assert not log.parent.exists()


LOGGED = [
    record(
        phase="1",
        plan="01",
        task="1",
        specialist="python-pro",
        error_type="timeout",
        timestamp="2026-02-20T10:00:00Z",
    ),
    record(
        phase="1",
        plan="02",
        task="2",
        specialist="Go-Pro",
        error_type="nonzero-exit",
        timestamp="2026-02-21T10:00:00Z",
    ),
    record(
        phase="10",
        plan="02",
        task="3",
        specialist="python-pro",
        error_type="timeout",
        timestamp="2026-02-22T10:00:00Z",
    ),
    record(
        phase="2.1",
        plan="1",
        task="1",
        specialist="python-pro",
        error_type="policy-violation",
        timestamp="2026-02-23T10:00:00+00:00",
    ),
    record(
        phase="10",
        plan="10-01",
        task="1",
        specialist="go-pro",
        error_type="merge-conflict",
        timestamp="2026-02-23T12:00:00Z",
    ),
]


@pytest.mark.parametrize(
    ("filters", "tasks"),
    [
        pytest.param({}, ["1-01-1", "1-02-2", "10-02-3", "2.1-1-1", "10-10-01-1"], id="none"),
        pytest.param({"phase": "1"}, ["1-01-1", "1-02-2"], id="phase"),
        pytest.param({"phase": "01"}, ["1-01-1", "1-02-2"], id="phase-zero-padded"),
        pytest.param({"phase": "10-auth"}, ["10-02-3", "10-10-01-1"], id="phase-dir-name"),
        pytest.param({"phase": "02.1-hotfix"}, ["2.1-1-1"], id="decimal-phase"),
        pytest.param({"plan": "02"}, ["1-02-2", "10-02-3"], id="plan-number"),
        pytest.param({"plan": "2"}, ["1-02-2", "10-02-3"], id="plan-unpadded"),
        pytest.param({"plan": "10-02"}, ["10-02-3"], id="plan-id"),
        pytest.param({"plan": "10-01"}, ["10-10-01-1"], id="plan-id-stored-as-id"),
        pytest.param({"plan": "02.1-01"}, ["2.1-1-1"], id="plan-id-decimal-phase"),
        pytest.param({"specialist": "go-pro"}, ["1-02-2", "10-10-01-1"], id="specialist"),
        pytest.param({"error_type": "timeout"}, ["1-01-1", "10-02-3"], id="type"),
        pytest.param(
            {"since": datetime(2026, 2, 22, 10, tzinfo=timezone.utc)},
            ["10-02-3", "2.1-1-1", "10-10-01-1"],
            id="since-inclusive",
        ),
        pytest.param({"since": datetime(2026, 2, 23, 11)}, ["10-10-01-1"], id="since-naive-is-utc"),
        pytest.param(
            {"phase": "1", "specialist": "python-pro", "error_type": "timeout"},
            ["1-01-1"],
            id="combined",
        ),
        pytest.param(
            {"plan": "02", "error_type": "timeout", "since": datetime(2026, 2, 21, 12)},
            ["10-02-3"],
            id="combined-since",
        ),
        pytest.param({"phase": "3"}, [], id="no-match"),
        pytest.param({"phase": "1.0"}, ["1-01-1", "1-02-2"], id="phase-trailing-zero"),
        pytest.param({"phase": "2.1"}, ["2.1-1-1"], id="decimal-phase-number"),
        pytest.param({"phase": "10A"}, [], id="letter-phase-is-not-its-number"),
        pytest.param({"plan": "10A-02"}, [], id="plan-id-letter-phase"),
    ],
)
def test_filter_records(filters: dict[str, Any], tasks: list[str]) -> None:
    kept = errorlog.filter_records(LOGGED, **filters)
    assert [f"{r.phase}-{r.plan}-{r.task}" for r in kept] == tasks


NOW = datetime(2026, 2, 23, 14, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2026-02-23", datetime(2026, 2, 23, tzinfo=timezone.utc), id="date"),
        pytest.param("2026-02-23T14:00:00Z", NOW, id="utc-time"),
        pytest.param("2026-02-23T15:00:00+01:00", NOW, id="offset"),
        pytest.param("2026-02-23 14:00", NOW, id="naive-is-utc"),
        pytest.param("30m", NOW - timedelta(minutes=30), id="minutes"),
        pytest.param("2h", NOW - timedelta(hours=2), id="hours"),
        pytest.param(" 7d ", NOW - timedelta(days=7), id="days"),
        pytest.param("1w", NOW - timedelta(weeks=1), id="weeks"),
        pytest.param("90s", NOW - timedelta(seconds=90), id="seconds"),
        pytest.param("1.5H", NOW - timedelta(minutes=90), id="fraction"),
    ],
)
def test_parse_since(text: str, expected: datetime) -> None:
    assert errorlog.parse_since(text, now=NOW) == expected


def test_parse_since_defaults_to_now() -> None:
    got = errorlog.parse_since("1h")
    assert got.tzinfo is not None
    assert abs(datetime.now(timezone.utc) - timedelta(hours=1) - got) < timedelta(seconds=5)


@pytest.mark.parametrize(
    "text", ["", "yesterday", "2h30m", "-2h", "7 days", "2026-13-01", "99999999999d"]
)
def test_parse_since_rejects_other_text_in_one_line(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        errorlog.parse_since(text, now=NOW)
    assert "--since" in str(caught.value) and "\n" not in str(caught.value)


def test_rows_shorten_details_only_when_asked() -> None:
    long = record(details="line one\nline two " + "y" * 100, exit_code=None)
    full, short = errorlog.rows([long])[0], errorlog.rows([long], short=True)[0]
    assert list(full) == [
        "time",
        "phase",
        "plan",
        "task",
        "specialist",
        "type",
        "exit",
        "attempt",
        "details",
    ]
    assert full["details"] == "line one line two " + "y" * 100
    assert len(short["details"]) == 60 and short["details"].endswith("…")
    assert full["exit"] == "-" and full["type"] == "timeout" and full["time"] == long.timestamp
    assert errorlog.rows([record()], short=True)[0]["details"] == "SIGTERM after 300s"


def test_render_formats() -> None:
    records = [record(details="a | b " + "z" * 80)]
    text = render_errors(records, "text")
    assert "python-pro" in text and "…" in text and "z" * 80 not in text
    markdown = render_errors(records, "markdown")
    assert "a \\| b " + "z" * 80 in markdown and markdown.startswith("| time")
    as_json = json.loads(render_errors(records, "json"))
    assert as_json == {"errors": [records[0].model_dump()]}
    assert render_errors([], "text") == "No errors recorded.\n"
    assert json.loads(render_errors([], "json")) == {"errors": []}


def test_unreadable_log_is_an_input_error(log: Path) -> None:
    log.mkdir(parents=True)  # a folder where the file should be
    with pytest.raises(InputError, match="cannot read the error log"):
        errorlog.read(log)


@pytest.mark.parametrize(
    "plan_id", ["01-01", "1-02", "10-02", "10-01", "02.1-01", "2.1-1", "10A-02", "02", "3-01"]
)
def test_records_grouped_by_plan_are_those_filter_records_keeps(plan_id: str) -> None:
    """Issue 23: the one-pass grouping derive uses, exact to the per-plan filter."""
    assert errorlog.by_plan(LOGGED)(plan_id) == errorlog.filter_records(LOGGED, plan=plan_id)


def test_a_short_hash_that_reads_as_a_number_is_printed_as_it_is() -> None:
    from gsd.core.verdict.outcomes import TaskOutcome
    from gsd.output.views import render_outcomes

    done = TaskOutcome.blank("01-01", 1, "python-pro")._replace(success=True, commit="7866e06abc")
    text = render_outcomes("1", [done], "text")
    assert "7866e06" in text and "e+09" not in text
