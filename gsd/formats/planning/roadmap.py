"""ROADMAP.md, edited surgically: plan checkboxes and the phase rows of the progress table.

`check_plan` ticks `- [ ] 01-02-PLAN.md — ...` or `- [ ] 01-02: ...`; `set_progress`
rewrites the Plans Complete, Status and Completed cells of `| 1. Foundation | 2/3 | ...`.
Every other byte stays as it was (line endings, padding, the other cells); a function
returns its input, the very same string, when nothing needs to change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gsd.core.ids import PHASE_REF, PLAN_NUMBER, PhaseKey, phase_key, plan_key, same_plan
from gsd.formats.lines import (
    SEPARATOR_RE,
    Lines,
    cell_value,
    escape_cell,
    heading_of,
    is_table_row,
    split_row,
)

__all__ = [
    "check_phase",
    "check_plan",
    "check_plans",
    "check_phases",
    "phase_title",
    "phase_titles",
    "set_progress",
    "set_progresses",
]


_CHECKBOX_RE = re.compile(r"^(?P<lead>[ \t]*[-*+][ \t]+\[)(?P<mark>[ xX])(?P<rest>\][ \t]+.*)$")
# After the box: `01-02-PLAN.md`, `01-02: name`, `**01-02**`, `02.1-01-slug-PLAN.md`.
_PLAN_REF_RE = re.compile(
    r"^\][ \t]+(?:\*\*|`)?(?:Plan[ \t]+)?"
    rf"(?P<id>{PHASE_REF}-{PLAN_NUMBER})(?=[-:\s*`)]|$)"
)
# The phase cell: `1. Foundation`, `07.1. Name`, `2.1 Name`, `Phase 3: Name`, `12A`.
_PHASE_CELL_RE = re.compile(rf"^(?:Phase[ \t]+)?(?P<number>{PHASE_REF})(?=[.:\s]|$)")


def _checkboxes(lines: Lines, plan_id: str) -> Iterator[tuple[int, re.Match[str]]]:
    for index in lines.plain(frontmatter=False):
        box = _CHECKBOX_RE.match(lines.body(index))
        if box:
            ref = _PLAN_REF_RE.match(box.group("rest"))
            if ref and same_plan(ref.group("id"), plan_id):
                yield index, box


def check_plan(text: str, plan_id: str, done: bool = True) -> str:
    """Tick (or, with `done=False`, untick) the plan's checkbox lines."""
    lines = Lines(text)
    for index, box in _checkboxes(lines, plan_id):
        if (box.group("mark") != " ") != done:
            mark = "x" if done else " "
            lines.set(index, box.group("lead") + mark + box.group("rest"))
    return lines.result(text)


def check_plans(text: str, plans: list[tuple[str, bool]]) -> str:
    """`check_plan` of each (plan id, done) in turn, the same bytes, in one pass: a line
    that is several of the plans' keeps the last one's mark."""
    by_text: dict[str, int] = {}
    by_key: dict[object, int] = {}
    marks = [mark for _, mark in plans]
    for n, (plan_id, _) in enumerate(plans):
        by_text[plan_id.strip().lower()] = n  # the last plan of each spelling wins
        if (key := plan_key(plan_id.strip())) is not None:
            by_key[key] = n
    lines = Lines(text)
    for index in lines.plain(frontmatter=False):
        box = _CHECKBOX_RE.match(lines.body(index))
        ref = _PLAN_REF_RE.match(box.group("rest")) if box else None
        if box is None or ref is None:
            continue
        ref_id = ref.group("id").strip()
        key = plan_key(ref_id)
        which = [by_text.get(ref_id.lower()), by_key.get(key) if key is not None else None]
        last = max((n for n in which if n is not None), default=None)
        if last is not None and (box.group("mark") != " ") != marks[last]:
            lines.set(index, box.group("lead") + ("x" if marks[last] else " ") + box.group("rest"))
    return lines.result(text)


# `- [ ] **Phase 1: Foundation** - ...`, `- [x] Phase 2.1: Hotfix`: a phase's own line.
_PHASE_REF_RE = re.compile(
    rf"^\][ \t]+(?:\*\*)?Phase[ \t]+(?P<number>{PHASE_REF})"
    r"(?=[.:\s*]|$)",
    re.I,
)
# Where a phase's name is written: the title of `### Phase 1: Foundation` (any ATX heading,
# `heading_of`), or a line `**Phase 1: Foundation**`, `- [ ] **Phase 1: Foundation** - ...`.
_PHASE_NAME = (
    rf"(?:\*\*)?Phase[ \t]+(?P<number>{PHASE_REF})[ \t]*:[ \t]*(?P<name>[^*]+?)"
    r"[ \t]*(?:\*\*.*)?$"
)
_PHASE_HEADING_RE = re.compile(_PHASE_NAME, re.I)
_PHASE_LINE_RE = re.compile(r"^[ \t]*(?:[-*+][ \t]+\[[ xX]\][ \t]+)?" + _PHASE_NAME, re.I)


def _phase_title(body: str) -> re.Match[str] | None:
    """The phase number and name a roadmap line writes, if it is a phase's title line."""
    heading = heading_of(body)
    if heading is not None:
        return _PHASE_HEADING_RE.match(heading.title)
    return _PHASE_LINE_RE.match(body)


def _phase_boxes(lines: Lines, phase: str) -> Iterator[tuple[int, re.Match[str]]]:
    wanted = phase_key(phase.strip())
    for index in lines.plain(frontmatter=False):
        box = _CHECKBOX_RE.match(lines.body(index))
        ref = _PHASE_REF_RE.match(box.group("rest")) if box else None
        if box and ref and wanted is not None and phase_key(ref.group("number")) == wanted:
            yield index, box


def check_phase(text: str, phase: str, done: bool = True) -> str:
    """Tick (or untick) the phase's own line, `- [ ] **Phase 1: Foundation** - ...`."""
    lines = Lines(text)
    for index, box in _phase_boxes(lines, phase):
        if (box.group("mark") != " ") != done:
            lines.set(index, box.group("lead") + ("x" if done else " ") + box.group("rest"))
    return lines.result(text)


def check_phases(text: str, phases: list[tuple[str, bool]]) -> str:
    """`check_phase` of each (phase, done) in turn, the same bytes, in one pass: a line
    that is several of the phases' keeps the last one's mark."""
    last: dict[PhaseKey, bool] = {}
    for phase, complete in phases:
        if (key := phase_key(phase.strip())) is not None:
            last[key] = complete
    lines = Lines(text)
    for index in lines.plain(frontmatter=False):
        box = _CHECKBOX_RE.match(lines.body(index))
        ref = _PHASE_REF_RE.match(box.group("rest")) if box else None
        key = phase_key(ref.group("number")) if ref else None
        done = last.get(key) if key is not None else None
        if box is not None and done is not None and (box.group("mark") != " ") != done:
            lines.set(index, box.group("lead") + ("x" if done else " ") + box.group("rest"))
    return lines.result(text)


def listed_phases(text: str) -> set[PhaseKey]:
    """The phases the roadmap names (`### Phase 2: ...`, `- [ ] **Phase 2: ...**`), by
    phase key: planned or not yet, they count in STATE.md's `Phase: 1 of N`."""
    lines = Lines(text)
    found: set[PhaseKey] = set()
    for index in lines.plain(frontmatter=False):
        title = _phase_title(lines.body(index))
        key = phase_key(title.group("number")) if title else None
        if key is not None:
            found.add(key)
    return found


# what upstream adds to a phase's line when it collapses a shipped milestone:
# `- [x] Phase 4: Enhanced Visibility (5/5 plans) — completed 2026-02-13`
_COLLAPSED_RE = re.compile(
    r"(?:[ \t]*\(\d+/\d+[ \t]+plans?\))?(?:[ \t]+[-–—]+[ \t]+completed\b.*)?$", re.I
)


def phase_titles(text: str) -> dict[PhaseKey, str]:
    """`phase_title` of every phase the roadmap names, by phase key, in one pass."""
    titles: dict[PhaseKey, str] = {}
    lines = Lines(text)
    for index in lines.plain(frontmatter=False):
        title = _phase_title(lines.body(index))
        key = phase_key(title.group("number")) if title else None
        if title is None or key is None or key in titles:
            continue
        name = _COLLAPSED_RE.sub("", title.group("name")).strip()
        if name and not name.startswith("["):  # the template's `[Name]`
            titles[key] = name
    return titles


def phase_title(text: str, phase: str) -> str | None:
    """The phase's name as the roadmap writes it (`### Phase 1: Foundation`), or None."""
    wanted = phase_key(phase.strip())
    lines = Lines(text)
    for index in lines.plain(frontmatter=False):
        title = _phase_title(lines.body(index))
        if title and wanted is not None and phase_key(title.group("number")) == wanted:
            name = _COLLAPSED_RE.sub("", title.group("name")).strip()
            if name and not name.startswith("["):  # the template's `[Name]`
                return name
    return None


# ------------------------------------------------------------------------ progress table


def _columns(header: list[str]) -> dict[str, int] | None:
    """Column indexes of a progress table header, or None when it is not one."""
    names = [cell_value(cell).lower() for cell in header]
    if not names or not names[0].startswith("phase"):
        return None
    columns = {}
    for index, name in enumerate(names):
        if name.startswith("plans") and "plans" not in columns:
            columns["plans"] = index
        elif name == "status":
            columns["status"] = index
        elif name in ("completed", "date", "completed on", "done"):
            columns["completed"] = index
    return columns if "plans" in columns and "status" in columns else None


def _progress_rows(lines: Lines, phase: str) -> Iterator[tuple[int, dict[str, int]]]:
    """(line index, columns) of every progress-table row of `phase`."""
    wanted = phase_key(phase.strip())
    for index, key, columns in _phase_progress_rows(lines):
        if key == wanted:
            yield index, columns


def _phase_progress_rows(lines: Lines) -> Iterator[tuple[int, PhaseKey, dict[str, int]]]:
    """(line index, phase key, columns) of every progress-table row of a phase."""
    columns: dict[str, int] | None = None
    plain = lines.plain(frontmatter=False)
    for position, index in enumerate(plain):
        body = lines.body(index)
        if not is_table_row(body):
            columns = None
            continue
        following = plain[position + 1] if position + 1 < len(plain) else None
        if following is not None and SEPARATOR_RE.match(lines.body(following)):
            columns = _columns(split_row(body).cells)
            continue
        if columns is None or SEPARATOR_RE.match(body):
            continue
        cells = split_row(body).cells
        number = _PHASE_CELL_RE.match(cell_value(cells[0]) if cells else "")
        key = phase_key(number.group("number")) if number else None
        if key is not None:
            yield index, key, columns


def _cell(value: str) -> str:
    return escape_cell(re.sub(r"\s+", " ", value).strip()) or "-"


Progress = tuple[str, int, int, str, str | None]  # phase, completed, total, status, date


def set_progress(
    text: str,
    phase: str,
    completed: int,
    total: int,
    status: str,
    date: str | None = None,
) -> str:
    """Set the Plans Complete (`2/3`), Status and Completed (`date`, else `-`) cells of the
    phase's progress-table row; other cells stay byte for byte. When several tables list
    the phase, the last row wins (the current milestone comes last)."""
    return set_progresses(text, [(phase, completed, total, status, date)])


def set_progresses(text: str, phases: list[Progress]) -> str:
    """`set_progress` of each phase in turn, in one pass: the rows are found once (the
    cells it sets are never the phase's own, so which row is whose does not change)."""
    lines = Lines(text)
    rows: dict[PhaseKey, tuple[int, dict[str, int]]] = {}
    for index, key, columns in _phase_progress_rows(lines):
        rows[key] = (index, columns)  # the last row wins
    for phase, completed, total, status, date in phases:
        wanted = phase_key(phase.strip())
        if wanted is None or wanted not in rows:
            continue
        index, columns = rows[wanted]
        row = split_row(lines.body(index))
        cells = row.cells
        values = {
            "plans": f"{completed}/{total}",
            "status": _cell(status),
            "completed": _cell(date or "-"),
        }
        for name, value in values.items():
            column = columns.get(name)
            if column is None:
                continue
            while len(cells) <= column:
                cells.append(" - ")
            if cells[column].strip() != value:
                cells[column] = f" {value} "
        lines.set(index, row.text())
    return lines.result(text)
