"""Which lines of `.planning/approvals.jsonl` answer a checkpoint: the ones a person made
with `gsd approve` (SPEC 0 of 2026-11-27), not lines an agent wrote.

`gsd approve` signs each line with the user's record key (`gsd.io.records`, outside
every repository and out of an agent's reach). A line counts when:
- its signature verifies under this user's key (approved here, committed or not); or
- it came in a commit that is not a gsd task commit (`git blame`): a person approved
  on another machine, committed and pushed (the CI flow). Every change an agent makes
  reaches git only in a task commit, which carries a `Gsd-Task` trailer.
Any other line (an older gsd's unsigned line not committed, a line a task commit
brought, a forged signature) answers nothing, with a one-line note: approve again.
gsd's own docs commits take the file in only when every new line of it is signed here
(`new_lines_signed`), so they never turn an agent's line into a committed one.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.formats.files import read_lines_file
from gsd.io import records
from gsd.io.git import command as gitexec

PURPOSE = "approval"
FIELD = "mac"
_lock = threading.Lock()
_noted: set[str] = set()


def signed(line: dict[str, Any]) -> dict[str, Any]:
    """An approval line as `gsd approve` writes it: its fields and their signature."""
    return {**line, FIELD: records.mac(line, PURPOSE)}


def made_here(entry: dict[str, Any]) -> bool:
    """Whether the line's signature verifies under this user's key."""
    given = entry.get(FIELD)
    if not isinstance(given, str):
        return False
    body = {key: value for key, value in entry.items() if key != FIELD}
    try:
        return records.mac(body, PURPOSE) == given
    except GsdError:
        return False  # no key to check with: nothing verifies


def trusted(root: Path, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries that count (see the module's notes); a note for the others."""
    kept = [entry for entry in entries if made_here(entry)]
    rest = [entry for entry in entries if not made_here(entry)]
    if not rest:
        return kept
    committed = people_committed(root)
    ignored = [entry for entry in rest if _canonical(entry) not in committed]
    _note(ignored)
    return [entry for entry in entries if made_here(entry) or _canonical(entry) in committed]


def new_lines_signed(root: Path) -> bool:
    """Whether every line of the file that HEAD's file lacks is signed here."""
    text = read_lines_file(root / layout.APPROVALS, "approvals") or ""
    shown = gitexec.call(["show", f"HEAD:{layout.APPROVALS}"], cwd=root, read_only=True)
    before = set(shown.stdout.splitlines()) if shown.status == 0 else set()
    for line in text.splitlines():
        if line.strip() and line not in before:
            try:
                entry = json.loads(line)
            except ValueError:
                return False
            if not isinstance(entry, dict) or not made_here(entry):
                return False
    return True


def people_committed(root: Path) -> set[str]:
    """The lines of HEAD's approvals.jsonl (canonical JSON) that came in a commit that is
    not a task commit; none when the file is not committed (or git is not there)."""
    blamed = gitexec.call(
        ["blame", "--line-porcelain", "HEAD", "--", layout.APPROVALS], cwd=root, read_only=True
    )
    if blamed.status != 0:
        return set()
    lines: list[tuple[str, str]] = []
    sha = ""
    for row in blamed.stdout.split("\n"):
        if row.startswith("\t"):
            lines.append((sha, row[1:]))
        elif len(row) > 40 and row[40] == " " and all(c in "0123456789abcdef" for c in row[:40]):
            sha = row[:40]
    tasks = _task_commits(root, {sha for sha, _ in lines})
    found = set()
    for sha, text in lines:
        if sha in tasks:
            continue
        try:
            entry = json.loads(text)
        except ValueError:
            continue
        if isinstance(entry, dict):
            found.add(_canonical(entry))
    return found


def _task_commits(root: Path, shas: Iterable[str]) -> set[str]:
    wanted = sorted(sha for sha in shas if sha.strip("0"))  # not the all-zero "not committed"
    if not wanted:
        return set()
    out = gitexec.call(
        ["log", "--no-walk=unsorted", "--format=%H%x00%(trailers:key=Gsd-Task,valueonly)%x1e"]
        + wanted,
        cwd=root,
        read_only=True,
    )
    found = set()
    for record in out.stdout.split("\x1e"):
        sha, _, trailers = record.strip().partition("\0")
        if sha and trailers.strip():
            found.add(sha)
    return found


def _note(ignored: list[dict[str, Any]]) -> None:
    """One line for the approvals that do not count, once a process."""
    named = [f"{entry.get('plan')} task {entry.get('task')}" for entry in ignored]
    key = "; ".join(named)
    with _lock:
        if not named or key in _noted:
            return
        _noted.add(key)
    plans = sorted({str(entry.get("plan")) for entry in ignored})
    again = " and ".join(f"`gsd approve {plan}`" for plan in plans[:3])
    sys.stderr.write(
        f"gsd: warning: {layout.APPROVALS}: {len(named)} approval(s) not signed by "
        f"`gsd approve` here nor committed by a person ({', '.join(named[:3])}): ignored; "
        f"approve again with {again}\n"
    )


def _canonical(entry: dict[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"))
