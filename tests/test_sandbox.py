"""The sandbox: real agents under real Landlock write only where their tier allows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from gsd.core.errors import UsageError
from gsd.io import statedir
from gsd.io.confine import sandbox
from gsd.io.confine.sandbox import Confinement, confine, describe, landlock_abi, launcher_argv
from gsd.io.process import landlock, proc
from tests.conftest import git

GSD_SOURCE = Path(sandbox.__file__).resolve().parent
needs_landlock = pytest.mark.skipif(
    landlock_abi() == 0, reason=f"no Landlock here: {sandbox.unavailable_reason()}"
)
TIERS = ("read-only", "read+shell", "read+write", "full")

# Tries to write each path given (creating it when absent, appending nothing when present)
# and prints {path: "ok" | errno name}.
PROBE = """\
import errno, json, os, sys
seen = {}
for path in sys.argv[1:]:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))
        seen[path] = "ok"
    except OSError as exc:
        seen[path] = errno.errorcode.get(exc.errno, str(exc.errno))
print(json.dumps(seen))
"""


class Layout:
    """A repository, two plan worktrees where gsd keeps them (the state folder in the
    test's HOME), a home, a private tmp. The agent works in plan 01-01's."""

    def __init__(self, base: Path) -> None:
        self.root = base / "repo"
        self.root.mkdir()
        git(self.root, "init", "-q", "-b", "main")
        (self.root / "README.md").write_text("hello\n")
        (self.root / "src").mkdir()
        (self.root / "src" / "x.py").write_text("x = 1\n")
        git(self.root, "add", ".")
        git(self.root, "commit", "-q", "-m", "start")
        folder = statedir.worktrees_folder(self.root, self.root / ".git", None, os.environ)
        self.worktree = folder / "01-01"
        self.other = folder / "01-02"  # another plan's, side by side in the wave
        for plan, where in (("01-01", self.worktree), ("01-02", self.other)):
            git(self.root, "worktree", "add", "-q", "-b", f"gsd/{plan}", str(where))
        (self.root / ".git" / "gsd").mkdir()  # the run lock's folder
        self.home = Path(os.environ["HOME"])
        (self.home / ".ssh").mkdir()
        (self.home / ".claude").mkdir()
        (self.home / ".claude.json").write_text("{}\n")
        self.tmpdir = base / "private-tmp"
        self.tmpdir.mkdir()
        self.out = base / "out"
        self.probe = base / "probe.py"
        self.probe.write_text(PROBE)

    def confinement(self, tier: str, **changes: object) -> Confinement:
        options: dict[str, object] = {
            "tier": tier,
            "runner": "claude",
            "worktree": self.worktree,
            "tmpdir": self.tmpdir,
            "home": self.home,
            "extra": (),
            "root": self.root,
            "enabled": True,
            "environ": {},
        }
        options.update(changes)
        return confine(**options)  # type: ignore[arg-type]

    def forbidden(self) -> list[Path]:
        return [
            self.root / ".git" / "HEAD",
            self.root / ".git" / "hooks" / "x",
            self.root / ".git" / "gsd" / "x",
            self.root / ".git" / "worktrees" / "01-01" / "HEAD",
            self.other / "README.md",
            self.other / "new.txt",
            self.worktree.parent / "new-plan",
            self.root / "README.md",
            self.root / "src" / "new.py",
            self.root / "new-in-main.txt",
            self.home / ".ssh" / "x",
            self.home / "x",
        ]

    def run(
        self, argv: list[str], confinement: Confinement | None, **kwargs: object
    ) -> proc.Spawned:
        options: dict[str, object] = {"timeout_s": 60.0, "grace_s": 2.0}
        options.update(kwargs)
        return proc.supervise(
            argv,
            cwd=self.worktree,
            env={**os.environ, "TMPDIR": str(self.tmpdir)},
            stdout_path=self.out / "stdout",
            stderr_path=self.out / "stderr",
            confinement=confinement,
            **options,  # type: ignore[arg-type]
        )

    def probe_writes(
        self, confinement: Confinement, paths: list[Path], *, via_shell: bool
    ) -> dict[str, str]:
        command = [sys.executable, str(self.probe), *map(str, paths)]
        if via_shell:  # the writer is a grandchild: sh runs python, then one more command
            command = ["/bin/sh", "-c", '"$@"; status=$?; exit $status', "sh", *command]
        spawned = self.run(command, confinement)
        assert spawned.exit_code == 0, spawned.stderr_path.read_text()
        seen: dict[str, str] = json.loads(spawned.stdout_path.read_text())
        return seen


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(tmp_path)


@needs_landlock
@pytest.mark.parametrize("via_shell", [False, True], ids=["agent", "grandchild"])
@pytest.mark.parametrize("tier", TIERS)
def test_every_tier_is_denied_git_main_checkout_and_home(
    layout: Layout, tier: str, via_shell: bool
) -> None:
    forbidden = layout.forbidden()
    before = {path: path.read_bytes() for path in forbidden if path.exists()}
    mine = [
        layout.worktree / "new.txt",
        layout.tmpdir / "scratch",
        layout.home / ".claude" / "s",
        layout.home / ".claude.json",
    ]
    seen = layout.probe_writes(layout.confinement(tier), [*forbidden, *mine], via_shell=via_shell)
    assert {path: seen[str(path)] for path in forbidden} == dict.fromkeys(forbidden, "EACCES")
    assert {path: path.read_bytes() for path in forbidden if path.exists()} == before
    writes_worktree = "ok" if tier in ("read+write", "full") else "EACCES"
    assert seen[str(layout.worktree / "new.txt")] == writes_worktree
    assert seen[str(layout.tmpdir / "scratch")] == "ok"
    assert seen[str(layout.home / ".claude" / "s")] == "ok"  # the runner's own state
    assert seen[str(layout.home / ".claude.json")] == "ok"


@needs_landlock
def test_a_writing_agent_cannot_repoint_or_reach_the_worktree_git_dir(layout: Layout) -> None:
    """The worktree's gitdir (.git/worktrees/01-01: index, HEAD) is git's, not the agent's."""
    gitdir = layout.root / ".git" / "worktrees" / "01-01"
    seen = layout.probe_writes(
        layout.confinement("full"), [gitdir / "index", gitdir / "config"], via_shell=False
    )
    assert set(seen.values()) == {"EACCES"}


@needs_landlock
def test_the_command_runner_gets_no_state_dirs(layout: Layout) -> None:
    seen = layout.probe_writes(
        layout.confinement("full", runner="command"),
        [layout.home / ".claude" / "s", layout.worktree / "ok"],
        via_shell=False,
    )
    assert seen == {str(layout.home / ".claude" / "s"): "EACCES", str(layout.worktree / "ok"): "ok"}


@needs_landlock
def test_devices_and_its_own_output_by_name_are_writable(layout: Layout) -> None:
    script = "echo to-null > /dev/null && echo out > /dev/stdout && echo err > /dev/stderr"
    spawned = layout.run(["/bin/sh", "-c", script], layout.confinement("read-only"))
    assert spawned.exit_code == 0, spawned.stderr_path.read_text()
    assert (spawned.stdout_path.read_text(), spawned.stderr_path.read_text()) == ("out\n", "err\n")


@needs_landlock
def test_a_writable_path_that_does_not_exist_is_skipped(tmp_path: Path) -> None:
    confinement = Confinement((tmp_path / "missing", tmp_path / "no" / "such", tmp_path), True, "")
    argv = launcher_argv(["/bin/sh", "-c", f"echo ok > {tmp_path}/x"], confinement, os.getpid())
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert (done.returncode, done.stderr, (tmp_path / "x").read_text()) == (0, "", "ok\n")


@needs_landlock
def test_in_place_grants_the_checkout_but_git_and_new_top_level_entries(layout: Layout) -> None:
    confinement = layout.confinement("read+write", worktree=layout.root, in_place=True)
    root = layout.root
    seen = layout.probe_writes(
        confinement,
        [root / "README.md", root / "src" / "new.py", root / "new.txt", root / ".git" / "HEAD"],
        via_shell=True,
    )
    assert [seen[str(p)] for p in (root / "README.md", root / "src" / "new.py")] == ["ok", "ok"]
    assert [seen[str(p)] for p in (root / "new.txt", root / ".git" / "HEAD")] == ["EACCES"] * 2
    # a root holding a .git folder is never granted whole, in_place or not
    assert layout.confinement("read+write", worktree=root) == confinement


@needs_landlock
def test_config_extras_are_writable(layout: Layout) -> None:
    (layout.home / ".cache").mkdir()
    outside = layout.root.parent / "shared-cache"
    outside.mkdir()
    confinement = layout.confinement("read-only", extra=["~/.cache", str(outside)])
    seen = layout.probe_writes(
        confinement,
        [layout.home / ".cache" / "x", outside / "x", layout.home / "y"],
        via_shell=False,
    )
    assert list(seen.values()) == ["ok", "ok", "EACCES"]


@pytest.mark.parametrize("entry", [".git", ".git/hooks", ".", "~/../repo", "/"])
def test_an_extra_that_would_open_the_git_folder_is_refused(layout: Layout, entry: str) -> None:
    with pytest.raises(UsageError, match="sandbox.writable"):
        layout.confinement("read-only", extra=[entry])


@pytest.mark.skipif(landlock_abi() < 6, reason="signal scoping needs Landlock ABI 6")
def test_an_agent_cannot_signal_gsd(layout: Layout) -> None:
    script = f"kill -0 {os.getpid()} 2>/dev/null && echo reached || echo refused; "
    script += "kill -0 $$ && echo self"  # its own processes it may signal
    spawned = layout.run(["/bin/sh", "-c", script], layout.confinement("full"))
    assert spawned.stdout_path.read_text() == "refused\nself\n"


@needs_landlock
def test_a_sandbox_that_cannot_apply_never_runs_the_program(layout: Layout) -> None:
    """Landlock allows 16 stacked domains: under 16 already, gsd's 17th cannot apply.
    The program must not run unconfined; the spawn fails with the launcher's reason."""
    ran = layout.tmpdir / "ran"
    runner = textwrap.dedent(
        f"""
        import json, sys
        from pathlib import Path
        sys.path.insert(0, {str(GSD_SOURCE.parent)!r})
        from gsd.io.process import proc
        from gsd.io.confine.sandbox import Confinement
        out = Path({str(layout.out)!r})
        done = proc.supervise(
            ["/bin/sh", "-c", "touch {ran}"], cwd=Path({str(layout.root)!r}),
            stdout_path=out / "o", stderr_path=out / "e", timeout_s=60, grace_s=1,
            confinement=Confinement((Path({str(layout.tmpdir)!r}),), True, ""))
        print(json.dumps([done.exit_code, done.error, done.pid]))
        """
    )
    layout.out.mkdir()
    nested = subprocess.run(
        [*_nest(16, layout.root.parent), sys.executable, "-c", runner],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert nested.returncode == 0, nested.stderr
    code, error, pid = json.loads(nested.stdout)
    assert (code, pid) == (126, None), error
    assert error.startswith("cannot apply the sandbox: landlock_restrict_self")
    assert "gsd-launch: cannot apply the sandbox" in (layout.out / "e").read_text()
    assert not ran.exists()


def _nest(layers: int, writable: Path) -> list[str]:
    """`layers` launchers in a row, each adding one Landlock domain that allows `writable`
    (and /dev/null, which subprocess opens read-write for a child's stdin)."""
    one = [
        sys.executable,
        "-I",
        "-S",
        sandbox.LAUNCHER,
        "--landlock",
        "--write",
        str(writable),
        "--write",
        "/dev/null",
    ]
    return [*one, "--"] * layers


def test_the_launcher_refuses_to_start_for_a_parent_that_is_gone(tmp_path: Path) -> None:
    """The launcher's check after setting the parent-death signal: a parent pid that is
    not its parent (gsd died between fork and prctl) means the program never starts."""
    marker = tmp_path / "ran"
    argv = launcher_argv(["/bin/sh", "-c", f"touch {marker}"], None, parent_pid=1)
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 126 and "is gone; not starting" in done.stderr
    assert not marker.exists()


def test_modules_planted_in_the_worktree_never_run_in_the_launcher(tmp_path: Path) -> None:
    """The launcher runs in the agent's folder before the sandbox applies: a module a
    previous agent left there (or on PYTHONPATH) must not be imported in its place."""
    marker = tmp_path / "planted-code-ran"
    for name in ("ctypes", "struct", "stat", "launch", "sitecustomize"):
        (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r})\n")
    argv = launcher_argv(["/bin/sh", "-c", "echo ran"], None, os.getpid())
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONSTARTUP": str(tmp_path / "stat.py")}
    done = subprocess.run(
        argv, cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran\n", "")
    assert not marker.exists()


def test_the_child_dies_with_gsd(tmp_path: Path) -> None:
    """gsd is SIGKILLed while it supervises: the parent-death signal, set by the launcher,
    ends the agent at once (it ignores SIGTERM and nothing else would)."""
    token = f"gsd-test-{uuid.uuid4().hex}"
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\ntrap '' TERM\nwhile true; do sleep 0.2; done\n")
    agent.chmod(0o755)
    runner = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {str(GSD_SOURCE.parent)!r})
        from gsd.io.process import proc
        proc.supervise([{str(agent)!r}, {token!r}], cwd=Path({str(tmp_path)!r}),
                       stdout_path=Path({str(tmp_path / "o")!r}),
                       stderr_path=Path({str(tmp_path / "e")!r}), timeout_s=120, grace_s=1)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", runner])
    try:
        agent_pid = _wait_for(lambda: _pids_with(token, besides=parent.pid), "the agent to start")
        parent.kill()
        parent.wait()
        _wait_for(lambda: not _alive(agent_pid[0]), "the agent to die with its parent")
    finally:
        for pid in _pids_with(token, besides=parent.pid):
            os.kill(pid, signal.SIGKILL)


def _wait_for(condition, what: str, seconds: float = 20.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not (value := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return value


def _pids_with(token: str, *, besides: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != besides and _alive(int(entry)):
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline:
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


def test_an_unexecutable_program_is_a_result_with_the_reason(tmp_path: Path) -> None:
    program = tmp_path / "not-executable"
    program.write_text("#!/bin/sh\necho hi\n")
    program.chmod(0o644)
    done = proc.supervise(
        [str(program)],
        cwd=tmp_path,
        stdout_path=tmp_path / "o",
        stderr_path=tmp_path / "e",
        timeout_s=60,
        grace_s=1,
    )
    assert (done.exit_code, done.pid) == (126, None)
    assert done.error == f"cannot start {program}: Permission denied"


def test_the_program_is_found_on_the_childs_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gsd-test-only-here").write_text("#!/bin/sh\necho found\n")
    (bin_dir / "gsd-test-only-here").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = proc.supervise(
        ["gsd-test-only-here"],
        cwd=tmp_path,
        env=env,
        stdout_path=tmp_path / "o",
        stderr_path=tmp_path / "e",
        timeout_s=60,
        grace_s=1,
    )
    assert (done.exit_code, (tmp_path / "o").read_text()) == (0, "found\n")
    missing = proc.supervise(
        ["gsd-test-only-here"],
        cwd=tmp_path,
        stdout_path=tmp_path / "o",
        stderr_path=tmp_path / "e",
        timeout_s=60,
        grace_s=1,
    )
    assert (missing.exit_code, missing.error) == (127, "gsd-test-only-here: not found on PATH")


def test_no_preexec_fn_anywhere_in_gsd() -> None:
    """preexec_fn runs Python between fork and exec: unsafe in gsd's threaded process."""
    users = [p.name for p in GSD_SOURCE.glob("*.py") if "preexec_fn" in p.read_text()]
    assert users == []


def test_disabled_or_unavailable_means_no_landlock_and_says_why(layout: Layout) -> None:
    off = layout.confinement("full", enabled=False)
    assert (off.landlock, off.reason) == (False, "sandbox disabled in config.json")
    assert describe(off) == (
        "none: sandbox disabled in config.json (git checks only; still: no terminal, "
        "no_new_privs, root's capabilities dropped)"
    )
    assert "--landlock" not in launcher_argv(["true"], off, 1)
    assert launcher_argv(["true"], off, 1)[-2:] == ["--", "true"]


@needs_landlock
def test_describe_says_what_each_tier_may_write(layout: Layout) -> None:
    abi = landlock_abi()
    net = f"; connects anywhere (Landlock ABI {abi} has no TCP rules; 4 has)"
    if abi >= 4:
        net = "; connects only to TCP 443"
    assert describe(layout.confinement("full")) == (
        "landlock: writes only the worktree, private tmp, ~/.claude, ~/.claude.json, "
        "/dev/null; reads all but gsd's private folder, credentials and the terminals" + net
    )
    assert describe(layout.confinement("read-only", runner="codex")) == (
        "landlock: writes only private tmp, ~/.codex, /dev/null (not the worktree); "
        "reads all but gsd's private folder, credentials and the terminals" + net
    )


def test_runner_state_dirs() -> None:
    home = Path("/home/u")
    assert sandbox.runner_state("gemini", home, {}) == [home / ".gemini"]
    assert sandbox.runner_state("codex", home, {"CODEX_HOME": "/srv/codex"}) == [
        home / ".codex",
        Path("/srv/codex"),
    ]
    assert sandbox.runner_state("command", home, {}) == []


def test_landlock_abi_is_probed_once() -> None:
    first = landlock_abi()
    assert sandbox._PROBED is not None and landlock_abi() == first
    assert (first == 0) == bool(sandbox.unavailable_reason())


@pytest.mark.parametrize(
    ("abi", "rights", "attr_size"),
    [
        pytest.param(1, 0x1FF2, 8, id="abi1"),
        pytest.param(2, 0x3FF2, 8, id="abi2-refer"),
        pytest.param(3, 0x7FF2, 8, id="abi3-truncate"),
        pytest.param(4, 0x7FF2, 16, id="abi4-net-field"),
        pytest.param(5, 0xFFF2, 16, id="abi5-ioctl-dev"),
        pytest.param(6, 0xFFF2, 24, id="abi6-scoped"),
        pytest.param(7, 0xFFF2, 24, id="abi7"),
    ],
)
def test_each_abi_handles_the_write_rights_it_knows(abi: int, rights: int, attr_size: int) -> None:
    """Never EXECUTE (1), READ_FILE (4) or READ_DIR (8): reads and execution stay free."""
    assert landlock.write_rights(abi) == rights and rights & 0b1101 == 0
    attr = landlock.ruleset_attr(abi, rights)
    assert len(attr) == attr_size
    assert attr[16:] == (b"\x02" + b"\x00" * 7 if abi >= 6 else b"")  # LANDLOCK_SCOPE_SIGNAL


def test_make_state_folders_creates_the_runners_missing_folders_only(tmp_path: Path) -> None:
    """A first run of codex under the sandbox needs ~/.codex, which it cannot create
    there; gsd creates missing state folders (private), never a state file."""
    from gsd.io.confine.sandbox import make_state_folders

    env = {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "elsewhere" / "codex")}
    make_state_folders("codex", env)
    for folder in (tmp_path / ".codex", tmp_path / "elsewhere" / "codex"):
        assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o700
    make_state_folders("claude", env)
    assert (tmp_path / ".claude").is_dir() and not (tmp_path / ".claude.json").exists()
    (tmp_path / ".gemini").write_text("a file where a folder belongs: left alone")
    make_state_folders("gemini", env)
    assert (tmp_path / ".gemini").is_file()
    make_state_folders("command", env)  # nothing of its own
