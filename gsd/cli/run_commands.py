"""The commands that run plans or change what runs left: execute-phase, execute-plan,
approve, sync, checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from gsd.cli.shared import (
    SummarisedCommand,
    SummarisedGroup,
    format_option,
    planned_project,
    warn,
)
from gsd.core import layout
from gsd.core.errors import EXIT_FINDINGS, EXIT_OK, GsdError, UsageError
from gsd.core.ids import is_plan_id, split_plan_id
from gsd.core.words import plural

if TYPE_CHECKING:
    from gsd.io.git.repo import Git
    from gsd.io.plans.phases import Phase
    from gsd.io.plans.project import Project
    from gsd.run.context import RunOptions


@click.command("execute-phase", cls=SummarisedCommand)
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
@click.option(
    "--budget-usd",
    type=click.FloatRange(min=0, min_open=True),
    help="Stop the run once it has cost this many US dollars (config: budget.usd).",
)
@click.option(
    "--budget-tokens",
    type=click.IntRange(min=1),
    help="Stop the run once it has used this many tokens (config: budget.tokens).",
)
@format_option(("text", "markdown", "json"))
def execute_phase(
    phase: str,
    dry_run: bool,
    wave: int | None,
    plan_id: str | None,
    max_parallel: int | None,
    timeout: float | None,
    allow_dirty: bool,
    auto: bool,
    budget_usd: float | None,
    budget_tokens: int | None,
    fmt: str,
) -> int:
    """Run a phase's plans: one supervised agent per task.

    Wave by wave, a commit per task. PHASE is a number (1, 02.1) or a folder
    name (01-setup).

    With --dry-run, print for every task its wave, plan, specialist as written,
    the agent it resolves to (and why, if it falls back), tier, runner, argv,
    timeout, grace period and sandbox, and change nothing: no files, tags or
    commits; a runner program that is not installed is a warning (the live run
    refuses to start); with each task's estimate from the history of its agent
    on its runner (median, range, runs; or "no history") and the phase's total.
    Without it, run: waves in order; every plan in its own git worktree on
    branch gsd/PLAN, in a sandbox where Linux has Landlock, merged back --no-ff
    in plan order; the plans of a wave side by side (plans that share
    files_modified, or all with --max-parallel 1, one after another). Your
    uncommitted files are never touched: a merge that would is left on its
    branch. Agents run in your checkout only with workflow.use_worktrees false.
    Ctrl-C, SIGTERM or SIGHUP end every agent and roll back (exit 130/143/129);
    a run stopped at any moment resumes where it stopped when started again.
    With --budget-usd/--budget-tokens (or config budget) no task starts once the
    run's spend reaches it, and a delegation past what is left is rolled back.
    Refused before anything runs (the dry run warns) on a detached HEAD, or
    when a plan or agent program is not committed: plans run in worktrees
    made from the last commit.
    Exit 0 done, 1 a task failed or a merge could not be made, 2 a problem to
    fix before anything runs, 4 paused at a human checkpoint.

    Example: gsd execute-phase 1 --dry-run --format json
    """
    from gsd.io.plans.project import Project, find_root
    from gsd.run.context import RunOptions

    project = Project(find_root(Path.cwd()))
    found_phase = project.phase(phase)
    options = RunOptions(
        timeout=timeout,
        allow_dirty=allow_dirty,
        auto=auto,
        only_plan=plan_id,
        max_parallel=max_parallel,
        only_wave=wave,
        budget_usd=budget_usd,
        budget_tokens=budget_tokens,
    )
    if dry_run:
        return _dry_run(project, found_phase, options, fmt)
    return _live_run(project, found_phase, options, fmt)


def _live_run(project: Project, found_phase: Phase, options: RunOptions, fmt: str) -> int:
    """`execute-phase`: the run, then its tables; its last line on stderr."""
    from gsd.output import views
    from gsd.run.execute import execute_phase as run_phase

    result = run_phase(project, found_phase, options)
    shown = views.render_outcomes(found_phase.name, result.outcomes, fmt, result.plans)
    click.echo(shown, nl=False)
    click.echo(f"gsd: {result.message}", err=True)
    return result.exit_code


def _dry_run(project: Project, found_phase: Phase, options: RunOptions, fmt: str) -> int:
    """`execute-phase --dry-run`: every task's dispatch shown with its estimate, nothing
    changed; warned when a runner program is missing, the phase is invalid or its
    estimate is past the run's budget."""
    from gsd.commands.dryrun import dry_run_tasks, over_budget, phase_validation
    from gsd.commands.estimate import estimates
    from gsd.output import estimateview

    listed, warnings = phase_validation(project, found_phase)
    click.echo(listed, err=True, nl=False)
    warn(warnings)
    o = options
    tasks = dry_run_tasks(
        project, found_phase, warn, wave=o.only_wave, plan_id=o.only_plan, timeout=o.timeout
    )
    estimated = estimates(project, tasks)
    warn(estimated.warnings + over_budget(project, estimated.total, o.budget_usd, o.budget_tokens))
    click.echo(estimateview.render(found_phase.name, tasks, fmt, estimated), nl=False)
    return EXIT_OK


@click.command("execute-plan", cls=SummarisedCommand)
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
    from gsd.io.plans.project import Project, find_root
    from gsd.output import views
    from gsd.run.context import RunOptions
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


@click.command(cls=SummarisedCommand)
@click.argument("plan_id")
@click.option(
    "--task",
    "task_index",
    type=click.IntRange(min=1),
    help="The checkpoint task to answer, or the plan-first task whose proposal to approve "
    "(default: the first checkpoint still waiting).",
)
@click.option("--option", "option_id", help="The option chosen at a checkpoint:decision.")
def approve(plan_id: str, task_index: int | None, option_id: str | None) -> int:
    """Answer a human checkpoint, or approve a plan-first proposal.

    The next `gsd execute-phase` continues past it (a plan with two checkpoints
    needs two approvals). A proposal's approval holds for the file as it is now:
    changed, it must be approved again. Refused while a run is live.

    Example: gsd approve 01-02 --task 3 --option b
    """
    from gsd.io.plans import approvals
    from gsd.io.plans.project import Project, find_root

    project = Project(find_root(Path.cwd()))
    click.echo(approvals.approve(project, plan_id, task_index, option_id))
    return EXIT_OK


@click.command(cls=SummarisedCommand)
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
    exit 1 when a file is stale, 0 when both are fresh (for CI). Writing is
    refused while a run is live (it derives and commits them itself).

    Example: gsd sync --check || (gsd sync && git commit -am "docs: sync state")
    """
    import json

    from gsd.run import derive

    project = planned_project()
    only = project.phase(phase) if phase is not None else None
    if check:  # reads only
        changes = derive.sync(project, only, write=False)
    else:
        from gsd.io.lock import repo_lock

        with repo_lock(project.root):  # a live run derives and commits them itself
            changes = derive.sync(project, only, write=True)
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
        click.echo(
            f"gsd: {files} {'stale' if check else 'written'}"
            if changes
            else "gsd: STATE.md and ROADMAP.md are up to date",
            err=True,
        )
    return EXIT_FINDINGS if check and changes else EXIT_OK


@click.group(cls=SummarisedGroup)
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
    from gsd.io.git.checkpoint import Checkpoints
    from gsd.io.git.repo import Git
    from gsd.output import views

    rows = [
        {
            "tag": c.tag,
            "plan": c.plan_id,
            "task": c.task,
            "created": c.created.isoformat(),
            "commit": c.sha[:12],
        }
        for c in Checkpoints(Git(Path.cwd())).tags()
    ]
    if not rows and fmt != "json":
        click.echo("No checkpoint tags.")
        return EXIT_OK
    click.echo(views.render_rows(rows, fmt, "checkpoints"), nl=False)
    return EXIT_OK


@checkpoints.command("prune")
@click.option("--older-than", type=click.FloatRange(min=0), help="Only tags older than H hours.")
def checkpoints_prune(older_than: float | None) -> int:
    """Delete the checkpoint tags a crashed run left behind, and the salvage refs.

    Refused while a run is live.
    In this checkout (where agents work only with workflow.use_worktrees false) the
    open checkpoints are forgotten too, nothing rolled back: run it once you have looked
    at what the interrupted run left. In plan worktrees, gsd's own, half-done attempts
    are rolled back from their signed records (their changes kept under new salvage
    refs, which this prune leaves), and worktrees an older gsd left under
    .git/gsd/worktrees/ are removed (their branches keep the work), and so is the spare
    checkout the last plan left for the next one.

    Example: gsd checkpoints prune --older-than 24
    """
    from datetime import timedelta

    from gsd.io.git import salvage
    from gsd.io.git.checkpoint import Checkpoints
    from gsd.io.git.recovery import OpenCheckpoints
    from gsd.io.git.repo import Git
    from gsd.io.git.worktree import Worktrees
    from gsd.io.lock import RunLock

    age = timedelta(hours=older_than) if older_than is not None else None
    git = Git(Path.cwd())
    # never under a live run, in any worktree: its task's checkpoint is what a rollback needs
    with RunLock(git.common_dir):
        # first: what the rollbacks below keep of a killed run's attempts stays
        salvaged = salvage.prune(git, age)
        worktrees = Worktrees(git, _worktrees_folder(git))
        for line in [*worktrees.settle(forget=True), *worktrees.drop_spare()]:
            click.echo(f"gsd: {line}", err=True)
        forgotten = OpenCheckpoints(git).drop() if age is None else []
        pruned = [*forgotten, *Checkpoints(git).prune(age)]
    for tag in [*pruned, *salvaged]:
        click.echo(f"deleted {tag}")
    click.echo(f"{plural(len(pruned), 'checkpoint tag')} deleted", err=True)
    if salvaged:
        click.echo(f"{plural(len(salvaged), 'salvage ref')} deleted", err=True)
    return EXIT_OK


def _worktrees_folder(git: Git) -> Path | None:
    """Where this repository's plan worktrees go (None: not a gsd project, or a folder
    the run would refuse; there is then no spare checkout to remove)."""
    import os

    from gsd.io.plans.project import Project

    if not (git.root / layout.PLANNING).is_dir():
        return None
    try:
        return Project(git.root).worktrees_folder(git.root, git.common_dir, os.environ)
    except GsdError:
        return None


COMMANDS = (execute_phase, execute_plan, approve, sync, checkpoints)
