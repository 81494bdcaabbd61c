"""Safe file writes: locked appends of whole lines, read back by every line log."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from gsd.files import append_line, jsonl_objects, read_lines_file


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / ".planning" / "events.jsonl"


def line(data: dict[str, Any]) -> bytes:
    return (json.dumps(data) + "\n").encode()


def read(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    return jsonl_objects(read_lines_file(path, "log") or "", path.name)


def _append_many(path: str, worker: int, count: int, start: Any) -> None:
    start.wait()
    filler = "abcdefgh"[worker] * 4096
    for n in range(count):
        append_line(Path(path), line({"worker": worker, "n": n, "filler": filler}))


def test_parallel_appends_never_interleave(log: Path) -> None:
    workers, count = 8, 200
    fork = multiprocessing.get_context("fork")
    start = fork.Barrier(workers)
    procs = [
        fork.Process(target=_append_many, args=(str(log), w, count, start)) for w in range(workers)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0] * workers

    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert len(lines) - 1 == workers * count
    seen: dict[int, list[int]] = {w: [] for w in range(workers)}
    for text in lines[:-1]:
        data = json.loads(text)
        assert data["filler"] == "abcdefgh"[data["worker"]] * 4096
        seen[data["worker"]].append(data["n"])
    assert all(numbers == list(range(count)) for numbers in seen.values())
    records, warnings = read(log)
    assert len(records) == workers * count and warnings == []


def test_torn_last_line_is_skipped_silently_then_closed_by_the_next_append(log: Path) -> None:
    first = {"event": "spawn", "task": 1}
    append_line(log, line(first))
    whole = json.dumps({"event": "result", "task": 1})
    with open(log, "a", encoding="utf-8") as out:
        out.write(whole[: len(whole) // 2])  # a crash in the middle of a write
    assert read(log) == ([first], [])

    third = {"event": "retry", "task": 1}
    append_line(log, line(third))
    lines = log.read_text(encoding="utf-8").split("\n")
    assert lines[1] == whole[: len(whole) // 2]
    assert json.loads(lines[2]) == third
    records, warnings = read(log)
    assert records == [first, third]
    # Closed by the append, the torn line is now an ordinary bad line.
    assert len(warnings) == 1
    assert warnings[0].startswith("events.jsonl:2: skipped: not valid JSON")


def test_append_never_rewrites_existing_bytes(log: Path) -> None:
    log.parent.mkdir(parents=True)
    log.write_bytes(b"# a hand-made first line\n" + line({"task": "first"}))
    for n in range(3):
        before = log.read_bytes()
        append_line(log, line({"task": n, "details": "x" * 5000}))
        after = log.read_bytes()
        assert after.startswith(before) and len(after) > len(before)
