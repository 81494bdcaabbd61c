"""The one way gsd starts a program: argv lists only, never a shell."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import NamedTuple

# Exit status a shell gives for a program it cannot find.
EXIT_NOT_FOUND = 127


class Completed(NamedTuple):
    """A finished short command: its exit status and captured output."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


class CompletedBytes(NamedTuple):
    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes


def run_bytes(
    argv: list[str], *, cwd: Path | None = None, input: bytes | None = None
) -> CompletedBytes:
    """Run a short helper command (git plumbing) to completion, capturing bytes.

    A missing program is a result with status 127, not an exception.
    """
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        return CompletedBytes(tuple(argv), EXIT_NOT_FOUND, b"", f"{argv[0]}: not found".encode())
    except PermissionError:
        return CompletedBytes(
            tuple(argv), EXIT_NOT_FOUND - 1, b"", f"{argv[0]}: permission denied".encode()
        )
    return CompletedBytes(tuple(argv), done.returncode, done.stdout, done.stderr)


def run(argv: list[str], *, cwd: Path | None = None, input: str | None = None) -> Completed:
    """`run_bytes` for text output (UTF-8, undecodable bytes replaced)."""
    done = run_bytes(argv, cwd=cwd, input=None if input is None else input.encode())
    return Completed(
        done.argv,
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )
