"""The commands that read plans and logs and change nothing: validate, rules, show, waves,
diff, errors, status, report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from gsd.cli.lint import FORMATS as VALIDATE_FORMATS
from gsd.cli.lint import OPTIONS as VALIDATE_OPTIONS
from gsd.cli.shared import (
    LIST_FORMATS,
    SummarisedCommand,
    format_option,
    planned_project,
    warn,
)
from gsd.core import layout
from gsd.core.errors import ERROR_TYPES, EXIT_FINDINGS, EXIT_OK


def _validate_options(command: Callable[..., int]) -> Callable[..., int]:
    """validate's options as Click options, from the table the fast path reads."""
    kinds: dict[str, dict[str, Any]] = {
        "flag": {"is_flag": True},
        "count": {"type": click.IntRange(min=1)},
    }
    for option in reversed(VALIDATE_OPTIONS):
        if option.kind == "format":
            command = format_option(VALIDATE_FORMATS)(command)
            continue
        kind = kinds.get(option.kind, {"metavar": option.metavar})
        command = click.option(*option.names, option.field, help=option.help, **kind)(command)
    return command


@click.command(cls=SummarisedCommand)
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@_validate_options
def validate(paths: tuple[str, ...], **given: Any) -> int:
    """Check plan files and report each problem with its line.

    Prints `path:line:col: severity CODE message` per problem (see gsd rules).
    PATHS are plan files or directories (default: .planning/).

    Example: gsd validate --phase 2 --format github
    """
    from gsd.cli import lint

    return lint.run(lint.Options(list(paths), **given))


@click.command(cls=SummarisedCommand)
@format_option()
def rules(fmt: str) -> int:
    """List the rules of gsd validate: code, severity and meaning.

    Choose rules with `gsd validate --select/--ignore` (codes or their starts, as
    ruff: GSD01 is GSD010-GSD019) or config.json's "validate" section; hide one
    line's findings with `<!-- gsd: ignore GSD013 -->` at its end or on the line
    above it.

    Example: gsd rules --format markdown
    """
    import json

    from gsd.output.render import rules_table

    table = rules_table()
    if fmt == "json":
        click.echo(json.dumps(table, indent=2))
    elif fmt == "markdown":
        from gsd.output.views import table as markdown_table

        rows = [{"code": r["code"], "severity": r["severity"], "rule": r["summary"]} for r in table]
        click.echo(markdown_table(rows, markdown=True))
    else:
        for row in table:
            click.echo(f"{row['code']}  {row['severity']:<7}  {row['summary']}")
        click.echo(RULES_FOOTER)
    return EXIT_OK


RULES_FOOTER = """
Choose: gsd validate --select GSD01,GSD040 --ignore GSD013 (or config.json's
"validate": {"select": [...], "ignore": [...]}). Hide one line's findings with
<!-- gsd: ignore GSD013 --> at its end or on the line above it (docs/COMMANDS.md)."""


@click.command(cls=SummarisedCommand)
@click.argument("target")
@format_option()
def show(target: str, fmt: str) -> int:
    """Show plans, their tasks and the agent each task gets.

    TARGET is a plan file, a plan id (01-02) or a phase (1, 01-setup). Each task:
    type, name, specialist as written and its form, the agent it resolves to and
    why it falls back (if it does), files, line.

    Example: gsd show 01-02 --format json
    """
    from gsd.commands.show import plan_views
    from gsd.output import views

    rendered, warnings = plan_views(target)
    warn(warnings)
    click.echo(views.render_plans(rendered, fmt), nl=False)
    return EXIT_OK


@click.command(cls=SummarisedCommand)
@click.argument("phase")
@format_option(("text", "markdown", "json", "github-matrix", "mermaid"))
@click.option("--wave", type=int, help="With github-matrix: only this wave's plan groups.")
def waves(phase: str, fmt: str, wave: int | None) -> int:
    """Show a phase's schedule: its waves and critical path.

    Each wave lists its plans and the plans in it that run one after another
    (they share files). PHASE is a number (1, 02.1) or a folder name (01-setup).
    With --format mermaid, a flowchart: a column per wave, a box per plan with
    its specialists, an arrow per dependency, plans that share files grouped.

    Example: gsd waves 1 --format github-matrix --wave 2
    """
    from gsd.io.plans.project import Project, find_root
    from gsd.output import views

    project = Project(find_root(Path.cwd()))
    found = project.phase(phase)
    graph = project.phase_graph(found)
    if fmt == "github-matrix":
        click.echo(views.github_matrix(found.number, graph, wave), nl=False)
    elif fmt == "mermaid":
        from gsd.output.mermaid import flowchart

        click.echo(flowchart(graph, f"Phase {found.name}"), nl=False)
    else:
        from gsd.commands.show import waves_view

        view = waves_view(found.name, graph, found.milestone)
        click.echo(views.render_waves(view, fmt), nl=False)
    return EXIT_FINDINGS if graph.cycles else EXIT_OK


@click.command(cls=SummarisedCommand)
@click.argument("revisions", nargs=-1, metavar="[BASE [HEAD]]")
@click.option("--staged", "--cached", is_flag=True, help="Compare with the index, not the tree.")
@click.option("--exit-code", is_flag=True, help="Exit 1 when there are changes, like git diff.")
@format_option()
def diff(revisions: tuple[str, ...], staged: bool, exit_code: bool, fmt: str) -> int:
    """Show what changed in the plans between two git revisions.

    Plans and tasks added, removed, renamed or changed: frontmatter (depends_on,
    wave, files_modified, autonomous, ...), the plan's sections (<objective>,
    <context>, <verification>, <success_criteria>, <output>, ...) and each task's
    name, type, specialist, files, action, verify and done; then the validation
    problems that are new at HEAD.

    Revisions read like git diff: none compares HEAD with the working tree, BASE
    compares BASE with the working tree, BASE HEAD (or BASE..HEAD) two commits, and
    BASE...HEAD HEAD with its merge base with BASE. Plans are read from git objects:
    nothing is checked out, the working tree and the index are never touched.

    Example: gsd diff origin/main...HEAD --format markdown
    """
    from gsd.commands.revisions import diff_revisions
    from gsd.io.plans.project import find_root
    from gsd.output import diffview

    changes = diff_revisions(find_root(Path.cwd()), list(revisions), staged=staged)
    click.echo(diffview.render(changes, fmt), nl=False)
    return EXIT_FINDINGS if exit_code and not changes.empty else EXIT_OK


@click.command(cls=SummarisedCommand)
@click.option("--phase", help="Only this phase (1, 01 or its folder name, 01-setup).")
@click.option("--plan", "plan_id", help="Only this plan (02, or the id 01-02).")
@click.option("--specialist", help="Only failures of this agent.")
@click.option("--type", "error_type", type=click.Choice(ERROR_TYPES), help="Only this type.")
@click.option("--since", help="Only since a time: 2026-02-23, 2026-02-23T14:00Z, 30m, 2h, 7d.")
@format_option()
def errors(
    phase: str | None,
    plan_id: str | None,
    specialist: str | None,
    error_type: str | None,
    since: str | None,
    fmt: str,
) -> int:
    """Show the failed task attempts of past runs.

    From the logs in .planning/logs/ (and an older
    .planning/specialist-errors.jsonl): one line per failed attempt.

    Example: gsd errors --type timeout --since 2d --format json
    """
    from gsd.commands.failures import error_records

    kept, warnings = error_records(
        phase=phase, plan_id=plan_id, specialist=specialist, error_type=error_type, since=since
    )
    warn(warnings)
    from gsd.output.views import render_errors

    click.echo(render_errors(kept, fmt), nl=False)
    return EXIT_OK


@click.command(cls=SummarisedCommand)
@format_option()
def status(fmt: str) -> int:
    """Show each phase's progress and the open blockers.

    Each plan: done, paused, failed, in progress or pending, and its committed
    tasks; then the open blockers of STATE.md.

    Example: gsd status --format json
    """
    from gsd.commands import progress
    from gsd.output import statusview

    project = planned_project()
    click.echo(statusview.render(progress.project_status(project), fmt), nl=False)
    return EXIT_OK


@click.command(cls=SummarisedCommand)
@click.option("--all", "every_run", is_flag=True, help="All runs in the log, not the last.")
@format_option((*LIST_FORMATS, "junit", "html"))
def report(every_run: bool, fmt: str) -> int:
    """Show the last run: its timeline, tokens and cost.

    The timeline of spawns, results, retries and commits, then attempts, seconds,
    tokens and cost per agent and per plan. With --format junit, a test case per
    task of the plans the run took up: failed by its last attempt, skipped when
    it did not run. With --format html, one self-contained page (no script, nothing
    fetched): the timeline as a lane per plan and a bar per attempt, and tokens,
    cost and seconds per agent and per plan as bar charts.

    Example: gsd report --format html > report.html
    """
    from gsd.commands import report as run_report
    from gsd.formats import execlog
    from gsd.io.plans.project import find_root
    from gsd.output import reportview

    root = find_root(Path.cwd())
    events, warnings = execlog.read_all(root / layout.PLANNING)
    warn(warnings)
    if fmt == "junit":
        from gsd.io.plans.project import Project

        cases = run_report.task_cases(
            events, run_report.planned_tasks(Project(root)), not every_run
        )
        click.echo(reportview.junit(cases), nl=False)
        return EXIT_OK
    built = run_report.build(events, last_run_only=not every_run)
    if fmt == "html":
        from gsd.output import htmlreport

        bars = run_report.timeline(events, last_run_only=not every_run)
        click.echo(htmlreport.render(built, bars, f"gsd report: {root.name}"), nl=False)
        return EXIT_OK
    click.echo(reportview.render(built, fmt), nl=False)
    return EXIT_OK


@click.command(cls=SummarisedCommand)
@click.argument("target")
@format_option((*LIST_FORMATS, "junit"))
def verify(target: str, fmt: str) -> int:
    """Check a plan's must_haves against the working tree.

    TARGET is a plan file, a plan id (01-02) or a phase (1, 01-setup). Each artifact
    must exist and meet its contains, min_lines and exports; each key link's pattern
    must be found in its from or to file; each @path reference must name a file.
    Exits 1 when a check fails.

    Example: gsd verify 01-02 --format junit
    """
    from gsd.io.plans import verify as artifacts
    from gsd.output import verifyview

    checked = artifacts.verify(planned_project(), target)
    click.echo(verifyview.render(checked, fmt), nl=False)
    return EXIT_FINDINGS if any(p.failed for p in checked) else EXIT_OK


COMMANDS = (validate, rules, show, waves, diff, errors, status, report, verify)
