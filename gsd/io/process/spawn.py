"""Starting one supervised program through gsd's launcher: output files, stdin, the status pipe."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from gsd.core.safety import credentials

if TYPE_CHECKING:
    from gsd.io.confine.sandbox import Confinement


def start(
    argv: list[str],
    cwd: Path,
    env: dict[str, str] | None,
    stdin_path: Path | None,
    stdout_path: Path,
    stderr_path: Path,
    confinement: Confinement | None,
    warden: str | None = None,
) -> tuple[subprocess.Popen[bytes], int] | str:
    """Open the output files and start `argv` through gsd/io/process/launch.py in a new session: the
    child and the read end of the pipe its launcher reports a failure to start on (see
    `read_status`), or why it could not be started (also written to its stderr file).
    `warden` is the spec of the warden that ends what the program leaves running
    (gsd/io/process/warden.py)."""
    from gsd.io.confine import sandbox

    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    stderr_path.parent.mkdir(parents=True, exist_ok=True)
    if confinement is not None:  # the user's push credentials stay gsd's
        env = credentials.agent_environ(os.environ if env is None else env, confinement.pass_env)
    if confinement is not None and confinement.landlock:
        # Its own output files: it writes them through fds 1 and 2 anyway, and a
        # `>/dev/stderr` opens them again by name.
        writable = (*confinement.writable, stdout_path, stderr_path)
        confinement = confinement._replace(writable=writable)
    with contextlib.ExitStack() as files:
        out = files.enter_context(open(stdout_path, "wb"))
        # One file for both (`2>&1`): one open file, one offset; two opens would each
        # write from offset 0 over the other's bytes.
        same = _same_file(stdout_path, stderr_path)
        err = out if same else files.enter_context(open(stderr_path, "wb"))
        stdin = files.enter_context(open(stdin_path, "rb")) if stdin_path else subprocess.DEVNULL
        try:
            program = _find_program(argv[0], env)
            reader, writer = os.pipe()  # not inherited by gsd's other children (PEP 446)
            files.callback(os.close, writer)  # the launcher holds its own copy
            command = sandbox.launcher_argv(
                [program, *argv[1:]], confinement, os.getpid(), status_fd=writer, warden=warden
            )
            try:
                child = subprocess.Popen(
                    command,
                    cwd=cwd,
                    env=env,
                    stdin=stdin,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=(writer,),
                )
            except BaseException:
                os.close(reader)
                raise
        except OSError as exc:
            err.write(f"gsd: cannot start {argv[0]}: {exc.strerror or exc}\n".encode())
            return f"{argv[0]}: {exc.strerror or exc}"
        return child, reader


def _find_program(name: str, env: dict[str, str] | None) -> str:
    """`name` found on the child's PATH (as exec would), or FileNotFoundError; a name
    with a slash is left to the launcher, relative to the child's working folder."""
    import errno
    import shutil

    if "/" in name:
        return name
    found = shutil.which(name, path=os.pathsep.join(os.get_exec_path(env)))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "not found on PATH")
    return found


def read_status(reader: int) -> tuple[str | None, dict[str, str]]:
    """The launcher's one-line reason the program never ran, or None: the program's end
    of the pipe is closed on exec; and the warden's report (gsd/io/process/warden.py: key=value
    words, {} when there was none), written just before it exited. Never blocks."""
    from gsd.io.process.warden import REPORT

    try:
        os.set_blocking(reader, False)
        data = os.read(reader, 65536)
    except OSError:  # nothing written and still open somewhere: the program ran
        data = b""
    finally:
        os.close(reader)
    failure: list[str] = []
    report: dict[str, str] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith(REPORT):
            report = dict(word.partition("=")[::2] for word in line[len(REPORT) :].split())
        elif line.strip():
            failure.append(line.strip().removeprefix("gsd-launch: "))
    return " ".join(failure) or None, report


def _same_file(a: Path, b: Path) -> bool:
    """Whether `b` names the file `a` (which exists) names, however spelled."""
    try:
        return a == b or os.path.samefile(a, b)
    except OSError:
        return False  # `b` does not exist yet: not the same file
