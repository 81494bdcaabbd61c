"""What an agent may write under `.planning/`: the user's and gsd's folder (SPEC 0 of
2026-11-27, "`.planning/` belongs to the user and gsd"); no I/O.

A task may write a `.planning/` path only when its own `<files>` names that very path
(not a folder holding it, not a glob, not the plan's `files_modified`): a planner task
that writes the next plan, research notes or ROADMAP.md says so where its author reviews
it, and nothing else of the folder is opened by a task that merely works on code. Even
then never gsd's own records: STATE.md, config.json, the roster, approvals, the logs, a
plan's SUMMARY.md or RESULT file, a plan-first task's PROPOSAL.md (these decide what is
done, what was approved and which agent runs), and never as a symlink, FIFO, socket or
device (what gsd or git would read through it is somewhere else).
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterable, Mapping

from gsd.core import layout

# gsd's own files under .planning/, by name from the folder; no task writes them
GSD_FILES = frozenset(
    {
        layout.CONFIG_FILE,
        layout.STATE_FILE,
        layout.ROSTER_FILE,
        "approvals.jsonl",
        layout.LEGACY_ERROR_LOG,
        layout.LEGACY_EXECUTION_LOG,
        ".gsd.lock",
    }
)
GSD_FOLDERS = (layout.LOGS,)
GSD_NAMES = ("*-SUMMARY.md", "*-RESULT.txt", "SUMMARY.md", "*-PROPOSAL.md")


def in_planning(path: str) -> bool:
    """Whether a path (as git names it, from the checkout's root) is in `.planning/`."""
    return layout.PLANNING in path.split("/")[:-1] or path == layout.PLANNING


def gsds_own(path: str) -> bool:
    """Whether a `.planning/` path is one of gsd's own records."""
    parts = path.split("/")
    rest = parts[parts.index(layout.PLANNING) + 1 :] if layout.PLANNING in parts else parts
    if not rest:
        return True  # `.planning` itself replaced (by a symlink or a file)
    if "/".join(rest) in GSD_FILES or rest[0] in GSD_FOLDERS:
        return True
    return any(fnmatch.fnmatchcase(rest[-1], name) for name in GSD_NAMES)


def forbidden(
    changed: Iterable[str], own_files: Iterable[str], special: Mapping[str, str] = {}
) -> list[str]:
    """The `.planning/` paths among `changed` (and `special`: path -> "symlink", "FIFO",
    ...) the task may not have changed, each with why; in path order."""
    named = {normal_entry(entry) for entry in own_files if entry.strip()}
    found: dict[str, str] = {}
    for path in changed:
        if not in_planning(path):
            continue
        if gsds_own(path):
            found[path] = f"{path} (gsd's own)"
        elif path not in named:
            found[path] = f"{path} (not in the task's <files>)"
    for path, kind in special.items():
        if in_planning(path):
            found[path] = f"{path} (a {kind})"
    return [found[path] for path in sorted(found)]


def normal_entry(entry: str) -> str:
    """A `<files>` entry as authors write it: `./a`, `` `a` ``, `a (new)`."""
    text = entry.strip().strip("`\"'")
    text = text.split(" (", 1)[0].strip()
    return posixpath.normpath(text) if text else text
