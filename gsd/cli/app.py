"""The `gsd` command line: parse options, call one core function, print."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gsd import __version__
from gsd.cli.lint import FORMATS as VALIDATE_FORMATS
from gsd.core.errors import (
    ERROR_TYPES,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    INTERRUPTED,
    UsageError,
)
from gsd.core.ids import is_plan_id, split_plan_id
from gsd.core.words import plural

if TYPE_CHECKING:
    from gsd.core.models import Plan, Task
    from gsd.io.dispatch import TaskDispatch
    from gsd.io.phases import Phase
    from gsd.io.project import Project

F = TypeVar("F", bound=Callable[..., Any])
LIST_FORMATS = ("text", "markdown", "json")
# What each output format is, for the help of every `--format` option.
FORMAT_MEANINGS = {
    "text": "for a terminal",
    "markdown": "for a pull request or an issue",
    "json": "for programs",
    "github": "GitHub Actions annotations",
    "sarif": "SARIF 2.1.0 for code scanning",
    "junit": "JUnit XML for CI test reports",
    "github-matrix": "a GitHub Actions job matrix",
    "mermaid": "a Mermaid diagram",
    "html": "a web page",
}


def format_option(choices: Sequence[str] = LIST_FORMATS) -> Callable[[F], F]:
    """`--format` with its choices named in its help: `text (for a terminal), json ...`."""
    named = [f"{c} ({FORMAT_MEANINGS[c]})" if c in FORMAT_MEANINGS else c for c in choices]
    words = ", ".join(named[:-1]) + " or " + named[-1] if len(named) > 1 else named[0]
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default="text",
        show_default=True,
        help=f"Output format: {words}.",
    )


def first_sentence(text: str) -> str:
    """A docstring's first sentence, whole: what `gsd --help` shows beside a command
    (Click's own summary cuts it at the terminal's width and adds `...`)."""
    words = text.partition("\n\n")[0].split()
    for i, word in enumerate(words):
        if word.endswith(".") and (i == len(words) - 1 or not words[i + 1][0].islower()):
            return " ".join(words[: i + 1])
    return " ".join(words)


class SummarisedCommand(click.Command):
    """A command listed in `--help` by the whole first sentence of its docstring."""

    def get_short_help_str(self, limit: int = 45) -> str:
        return self.short_help or first_sentence(self.help or "")


class SummarisedGroup(click.Group):
    """A group listed by its first sentence; its commands and subgroups are the same."""

    command_class = SummarisedCommand
    group_class = type  # subgroups are SummarisedGroups too

    def get_short_help_str(self, limit: int = 45) -> str:
        return self.short_help or first_sentence(self.help or "")


@click.group(cls=SummarisedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gsd")
def cli() -> None:
    """Validate, schedule and run GSD-style PLAN.md files.

    Exit codes: 0 ok, 1 findings or failed work, 2 usage or input error,
    3 internal error, 4 paused at a human checkpoint.
    """


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option("--phase", help="Validate one phase (a number such as 1 or 02.1).")
@click.option("--staged", is_flag=True, help="Validate the blobs staged in the git index.")
@click.option("--strict", is_flag=True, help="Treat warnings as failures (exit 1).")
@format_option(VALIDATE_FORMATS)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    help="Processes for large trees (default: one per CPU; 1 for none).",
)
@click.option(
    "--base",
    metavar="REV",
    help="Fail (exit 1) only on findings that were not there at REV, such as a pull "
    "request's base; every finding is still reported.",
)
def validate(
    paths: tuple[str, ...],
    phase: str | None,
    staged: bool,
    strict: bool,
    fmt: str,
    jobs: int | None,
    base: str | None,
) -> int:
    """Check plan files and report each problem with its line.

    Prints `path:line:col: severity CODE message` per problem (see gsd rules).
    PATHS are plan files or directories (default: .planning/).

    Example: gsd validate --phase 2 --format github
    """
    from gsd.cli import lint

    options = lint.Options(paths=list(paths), phase=phase, staged=staged, strict=strict, fmt=fmt,
                           jobs=jobs, base=base)  # fmt: skip
    return lint.run(options)


@cli.command()
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
def init(directory: Path | None) -> int:
    """Create .planning/ with gsd's settings and project files.

    From gsd's template: config.json (every setting gsd reads, with its default),
    PROJECT.md, ROADMAP.md and STATE.md.

    Never overwrites: a file that already exists is kept as it is, so running it
    again only adds what is missing. DIRECTORY defaults to the current directory;
    it need not be a git repository yet (execute-phase and hooks will need one).

    Example: gsd init && gsd hooks install
    """
    from gsd.commands import scaffold

    where = directory or Path(".")
    done = scaffold.init(where)
    for status, path in done:
        click.echo(f"{status:<8} {path.as_posix()}")
    created = sum(1 for item in done if item.status == scaffold.CREATED)
    click.echo(f"gsd init: {created} created, {len(done) - created} kept", err=True)
    if not scaffold.in_git_work_tree(where):
        _warn([f"{where.resolve()} is not in a git repository; run git init before "
               "gsd execute-phase or gsd hooks install"])  # fmt: skip
    return EXIT_OK


@cli.command()
@format_option(("text", "json"))
def doctor(fmt: str) -> int:
    """Check what a run needs: git, Landlock, runner programs.

    git 2.23 or newer, the Landlock sandbox, the runner programs claude, gemini and
    codex (each one's `--version`), and in a project: config.json, agent files
    skipped, and the runner program of every task of every phase, and of agents no
    task uses (only noted). Outside a project it checks the machine alone and says so.

    Exit 0 when nothing a run needs is missing, 1 when something is (git missing or
    too old, a task's runner program not installed, config.json unusable).

    Example: gsd doctor --format json
    """
    from gsd.commands import doctor as checks

    found = checks.diagnose(Path.cwd())
    click.echo(checks.render(found, fmt), nl=False)
    return found.exit_code


@cli.command()
@format_option()
def rules(fmt: str) -> int:
    """List the rules of gsd validate: code, severity and meaning.

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
    return EXIT_OK


@cli.command()
@click.argument("target")
@format_option()
def show(target: str, fmt: str) -> int:
    """Show plans, their tasks and the agent each task gets.

    TARGET is a plan file, a plan id (01-02) or a phase (1, 01-setup). Each task:
    type, name, specialist as written and its form, the agent it resolves to and
    why it falls back (if it does), files, line.

    Example: gsd show 01-02 --format json
    """
    from gsd.io.project import Project, find_root
    from gsd.io.sources import relative_to_root
    from gsd.output import views

    root = find_root(Path.cwd())
    project = Project(root)
    if os.path.isfile(target):
        plans = [project.plan(p) for p in project.plans_under(relative_to_root(root, target))]
    elif is_plan_id(target):
        plans = [project.find_plan(target)]
    else:
        plans = project.phase_plans(project.phase(target))
    dispatcher, warnings = project.dispatcher()
    _warn(warnings)

    def resolve(plan: Plan, task: Task) -> tuple[str, str | None]:
        if task.is_checkpoint:
            return "(human)", None
        resolution = dispatcher.resolve(plan, task)
        return resolution.agent, resolution.fallback_reason

    rendered = [views.plan_view(p, project.graph_of(p.path), resolve) for p in plans]
    click.echo(views.render_plans(rendered, fmt), nl=False)
    return EXIT_OK


@cli.command()
@click.argument("phase")
@format_option(("text", "markdown", "json", "github-matrix"))
@click.option("--wave", type=int, help="With github-matrix: only this wave's plan groups.")
def waves(phase: str, fmt: str, wave: int | None) -> int:
    """Show a phase's schedule: its waves and critical path.

    Each wave lists its plans and the plans in it that run one after another
    (they share files). PHASE is a number (1, 02.1) or a folder name (01-setup).

    Example: gsd waves 1 --format github-matrix --wave 2
    """
    from gsd.io.project import Project, find_root
    from gsd.output import views

    project = Project(find_root(Path.cwd()))
    found = project.phase(phase)
    graph = project.phase_graph(found)
    if fmt == "github-matrix":
        click.echo(views.github_matrix(found.number, graph, wave), nl=False)
    else:
        click.echo(views.render_waves(views.waves_view(found.name, graph), fmt), nl=False)
    return EXIT_FINDINGS if graph.cycles else EXIT_OK


@cli.command()
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
    from gsd.io.project import find_root
    from gsd.output import diffview

    changes = diff_revisions(find_root(Path.cwd()), list(revisions), staged=staged)
    click.echo(diffview.render(changes, fmt), nl=False)
    return EXIT_FINDINGS if exit_code and not changes.empty else EXIT_OK


@cli.group()
def agents() -> None:
    """List the agents gsd can run, or write the roster of them."""


@agents.command("list")
@format_option()
def agents_list(fmt: str) -> int:
    """List every agent found, with its tier, runner and source file.

    Columns: name, tier, runner, model, timeout, its file, and the file of the agent
    of the same name it overrides; `--format json` adds origin, aliases and full paths.

    Agents come from gsd's own agents/, then ~/.codex/agents, ~/.gemini/agents and
    ~/.claude/agents, then the project's .codex/agents, .gemini/agents, .claude/agents
    and agents/, then `specialists.agent_paths`; a later one overrides an earlier one
    of the same name (as in Claude Code, the project's win over the user's).

    Example: gsd agents list --format json
    """
    from gsd.io.project import Project, find_root
    from gsd.output import views

    project = Project(find_root(Path.cwd()))
    found, warnings = project.agents()
    _warn(warnings)
    ordered = sorted(found.values(), key=lambda agent: agent.name)
    rows = [views.agent_row(agent, project.root, fmt) for agent in ordered]
    click.echo(views.render_rows(rows, fmt, "agents"), nl=False)
    return EXIT_OK


@agents.command("check")
@format_option(("text", "json"))
def agents_check(fmt: str) -> int:
    """Show every agent file: loaded, skipped or ignored, and why.

    Every agent folder and every file in it: what was loaded (name, aliases, tier,
    runner, and anything gsd noticed), what was skipped and why, what was ignored.
    Exits 1 when any agent file is skipped.

    Example: gsd agents check | grep skipped
    """
    from gsd.io.project import Project, find_root
    from gsd.output import views

    project = Project(find_root(Path.cwd()))
    found = project.agent_scan()
    _warn(project.missing_agent_paths())
    click.echo(views.render_agent_check(found, fmt, project.root), nl=False)
    return EXIT_FINDINGS if found.any_skipped else EXIT_OK


@agents.command("sync")
def agents_sync() -> int:
    """Write the specialists found to .planning/available_agents.md.

    Every agent but gsd's own (gsd-*), with its description: the roster plans name
    specialists from. An agent whose name another agent took is listed by its
    `ns:name` alias.

    Example: gsd agents sync && git diff .planning/available_agents.md
    """
    from gsd.formats import roster
    from gsd.formats.files import write_atomic

    project = _planned_project()
    found, warnings = project.agents()
    _warn(warnings)
    entries = found.roster_entries()
    specialists = {key: a.description for key, a in entries.items() if not a.is_system}
    path = project.planning / roster.ROSTER_FILE
    write_atomic(path, roster.render(specialists))
    click.echo(f"wrote {path.relative_to(project.root)}: {plural(len(specialists), 'specialist')}")
    return EXIT_OK


@cli.group()
def hooks() -> None:
    """Install or remove the git hook that validates staged plans."""


@hooks.command("install")
@click.option(
    "--gsd",
    "program",
    type=click.Path(dir_okay=False),
    help="The gsd program the hook runs (default: this one, else gsd on PATH).",
)
def hooks_install(program: str | None) -> int:
    """Install a pre-commit hook that validates staged plan files.

    A commit whose staged plan files have errors is refused.
    The hook runs `gsd validate --staged` on the plan files (.planning/**/*-PLAN.md)
    the commit adds or changes; a commit touching none costs one git call and never
    starts gsd. An existing pre-commit hook is moved to pre-commit.gsd-previous and
    run first (its failure still blocks the commit); `gsd hooks uninstall` puts it
    back. Honours core.hooksPath and worktrees; installing again changes nothing.

    Example: gsd hooks install
    """
    from gsd.commands import hooks as git_hooks

    report = git_hooks.install(Path.cwd(), program)
    _warn(report.warnings)
    for line in report.lines:
        click.echo(line)
    return EXIT_OK


@hooks.command("uninstall")
def hooks_uninstall() -> int:
    """Remove gsd's pre-commit hook and restore the one it replaced.

    The replaced hook comes back byte for byte.
    A hook that is not gsd's is never touched; with no gsd hook installed this says
    so and exits 0.

    Example: gsd hooks uninstall
    """
    from gsd.commands import hooks as git_hooks

    for line in git_hooks.uninstall(Path.cwd()).lines:
        click.echo(line)
    return EXIT_OK


@cli.command("execute-phase")
@click.argument("phase")
@click.option("--dry-run", is_flag=True, help="Show what would run; change nothing.")
@click.option("--wave", type=click.IntRange(min=1), help="Only this wave.")
@click.option("--plan", "plan_id", help="Only this plan, e.g. 01-02.")
@click.option(
    "--max-parallel",
    type=click.IntRange(min=1),
    help="Plans of a wave at once, each in its worktree (config: max_concurrent_agents).",
)
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds per task.")
@click.option(
    "--allow-dirty",
    is_flag=True,
    help="In place (use_worktrees false): snapshot uncommitted work into checkpoints.",
)
@click.option("--auto", is_flag=True, help="Approve human-verify checkpoints, take first options.")
@format_option(("text", "json"))
def execute_phase(
    phase: str,
    dry_run: bool,
    wave: int | None,
    plan_id: str | None,
    max_parallel: int | None,
    timeout: float | None,
    allow_dirty: bool,
    auto: bool,
    fmt: str,
) -> int:
    """Run a phase's plans: one supervised agent per task.

    Wave by wave, a commit per task. PHASE is a number (1, 02.1) or a folder
    name (01-setup).

    With --dry-run, print for every task its wave, plan, specialist as written,
    the agent it resolves to (and why, if it falls back), tier, runner, argv,
    timeout, grace period and sandbox, and change nothing: no files, tags or
    commits; refused (exit 2) like a live run when a task's runner program is
    not installed.
    Without it, run: waves in order; every plan in its own git worktree on
    branch gsd/PLAN, in a sandbox where Linux has Landlock, merged back --no-ff
    in plan order; the plans of a wave side by side (plans that share
    files_modified, or all with --max-parallel 1, one after another). Your
    uncommitted files are never touched: a merge that would is left on its
    branch. Agents run in your checkout only with workflow.use_worktrees false.
    Ctrl-C, SIGTERM or SIGHUP end every agent and roll back (exit 130/143/129);
    a run stopped at any moment resumes where it stopped when started again.
    Exit 0 done, 1 a task failed or a merge could not be made, 2 a problem to
    fix before anything runs, 4 paused at a human checkpoint.

    Example: gsd execute-phase 1 --dry-run --format json
    """
    from gsd.io.project import Project, find_root
    from gsd.output import views

    project = Project(find_root(Path.cwd()))
    found_phase = project.phase(phase)
    if not dry_run:
        from gsd.run.execute import RunOptions
        from gsd.run.execute import execute_phase as run_phase

        options = RunOptions(timeout=timeout, allow_dirty=allow_dirty, auto=auto,
                             only_plan=plan_id, max_parallel=max_parallel,
                             only_wave=wave)  # fmt: skip
        result = run_phase(project, found_phase, options)
        shown = views.render_outcomes(found_phase.name, result.outcomes, fmt, result.plans)
        click.echo(shown, nl=False)
        click.echo(f"gsd: {result.message}", err=True)
        return result.exit_code
    return _dry_run(project, found_phase, wave=wave, plan_id=plan_id, timeout=timeout, fmt=fmt)


def _dry_run(
    project: Project,
    found_phase: Phase,
    *,
    wave: int | None,
    plan_id: str | None,
    timeout: float | None,
    fmt: str,
) -> int:
    """`execute-phase --dry-run`: every task's dispatch shown, nothing changed; refused
    like a live run when a runner program is missing, warned when the phase is invalid."""
    from gsd.core.validate import validate as run_rules
    from gsd.output import views

    folder = found_phase.path.relative_to(project.root).as_posix()
    report = run_rules(project, [folder])
    if report.errors:
        from gsd.output.render import listed_errors

        click.echo(listed_errors(report), err=True, nl=False)
        click.echo(
            f"gsd: warning: {plural(report.errors, 'validation error')} in {folder}; a live "
            "run would refuse this phase",
            err=True,
        )
    dispatcher, warnings = project.dispatcher(cli_timeout=timeout)
    _warn(warnings)
    tasks = dispatcher.phase(project.phase_graph(found_phase), wave=wave, plan_id=plan_id)
    from gsd.run.preflight import check_runners  # as a live run would refuse: exit 2

    check_runners(tasks, project.root, os.environ)
    tasks = _with_sandbox(project, tasks)
    click.echo(views.render_dispatch(found_phase.name, tasks, fmt), nl=False)
    return EXIT_OK


@cli.command()
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
    from gsd.core.ids import parse_phase_name
    from gsd.formats import errorlog
    from gsd.io.project import find_root

    root = find_root(Path.cwd())
    named = parse_phase_name(phase) if phase is not None else None
    if phase is not None and named is not None and named.slug:  # `01-nope` is not phase 01
        from gsd.io.phases import resolve_phase

        resolve_phase(root / ".planning", phase)
    records, warnings = errorlog.read_all(root / ".planning")
    _warn(warnings)
    kept = errorlog.filter_records(
        records,
        phase=phase,
        plan=plan_id,
        specialist=specialist,
        error_type=error_type,
        since=errorlog.parse_since(since) if since else None,
    )
    from gsd.output.views import render_errors

    click.echo(render_errors(kept, fmt), nl=False)
    return EXIT_OK


@cli.command("execute-plan")
@click.argument("plan_id")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds per task.")
@click.option(
    "--allow-dirty",
    is_flag=True,
    help="In place (use_worktrees false): snapshot uncommitted work into checkpoints.",
)
@format_option(("text", "json"))
def execute_plan(plan_id: str, timeout: float | None, allow_dirty: bool, fmt: str) -> int:
    """Run one plan, once the plans it waits for are done.

    The unit a CI matrix fans out. It waits for its dependencies (in any
    phase) and for the plans before it in its overlap group: refused with
    exit 2 until their SUMMARY.md is there. Run on the plan's own branch
    gsd/PLAN, it continues it: committed tasks are skipped, approvals
    committed there are honoured, and its work ends up on that branch.

    Example: gsd execute-plan 01-02
    """
    from gsd.io.project import Project, find_root
    from gsd.output import views
    from gsd.run.execute import RunOptions
    from gsd.run.execute import execute_phase as run_phase

    if not is_plan_id(plan_id):
        raise UsageError(f"{plan_id!r} is not a plan id", hint="plan ids look like 01-02")
    project = Project(find_root(Path.cwd()))
    found_phase = project.phase(split_plan_id(plan_id)[0])
    options = RunOptions(timeout, allow_dirty, only_plan=plan_id)
    result = run_phase(project, found_phase, options)
    shown = views.render_outcomes(found_phase.name, result.outcomes, fmt, result.plans, plan_id)
    click.echo(shown, nl=False)
    click.echo(f"gsd: {result.message}", err=True)
    return result.exit_code


@cli.command()
@click.argument("plan_id")
@click.option(
    "--task", "task_index", type=click.IntRange(min=1),
    help="The checkpoint task to answer (default: the first one still waiting).",
)  # fmt: skip
@click.option("--option", "option_id", help="The option chosen at a checkpoint:decision.")
def approve(plan_id: str, task_index: int | None, option_id: str | None) -> int:
    """Answer a human checkpoint of a plan.

    The next `gsd execute-phase` continues past it (a plan with two checkpoints
    needs two approvals). Refused while a run is live.

    Example: gsd approve 01-02 --task 3 --option b
    """
    from gsd.io import approvals
    from gsd.io.lock import repo_lock
    from gsd.io.project import Project, find_root

    project = Project(find_root(Path.cwd()))
    plan = project.find_plan(plan_id)  # a usage error when there is no such plan
    named = None if task_index is None else approvals.checkpoint_task(plan, task_index)
    with repo_lock(project.root):  # a live run reads the answers: not under its feet
        task = named or approvals.first_waiting(project, plan)
        approvals.check_option(plan, task, option_id)
        approvals.record(project, plan_id, task.index, option_id)
    chosen = f" (option {option_id})" if option_id else ""
    click.echo(f"approved {plan_id} task {task.index}: {task.type}{chosen}")
    return EXIT_OK


@cli.command()
@format_option()
def status(fmt: str) -> int:
    """Show each phase's progress and the open blockers.

    Each plan: done, paused, failed, in progress or pending, and its committed
    tasks; then the open blockers of STATE.md.

    Example: gsd status --format json
    """
    from gsd.commands import progress

    project = _planned_project()
    click.echo(progress.render(progress.project_status(project), fmt), nl=False)
    return EXIT_OK


@cli.command()
@click.argument("phase", required=False)
@click.option("--check", is_flag=True, help="Change nothing; exit 1 when a file is stale.")
@format_option()
def sync(phase: str | None, check: bool, fmt: str) -> int:
    """Derive STATE.md and ROADMAP.md from the committed files.

    Plans done (their SUMMARY.md), counters, progress bar, metrics rows,
    ticks, progress rows, blockers (failures in the plan logs, checkpoints
    nobody approved) and Session Continuity, computed afresh: the same
    commits give the same bytes, whichever order branches were merged in.
    Only gsd's lines change. PHASE limits the per-phase rows, ticks and
    blockers to one phase (position and counters are always the project's).
    Never commits: commit the files yourself (execute-phase commits them
    with its docs). With --check, writes nothing and prints each stale line;
    exit 1 when a file is stale, 0 when both are fresh (for CI).

    Example: gsd sync --check || (gsd sync && git commit -am "docs: sync state")
    """
    import json

    from gsd.run import derive

    project = _planned_project()
    only = project.phase(phase) if phase is not None else None
    changes = derive.sync(project, only, write=not check)
    stale = [
        {"file": change.path.relative_to(project.root).as_posix(), "line": line}
        for change in changes
        for line in change.lines
    ]
    if fmt == "json":
        click.echo(json.dumps({"stale" if check else "written": stale}, indent=2))
    elif fmt == "markdown":
        click.echo("\n".join(f"- `{s['file']}` {s['line']}" for s in stale) or "- up to date")
    else:
        for row in stale:
            click.echo(f"{row['file']}: {row['line']}")
        files = plural(len(changes), "file")
        click.echo(f"gsd: {files} {'stale' if check else 'written'}" if changes
                   else "gsd: STATE.md and ROADMAP.md are up to date", err=True)  # fmt: skip
    return EXIT_FINDINGS if check and changes else EXIT_OK


@cli.command()
@click.option("--all", "every_run", is_flag=True, help="All runs in the log, not the last.")
@format_option((*LIST_FORMATS, "junit"))
def report(every_run: bool, fmt: str) -> int:
    """Show the last run: its timeline, tokens and cost.

    The timeline of spawns, results, retries and commits, then attempts, seconds,
    tokens and cost per agent and per plan. With --format junit, a test case per
    task of the plans the run took up: failed by its last attempt, skipped when
    it did not run.

    Example: gsd report --format markdown
    """
    from gsd.commands import report as run_report
    from gsd.formats import execlog
    from gsd.io.project import find_root

    root = find_root(Path.cwd())
    events, warnings = execlog.read_all(root / ".planning")
    _warn(warnings)
    if fmt == "junit":
        from gsd.io.project import Project

        cases = run_report.task_cases(events, _planned_tasks(Project(root)), not every_run)
        click.echo(run_report.junit(cases), nl=False)
        return EXIT_OK
    built = run_report.build(events, last_run_only=not every_run)
    click.echo(run_report.render(built, fmt), nl=False)
    return EXIT_OK


def _planned_tasks(project: Project) -> Callable[[str], list[Any]]:
    """The tasks of a plan as its file has them; none for a plan gone or unreadable."""
    from gsd.commands.report import PlannedTask
    from gsd.core.errors import GsdError

    def tasks_of(plan_id: str) -> list[PlannedTask]:
        try:
            plan = project.find_plan(plan_id)
        except GsdError:
            return []
        return [PlannedTask(t.index, t.name, t.is_checkpoint) for t in plan.tasks]

    return tasks_of


@cli.group()
def checkpoints() -> None:
    """List or delete the checkpoint tags made before each task.

    They are deleted right after the task, unless a run crashed.
    """


@checkpoints.command("list")
@format_option()
def checkpoints_list(fmt: str) -> int:
    """List the checkpoint tags: plan, task, when and commit.

    Any there are were left over by a crash.

    Example: gsd checkpoints list --format json
    """
    from gsd.io.checkpoint import Checkpoints
    from gsd.io.git import Git
    from gsd.output import views

    rows = [
        {"tag": c.tag, "plan": c.plan_id, "task": c.task, "created": c.created.isoformat(),
         "commit": c.sha[:12]}
        for c in Checkpoints(Git(Path.cwd())).tags()
    ]  # fmt: skip
    if not rows and fmt != "json":
        click.echo("No checkpoint tags.")
        return EXIT_OK
    click.echo(views.render_rows(rows, fmt, "checkpoints"), nl=False)
    return EXIT_OK


@checkpoints.command("prune")
@click.option("--older-than", type=click.FloatRange(min=0), help="Only tags older than H hours.")
def checkpoints_prune(older_than: float | None) -> int:
    """Delete the checkpoint tags a crashed run left behind.

    Refused while a run is live.
    In this checkout (where agents work only with workflow.use_worktrees false) the
    open checkpoints are forgotten too, nothing rolled back: run it once you have looked
    at what the interrupted run left. Plan worktrees keep their signed records, so the
    next run still rolls their half-done attempts back exactly.

    Example: gsd checkpoints prune --older-than 24
    """
    from datetime import timedelta

    from gsd.io.checkpoint import Checkpoints
    from gsd.io.git import Git
    from gsd.io.lock import RunLock
    from gsd.io.recovery import OpenCheckpoints

    age = timedelta(hours=older_than) if older_than is not None else None
    git = Git(Path.cwd())
    # never under a live run, in any worktree: its task's checkpoint is what a rollback needs
    with RunLock(git.common_dir):
        forgotten = OpenCheckpoints(git).drop() if age is None else []
        pruned = [*forgotten, *Checkpoints(git).prune(age)]
    for tag in pruned:
        click.echo(f"deleted {tag}")
    click.echo(f"{plural(len(pruned), 'checkpoint tag')} deleted", err=True)
    return EXIT_OK


def _with_sandbox(project: Project, tasks: list[TaskDispatch]) -> list[TaskDispatch]:
    """Each task with what its agent may write when it runs (`gsd.io.sandbox.describe`)."""
    import os
    import tempfile

    from gsd.io import sandbox

    settings = project.sandbox()
    tmpdir = Path(tempfile.gettempdir()) / "gsd-task-XXXXXX"
    shown = []
    for task in tasks:
        if task.tier is None or task.runner is None:  # a person answers it: no agent
            shown.append(task)
            continue
        place = project.root
        if not settings.in_place:  # where worktree.Worktrees puts the plan's worktree
            place = place / ".git" / "gsd" / "worktrees" / task.plan
        confined = settings.confine(tier=task.tier, runner=task.runner, worktree=place,
                                    tmpdir=tmpdir, environ=os.environ)  # fmt: skip
        shown.append(task._replace(sandbox=sandbox.describe(confined)))
    return shown


def _planned_project() -> Project:
    """The project here, for a command that needs its `.planning/` (git alone is not one)."""
    from gsd.io.project import NO_PLANNING_HINT, PLANNING, Project, find_root

    project = Project(find_root(Path.cwd()))
    if not project.planning.is_dir():
        raise UsageError(f"no {PLANNING}/ in {project.root}", hint=NO_PLANNING_HINT)
    return project


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        click.echo(f"gsd: warning: {warning}", err=True)


def run(args: list[str]) -> int:
    """Run the Click command line; Click's own errors are usage errors (exit 2), one line."""
    try:
        result = cli.main(args=args, prog_name="gsd", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        click.echo(usage_error_line(exc), err=True)
        return EXIT_USAGE
    except click.exceptions.Abort:  # Ctrl-C (Click turns KeyboardInterrupt into Abort)
        click.echo(INTERRUPTED, err=True)
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # shell completion (`_GSD_COMPLETE=...`) ends with sys.exit
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    return result if isinstance(result, int) else EXIT_OK


def usage_error_line(exc: click.ClickException) -> str:
    """`gsd: error: MESSAGE (see gsd COMMAND --help)`: SPEC 8's one line, not Click's four."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "gsd"
    message = " ".join(exc.format_message().split())
    return f"gsd: error: {message} (see {command} --help)"
