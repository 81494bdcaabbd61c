"""gsd salvage: list, show or apply the changes of rolled-back attempts (issue 24)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import click

from gsd.cli.shared import SummarisedGroup, format_option
from gsd.core.errors import EXIT_OK


@click.group(cls=SummarisedGroup)
def salvage() -> None:
    """List, show or apply what rolled-back attempts changed.

    Before gsd rolls back an attempt that changed files (a failed check, a timeout,
    a policy violation, an interruption ...), it keeps the changes as a commit on no
    branch under refs/gsd/salvage/PLAN/TASK/ATTEMPT (protected files left out).
    gsd checkpoints prune deletes them, and so does salvage.keep_days at a run's start.
    """


@salvage.command("list")
@format_option()
def salvage_list(fmt: str) -> int:
    """List the salvaged attempts: plan, task, attempt, error type, age and files.

    Example: gsd salvage list --format json
    """
    from gsd.io.git import salvage as salvaged
    from gsd.io.git.repo import Git
    from gsd.output import views

    now = datetime.now(timezone.utc)
    rows = [
        {
            "ref": s.ref,
            "plan": s.plan,
            "task": s.task,
            "attempt": s.attempt,
            "error_type": s.error_type,
            "age": _age((now - s.created).total_seconds()),
            "files": ", ".join(s.files),
        }
        for s in salvaged.listed(Git(Path.cwd()))
    ]
    if not rows and fmt != "json":
        click.echo("No salvaged attempts.")
        return EXIT_OK
    click.echo(views.render_rows(rows, fmt, "salvage", text=_TEXT), nl=False)
    return EXIT_OK


@salvage.command("show")
@click.argument("spec", nargs=-1, required=True, metavar="REF|PLAN TASK ATTEMPT")
def salvage_show(spec: tuple[str, ...]) -> int:
    """Show a salvaged attempt's diff (agent text escaped).

    Example: gsd salvage show 01-02 1 2
    """
    from gsd.io.git import salvage as salvaged
    from gsd.io.git.repo import Git

    git = Git(Path.cwd())
    found = salvaged.find(git, spec)
    click.echo(f"{found.ref} ({found.error_type or 'unknown'}) on {found.parent[:12]}")
    click.echo(salvaged.diff(git, found), nl=False)
    return EXIT_OK


@salvage.command("apply")
@click.argument("spec", nargs=-1, required=True, metavar="REF|PLAN TASK ATTEMPT")
def salvage_apply(spec: tuple[str, ...]) -> int:
    """Apply a salvaged attempt's changes to this checkout (not staged, not committed).

    Refused, with nothing changed, when a file it touches has uncommitted changes.

    Example: gsd salvage apply refs/gsd/salvage/01-02/1/2
    """
    from gsd.io.git import salvage as salvaged
    from gsd.io.git.repo import Git

    git = Git(Path.cwd())
    found = salvaged.find(git, spec)
    files = salvaged.apply(git, found)
    for path in files:
        click.echo(f"applied {path}")
    click.echo(f"gsd: {found.ref} applied to {git.root}; review and commit it", err=True)
    return EXIT_OK


def _age(seconds: float) -> str:
    """`42s`, `5m`, `3h`, `2d`."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(max(seconds, 0))}s"


_TEXT = ("ref", "plan", "task", "attempt", "error_type", "age", "files")
COMMANDS = (salvage,)
