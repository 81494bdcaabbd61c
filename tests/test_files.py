"""Safe file writes: locked appends of whole lines, read back by every line log; the modes
files are written with; writes the file system refuses."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gsd.core.errors import GsdError
from gsd.formats.files import (
    append_line,
    current_umask,
    jsonl_objects,
    read_lines_file,
    write_atomic,
)
from tests.conftest import REPO


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


# --- modes: what the user's umask gives, or what the file already has ----------------------


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def test_new_files_get_the_mode_the_umask_gives(tmp_path: Path, umask_027: None) -> None:
    assert current_umask() == 0o027
    write_atomic(tmp_path / "state.md", "x\n")
    append_line(tmp_path / "log.jsonl", b"{}\n")
    assert stat.S_IMODE((tmp_path / "state.md").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "log.jsonl").stat().st_mode) == 0o640


def test_an_existing_file_keeps_its_mode_unless_one_is_given(
    tmp_path: Path, umask_027: None
) -> None:
    path = tmp_path / "STATE.md"
    path.write_text("old\n")
    path.chmod(0o604)
    write_atomic(path, "new\n")
    assert (path.read_text(), stat.S_IMODE(path.stat().st_mode)) == ("new\n", 0o604)
    write_atomic(path, "hook\n", mode=0o755)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_a_group_writable_umask_in_a_fresh_process(tmp_path: Path) -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); from pathlib import Path; "
        "from gsd.formats.files import current_umask, write_atomic; "
        f"write_atomic(Path({str(tmp_path / 'shared.md')!r}), 'x'); print(oct(current_umask()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], umask=0o002, capture_output=True, text=True, check=True
    )
    assert done.stdout == "0o2\n"
    assert stat.S_IMODE((tmp_path / "shared.md").stat().st_mode) == 0o664


# --- writes the file system refuses: one line, nothing left behind ---------------------------


def test_a_folder_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / ".planning").write_text("not a folder\n")
    target = tmp_path / ".planning" / "phases" / "STATE.md"
    for write in (lambda: write_atomic(target, "x"), lambda: append_line(target, b"x\n")):
        with pytest.raises(GsdError) as caught:
            write()
        assert str(caught.value) == (
            f"cannot write {target}: Not a directory (fix that path, then run again)"
        )


def test_a_device_in_a_logs_place_is_one_line() -> None:
    """/dev/full (ENOSPC on every write, as a full disk) is a device: gsd appends only to
    regular files (a FIFO or device in a log's place could hang it or go elsewhere)."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with pytest.raises(GsdError) as caught:
        append_line(Path("/dev/full"), b'{"event": "spawn"}\n')
    assert str(caught.value) == (
        "cannot write /dev/full: not a regular file; gsd appends only to files "
        "(fix that path, then run again)"
    )


FILE_SIZE_LIMIT = """
import resource, signal, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from gsd.core.errors import GsdError
from gsd.formats.files import {function}
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
try:
    {function}(Path({path!r}), {data!r})
except GsdError as error:
    print(error)
"""


def limited(function: str, path: Path, data: str | bytes, limit: int) -> str:
    """Run `function(path, data)` in a process that may not write past `limit` bytes in
    any file (RLIMIT_FSIZE: the kernel refuses the rest, as on a full disk)."""
    code = FILE_SIZE_LIMIT.format(
        repo=str(REPO), function=function, path=str(path), data=data, limit=limit
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_write_cut_short_leaves_the_old_file_and_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / ".planning" / "STATE.md"
    path.parent.mkdir()
    path.write_text("the old state\n")
    printed = limited("write_atomic", path, "x" * 100_000, 4096)
    assert printed == f"cannot write {path}: File too large (free disk space, then run again)\n"
    assert path.read_text() == "the old state\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["STATE.md"]


def test_an_append_cut_short_is_taken_back(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"n": 1}\n')
    printed = limited("append_line", path, b'{"n": 2, "x": "' + b"x" * 100 + b'"}\n', 40)
    assert printed == f"cannot write {path}: File too large (free disk space, then run again)\n"
    assert path.read_bytes() == b'{"n": 1}\n'  # no torn line for readers to skip


READ_ONLY = """
import sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from gsd.core.errors import GsdError
from gsd.formats.files import append_line, write_atomic
folder = Path({folder!r})
for write in (lambda: write_atomic(folder / "STATE.md", "new"),
              lambda: write_atomic(folder / "new.md", "new"),
              lambda: append_line(folder / "log.jsonl", b"line\\n")):
    try:
        write()
    except GsdError as error:
        print(error)
"""


def _reachable_by_others(path: Path) -> bool:
    """Whether any user may reach `path` (search every folder above it) and run it or
    read it."""
    path = path.resolve()
    folders = all(os.stat(p).st_mode & stat.S_IXOTH for p in path.parents)
    return folders and bool(os.stat(path).st_mode & (stat.S_IXOTH | stat.S_IROTH))


def test_a_read_only_folder_is_one_line_and_keeps_everything(tmp_path: Path) -> None:
    as_user: int | None = None
    python = Path(sys.executable)
    if os.geteuid() == 0:  # root writes through 0555: write as an ordinary user instead
        found = [
            p
            for p in (python, Path("/usr/bin/python3"))
            if p.exists()
            and _reachable_by_others(p)
            and _reachable_by_others(REPO / "gsd/formats/files.py")
        ]
        if not found:
            pytest.skip("running as root, and no Python that another user may run")
        python, as_user = found[0], 65534  # nobody
    folder = Path(tempfile.mkdtemp(prefix="gsd-read-only-"))  # reachable by that user
    try:
        (folder / "STATE.md").write_text("old\n")
        (folder / "log.jsonl").write_text("old\n")
        folder.chmod(0o555)
        (folder / "log.jsonl").chmod(0o444)
        code = READ_ONLY.format(repo=str(REPO), folder=str(folder))
        done = subprocess.run(
            [str(python), "-c", code],
            capture_output=True,
            text=True,
            user=as_user,
            group=as_user,
            extra_groups=[] if as_user else None,
            cwd="/",
        )
        assert done.returncode == 0, done.stderr
        hint = "Permission denied (make it writable, then run again)"
        assert done.stdout.splitlines() == [
            f"cannot write {folder / name}: {hint}" for name in ("STATE.md", "new.md", "log.jsonl")
        ]
        assert sorted(p.name for p in folder.iterdir()) == ["STATE.md", "log.jsonl"]
        assert (folder / "STATE.md").read_text() == (folder / "log.jsonl").read_text() == "old\n"
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
