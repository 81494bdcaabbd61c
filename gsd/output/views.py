"""Tables and views the commands print: plain data first, then text, Markdown or JSON."""

from __future__ import annotations

import json
import shlex
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gsd.core.graph import PhaseGraph
from gsd.core.words import plural
from gsd.formats.files import display_path

if TYPE_CHECKING:
    from gsd.commands.show import PlanView, TaskView, WavesView
    from gsd.core.verdict.outcomes import TaskOutcome
    from gsd.formats.agents import Agent
    from gsd.formats.errorlog import ErrorRecord
    from gsd.formats.runners.invocation import PolicyView
    from gsd.io.dispatch import TaskDispatch
    from gsd.io.plans.agentscan import FileReport, Scan


Row = dict[str, object]  # one row of a table: its cells by column heading, in order


def github_matrix(phase: str, graph: PhaseGraph, wave: int | None = None) -> str:
    """`{"include": [{"phase", "plan", "plans", "wave"}, ...]}` on one line, for
    `fromJSON()`: one job per overlap group (GSD044), whose plans share files and so run
    one after another on one runner, in order (`plans`, space-separated; `plan` is the
    first, which names the job). A plan that shares no file is a group of one."""
    include = [
        {"phase": phase, "plan": group[0], "plans": " ".join(group), "wave": number}
        for number, plans in enumerate(graph.waves, 1)
        if wave is None or number == wave
        for group in graph.sequential_groups(plans)
    ]
    return json.dumps({"include": include}, separators=(",", ":")) + "\n"


ALWAYS_TEXT = frozenset({"commit", "outcome"})  # hashes and words, never numbers


def table(rows: Sequence[Mapping[str, object]], markdown: bool, text: Collection[str] = ()) -> str:
    """Rows as an aligned text table, or a Markdown (GitHub) table: every table gsd prints.

    `text` names columns that never hold a number: tabulate does not try each of their
    cells as one (the same table, sooner: a list of 5,000 agents). A commit or an
    outcome is never one, though a short hash such as `7866e06` reads as 7.866e+09."""
    from tabulate import tabulate  # not on the validate hook path

    if markdown:
        rows = [{key: markdown_cell(value) for key, value in row.items()} for row in rows]
    text = {*text, *ALWAYS_TEXT}
    keys = dict.fromkeys(key for row in rows for key in row)
    plain = [i for i, key in enumerate(keys) if key in text]
    return str(
        tabulate(
            rows,
            headers="keys",
            tablefmt="github" if markdown else "simple",
            disable_numparse=plain,
        )
    )


def markdown_cell(value: object) -> object:
    """A Markdown table cell: a `|` would end the cell and a newline the row."""
    if isinstance(value, str):
        return " ".join(value.splitlines()).replace("|", "\\|")
    return value


def render_plans(views: list[PlanView], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"plans": [v.to_json() for v in views]}, indent=2) + "\n"
    markdown = fmt == "markdown"
    out: list[str] = []
    for view in views:
        deps = ", ".join(view.depends_on) or "none"
        wave = view.computed_wave or view.wave
        head = f"Plan {view.id} ({view.path})"
        if view.archived:
            head += f" (archived, milestone {view.archived})"
        out.append(f"## {head}" if markdown else head)
        out.append(
            f"wave {wave}, depends on {deps}, autonomous {str(view.autonomous).lower()}, "
            f"{plural(len(view.tasks), 'task')}"
        )
        rows = [task_row(t) for t in view.tasks]
        if not any(t.runner or t.model for t in view.tasks):
            rows = [{k: v for k, v in row.items() if k not in ("runner", "model")} for row in rows]
        out.append(table(rows, markdown) if rows else "(no tasks)")
        out.append("")
    return "\n".join(out)


def task_row(t: TaskView) -> Row:
    """One row of `gsd show`'s task table; runner and model only as the plan sets them."""
    return {
        "#": t.index,
        "type": t.type,
        "name": t.name,
        "specialist": t.specialist or "-",
        "form": t.specialist_form or "-",
        "agent": t.agent or "-",
        "fallback": t.fallback or "-",
        "runner": t.runner or "-",
        "model": t.model or "-",
        "files": ", ".join(t.files) or "-",
        "line": t.line,
    }


def render_waves(view: WavesView, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(view.to_json(), indent=2) + "\n"
    markdown = fmt == "markdown"
    title = f"Phase {view.phase}: {plural(view.plans, 'plan')} in "
    title += plural(len(view.waves), "wave")
    if view.archived:
        title += f" (archived, milestone {view.archived})"
    rows: list[Row] = [
        {
            "wave": w.wave,
            "plans": ", ".join(w.plans),
            "run one after another": "; ".join(" -> ".join(g) for g in w.sequential_groups) or "-",
        }
        for w in view.waves
    ]
    out = [f"## {title}" if markdown else title, "", table(rows, markdown), ""]
    path = view.critical_path
    out.append(f"Critical path: {' -> '.join(path)} ({plural(len(path), 'plan')})" if path else "")
    for cycle in view.cycles:
        out.append(f"Cycle (not scheduled): {' -> '.join(cycle)}")
    return "\n".join(out).rstrip("\n") + "\n"


# agent_row's columns that never hold a number (a name or a model may be all digits)
AGENT_TEXT_COLUMNS = frozenset({"tier", "runner", "timeout", "source", "overrides"})


def agent_row(agent: Agent, root: Path, fmt: str = "text") -> Row:
    """One line of `gsd agents list`; JSON adds the origin, aliases and full paths."""
    minutes = agent.timeout_mins
    row: Row = {
        "name": agent.name,
        "tier": agent.tier,
        "runner": agent.runner,
        "model": agent.model or "-",
        "timeout": f"{minutes:g} min" if minutes is not None else "-",
        "source": display_path(agent.source, root),
        "overrides": display_path(agent.overrides, root) if agent.overrides else "-",
    }
    if fmt == "json":
        row.update(
            origin=agent.origin,
            aliases=list(agent.aliases),
            path=agent.source,
            overrides_path=agent.overrides or None,
            notes=list(agent.notes),
        )
    return row


def render_rows(
    rows: Sequence[Mapping[str, object]], fmt: str, key: str, text: Collection[str] = ()
) -> str:
    if fmt == "json":
        return json.dumps({key: rows}, indent=2) + "\n"
    return table(rows, fmt == "markdown", text) + "\n"


def render_errors(records: list[ErrorRecord], fmt: str) -> str:
    """`gsd errors` output: a table for text and markdown, whole records for json."""
    if fmt == "json":
        body = {"errors": [record.model_dump(mode="json") for record in records]}
        return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    if not records:
        return "No errors recorded.\n"
    from gsd.formats.errorlog import rows  # the records exist: errorlog is loaded already

    return render_rows(rows(records, short=fmt == "text"), fmt, "errors")


class Added(NamedTuple):
    """What the dry run shows beside each task's dispatch (its estimate): per task, keys
    of its JSON object and lines of its text; for the whole, keys and closing lines."""

    fields: list[dict[str, object]]
    lines: list[list[str]]
    body: dict[str, object]
    footer: list[str]


def render_dispatch(
    phase: str, tasks: list[TaskDispatch], fmt: str, added: Added | None = None
) -> str:
    """`gsd execute-phase --dry-run`: every task and how it would run (and what `added`
    says of each, `gsd.output.estimateview`)."""
    added = added or Added([{} for _ in tasks], [[] for _ in tasks], {}, [])
    if fmt == "json":
        rows = [{**t.to_dict(), **more} for t, more in zip(tasks, added.fields, strict=True)]
        body = {"phase": phase, "dry_run": True, "tasks": rows, **added.body}
        return json.dumps(body, indent=2) + "\n"
    out = [f"Phase {phase}: dry run, {plural(len(tasks), 'task')} (nothing is changed)"]
    for t, more in zip(tasks, added.lines, strict=True):
        out += _dispatch_lines(t) + more
    return "\n".join([*out, *added.footer]) + "\n"


def _dispatch_lines(t: TaskDispatch) -> list[str]:
    """One task of the dry run's text: where it runs, who runs it and how."""
    out: list[str] = []
    written = f"{t.specialist!r} ({t.specialist_form})" if t.specialist_form else "none"
    out.append("")
    out.append(f"wave {t.wave}  plan {t.plan}  task {t.task}: {t.name or '(no name)'}")
    if t.runner is None:
        out.append(f"  {t.type}: pauses for a person ({t.timeout_source})")
        return out
    agent = t.agent + (f"  (fallback: {t.fallback_reason})" if t.fallback_reason else "")
    out.append(f"  specialist as written: {written}")
    out.append(f"  agent: {agent}")
    if t.agent_source:
        out.append(f"  agent file: {display_path(t.agent_source)}")
    runner = t.runner + (" (runner= in the plan)" if t.runner_source == "plan" else "")
    model = t.model or "runner default"
    if t.model_source and t.model_source != "agent":
        model += " (model= in the plan)" if t.model_source == "plan" else f" ({t.model_source})"
    out.append(f"  tier {t.tier}, runner {runner}, model {model}")
    out.append(f"  timeout {t.timeout_s:g} s ({t.timeout_source}), grace {t.grace_s:g} s")
    out.append(f"  argv: {shlex.join(t.argv)}")  # for reading only: never run by a shell
    if t.review:
        out.append(f"  reviewed by: {t.review}")
    if t.plan_first:
        out.append(f"  plan-first: {t.plan_first}")
    if t.missing:
        out.append(f"  missing: {t.missing}")
    if t.sandbox:
        out.append(f"  sandbox: {t.sandbox}")
    if t.limits:
        out.append(f"  limits: {t.limits}")
    if t.policy is not None:
        out.append(f"  policy: {policy_line(t.policy)}")
    return out


def policy_line(view: PolicyView) -> str:
    """A task's safety policy in one line: how many rules, the mechanism, and the rules
    in the runner's grammar (claude's are the argv's --disallowedTools: only counted)."""
    counts = f"{view['baseline']} baseline rules"
    if view["extra"]:
        counts += f" + {view['extra']} from config.json"
    rules = view["rules"]
    if not rules:
        return f"{counts}; {view['mechanism']}"
    if view["mechanism"].startswith("claude"):
        return f"{counts}; {view['mechanism']}: {len(rules)} rules in the argv above"
    return f"{counts}; {view['mechanism']}: {'; '.join(rules)}"


def render_outcomes(
    phase: str,
    outcomes: list[TaskOutcome],
    fmt: str,
    plans: dict[str, str] | None = None,
    only_plan: str | None = None,
) -> str:
    """The final tables of a live run: each plan and how it ended, then every task
    attempt and how it ended (`only_plan`: the one plan `execute-plan` ran)."""
    plan_rows: list[Row] = [{"plan": p, "outcome": how} for p, how in sorted((plans or {}).items())]
    rows: list[Row] = [
        {
            "plan": o.plan,
            "task": o.task,
            "agent": o.agent,
            "attempt": o.attempt,
            "outcome": _outcome(o),
            "commit": (o.commit or "")[:7] or "-",
            "seconds": o.duration_s,
        }
        for o in outcomes
    ]
    if fmt == "json":
        shown = {"phase": phase, **({"plan": only_plan} if only_plan else {})}
        return json.dumps({**shown, "plans": plan_rows, "tasks": rows}, indent=2) + "\n"
    title = f"Plan {only_plan} of phase {phase}" if only_plan else f"Phase {phase}"
    if not rows:
        return f"{title}: nothing to run\n"
    markdown = fmt == "markdown"
    head = f"{title}\n" + (table(plan_rows, markdown) + "\n\n" if plan_rows else "")
    return head + table(rows, markdown) + "\n"


def _outcome(o: TaskOutcome) -> str | None:
    """How an attempt ended, in a word or two: its error type when it failed."""
    if not o.success:
        return o.error_type
    if o.soft_success:
        return "soft success"
    if o.no_change:
        return "made no change"
    return "committed" if o.commit else "nothing to commit"


def render_agent_check(scan: Scan, fmt: str, root: Path) -> str:
    """`gsd agents check`: every folder searched, every file, what gsd made of it."""
    if fmt == "json":
        folders = [
            {
                "folder": display_path(f.folder, root),
                "origin": f.origin,
                "exists": f.exists,
                "loaded": f.count("loaded"),
                "skipped": f.count("skipped"),
                "ignored": f.count("ignored"),
                "files": [_file_check(file, f.folder) for file in f.files],
            }
            for f in scan.folders
        ]
        return json.dumps({"folders": folders, "warnings": scan.warnings()}, indent=2) + "\n"
    out: list[str] = []
    for f in scan.folders:
        where = display_path(f.folder, root)
        where += f" ({f.origin})" if f.origin not in ("bundled", "") else ""
        if not f.exists:
            out.append(f"{where}: not found")
            continue
        counts = f"{f.count('loaded')} loaded, {f.count('skipped')} skipped"
        out.append(f"{where}: {counts}, {f.count('ignored')} ignored")
        for file in f.files:
            name = file.path.relative_to(f.folder).as_posix()
            out.append(f"  {file.status:<8} {name}: {_summary(file)}")
            notes = file.agent.notes if file.agent else ()
            out.extend(f"           note: {note}" for note in notes)
    return "\n".join(out) + "\n"


def _summary(file: FileReport) -> str:
    """What gsd made of an agent file: the agent in a line, or why it was not loaded."""
    agent = file.agent
    if agent is None:
        return file.reason
    also = f" (also {', '.join(agent.aliases)})" if agent.aliases else ""
    tools = "all tools" if agent.tools_omitted else f"{len(agent.tools)} tools"
    summary = f"{agent.name}{also}, {agent.tier}, runner {agent.runner}, {tools}"
    if agent.overrides:
        summary += f", overrides {display_path(agent.overrides)}"
    return summary


def _file_check(file: FileReport, folder: Path) -> Row:
    agent = file.agent
    row: Row = {"file": file.path.relative_to(folder).as_posix(), "status": file.status}
    if agent is None:
        return {**row, "summary": file.reason, "reason": file.reason, "notes": []}
    return {
        **row,
        "summary": _summary(file),
        "name": agent.name,
        "aliases": list(agent.aliases),
        "tier": agent.tier,
        "runner": agent.runner,
        "notes": list(agent.notes),
    }
