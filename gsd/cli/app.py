"""The `gsd` command line: the Click group every command is on, and its one error line."""

from __future__ import annotations

import click

from gsd import __version__
from gsd.cli import (
    challenge_commands,
    read_commands,
    run_commands,
    salvage_commands,
    setup_commands,
    undo_commands,
)
from gsd.cli.shared import SummarisedGroup
from gsd.core.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, INTERRUPTED


@click.group(cls=SummarisedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gsd")
def cli() -> None:
    """Validate, schedule and run GSD-style PLAN.md files.

    Exit codes: 0 ok, 1 findings or failed work, 2 usage or input error,
    3 internal error, 4 paused at a human checkpoint.
    """


# Each concern's commands live in its own module; `gsd --help` lists them sorted by name.
for command in (
    *challenge_commands.COMMANDS,
    *read_commands.COMMANDS,
    *run_commands.COMMANDS,
    *salvage_commands.COMMANDS,
    *setup_commands.COMMANDS,
    *undo_commands.COMMANDS,
):
    cli.add_command(command)


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
