"""Fewer privileges as root (issue 20): agents and checks run with no_new_privs and without
the capabilities an agent never needs, with Landlock and without it.

A root agent's `chattr +i` (and the FS_IOC_SETFLAGS ioctl behind it) on a file of its
worktree, of the user's checkout, on `.git/index`, `.git/HEAD` and on a file outside
used to succeed (Landlock restricts writes, not that ioctl on a file opened read-only):
the user could no longer edit them and gsd's own merge failed. Judged by `lsattr`
afterwards and by what the agent read in its own /proc/self/status.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gsd.io.process import launchcaps
from tests.confined import SANDBOXES, hostile_phase, seen, task_committed
from tests.conftest import git

# CAP_LINUX_IMMUTABLE, CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_MODULE, CAP_SYS_PTRACE,
# CAP_SYS_ADMIN, CAP_MKNOD, CAP_DAC_READ_SEARCH, CAP_SYS_RESOURCE (and CAP_SETFCAP under
# Landlock: without it, codex's bubblewrap needs it to map root)
NEVER = [9, 12, 13, 16, 19, 21, 27, 2, 24]
NEVER_MASK = sum(1 << number for number in NEVER)

STATUS = """\
seen["status"] = status_fields()
"""

IMMUTABLE = """\
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IMMUTABLE_FL = 0x80086601, 0x40086602, 0x10
common = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
                        capture_output=True, text=True).stdout.strip()
main = os.path.dirname(common)
targets = {"worktree": "src/a.txt", "checkout": os.path.join(main, "src", "a.txt"),
           "index": os.path.join(common, "index"), "HEAD": os.path.join(common, "HEAD"),
           "outside": os.path.join(os.path.dirname(CONTROL), "outside.txt")}


def chattr(path):
    done = subprocess.run(["chattr", "+i", path], capture_output=True, text=True)
    return None if done.returncode == 0 else f"exit {done.returncode}"


def setflags(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        flags = bytearray(struct.pack("i", 0))
        fcntl.ioctl(fd, FS_IOC_GETFLAGS, flags)
        wanted = struct.unpack("i", flags)[0] | FS_IMMUTABLE_FL
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", wanted))
    finally:
        os.close(fd)


for name, path in targets.items():
    attempt(f"chattr {name}", lambda path=path: chattr(path))
    attempt(f"ioctl {name}", lambda path=path: setflags(path))
seen["status"] = status_fields()
"""


def _chattr_works(tmp_path: Path) -> str | None:
    """Why `chattr +i` cannot be shown here, or None when it can."""
    if os.geteuid() != 0:
        return "needs root: only CAP_LINUX_IMMUTABLE makes a file immutable"
    if shutil.which("chattr") is None or shutil.which("lsattr") is None:
        return "chattr/lsattr are not installed"
    probe = tmp_path / "probe-immutable"
    probe.write_text("x\n")
    done = subprocess.run(["chattr", "+i", str(probe)], capture_output=True, text=True)
    subprocess.run(["chattr", "-i", str(probe)], capture_output=True)
    if done.returncode != 0:
        return f"this filesystem has no immutable flag: {done.stderr.strip()}"
    return None


def _immutable(path: Path) -> bool:
    done = subprocess.run(["lsattr", "-d", str(path)], capture_output=True, text=True)
    return done.returncode == 0 and "i" in done.stdout.split()[0]


@pytest.mark.parametrize("config", SANDBOXES)
def test_a_root_agent_cannot_make_any_file_immutable(
    git_project, tmp_path: Path, gsd, config: dict[str, object]
) -> None:
    reason = _chattr_works(tmp_path)
    if reason:
        pytest.skip(reason)
    root = git_project.root
    git_project.write("src/a.txt", "a\n")
    (tmp_path / "outside.txt").write_text("outside\n")
    control = hostile_phase(git_project, tmp_path, IMMUTABLE, **config)
    targets = {"checkout": root / "src/a.txt", "index": root / ".git/index"}
    targets.update(HEAD=root / ".git/HEAD", outside=tmp_path / "outside.txt")
    try:
        result = gsd("execute-phase", "1")
        tried = seen(control)
        immutable = {name: _immutable(path) for name, path in targets.items()}
        assert immutable == dict.fromkeys(targets, False)
        assert tried, result.err
        attempts = {what: outcome for what, outcome in tried.items() if what != "status"}
        assert len(attempts) == 10 and "done" not in attempts.values(), attempts
        assert result.code == 0, result.err
        assert task_committed(root)
        (root / "after.txt").write_text("the user's next edit\n")
        git(root, "add", "after.txt")  # the index is the user's to write again
        (root / "src/a.txt").write_text("edited\n")
    finally:
        subprocess.run(["chattr", "-R", "-i", str(tmp_path)], capture_output=True)


@pytest.mark.parametrize("config", SANDBOXES)
def test_agents_and_checks_hold_no_dangerous_capability_and_no_new_privs(
    git_project, tmp_path: Path, gsd, config: dict[str, object]
) -> None:
    control = hostile_phase(git_project, tmp_path, STATUS, **config)
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    kept = launchcaps.UNCONFINED_MASK if config else launchcaps.KEPT_MASK
    for role in ("agent", "verify"):
        status = seen(control, role)["status"]
        assert isinstance(status, dict), role
        assert status["NoNewPrivs"] == "1", (role, status)
        for name in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
            assert int(status[name], 16) & ~kept == 0, (role, name, status)
        if os.geteuid() == 0:  # the bounding set is only root's to shrink
            assert int(status["CapBnd"], 16) & NEVER_MASK == 0, (role, status)
            assert int(status["CapBnd"], 16) & ~kept == 0, (role, status)
