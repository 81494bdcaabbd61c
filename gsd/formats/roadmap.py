"""ROADMAP.md, edited surgically: plan checkboxes and the phase rows of the progress table.

`check_plan` ticks `- [ ] 01-02-PLAN.md — ...` or `- [ ] 01-02: ...`; `set_progress`
rewrites the Plans Complete, Status and Completed cells of `| 1. Foundation | 2/3 | ...`.
Every other byte stays as it was (line endings, padding, the other cells); a function
returns its input, the very same string, when nothing needs to change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gsd.core.ids import PHASE_REF, PLAN_NUMBER, phase_key, same_plan
from gsd.formats.lines import SEPARATOR_RE, Lines
from gsd.formats.state import load, save

__all__ = [
    "ROADMAP_FILE",
    "check_phase",
    "check_plan",
    "load",
    "phase_title",
    "save",
    "set_progress",
]

ROADMAP_FILE = "ROADMAP.md"

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


# `- [ ] **Phase 1: Foundation** - ...`, `- [x] Phase 2.1: Hotfix`: a phase's own line.
_PHASE_REF_RE = re.compile(
    rf"^\][ \t]+(?:\*\*)?Phase[ \t]+(?P<number>{PHASE_REF})"
    r"(?=[.:\s*]|$)",
    re.I,
)
# `### Phase 1: Foundation`, `**Phase 1: Foundation**`: where a phase's name is written.
_PHASE_TITLE_RE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+|[-*+][ \t]+\[[ xX]\][ \t]+)?(?:\*\*)?Phase[ \t]+"
    rf"(?P<number>{PHASE_REF})[ \t]*:[ \t]*(?P<name>[^*]+?)"
    r"[ \t]*(?:\*\*.*)?$",
    re.I,
)


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


def listed_phases(text: str) -> set[str]:
    """The phases the roadmap names (`### Phase 2: ...`, `- [ ] **Phase 2: ...**`), by
    phase key: planned or not yet, they count in STATE.md's `Phase: 1 of N`."""
    lines = Lines(text)
    found = set()
    for index in lines.plain(frontmatter=False):
        title = _PHASE_TITLE_RE.match(lines.body(index))
        key = phase_key(title.group("number")) if title else None
        if key is not None:
            found.add(str(key))
    return found


def phase_title(text: str, phase: str) -> str | None:
    """The phase's name as the roadmap writes it (`### Phase 1: Foundation`), or None."""
    wanted = phase_key(phase.strip())
    lines = Lines(text)
    for index in lines.plain(frontmatter=False):
        title = _PHASE_TITLE_RE.match(lines.body(index))
        if title and wanted is not None and phase_key(title.group("number")) == wanted:
            name = title.group("name").strip()
            if name and not name.startswith("["):  # the template's `[Name]`
                return name
    return None


# ------------------------------------------------------------------------ progress table


def _split_row(body: str) -> tuple[str, list[str], str | None]:
    """`  | a | b |` as ("  ", [" a ", " b "], ""): cells keep their own spaces; the
    text after the closing pipe is None when the row has none."""
    segments = body.split("|")
    if body.rstrip().endswith("|") and len(segments) > 2:
        return segments[0], segments[1:-1], segments[-1]
    return segments[0], segments[1:], None


def _join_row(lead: str, cells: list[str], trail: str | None) -> str:
    return "|".join([lead, *cells] if trail is None else [lead, *cells, trail])


def _columns(header: list[str]) -> dict[str, int] | None:
    """Column indexes of a progress table header, or None when it is not one."""
    names = [cell.strip().lower() for cell in header]
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
    columns: dict[str, int] | None = None
    plain = lines.plain(frontmatter=False)
    for position, index in enumerate(plain):
        body = lines.body(index)
        if not body.lstrip().startswith("|"):
            columns = None
            continue
        following = plain[position + 1] if position + 1 < len(plain) else None
        if following is not None and SEPARATOR_RE.match(lines.body(following)):
            columns = _columns(_split_row(body)[1])
            continue
        if columns is None or SEPARATOR_RE.match(body):
            continue
        cells = _split_row(body)[1]
        number = _PHASE_CELL_RE.match(cells[0].strip() if cells else "")
        if number and wanted is not None and phase_key(number.group("number")) == wanted:
            yield index, columns


def _cell(value: str) -> str:
    return re.sub(r"\s+", " ", value).strip().replace("|", "\\|") or "-"


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
    lines = Lines(text)
    rows = list(_progress_rows(lines, phase))
    if not rows:
        return text
    index, columns = rows[-1]
    lead, cells, trail = _split_row(lines.body(index))
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
    lines.set(index, _join_row(lead, cells, trail))
    return lines.result(text)
