"""`gsd diff`: what changed in the plans of `.planning/` between two snapshots (pure).

Data flows one way: revisions -> snapshots (`gsd.commands.revisions`: plans and their
diagnostics, read from git objects or the working tree) -> `compare`, a pure function
of two snapshots -> a `PlanChanges` model that `gsd.output.diffview` renders.

Tasks are matched between the two sides of a plan by name first (in order, so two
tasks of one name pair up in order). Name matches that keep their relative order
anchor the rest; between two anchors, a task that lost its name is paired with the
new task in the same place whose name or action text is most alike, if it is
mostly the same (difflib ratio >= 0.5): a rename, not a removal plus an addition.
A name match whose relative order changed is reported with a `position` change.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from gsd.commands.taskmatch import compared_text, match_tasks
from gsd.core.graph import PhaseGraph, changed_schedules
from gsd.core.ids import plan_sort_key
from gsd.core.models import Diagnostic, Plan, Task
from gsd.formats.challengereport import ChallengeReport, read_file

# Frontmatter keys read through Plan's coercing properties (`plan_fields`), not as is.
_COVERED_KEYS = frozenset(
    {"wave", "depends_on", "files_modified", "files-modified", "autonomous", "type"}
)


class Side(NamedTuple):
    """One side of a diff: what the user named and what it resolved to."""

    label: str  # "HEAD", "main", "working tree", "index", ...
    commit: str | None  # full sha; None for the working tree and the index
    has_planning: bool


class Snapshot(NamedTuple):
    side: Side
    plans: dict[str, Plan]  # by repo-relative path
    diagnostics: list[Diagnostic]
    sections: dict[str, dict[str, str]] = {}  # by path: `body_sections` of the plan's text
    challenges: dict[str, str] = {}  # by path: the text of each phase's NN-CHALLENGE.md


# A plan's or a task's fields as compared, by name: frontmatter values as YAML gives them
# (strings, numbers, lists, mappings), coerced fields, texts.
Fields = dict[str, object]


class Change(NamedTuple):
    field: str
    before: object  # None: not there at BASE
    after: object  # None: not there at HEAD


class TaskDiff(NamedTuple):
    status: str  # added | removed | renamed | changed
    base_index: int | None  # 1-based position at BASE; None when added
    head_index: int | None  # 1-based position at HEAD; None when removed
    name: str  # at HEAD (at BASE when removed)
    base_name: str | None  # the name at BASE, when it changed
    type: str
    specialist: str | None
    changes: list[Change]


class PlanDiff(NamedTuple):
    status: str  # added | removed | changed
    id: str
    path: str  # at HEAD (at BASE when removed)
    base_path: str | None  # at BASE, when the file moved or was removed
    changes: list[Change]
    tasks: list[TaskDiff]


class ChallengeDiff(NamedTuple):
    """A phase's `NN-CHALLENGE.md` (`gsd challenge`) added, changed or removed."""

    status: str  # added | removed | changed
    path: str
    report: ChallengeReport | None  # as HEAD has it; None when removed or unreadable


class PlanChanges(NamedTuple):
    """The whole diff: plans that changed, and the diagnostics HEAD added or fixed."""

    base: Side
    head: Side
    plans: list[PlanDiff]
    new_diagnostics: list[Diagnostic]
    fixed_diagnostics: list[Diagnostic]
    # HEAD's wave graph of each phase whose schedule changed, by phase folder name
    schedules: tuple[tuple[str, PhaseGraph], ...] = ()
    challenges: tuple[ChallengeDiff, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.plans and not self.new_diagnostics and not self.challenges

    def counts(self) -> dict[str, int]:
        plans = Counter(p.status for p in self.plans)
        tasks = Counter(t.status for p in self.plans if p.status == "changed" for t in p.tasks)
        new = Counter(d.severity for d in self.new_diagnostics)
        return {
            "plans_added": plans["added"],
            "plans_removed": plans["removed"],
            "plans_changed": plans["changed"],
            "tasks_added": tasks["added"],
            "tasks_removed": tasks["removed"],
            "tasks_renamed": tasks["renamed"],
            "tasks_changed": tasks["changed"],
            "new_errors": new["error"],
            "new_warnings": new["warning"],
            "fixed": len(self.fixed_diagnostics),
        }


# --- the comparison -------------------------------------------------------------------------


def compare(base: Snapshot, head: Snapshot) -> PlanChanges:
    """What changed from `base` to `head`: plans, tasks, fields, new diagnostics."""
    pairs = match_plans(base.plans, head.plans)
    diffs = [
        d
        for old, new in pairs
        if (d := diff_plan(old, new, _sections(base, old), _sections(head, new))) is not None
    ]
    diffs.sort(key=lambda d: (plan_sort_key(d.id), d.path))
    # compared by code, path and message, never by line: an edit above a problem
    # moves it without making it new; a moved plan's problems keep their identity
    moved = {old.path: new.path for old, new in pairs if old and new and old.path != new.path}
    base_keys = [(d.code, moved.get(d.path, d.path), d.message) for d in base.diagnostics]
    head_keys = [(d.code, d.path, d.message) for d in head.diagnostics]
    new_diagnostics = _without(head.diagnostics, head_keys, base_keys)
    fixed = _without(base.diagnostics, base_keys, head_keys)
    return PlanChanges(
        base=base.side,
        head=head.side,
        plans=diffs,
        new_diagnostics=new_diagnostics,
        fixed_diagnostics=fixed,
        schedules=changed_schedules(base.plans, head.plans),
        challenges=challenge_diffs(base.challenges, head.challenges),
    )


def challenge_diffs(base: Mapping[str, str], head: Mapping[str, str]) -> tuple[ChallengeDiff, ...]:
    """The challenge reports whose text differs between the two sides, by path."""
    found = []
    for path in sorted(base.keys() | head.keys()):
        before, after = base.get(path), head.get(path)
        if before == after:
            continue
        status = "added" if before is None else "removed" if after is None else "changed"
        report = read_file(after) if after is not None else None
        found.append(ChallengeDiff(status=status, path=path, report=report))
    return tuple(found)


def match_plans(
    base: dict[str, Plan], head: dict[str, Plan]
) -> list[tuple[Plan | None, Plan | None]]:
    """Plans paired by path; a file moved or renamed pairs by its plan id when that id
    is unique among the unpaired plans of both sides."""
    pairs: list[tuple[Plan | None, Plan | None]] = [(base[p], head[p]) for p in base if p in head]
    gone = [base[p] for p in base if p not in head]
    new = [head[p] for p in head if p not in base]
    gone_ids = Counter(p.id for p in gone)
    new_ids = Counter(p.id for p in new)
    unique = {i for i in gone_ids if gone_ids[i] == 1 and new_ids[i] == 1}
    new_by_id = {p.id: p for p in new if p.id in unique}
    pairs.extend((p, new_by_id[p.id]) for p in gone if p.id in unique)
    pairs.extend((p, None) for p in gone if p.id not in unique)
    pairs.extend((None, p) for p in new if p.id not in unique)
    return pairs


def _sections(snapshot: Snapshot, plan: Plan | None) -> dict[str, str]:
    return snapshot.sections.get(plan.path, {}) if plan is not None else {}


def diff_plan(
    old: Plan | None,
    new: Plan | None,
    old_sections: dict[str, str] | None = None,
    new_sections: dict[str, str] | None = None,
) -> PlanDiff | None:
    """The changes of one plan (frontmatter, then body sections as `body_sections` reads
    them, then tasks); None when nothing this diff looks at changed."""
    if old is None and new is not None:
        tasks = [_whole_task("added", t) for t in new.tasks]
        return PlanDiff(
            status="added", id=new.id, path=new.path, base_path=None, changes=[], tasks=tasks
        )
    if new is None and old is not None:
        tasks = [_whole_task("removed", t) for t in old.tasks]
        return PlanDiff(
            status="removed", id=old.id, path=old.path, base_path=old.path, changes=[], tasks=tasks
        )
    assert old is not None and new is not None
    changes = []
    if old.path != new.path:
        changes.append(Change("path", old.path, new.path))
    before, after = plan_fields(old), plan_fields(new)
    changes.extend(_changed(before, after))
    changes.extend(_changed(old_sections or {}, new_sections or {}))
    matched = match_tasks(old.tasks, new.tasks)
    tasks = [d for a, b, moved in matched if (d := diff_task(a, b, moved)) is not None]
    if not changes and not tasks:
        return None
    base_path = old.path if old.path != new.path else None
    return PlanDiff(
        status="changed",
        id=new.id,
        path=new.path,
        base_path=base_path,
        changes=changes,
        tasks=tasks,
    )


def plan_fields(plan: Plan) -> Fields:
    """The frontmatter as compared: named fields first (coerced), then every other key."""
    fm = plan.frontmatter
    fields: Fields = {
        "type": fm.get("type"),
        "wave": plan.wave if plan.wave is not None else fm.get("wave"),
        "depends_on": plan.depends_on,
        "files_modified": plan.files_modified,
        "autonomous": plan.autonomous if plan.autonomous is not None else fm.get("autonomous"),
    }
    fields.update((k, v) for k, v in sorted(fm.items()) if k not in _COVERED_KEYS)
    return fields


def body_sections(text: str) -> dict[str, str]:
    """The sections of a plan body around its tasks, by tag in angle brackets
    (`<objective>`, `<context>`, `<verification>`, `<success_criteria>`, `<output>`, any
    other), each text as compared; a tag written twice is one section, its parts joined.

    Read as `gsd.formats.planning.plan.parse` reads the body: tags inside fenced code are text.
    """
    from gsd.formats import frontmatter
    from gsd.formats.planning.plan import _Scanner

    try:
        cut = frontmatter.split(text)
        body, start = cut.text, cut.body_offset
    except frontmatter.FrontmatterError:
        body, start = frontmatter.normalize(text), 0
    sections: dict[str, list[str]] = {}
    for element in _Scanner(body, start, "").elements(start, len(body)):
        if element.tag not in ("tasks", "task"):
            sections.setdefault(f"<{element.tag}>", []).append(compared_text(element.text) or "")
    return {tag: "\n\n".join(parts) for tag, parts in sections.items()}


def task_fields(task: Task) -> Fields:
    """A task as compared: the named fields, then its other children and attributes."""
    fields: Fields = {
        "name": task.name,
        "type": task.type,
        "specialist": task.specialist,
        "files": task.files,
        "action": compared_text(task.child_text("action")),
    }
    for element in task.children:
        fields.setdefault(element.tag, compared_text(element.text))
    for key, value in task.attrs.items():
        fields.setdefault(key, value)
    return fields


def _changed(before: Mapping[str, object], after: Mapping[str, object]) -> Iterable[Change]:
    for key in dict.fromkeys([*before, *after]):
        old, new = before.get(key), after.get(key)
        if isinstance(old, list) and isinstance(new, list):
            same = _unordered(old) == _unordered(
                new
            )  # order of paths and dependencies means nothing
        else:
            same = old == new
        if not same:
            yield Change(key, old, new)


def _unordered(items: list[object]) -> set[str]:
    """A list's items as a set, mappings and lists among them (`user_setup: [{...}]`) too."""
    return {json.dumps(item, sort_keys=True, default=str) for item in items}


def _whole_task(status: str, task: Task) -> TaskDiff:
    added = status == "added"
    return TaskDiff(
        status=status,
        base_index=None if added else task.index,
        head_index=task.index if added else None,
        name=task.name,
        base_name=None,
        type=task.type,
        specialist=task.specialist,
        changes=[],
    )


def diff_task(old: Task | None, new: Task | None, moved: bool = False) -> TaskDiff | None:
    if old is None or new is None:
        whole = new if old is None else old
        assert whole is not None
        return _whole_task("added" if old is None else "removed", whole)
    changes = list(_changed(task_fields(old), task_fields(new)))
    if moved:
        changes.append(Change("position", old.index, new.index))
    if not changes:
        return None
    renamed = old.name != new.name
    return TaskDiff(
        status="renamed" if renamed else "changed",
        base_index=old.index,
        head_index=new.index,
        name=new.name,
        base_name=old.name if renamed else None,
        type=new.type,
        specialist=new.specialist,
        changes=changes,
    )


def _without(
    found: list[Diagnostic], keys: list[tuple[str, str, str]], others: list[tuple[str, str, str]]
) -> list[Diagnostic]:
    """The diagnostics of `found` whose key `others` lacks (counted: two alike need two)."""
    left = Counter(others)
    out = []
    for diagnostic, key in zip(found, keys, strict=True):
        if left[key]:
            left[key] -= 1
        else:
            out.append(diagnostic)
    return out
