"""gsd challenge: a read-only agent challenges a phase's plans before they run (issue 24)."""

from __future__ import annotations

from pathlib import Path

import click

from gsd.cli.shared import SummarisedCommand
from gsd.core.errors import EXIT_OK


@click.command(cls=SummarisedCommand)
@click.argument("phase")
@click.option("--runner", help="The runner it runs on (default: review.runner, else its own).")
@click.option(
    "--agent", "agent_name", help="The agent (default: review.agent, else code-reviewer)."
)
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Seconds it may take.")
def challenge(phase: str, runner: str | None, agent_name: str | None, timeout: float | None) -> int:
    """Challenge a phase's plans before running them.

    A read-only agent reads the phase's plans (their text in its prompt) and the
    repository, in a throwaway worktree at HEAD, under the same sandbox,
    supervisor and timeout as any agent, and answers a Challenge Report:
    assumptions that may not hold, missing dependencies, tasks too large,
    alternatives. gsd writes it as NN-CHALLENGE.md next to the plans and does
    not commit it: review it, then commit it. Nothing else changes: an agent
    that changed anything is an error, its changes put back. The plans must be
    committed, and an NN-CHALLENGE.md with uncommitted changes is never written
    over. Refused while a run is live.
    Exit 0 written, 1 the agent gave no report (crashed, timed out, changed a
    file, answered unreadably: nothing written), 2 a problem to fix first.

    Example: gsd challenge 1 --runner codex
    """
    from gsd.io.plans.project import Project, find_root
    from gsd.run.challenge import ChallengeOptions, challenge_phase, summary_line

    project = Project(find_root(Path.cwd()))
    found = project.phase(phase)
    options = ChallengeOptions(runner=runner, agent=agent_name, timeout=timeout)
    done = challenge_phase(project, found, options, say=_say)
    for field, items in done.report.by_field():  # the agent's words: entry.main escapes
        click.echo(f"{field}: {len(items) or 'none'}")
        for item in items:
            click.echo(f"  - {item}")
    click.echo(f"gsd: {summary_line(done, project.root)}", err=True)
    return EXIT_OK


def _say(line: str) -> None:
    click.echo(f"[gsd] {line}", err=True)


COMMANDS = (challenge,)
