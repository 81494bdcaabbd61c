"""What `gsd diff` prints: text for a terminal, Markdown for a pull request, JSON."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable

from gsd.commands.diff import Change, PlanChanges, PlanDiff, Side, TaskDiff
from gsd.core.words import plural
from gsd.formats.diagnostics import diagnostic_line
from gsd.formats.lines import markdown_table
from gsd.output import challengeview
from gsd.output.mermaid import markdown_block

_FULL_SHA = re.compile(r"\b[0-9a-f]{40}\b")
# GitHub refuses comments longer than 65536 characters.
MARKDOWN_LIMIT = 60_000
DIFF_LINES = 40  # of one changed text shown in a Markdown comment


def render(changes: PlanChanges, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(as_dict(changes), indent=2) + "\n"
    if fmt == "markdown":
        return markdown(changes)
    return text(changes)


# --- JSON -----------------------------------------------------------------------------------


def as_dict(changes: PlanChanges) -> dict[str, object]:
    """The JSON of `gsd diff --format json` (keys documented in the README)."""
    return {
        "base": _side(changes.base),
        "head": _side(changes.head),
        "summary": changes.counts(),
        "plans": [
            {
                "id": p.id,
                "status": p.status,
                "path": p.path,
                "base_path": p.base_path,
                "changes": [_change(c) for c in p.changes],
                "tasks": [
                    {
                        "status": t.status,
                        "base_index": t.base_index,
                        "head_index": t.head_index,
                        "name": t.name,
                        "base_name": t.base_name,
                        "type": t.type,
                        "specialist": t.specialist,
                        "changes": [_change(c) for c in t.changes],
                    }
                    for t in p.tasks
                ],
            }
            for p in changes.plans
        ],
        "new_diagnostics": [d.to_dict() for d in changes.new_diagnostics],
        "fixed_diagnostics": [d.to_dict() for d in changes.fixed_diagnostics],
        "challenges": challengeview.as_dicts(changes.challenges),
    }


def _side(side: Side) -> dict[str, object]:
    return {"label": side.label, "commit": side.commit, "planning": side.has_planning}


def _change(change: Change) -> dict[str, object]:
    return {"field": change.field, "before": change.before, "after": change.after}


# --- words shared by text and Markdown ------------------------------------------------------


def summary(changes: PlanChanges) -> str:
    """`plans: 1 added, 2 changed; tasks: 1 renamed, 3 changed; 1 new error; 2 problems fixed`."""
    n = changes.counts()
    plans = _counts(n, "plans", ("added", "removed", "changed"))
    tasks = _counts(n, "tasks", ("added", "removed", "renamed", "changed"))
    parts = [f"plans: {plans}" if plans else "", f"tasks: {tasks}" if tasks else ""]
    parts += [plural(n["new_errors"], "new error"), plural(n["new_warnings"], "new warning")]
    parts.append(f"{plural(n['fixed'], 'problem')} fixed" if n["fixed"] else "")
    return "; ".join(p for p in parts if p and not p.startswith("0 ")) or "no plan changes"


def _counts(n: dict[str, int], kind: str, statuses: tuple[str, ...]) -> str:
    return ", ".join(f"{n[f'{kind}_{s}']} {s}" for s in statuses if n[f"{kind}_{s}"])


def _label(side: Side) -> str:
    """What the user named, full shas shortened as git prints them."""
    return _FULL_SHA.sub(lambda m: m.group()[:7], side.label)


def _side_name(side: Side) -> str:
    label = _label(side)
    if side.commit is None or side.commit.startswith(label):
        return label
    return f"{label} ({side.commit[:7]})"


def _line_counts(before: str | None, after: str | None) -> tuple[int, int]:
    diff = _diff_lines(before, after)
    added = sum(line.startswith("+") for line in diff)
    return added, sum(line.startswith("-") for line in diff)


def _diff_lines(before: str | None, after: str | None) -> list[str]:
    lines = difflib.unified_diff(
        (before or "").split("\n") if before else [],
        (after or "").split("\n") if after else [],
        lineterm="",
        n=2,
    )
    return [line for line in lines if not line.startswith(("---", "+++"))]


def _texts(change: Change) -> tuple[str | None, str | None] | None:
    """The two sides of a change to a long or multi-line text (None: that side has
    none); None when the change is not one."""
    before, after = change.before, change.after
    if not isinstance(before, str | None) or not isinstance(after, str | None):
        return None
    values = [v for v in (before, after) if v is not None]
    return (before, after) if any("\n" in v or len(v) > 60 for v in values) else None


def _is_text(change: Change) -> bool:
    return _texts(change) is not None


def _scalar(value: object) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _describe(change: Change, markdown: bool = False, table: bool = False) -> str:
    """One change in words: `wave 1 -> 2`, `files added a.py; removed b.py`."""
    field, before, after = change

    def code(value: object) -> str:
        return _code(str(value), table=table) if markdown else str(value)

    arrow = "→" if markdown else "->"
    label = code(field)
    if field == "position":
        return f"moved from {before} to {after}"
    if isinstance(before, list) or isinstance(after, list):
        old = before if isinstance(before, list) else []
        new = after if isinstance(after, list) else []
        parts = []
        if added := [v for v in new if v not in old]:
            parts.append("added " + ", ".join(code(v) for v in added))
        if removed := [v for v in old if v not in new]:
            parts.append("removed " + ", ".join(code(v) for v in removed))
        return f"{label} " + "; ".join(parts or ["changed"])
    if (texts := _texts(change)) is not None:
        plus, minus = _line_counts(*texts)
        return f"{label} text changed (+{plus} -{minus} lines)"
    if isinstance(before, dict) or isinstance(after, dict):
        return f"{label} changed"
    return f"{label} {code(_scalar(before))} {arrow} {code(_scalar(after))}"


def _field_line(change: Change, markdown: bool = False) -> str:
    """A plan field's change on its own line: `wave: 1 -> 2`."""
    label = _code(change.field) if markdown else change.field
    return label + ":" + _describe(change, markdown).removeprefix(label)


def _task_label(task: TaskDiff) -> str:
    index = task.head_index if task.head_index is not None else task.base_index
    return f"task {index}"


# --- text -----------------------------------------------------------------------------------


def text(changes: PlanChanges) -> str:
    base, head = _side_name(changes.base), _side_name(changes.head)
    out = [f"Plans: {base} -> {head}"]
    out.extend(_missing_planning(changes, str))
    if not changes.plans:
        out.append("No plan changes.")
    else:
        out.append(summary(changes))
    for plan in changes.plans:
        out.append("")
        count = f"  ({plural(len(plan.tasks), 'task')})" if plan.status != "changed" else ""
        out.append(f"{plan.id} {plan.status}  {plan.path}{count}")
        for change in plan.changes:
            out.append(f"  {_field_line(change)}")
        if plan.status != "removed":
            out.extend(f"  {_task_text(task)}" for task in plan.tasks)
    out.extend(challengeview.text_lines(changes.challenges))
    if changes.new_diagnostics:
        out.append("")
        out.append(f"New diagnostics at {_label(changes.head)}:")
        out.extend(f"  {diagnostic_line(d)}" for d in changes.new_diagnostics)
    return "\n".join(out) + "\n"


def _task_text(task: TaskDiff) -> str:
    head = f'{task.status:<8} {_task_label(task)} "{task.name}"'
    if task.status == "added":
        return f"{head} ({_kind(task)})"
    if task.status == "renamed":
        head = f'{task.status:<8} {_task_label(task)} "{task.base_name}" -> "{task.name}"'
    rest = [_describe(c) for c in task.changes if c.field != "name"]
    return head + (": " + "; ".join(rest) if rest else "")


def _kind(task: TaskDiff) -> str:
    return task.type + (f", specialist {task.specialist}" if task.specialist else "")


def _missing_planning(changes: PlanChanges, code: Callable[[str], str]) -> list[str]:
    return [
        f"{code(_side_name(side))} has no {code('.planning/')}."
        for side in (changes.base, changes.head)
        if not side.has_planning
    ]


# --- Markdown -------------------------------------------------------------------------------


def markdown(changes: PlanChanges) -> str:
    """For a pull-request comment; long diffs of task text are dropped to fit GitHub."""
    out = _markdown(changes, details=True)
    if len(out) > MARKDOWN_LIMIT:
        out = _markdown(changes, details=False)
    if len(out) > MARKDOWN_LIMIT:
        cut = out.rfind("\n", 0, MARKDOWN_LIMIT)
        out = out[:cut] + "\n\n_(cut: too long for one comment; run `gsd diff` locally)_\n"
    return out


def _markdown(changes: PlanChanges, *, details: bool) -> str:
    base, head = changes.base, changes.head
    out = [f"## Plan changes: {_code(_label(base))} → {_code(_label(head))}", ""]
    out.extend(line + "\n" for line in _missing_planning(changes, _code))
    out.extend([f"**{summary(changes)}**" if changes.plans else "No plan changes.", ""])
    out.append(f"<sub>Compared {_code(_side_name(base))} with {_code(_side_name(head))}.</sub>")
    for plan in changes.plans:
        out.extend(["", *_plan_markdown(plan, details)])
    out.extend(challengeview.markdown_lines(changes.challenges, _code))
    for phase, graph in changes.schedules:  # GitHub renders a ```mermaid block
        out.extend(["", f"### Waves of {_code(phase)} at {_code(_label(head))}", ""])
        out.append(markdown_block(graph, f"Phase {phase}").rstrip("\n"))
    if changes.new_diagnostics:
        out.extend(["", f"### New validation problems at {_code(_label(head))}", ""])
        rows = [
            (_code(f"{d.path}:{d.line}", table=True), d.severity, d.code, _plain(d.message))
            for d in changes.new_diagnostics
        ]
        out.extend(markdown_table(("file", "severity", "code", "message"), rows))
    return "\n".join(out) + "\n"


def _plan_markdown(plan: PlanDiff, details: bool) -> list[str]:
    out = [f"### {_code(plan.id)} {plan.status} · {_code(plan.path)}", ""]
    if plan.status == "removed":
        return [*out, f"{plural(len(plan.tasks), 'task')} removed."]
    if plan.status == "added":
        rows = [
            (
                str(t.head_index),
                _code(t.name, table=True),
                _code(t.type, table=True),
                _code(t.specialist, table=True) if t.specialist else "-",
            )
            for t in plan.tasks
        ]
        return [*out, *markdown_table(("#", "task", "type", "specialist"), rows)]
    out.extend(f"- {_field_line(c, markdown=True)}" for c in plan.changes)
    if plan.tasks:
        out += [""] if plan.changes else []
        changed = [(_task_cell(t), _task_change(t)) for t in plan.tasks]
        out += markdown_table(("task", "change"), changed)
    if details:
        for change in plan.changes:
            if _is_text(change):
                out.extend(_text_details(f"<code>{_html(change.field)}</code>", change))
        for task in plan.tasks:
            title = f"{_task_label(task)} <code>{_html(task.name)}</code>"
            for change in task.changes:
                if _is_text(change):
                    out.extend(_text_details(f"{title}: {_html(change.field)}", change))
    return out


def _task_cell(task: TaskDiff) -> str:
    index = task.head_index if task.head_index is not None else task.base_index
    return f"{index} {_code(task.name, table=True)}" if task.name else str(index)


def _task_change(task: TaskDiff) -> str:
    def code(value: str) -> str:
        return _code(value, table=True)

    if task.status == "added":
        return f"added ({_plain(task.type)}" + (
            f", {code(task.specialist)})" if task.specialist else ")"
        )
    if task.status == "removed":
        return "removed"
    words = [f"renamed from {code(task.base_name or '')}"] if task.status == "renamed" else []
    words += [_describe(c, markdown=True, table=True) for c in task.changes if c.field != "name"]
    return "; ".join(words)


def _text_details(title: str, change: Change) -> list[str]:
    """A folded unified diff of one changed text; `title` is HTML."""
    lines = _diff_lines(*(_texts(change) or (None, None)))
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"... {len(lines) - DIFF_LINES} more lines"]
    body = "\n".join(lines)
    fence = "`" * max(3, _longest_run(body, "`") + 1)
    return [
        "",
        f"<details><summary>{title}</summary>",
        "",
        f"{fence}diff",
        body,
        fence,
        "",
        "</details>",
    ]


def _longest_run(text: str, char: str) -> int:
    return max((len(m) for m in re.findall(f"{re.escape(char)}+", text)), default=0)


def _code(value: str, *, table: bool = False) -> str:
    """An inline code span that holds any text: never Markdown, never an @mention."""
    value = " ".join(str(value).split())
    if not value:
        return "` `"
    ticks = "`" * (_longest_run(value, "`") + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    span = f"{ticks}{pad}{value}{pad}{ticks}"
    return span.replace("|", "\\|") if table else span


# Inside a table cell, away from the start of a line, only these mean something.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]|~])")


def _plain(value: str) -> str:
    """Text shown as is: Markdown and HTML escaped, @mentions broken."""
    value = " ".join(value.split())
    value = value.replace("&", "&amp;").replace("<", "&lt;")
    return _MARKDOWN_SPECIALS.sub(r"\\\1", value).replace("@", "@&#8203;")


def _html(value: str) -> str:
    """Text inside an HTML element (a <summary>): escaped, @mentions broken."""
    value = " ".join(value.split())
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return value.replace("@", "@&#8203;")
