"""The commands that set a project up and check it, and serve it to agent CLIs: init,
doctor, agents, hooks, mcp."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from gsd.cli.shared import SummarisedCommand, SummarisedGroup, format_option, planned_project, warn
from gsd.core import layout
from gsd.core.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from gsd.core.words import did_you_mean, plural
from gsd.formats.runners.agenthooks import HOOK_NAMES


@click.command(cls=SummarisedCommand)
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
    click.echo("\n".join(scaffold.next_steps(directory)), err=True)
    if not scaffold.in_git_work_tree(where):
        warn(
            [
                f"{where.resolve()} is not in a git repository; run git init before "
                "gsd execute-phase or gsd hooks install"
            ]
        )
    return EXIT_OK


@click.command(cls=SummarisedCommand)
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
    from gsd.output import doctorview

    found = checks.diagnose(Path.cwd())
    click.echo(doctorview.render(found, fmt), nl=False)
    return found.exit_code


@click.group(cls=SummarisedGroup)
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
    from gsd.io.plans.project import Project, find_root
    from gsd.output import views

    project = Project(find_root(Path.cwd()))
    found, warnings = project.agents(bodies=False)  # a list shows no persona text
    warn(warnings)
    ordered = sorted(found.values(), key=lambda agent: agent.name)
    rows = [views.agent_row(agent, project.root, fmt) for agent in ordered]
    click.echo(views.render_rows(rows, fmt, "agents", views.AGENT_TEXT_COLUMNS), nl=False)
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
    from gsd.io.plans.project import Project, find_root
    from gsd.output import views

    project = Project(find_root(Path.cwd()))
    found = project.agent_scan(bodies=False)
    warn(project.missing_agent_paths())
    click.echo(views.render_agent_check(found, fmt, project.root), nl=False)
    return EXIT_FINDINGS if found.any_skipped else EXIT_OK


@agents.command("sync")
def agents_sync() -> int:
    """Write the specialists found to .planning/available_agents.md.

    Every agent but gsd's own (gsd-*), with its description: the roster plans name
    specialists from. An agent in a subfolder or plugin is listed by its
    `ns:name` alias too; one whose name another agent took, by its alias alone.

    Example: gsd agents sync && git diff .planning/available_agents.md
    """
    from gsd.formats.files import write_atomic
    from gsd.formats.planning import roster

    project = planned_project()
    found, warnings = project.agents()
    warn(warnings)
    entries = found.roster_entries()
    specialists = {key: a.description for key, a in entries.items() if not a.is_system}
    path = project.planning / layout.ROSTER_FILE
    write_atomic(path, roster.render(specialists, found.aliases()))
    click.echo(f"wrote {path.relative_to(project.root)}: {plural(len(specialists), 'specialist')}")
    return EXIT_OK


@click.group(cls=SummarisedGroup)
def hooks() -> None:
    """Install or remove gsd's git hook or its agent-CLI hooks."""


def _cli_flags(command: Callable[..., int]) -> Callable[..., int]:
    """`--claude` and `--gemini`: the agent CLIs' hooks instead of git's."""
    command = click.option(
        "--gemini", is_flag=True, help="Gemini CLI's hooks, in .gemini/settings.json."
    )(command)
    return click.option(
        "--claude", is_flag=True, help="Claude Code's hooks, in .claude/settings.json."
    )(command)


def _chosen(claude: bool, gemini: bool) -> list[str]:
    return [name for name, on in (("claude", claude), ("gemini", gemini)) if on]


@hooks.command("install")
@click.option(
    "--gsd",
    "program",
    type=click.Path(dir_okay=False),
    help="The gsd program the hook runs (default: this one, else gsd on PATH).",
)
@click.option(
    "--hook",
    "extra",
    multiple=True,
    metavar="NAME",
    help=f"Also install this agent-CLI hook: {', '.join(HOOK_NAMES[2:])} or all (repeatable).",
)
@_cli_flags
def hooks_install(program: str | None, extra: tuple[str, ...], claude: bool, gemini: bool) -> int:
    """Install gsd's git hook, or its agent-CLI hooks.

    The git hook is a pre-commit hook that validates staged plan files.
    A commit whose staged plan files have errors is refused.
    The hook runs `gsd validate --staged` on the plan files (.planning/**/*-PLAN.md)
    the commit adds or changes; a commit touching none costs one git call and never
    starts gsd. An existing pre-commit hook is moved to pre-commit.gsd-previous and
    run first (its failure still blocks the commit); `gsd hooks uninstall` puts it
    back. Honours core.hooksPath and worktrees; installing again changes nothing.

    With --claude (.claude/settings.json) or --gemini (.gemini/settings.json), instead:
    after the agent writes or edits a plan file gsd validates it and hands its errors
    back to the model, and a session starts with `gsd status` in a few lines. Other
    keys and hooks in the file are kept; installing again changes nothing. --hook adds
    more: session-end (a summary of what ran, for you), pre-tool (denies a shell
    command that writes a plan file: the model must use its edit tool), after-agent
    (says when a delegated answer lacks its Task Report), pre-compact (saves a state
    snapshot under .git/gsd/snapshots/ and tells the model how to read it back).

    Example: gsd hooks install --claude --gemini --hook all
    """
    clis = _chosen(claude, gemini)
    if extra and not clis:
        raise UsageError("--hook is for the agent CLIs' hooks", hint="add --claude or --gemini")
    for name in extra:
        if name not in (*HOOK_NAMES, "all"):
            known = f"one of {', '.join(HOOK_NAMES)} or all"
            close = did_you_mean(name, (*HOOK_NAMES, "all"))
            raise UsageError(
                f"--hook {name}: no such hook", hint=f"{close} {known}" if close else known
            )
    if clis:
        from gsd.commands import clihooks

        names = HOOK_NAMES if "all" in extra else extra
        reports = [clihooks.install(Path.cwd(), cli, program, names) for cli in clis]
    else:
        from gsd.commands import hooks as git_hooks

        reports = [git_hooks.install(Path.cwd(), program)]
    for report in reports:
        warn(report.warnings)
        for line in report.lines:
            click.echo(line)
    return EXIT_OK


@hooks.command("uninstall")
@_cli_flags
def hooks_uninstall(claude: bool, gemini: bool) -> int:
    """Remove gsd's git hook (restoring yours), or its agent-CLI hooks.

    The replaced hook comes back byte for byte.
    A hook that is not gsd's is never touched; with no gsd hook installed this says
    so and exits 0. With --claude or --gemini, only gsd's entries leave that CLI's
    settings.json; a hooks section gsd emptied goes, anything else stays.

    Example: gsd hooks uninstall --claude
    """
    clis = _chosen(claude, gemini)
    if clis:
        from gsd.commands import clihooks

        lines = [line for cli in clis for line in clihooks.uninstall(Path.cwd(), cli).lines]
    else:
        from gsd.commands import hooks as git_hooks

        lines = git_hooks.uninstall(Path.cwd()).lines
    for line in lines:
        click.echo(line)
    return EXIT_OK


@hooks.command("run")
@click.argument("name")
def hooks_run(name: str) -> int:
    """Answer one agent-CLI hook call, reading its JSON on stdin.

    NAME is claude-WHAT or gemini-WHAT, WHAT one of post-edit, session-start,
    session-end, pre-tool, after-agent, pre-compact; `gsd hooks install
    --claude|--gemini` writes these commands. Exit 2 (Claude Code) or a JSON `deny`
    (Gemini CLI) hands a plan's errors to the model; anything gsd cannot do is one line
    on stderr and exit 1, which neither CLI treats as blocking.

    Example: echo '{"cwd": "."}' | gsd hooks run claude-session-start
    """
    import sys

    from gsd.commands.clihooks import call

    answer = call(name, sys.stdin.read)
    sys.stdout.write(answer.stdout)
    sys.stderr.write(answer.stderr)
    return answer.exit_code


@click.command("mcp", cls=SummarisedCommand)
@click.option(
    "--allow-run",
    is_flag=True,
    help="Also serve the tools that run plans: execute_phase, execute_plan, run_status, "
    "run_stop, approve, progress.",
)
def mcp_command(allow_run: bool) -> int:
    """Serve the plans to agent CLIs as MCP tools over stdio.

    The project is the one the current directory is in. Read-only tools:
    validate, show, waves, status, context_chain, errors, report and dry_run,
    each answering with the JSON of the matching command. With --allow-run
    also: execute_phase and execute_plan (a supervised run in the background,
    as from the shell: the run lock, sandbox, logs; it outlives the server),
    run_status, progress, run_stop (Ctrl-C: attempts rolled back) and approve
    (gsd approve). Never --auto or --allow-dirty; never served to an agent a
    gsd run started. Started by the agent CLI, not by hand; needs the MCP SDK:
    pip install 'gsd-plans[mcp]'.

    Example: claude mcp add gsd -- gsd mcp --allow-run
    """
    from gsd.cli import mcp_start

    return mcp_start.main(allow_run)


COMMANDS = (init, doctor, agents, hooks, mcp_command)
