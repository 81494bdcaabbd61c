"""gsd undo: a finished plan or phase taken back with revert commits (issue 25)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

import click

from gsd.cli.shared import SummarisedCommand, format_option, planned_project, warn
from gsd.core.errors import EXIT_OK
from gsd.core.words import plural, some

if TYPE_CHECKING:
    from gsd.commands.undo import Undone


@click.command("undo", cls=SummarisedCommand)
@click.argument("target", metavar="PLAN|PHASE")
@click.option("--dry-run", is_flag=True, help="List the commits it would revert; change nothing.")
@format_option(("text", "json"))
def undo(target: str, dry_run: bool, fmt: str) -> int:
    """Take a finished plan or phase back with revert commits.

    gsd's merge of the plan (or, after a CI fan-out, the merge that brought it, or
    its commits one by one) and its docs commits are reverted with git revert,
    newest first, a merge against the branch it was merged into (-m 1): history
    only grows, nothing is reset or forced. The plan is not done any more (its
    SUMMARY.md goes with the revert); STATE.md and ROADMAP.md are derived again
    and committed as gsd's docs commits are. A phase undoes its done plans in the
    reverse order of their merges.
    Refused, with nothing changed, while a run is live, when a tracked file has
    uncommitted changes (named), when the plan is not done, when a plan that is
    done depends on it (depends_on), or when a commit after its merge changed
    one of its files (named, with what to undo first). A revert that conflicts
    is aborted (git revert --abort) and nothing is changed: the reverts are made
    in a scratch checkout, and this branch only moves once they all are.
    With --dry-run, list the commits it would revert, in order, and their files.
    Exit 0 undone (or would be), 2 refused.

    Example: gsd undo 01-02 --dry-run
    """
    from gsd.commands.undo import undo as run_undo

    project = planned_project()
    done = run_undo(project, target, dry_run=dry_run)
    if fmt == "json":  # subjects and file names may be an agent's: entry.main escapes
        click.echo(json.dumps({"dry_run": dry_run, **asdict(done)}, indent=2))
    else:
        click.echo(_text(done, dry_run), nl=False)
    warn(list(done.warnings))
    _summary(done, dry_run)
    return EXIT_OK


def _text(done: Undone, dry_run: bool) -> str:
    lines = [f"{'would revert' if dry_run else 'reverted'}, newest first:"]
    for n, step in enumerate(done.steps):
        how = " (merge, -m 1)" if step.merge else ""
        made = ""
        if n < len(done.made):
            made = f" -> {done.made[n][:12]}" if done.made[n] else " (nothing left to revert)"
        lines.append(f"  {step.sha[:12]} {step.subject}{how}{made}")
        lines += [f"      {path}" for path in step.files]
    if dry_run:
        lines.append("then STATE.md and ROADMAP.md derived again")
    else:
        lines += [f"derived {path}" for path in done.derived]
    return "\n".join(lines) + "\n"


def _summary(done: Undone, dry_run: bool) -> None:
    reverts = plural(len(done.steps), "revert commit")
    plans = some(done.plans, 5)
    if dry_run:
        click.echo(f"gsd: {done.scope}: {reverts} would undo {plans}; nothing changed", err=True)
    else:
        click.echo(f"gsd: {done.scope} undone ({plans}): {reverts}", err=True)


COMMANDS = (undo,)
