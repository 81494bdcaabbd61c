"""No terminal for agents (issue 20): `gsd execute-phase` runs on a real pty whose other end
plays the user's shell, and a hostile agent (and its task's `<automated>` check) try to
push a command into that terminal with TIOCSTI, through /dev/tty, gsd's own descriptors
(/proc/<gsd>/fd/0-2) and the pty's /dev/pts/N, and to write escape sequences to it.

Judged on the pty: after gsd exits, the "shell" (the driver below, which owns the
terminal) reads every byte of input waiting for it; none may be the agent's. A push by
the test itself, as root from outside any sandbox, shows that the channel is real.
"""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.confined import SANDBOXES, hostile_phase, seen
from tests.conftest import REPO
from tests.hostile import LANDLOCK

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux ptys")

FACTS = ("pid", "sid", "gsd sid", "tty_nr", "fds are ttys")  # the rest are attempts
MARK = b"PWN" + b"ED"  # never in the agent's text as a whole: only what it builds

INTRUDER = """\
TIOCSTI, TIOCSCTTY = 0x5412, 0x540E
# gsd started this session's leader (the check's leader is /bin/sh)
gsd = int(open(f"/proc/{os.getsid(0)}/stat").read().rsplit(")", 1)[1].split()[1])
pts = open(os.path.join(CONTROL, "pts")).read()
line = ("echo PWN" + "ED-" + ROLE + "\\n").encode()
title = ("\\x1b]0;PWN" + "ED-title\\x07\\x1b[2J").encode()
seen["pid"], seen["sid"], seen["gsd sid"] = os.getpid(), os.getsid(0), os.getsid(gsd)
seen["tty_nr"] = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[4])
seen["fds are ttys"] = [os.isatty(fd) for fd in (0, 1, 2)]


def push(path, flags, steal=False):
    fd = os.open(path, flags)
    try:
        if steal:
            fcntl.ioctl(fd, TIOCSCTTY, 1)
        for byte in line:
            fcntl.ioctl(fd, TIOCSTI, bytes([byte]))
    finally:
        os.close(fd)


def write(path):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, title + line)
    finally:
        os.close(fd)


for flags, how in ((os.O_RDONLY, "read"), (os.O_RDWR, "rdwr")):
    attempt(f"/dev/tty {how} TIOCSTI", lambda: push("/dev/tty", flags))
    attempt(f"pts {how} TIOCSTI", lambda: push(pts, flags))
    for fd in (0, 1, 2):
        attempt(f"gsd fd {fd} {how} TIOCSTI", lambda: push(f"/proc/{gsd}/fd/{fd}", flags))
attempt("pts TIOCSCTTY steal", lambda: push(pts, os.O_RDONLY, steal=True))
for fd in (0, 1, 2):
    attempt(f"own fd {fd} TIOCSTI", lambda: push(f"/proc/self/fd/{fd}", os.O_RDONLY))
for path in ("/dev/tty", pts, f"/proc/{gsd}/fd/1", f"/proc/{gsd}/fd/2"):
    attempt(f"write {path}", lambda: write(path))
"""

# The user's shell: owns the terminal (session leader, controlling tty), runs gsd in its
# foreground, then reads every byte of input the terminal holds for it.
SHELL = r"""
import os, select, subprocess, sys, termios, time
out, cwd = sys.argv[1], sys.argv[2]
os.close(os.open(os.ttyname(0), os.O_RDWR))  # a session leader's first tty: its terminal
code = subprocess.run([sys.executable, "-m", "gsd", "execute-phase", "1"], cwd=cwd).returncode
with open(out + ".code", "w") as handle:
    handle.write(str(code))
deadline = time.time() + 30
while not os.path.exists(out + ".pushed") and time.time() < deadline:
    time.sleep(0.05)
mode = termios.tcgetattr(0)
mode[3] &= ~(termios.ICANON | termios.ECHO)  # a line without its newline is input too
termios.tcsetattr(0, termios.TCSANOW, mode)  # not tty.setraw: TCSAFLUSH drops the input
got = b""
while select.select([0], [], [], 1.0)[0]:
    chunk = os.read(0, 4096)
    if not chunk:
        break
    got += chunk
with open(out, "wb") as handle:
    handle.write(got)
"""


def _push_from_outside(pts: str, text: bytes) -> str | None:
    """Push `text` into the terminal as root from outside gsd: why it could not, or None."""
    try:
        fd = os.open(pts, os.O_RDWR | os.O_NOCTTY)
        try:
            for byte in text:
                fcntl.ioctl(fd, termios.TIOCSTI, bytes([byte]))
        finally:
            os.close(fd)
    except OSError as exc:
        why = "not root, or dev.tty.legacy_tiocsti=0"
        return f"TIOCSTI from outside is refused here too ({exc.strerror}): {why}"
    return None


def _run_on_pty(root: Path, control: Path, tmp_path: Path) -> tuple[int, bytes, bytes, str | None]:
    """gsd's exit status, what the terminal showed, the input the shell found after it,
    and why the test's own push failed (None when it went through)."""
    master, slave = os.openpty()
    pts = os.ttyname(slave)
    (control / "pts").write_text(pts)
    out = tmp_path / "shell-input"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    shell = subprocess.Popen(
        [sys.executable, "-c", SHELL, str(out), str(root)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        env=env,
    )
    os.close(slave)
    shown, refused = b"", None
    deadline = time.monotonic() + 240
    while shell.poll() is None and time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            try:
                shown += os.read(master, 65536)
            except OSError:  # EIO: every slave end closed
                break
        if Path(f"{out}.code").exists() and not Path(f"{out}.pushed").exists():
            refused = _push_from_outside(pts, b"CONTROL-OK\n")
            Path(f"{out}.pushed").touch()
    shell.wait(timeout=60)
    os.close(master)
    return int(Path(f"{out}.code").read_text()), shown, out.read_bytes(), refused


@pytest.mark.parametrize("config", SANDBOXES)
def test_nothing_an_agent_pushes_reaches_the_users_terminal(
    git_project, tmp_path: Path, config: dict[str, object]
) -> None:
    """Without Landlock the terminal can still be opened and written (escape sequences
    reach the screen; README says so), but no input can be pushed into it."""
    control = hostile_phase(git_project, tmp_path, INTRUDER, **config)
    code, shown, pending, refused = _run_on_pty(git_project.root, control, tmp_path)
    assert MARK not in pending
    assert MARK not in shown or not LANDLOCK or config
    for role in ("agent", "verify"):
        tried = seen(control, role)
        assert tried, (role, shown.decode(errors="replace"))
        assert tried["sid"] != tried["gsd sid"], (role, tried)
        assert role != "agent" or tried["sid"] == tried["pid"], tried
        assert tried["tty_nr"] == 0 and tried["fds are ttys"] == [False] * 3, (role, tried)
        attempts = {what: got for what, got in tried.items() if what not in FACTS}
        if config:  # no Landlock: only the writes may go through
            attempts = {what: got for what, got in attempts.items() if "write" not in what}
        assert len(attempts) == (14 if config else 18), (role, attempts)
        assert "done" not in attempts.values(), (role, attempts)
        # no terminal at all (ENXIO); under Landlock /dev/tty is not even readable (EACCES)
        assert tried["/dev/tty read TIOCSTI"] in ("ENXIO", "EACCES"), (role, tried)
    assert code == 0, shown.decode(errors="replace")
    if refused:
        pytest.skip(f"the attempts failed, but the channel could not be shown: {refused}")
    assert b"CONTROL-OK" in pending  # the test's own push arrived: the check can see one
