"""The execution log: event records, locked appends from many processes, tolerant reads."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from gsd.core import layout
from gsd.core.errors import InputError
from gsd.formats import execlog

pytestmark = pytest.mark.unit  # `make test-fast` runs these


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / ".planning" / layout.LEGACY_EXECUTION_LOG


def test_event_puts_ts_and_kind_first() -> None:
    record = execlog.event("spawn", plan="01-02", task=3, agent="python-pro")
    assert list(record) == ["ts", "event", "plan", "task", "agent"]
    assert record["event"] == "spawn"
    moment = datetime.strptime(record["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    assert abs((now - moment).total_seconds()) < 60


def test_event_keeps_a_given_timestamp() -> None:
    assert execlog.event("run-end", ts="2026-02-23T14:00:00Z")["ts"] == "2026-02-23T14:00:00Z"


@pytest.mark.parametrize("kind", execlog.EVENTS)
def test_every_known_kind_is_accepted(kind: str) -> None:
    assert execlog.event(kind)["event"] == kind


@pytest.mark.parametrize("kind", ["Spawn", "started", "", "plan_complete"])
def test_unknown_kind_is_rejected(kind: str) -> None:
    with pytest.raises(ValueError, match="unknown event"):
        execlog.event(kind)


def test_a_field_cannot_overwrite_the_kind() -> None:
    with pytest.raises(ValueError, match="event"):
        execlog.event("spawn", event="merge")


def test_append_then_read_round_trips(log: Path) -> None:
    written = [
        execlog.event("run-start", phase="01-alpha", plans=["01-01", "01-02"]),
        execlog.event("spawn", plan="01-01", task=1, agent="gsd-executor", attempt=1),
        execlog.event("result", plan="01-01", task=1, success=True, cost_usd=0.12),
        execlog.event("commit", plan="01-01", task=1, commit="abcdef1234567890"),
        execlog.event("run-end", exit_code=0, details="ünïcode ✓\nsecond line"),
    ]
    for record in written:
        execlog.append(log, record)
    text = log.read_text(encoding="utf-8")
    assert text.endswith("\n") and text.count("\n") == len(written)  # one line per event
    assert execlog.read(log) == (written, [])


def test_paths_and_times_are_logged_as_text(log: Path) -> None:
    moment = datetime(2026, 2, 23, 14, 0, tzinfo=timezone.utc)
    execlog.append(log, execlog.event("merge", path=Path("a/b"), at=moment, files={"b", "a"}))
    (record,), _ = execlog.read(log)
    assert (record["path"], record["at"], record["files"]) == (
        "a/b",
        "2026-02-23T14:00:00Z",
        ["a", "b"],
    )


def test_an_unloggable_field_fails_before_the_file_is_touched(log: Path) -> None:
    with pytest.raises(TypeError, match="object"):
        execlog.append(log, execlog.event("spawn", agent=object()))
    assert not log.exists()


def test_missing_log_is_empty(log: Path) -> None:
    assert execlog.read(log) == ([], [])


def test_unreadable_log_is_an_input_error(tmp_path: Path) -> None:
    folder = tmp_path / "execution-log.jsonl"
    folder.mkdir()
    with pytest.raises(InputError, match="cannot read the execution log"):
        execlog.read(folder)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        pytest.param("{not json", "not valid JSON", id="bad-json"),
        pytest.param("[1, 2]", "not a JSON object but list", id="array"),
        pytest.param('{"ts": "2026-02-23T14:00:00Z"}', 'no "event" name', id="no-event"),
        pytest.param('{"event": 3}', 'no "event" name', id="event-not-text"),
    ],
)
def test_bad_lines_are_skipped_with_their_line_number(line: str, reason: str) -> None:
    good = json.dumps({"ts": "2026-02-23T14:00:00Z", "event": "spawn"})
    records, warnings = execlog.parse(f"{good}\n\n{line}\n{good}\n")
    assert len(records) == 2
    assert len(warnings) == 1
    assert warnings[0].startswith("execution-log.jsonl:3: skipped: ")
    assert reason in warnings[0]


def test_unknown_kinds_from_a_newer_gsd_are_kept() -> None:
    line = json.dumps({"ts": "2026-02-23T14:00:00Z", "event": "teleport", "x": 1})
    assert execlog.parse(line + "\n") == ([json.loads(line)], [])
