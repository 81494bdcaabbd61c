"""STATE.md's Performance Metrics section, edited surgically: gsd's plan and phase rows of
its tables and its `- Total plans completed: 3` counters.

Like `gsd.formats.planning.state`'s edits, each is a pure `text -> text` function that keeps every
byte it does not own and returns its input, the very same string, when nothing changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gsd.core.ids import PLAN_NUMBER, phase_key, plan_key, same_plan, split_plan_id
from gsd.core.words import plural
from gsd.formats.lines import SEPARATOR_RE, Lines, is_table_row, one_line, row_cells, table_row

_METRICS_RE = re.compile(r"performance metrics", re.I)
_METRIC_LABEL_RE = re.compile(rf"^Phase[ \t]+(?P<phase>\S+)[ \t]+P(?P<plan>{PLAN_NUMBER})$", re.I)


def _metric_label(plan_id: str) -> str:
    phase, number = split_plan_id(plan_id)
    return f"Phase {phase} P{number}" if phase else plan_id


def _is_metric_of(cell: str, plan_id: str) -> bool:
    label = _METRIC_LABEL_RE.match(cell)
    if label:
        cell = f"{label.group('phase')}-{label.group('plan')}"
    return same_plan(cell, plan_id)


def _table(lines: Lines, span: range, first: str, wanted: str) -> tuple[int, list[str]] | None:
    """(header line, header cells) of the section's first table whose first column is
    `first` and that has a column holding `wanted`, e.g. `| Plan | Duration |`."""
    for index in span[1:-1]:
        header = row_cells(lines.body(index))
        if (
            is_table_row(lines.body(index))
            and SEPARATOR_RE.match(lines.body(index + 1))
            and header[0].lower() == first
            and any(wanted in cell.lower() for cell in header)
        ):
            return index, header
    return None


def _put_row(
    text: str,
    first: str,
    wanted: str,
    by_column: dict[str, str],
    mine: Callable[[str], bool],
    order: Callable[[str], object],
) -> str:
    """Write one row into the Performance Metrics table whose header starts `| first |`
    and has a `wanted` column: the row whose first cell `mine` accepts is replaced
    wherever it is in the section; a new row goes before the first of gsd's rows that
    sorts after it (`order` of a first cell, None for rows that are not gsd's), else at
    the end of the table. No such table: the text is unchanged."""
    lines = Lines(text)
    span = lines.section(_METRICS_RE)
    table = _table(lines, span, first, wanted) if span is not None else None
    if span is None or table is None:
        return text
    start, header = table
    cells = [by_column.get(name.lower(), "-") for name in header]
    row = table_row(cells)
    for index in span[1:]:
        body = lines.body(index)
        if is_table_row(body) and mine(row_cells(body)[0]):
            if body.rstrip() != row:
                lines.set(index, row)
            return lines.result(text)
    stop = start + 2
    while stop < span.stop and is_table_row(lines.body(stop)):
        stop += 1
    rows = range(start + 2, stop)
    blank = {"", "-", "—", "none", "none yet", "none yet."}
    if rows and all(cell.lower() in blank for i in rows for cell in row_cells(lines.body(i))):
        lines.set(rows.start, row)  # the template's placeholder row
        for index in reversed(rows[1:]):
            lines.delete(index)
        return lines.result(text)
    key = order(by_column[first])
    later = [
        i
        for i in rows
        if (other := order(row_cells(lines.body(i))[0])) is not None
        and key is not None
        and other > key  # type: ignore[operator]
    ]
    lines.insert(later[0] if later else rows.stop, [row])
    return lines.result(text)


def _plan_order(cell: str) -> tuple[object, ...] | None:
    """Where a `Phase 01 P02` (or `01-02`) row sorts among gsd's rows; None: not one."""
    label = _METRIC_LABEL_RE.match(cell.strip())
    plan_id = f"{label.group('phase')}-{label.group('plan')}" if label else cell.strip()
    return plan_key(plan_id)


def record_metric(text: str, *, plan_id: str, duration: str, tasks: int, files: int) -> str:
    """Write `| Phase 01 P02 | 4min | 3 tasks | 2 files |` into the Performance Metrics
    table whose header starts `| Plan | Duration |`: the plan's row is replaced wherever it
    is in the section, else inserted among gsd's rows in plan order (the rows are the same
    whichever order the plans completed in). No such table: the text is unchanged."""
    by_column = {
        "plan": _metric_label(plan_id),
        "duration": one_line(duration),
        "tasks": plural(tasks, "task"),
        "files": plural(files, "file"),
    }
    return _put_row(
        text, "plan", "duration", by_column, lambda cell: _is_metric_of(cell, plan_id), _plan_order
    )


Metric = tuple[str, str, int, int]  # a plan's row: plan id, duration, tasks, files
# what tells a table's first cell is a row's: a function of the cell, None for no row
Identity = Callable[[str], object]


def record_metrics(text: str, rows: list[Metric]) -> str:
    """`record_metric` of each (plan id, duration, tasks, files) in turn, the same bytes,
    in one pass over one parsed text (`_put_rows`); plan ids in ASCII, where `same_plan`
    is an equivalence, else one by one as `record_metric` writes them."""
    entries = [
        (
            {
                "plan": _metric_label(plan_id),
                "duration": one_line(duration),
                "tasks": plural(tasks, "task"),
                "files": plural(files, "file"),
            },
            plan_id,
        )
        for plan_id, duration, tasks, files in rows
    ]
    if all(plan_id.isascii() and _identity_cell(plan_id) == plan_id for _, plan_id in entries):
        done = _put_rows(text, "plan", "duration", entries, _PLAN_IDENTITIES, _plan_order)
        if done is not None:
            return done
    for plan_id, duration, tasks, files in rows:
        text = record_metric(text, plan_id=plan_id, duration=duration, tasks=tasks, files=files)
    return text


def _cell_text(cell: str) -> object:
    return _identity_cell(cell).strip().lower()


def _cell_plan(cell: str) -> object:
    return plan_key(_identity_cell(cell).strip())


# `_is_metric_of`: the same text, case aside, or the same plan key (`01-02`, `Phase 1 P2`)
_PLAN_IDENTITIES: tuple[Identity, ...] = (_cell_text, _cell_plan)


def _identity_cell(cell: str) -> str:
    """A first cell as `_is_metric_of` reads it: `Phase 01 P02` as `01-02`."""
    label = _METRIC_LABEL_RE.match(cell)
    return f"{label.group('phase')}-{label.group('plan')}" if label else cell


class _RowIndex:
    """Rows (or entries) by each identity of their first cell; `first` is the first
    one that shares any identity with a cell, as `mine` would find it."""

    def __init__(self, identities: tuple[Identity, ...]) -> None:
        self.identities = identities
        self.found: list[dict[object, int]] = [{} for _ in identities]

    def add(self, cell: str, index: int) -> None:
        for identity, found in zip(self.identities, self.found, strict=True):
            if (key := identity(cell)) is not None:
                found.setdefault(key, index)

    def matches(self, cell: str) -> set[int]:
        keys = (identity(cell) for identity in self.identities)
        hits = (found.get(key) for key, found in zip(keys, self.found, strict=False))
        return {i for i in hits if i is not None}

    def first(self, cell: str) -> int | None:
        return min(self.matches(cell), default=None)


def _put_rows(
    text: str,
    first: str,
    wanted: str,
    entries: list[tuple[dict[str, str], str]],
    identities: tuple[Identity, ...],
    order: Callable[[str], object],
) -> str | None:
    """`_put_row` of each (by_column, whose) in turn, in one pass: rows found through an
    index of the section's rows, new ones placed among the table's. None where one pass
    cannot say what turns would (two entries that are one row, or a placeholder row that
    is one's): the caller then writes them in turn."""
    lines = Lines(text)
    span = lines.section(_METRICS_RE)
    table = _table(lines, span, first, wanted) if span is not None else None
    if span is None or table is None:
        return text
    start, header = table
    stop = start + 2
    while stop < span.stop and is_table_row(lines.body(stop)):
        stop += 1
    index = _RowIndex(identities)
    for i in span[1:]:
        if is_table_row(lines.body(i)):
            index.add(row_cells(lines.body(i))[0], i)
    found = [index.first(whose) for _, whose in entries]
    blank = {"", "-", "—", "none", "none yet", "none yet."}
    cells = (c.lower() for i in range(start + 2, stop) for c in row_cells(lines.body(i)))
    placeholder = stop > start + 2 and all(c in blank for c in cells)  # the first row tells
    if placeholder and any(i is not None and start + 2 <= i < stop for i in found):
        return None
    if not _distinct(entries, first, identities):
        return None
    missing = []
    for (by_column, _), at in zip(entries, found, strict=True):
        row = table_row([by_column.get(name.lower(), "-") for name in header])
        if at is None:
            missing.append((order(by_column[first]), row))
        elif lines.body(at).rstrip() != row:
            lines.set(at, row)
    if missing:
        _insert_rows(lines, range(start + 2, stop), missing, placeholder, order)
    return lines.result(text)


def _distinct(
    entries: list[tuple[dict[str, str], str]], first: str, identities: tuple[Identity, ...]
) -> bool:
    """Whether no entry, nor the row written for it, is another's: then writing one
    entry's row never touches another's, and the rows can be written in one pass."""
    index = _RowIndex(identities)
    for n, (_, whose) in enumerate(entries):
        if index.matches(whose):
            return False
        index.add(whose, n)
    written = (row_cells(table_row([by[first]]))[0] for by, _ in entries)  # as read back
    return all(index.matches(cell) <= {n} for n, cell in enumerate(written))


def _insert_rows(
    lines: Lines,
    rows: range,
    new: list[tuple[object, str]],
    placeholder: bool,
    order: Callable[[str], object],
) -> None:
    """New (order, row)s into the table whose rows are `rows`, as `_put_row` puts each:
    the template's placeholder rows give way to the first, each other goes before the
    first of gsd's rows that sorts after it, else at the end of the table."""
    orders = [order(row_cells(lines.body(i))[0]) for i in rows]
    for key, row in new:
        if placeholder:
            lines.set(rows.start, row)
            for index in reversed(rows[1:]):
                lines.delete(index)
            orders, placeholder = [key], False
            continue
        at = len(orders)
        if key is not None:
            at = next((k for k, o in enumerate(orders) if o is not None and o > key), at)  # type: ignore[operator]
        lines.insert(rows.start + at, [row])
        orders.insert(at, key)


def _phase_order(cell: str) -> object:
    return phase_key(cell.strip())


def record_phase_metric(text: str, *, phase: str, plans: int, total: str, average: str) -> str:
    """Write `| 01 | 3 | 12min | 4min |` into the By Phase table (`| Phase | Plans | Total
    | Avg/Plan |`) of Performance Metrics: the phase's row replaced, else inserted in phase
    order. No such table: the text is unchanged."""
    wanted = phase_key(phase)
    by_column = {"phase": phase, "plans": str(plans), "total": total, "avg/plan": average}
    return _put_row(
        text,
        "phase",
        "avg",
        by_column,
        lambda cell: wanted is not None and phase_key(cell.strip()) == wanted,
        _phase_order,
    )


PhaseMetric = tuple[str, int, str, str]  # a phase's row: phase, plans, total, average


def record_phase_metrics(text: str, rows: list[PhaseMetric], done: list[bool]) -> str:
    """For each phase in turn, `record_phase_metric` where it has plans `done` or a row
    already (`has_phase_metric`), the same bytes in one pass (`_put_rows`); phases that
    could share a row (one phase twice, a number that is none), one by one."""
    keys = [phase_key(phase) for phase, *_ in rows]
    one_pass = None not in keys and len(set(keys)) == len(keys)
    if one_pass and all(phase == phase.strip() for phase, *_ in rows):
        have = _phase_rows(text)
        entries = [
            ({"phase": phase, "plans": str(plans), "total": total, "avg/plan": average}, phase)
            for (phase, plans, total, average), key, any_done in zip(rows, keys, done, strict=True)
            if any_done or key in have
        ]
        written = _put_rows(text, "phase", "avg", entries, (_phase_order,), _phase_order)
        if written is not None:
            return written
    for (phase, plans, total, average), any_done in zip(rows, done, strict=True):
        if any_done or has_phase_metric(text, phase):
            text = record_phase_metric(text, phase=phase, plans=plans, total=total, average=average)
    return text


def _phase_rows(text: str) -> set[object]:
    """The phase keys `has_phase_metric` finds rows of."""
    lines = Lines(text)
    span = lines.section(_METRICS_RE)
    table = _table(lines, span, "phase", "avg") if span is not None else None
    if span is None or table is None:
        return set()
    rows = (lines.body(i) for i in range(table[0] + 2, span.stop))
    return {phase_key(row_cells(b)[0]) for b in rows if is_table_row(b)}


def set_counters(text: str, values: dict[str, str]) -> str:
    """Set `- Total plans completed: 3` style lines (label -> value) where the
    Performance Metrics section has them; a line it lacks is not added (they are the
    template's, in the order and words the user kept)."""
    lines = Lines(text)
    span = lines.section(_METRICS_RE)
    if span is None:
        return text
    for label, value in values.items():
        found = lines.field(span, label)
        if found is not None:
            index, match = found
            if match.group("value").rstrip() != one_line(value):
                lines.set(index, match.group("prefix") + one_line(value))
    return lines.result(text)


def has_phase_metric(text: str, phase: str) -> bool:
    """Whether the By Phase table of Performance Metrics has a row for `phase`."""
    lines = Lines(text)
    span = lines.section(_METRICS_RE)
    table = _table(lines, span, "phase", "avg") if span is not None else None
    if span is None or table is None:
        return False
    wanted = phase_key(phase)
    rows = (lines.body(i) for i in range(table[0] + 2, span.stop))
    return any(is_table_row(b) and phase_key(row_cells(b)[0]) == wanted for b in rows)
