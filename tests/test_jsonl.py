"""The JSON Lines logs through jsonlines: the bytes gsd wrote before, the same warnings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gsd.formats import errorlog, execlog
from gsd.formats.files import json_line, jsonl_objects

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def test_json_line_is_the_standard_librarys_line_in_utf_8() -> None:
    value = {"plan": "01-02", "details": "échec — 失败", "n": 1.5, "ok": None}
    assert json_line(value) == (json.dumps(value, ensure_ascii=False) + "\n").encode()


def test_json_line_with_dumps_uses_it() -> None:
    assert json_line({"option": "é"}, json.dumps) == b'{"option": "\\u00e9"}\n'


def test_an_event_line_keeps_its_bytes(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "01-01.jsonl"
    record = execlog.event("spawn", ts="2026-01-01T00:00:00.000Z", plan="01-01", path=log)
    execlog.append(log, record)
    assert log.read_bytes() == (execlog.to_line(record) + "\n").encode()


def test_an_unloggable_value_fails_before_the_file_is_touched(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    with pytest.raises(TypeError):
        execlog.append(log, execlog.event("spawn", thing=object()))
    assert not log.exists()


def test_an_error_record_line_keeps_its_bytes(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    record = errorlog.ErrorRecord(
        phase="1",
        plan="01",
        task="2",
        specialist="gsd-executor",
        error_type="timeout",
        details="trop lent ✗",
    )
    errorlog.append(log, record)
    assert log.read_bytes() == (errorlog.to_line(record) + "\n").encode()


@pytest.mark.parametrize(
    ("text", "objects", "warnings"),
    [
        pytest.param("", [], [], id="empty"),
        pytest.param('{"a": 1}\n\n  \n{"b": 2}\n', [{"a": 1}, {"b": 2}], [], id="blank-lines"),
        pytest.param('{"a": 1}\n{"b": ', [{"a": 1}], [], id="torn-last-line"),
        pytest.param(
            '{"b": \n{"a": 1}\n',
            [{"a": 1}],
            ["log:1: skipped: not valid JSON (Expecting value: line 1 column 7 (char 6))"],
            id="closed-torn-line",
        ),
        pytest.param(
            "[1]\nnull\n7\n",
            [],
            [
                "log:1: skipped: not a JSON object but list",
                "log:2: skipped: not a JSON object but NoneType",
                "log:3: skipped: not a JSON object but int",
            ],
            id="not-objects",
        ),
    ],
)
def test_jsonl_objects(text: str, objects: list[object], warnings: list[str]) -> None:
    assert jsonl_objects(text, "log") == (objects, warnings)


def test_accept_refuses_with_its_reason_and_the_line_number() -> None:
    found, warnings = jsonl_objects('{"a": 1}\n{"b": 2}\n', "x.jsonl", lambda d: d.get("b"))
    assert found == [{"a": 1}]
    assert warnings == ["x.jsonl:2: skipped: 2"]
