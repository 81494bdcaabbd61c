"""gsd's own secrets stay gsd's (issue 20): the record-signing key, and the user's
credential files, are unreadable from inside the sandbox, however an agent spells the
read, while the agent still reads everything else it needs and gsd still signs and
checks its records in the same run.

Judged by what the agent could read (it writes every byte it got into the control
folder) and by what git holds afterwards.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gsd.io import records
from tests.confined import hostile_phase, seen, task_committed
from tests.conftest import git
from tests.hostile import LANDLOCK

pytestmark = pytest.mark.skipif(not LANDLOCK, reason="no Landlock here: nothing hides a file")

THIEF = """\
key = open(os.path.join(CONTROL, "key-path")).read()  # gsd's records.key_path()
seen["key exists"] = os.path.exists(key)  # its name is no secret: only its bytes


def read(path):
    with open(path, "rb") as handle:
        return handle.read().hex()


def run(*argv):
    done = subprocess.run(argv, capture_output=True)
    return done.stdout.hex() if done.returncode == 0 else f"exit {done.returncode}"


def handle_open(path):
    # name_to_handle_at needs no privilege; open_by_handle_at bypasses the path
    libc = ctypes.CDLL(None, use_errno=True)
    handle = ctypes.create_string_buffer(struct.pack("II", 128, 0) + bytes(128))
    mount = ctypes.c_int()
    if libc.name_to_handle_at(-100, path.encode(), handle, ctypes.byref(mount), 0) != 0:
        raise OSError(ctypes.get_errno(), "name_to_handle_at")
    root = os.open("/", os.O_RDONLY)
    fd = libc.open_by_handle_at(root, handle, os.O_RDONLY)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "open_by_handle_at")
    return os.read(fd, 4096).hex()


def link_and_read(where, how):
    how(key, where)
    return read(where)


attempt("open", lambda: read(key))
attempt("proc self root", lambda: read("/proc/self/root" + key))
attempt("proc gsd root", lambda: read(f"/proc/{os.getppid()}/root" + key))
attempt("cat", lambda: run("cat", key))
attempt("git show --no-index", lambda: run("git", "show", "--no-index", key))
attempt("symlink in worktree", lambda: link_and_read("key-link", os.symlink))
attempt("hard link in worktree", lambda: link_and_read("key-hard", os.link))
attempt("hard link in control", lambda: link_and_read(os.path.join(CONTROL, "k"), os.link))
attempt("open_by_handle_at", lambda: handle_open(key))
home = os.environ["HOME"]
attempt("~/.git-credentials", lambda: read(os.path.join(home, ".git-credentials")))
attempt("~/.ssh/id_ed25519", lambda: read(os.path.join(home, ".ssh", "id_ed25519")))
attempt("cat ~/.netrc", lambda: run("cat", os.path.join(home, ".netrc")))
for name in ("key-link", "key-hard"):
    if os.path.lexists(name):
        os.unlink(name)
# what it still needs: its worktree, git, python, the system, its home
attempt("read README.md", lambda: read("README.md")[:8])
attempt("git status", lambda: run("git", "status", "--porcelain")[:0] or "ok")
attempt("git log", lambda: run("git", "log", "-1", "--format=%s")[:0] or "ok")
attempt("python", lambda: run(sys.executable, "-c", "import json, sqlite3, ssl")[:0] or "ok")
attempt("read ~/.gitconfig", lambda: read(os.path.join(os.environ["HOME"], ".gitconfig"))[:0]
        or "ok")
attempt("read /etc/passwd", lambda: read("/etc/passwd")[:0] or "ok")
"""

NEEDED = ("read README.md", "git status", "git log", "python", "read ~/.gitconfig")


def test_an_agent_cannot_read_the_signing_key_yet_reads_what_it_needs(
    git_project, tmp_path: Path, gsd
) -> None:
    root = git_project.root
    home = Path(os.environ["HOME"])
    (home / ".gitconfig").write_text("[core]\n\tpager = cat\n")
    # the user's credentials: what git, ssh and curl push with
    (home / ".git-credentials").write_text("https://user:CREDENTIAL-1@example.com\n")
    (home / ".ssh").mkdir(mode=0o700, exist_ok=True)
    (home / ".ssh/id_ed25519").write_text("CREDENTIAL-2\n")
    (home / ".netrc").write_text("machine example.com password CREDENTIAL-3\n")
    key = records.record_key()  # made before the run: the agent finds it there
    control = hostile_phase(git_project, tmp_path, THIEF)
    (control / "key-path").write_text(str(records.key_path()))
    result = gsd("execute-phase", "1")
    for role in ("agent", "verify"):  # the task's `<automated>` check tries the same
        tried = seen(control, role)
        assert tried.get("key exists") is True, (role, result.err)
        secrets = (key.hex(), *(f"CREDENTIAL-{n}".encode().hex() for n in (1, 2, 3)))
        stolen = {what: got for what, got in tried.items() if any(s in str(got) for s in secrets)}
        assert stolen == {}, role
        thefts = [what for what in tried if what not in (*NEEDED, "key exists", "read /etc/passwd")]
        assert len(thefts) == 12
        for what in thefts:
            assert tried[what] in ("EACCES", "EPERM", "EXDEV", "exit 1", "exit 128"), (role, what)
        assert tried["read README.md"] == b"demo\n".hex()[:8]
        assert {what: tried[what] for what in NEEDED[1:]} == dict.fromkeys(NEEDED[1:], "ok")
    # gsd signed the task's checkpoint with the same key, and checked it, in this run
    assert result.code == 0, result.err
    assert task_committed(root) and records.key_path().read_bytes() == key
    assert key.hex() not in git(root, "log", "--all", "-p", "--format=")
    records._keys.clear()
    assert records.verify(records.sign({"after": "run"}).encode()) == {"after": "run"}
