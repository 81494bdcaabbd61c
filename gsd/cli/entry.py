"""The `gsd` program: run a command, map every error to one line and an exit code."""

from __future__ import annotations

import os
import sys

from gsd.core.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    INTERRUPTED,
    GsdError,
    Interrupted,
)

# Click's shell-completion switch for the program name `gsd` (see README: Shell completion).
COMPLETE_VAR = "_GSD_COMPLETE"


def main(argv: list[str] | None = None) -> int:
    """Run `argv` (sys.argv's by default) with everything printed made harmless to a
    terminal: an agent's text shows its control characters as `^[` (gsd.core.visible)."""
    from gsd.io.terminal import escaped_output

    args = sys.argv[1:] if argv is None else list(argv)
    with escaped_output():
        return _main(args)


def _main(args: list[str]) -> int:
    try:
        # a shell asking for completions (`_GSD_COMPLETE=bash_complete gsd`) needs Click
        completing = COMPLETE_VAR in os.environ
        if args[:1] == ["validate"] and not completing:
            from gsd.cli import lint

            options = lint.parse(args[1:])
            if options is not None:  # the git-hook path: no Click
                return lint.run(options)
        if args[:2] == ["hooks", "run"] and len(args) == 3 and not completing:
            if not args[2].startswith("-"):  # an agent CLI's hook, on every edit: no Click
                return hook_call(args[2])
        if args in (["mcp"], ["mcp", "--allow-run"]) and not completing:  # an agent CLI waits
            from gsd.cli import mcp_start

            return mcp_start.main(allow_run=len(args) == 2)
        from gsd.cli.app import run

        return run(args)
    except GsdError as exc:
        sys.stdout.flush()
        sys.stderr.write(f"gsd: error: {exc}\n")
        return exc.exit_code
    except Interrupted as exc:  # a run stopped cleanly on SIGINT, SIGTERM or SIGHUP
        _quietly(
            f"gsd: {exc}; every agent was ended and its attempt rolled back (a run "
            "resumes where it stopped when started again)\n"
        )
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{INTERRUPTED}\n")  # past the ^C, as Click does on its path
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`gsd ... | head`): not an error; keep Python quiet at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the one place an unexpected error is caught
        return internal_error(exc)


def hook_call(name: str) -> int:
    """`gsd hooks run NAME` (the Click command calls this too): one agent-CLI hook call,
    its JSON read from stdin once NAME is known to be a hook's."""
    from gsd.commands.clihooks import call

    answer = call(name, sys.stdin.read)
    sys.stdout.write(answer.stdout)
    sys.stderr.write(answer.stderr)
    return answer.exit_code


def _quietly(text: str) -> None:
    """Write to stderr unless it is gone (SIGHUP: the terminal was closed)."""
    try:
        sys.stdout.flush()
        sys.stderr.write(text)
        sys.stderr.flush()
    except OSError:
        pass


def internal_error(exc: BaseException) -> int:
    """Write the traceback to a file and say where, in one line."""
    import tempfile
    import traceback

    handle, path = tempfile.mkstemp(prefix="gsd-crash-", suffix=".txt")
    with os.fdopen(handle, "w") as out:
        traceback.print_exception(exc, file=out)
    sys.stderr.write(
        f"gsd: internal error: {type(exc).__name__}: {exc} (traceback in {path}; "
        "please report it)\n"
    )
    return EXIT_INTERNAL
