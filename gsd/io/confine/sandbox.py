"""Where an agent may write: the Landlock confinement each supervised program is launched in.

gsd never applies the sandbox in its own process: `launcher_argv` wraps a program's argv
in `gsd/io/process/launch.py`, which applies it in the child just before exec. Landlock
(Linux 5.13+) confines a process and every descendant it will ever have; the rules here only list
what may be *written*: reading and executing stay allowed everywhere.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from gsd.core.errors import UsageError
from gsd.core.safety.enforce import READ_ONLY_TIERS
from gsd.io.confine import netports
from gsd.io.confine.limits import Limits

# gsd/io/process/launch.py, beside the modules it imports by their bare names
LAUNCHER = str(Path(__file__).resolve().parent.parent / "process" / "launch.py")
# The launcher runs as `python -I -S -c BOOT`, importing launch.py from its folder rather
# than running it as a script: an import uses the cached bytecode, a script is compiled on
# every start (3.6 ms of a ~15 ms start). -I keeps the working folder (the agent's
# worktree) and PYTHON* variables out of sys.path; the folder goes last, after the
# standard library, so no module of gsd's can stand in for one of it.
_BOOT = (
    f"import sys; sys.path.append({os.path.dirname(LAUNCHER)!r}); "
    "import launch; launch.main(sys.argv[1:])"
)

# Tiers that may change the worktree (gsd/formats/agents.py); the others only read it.

# Devices every program may need to write: the bit buckets and POSIX shared memory
# (semaphores, Python's multiprocessing). No terminal: an agent has none (launch.py), and
# may neither write nor read one (a pty's input pushed with TIOCSTI, or keystrokes read,
# would reach the user's shell); no new pty either (/dev/ptmx, /dev/pts): the real CLIs
# run their shell tools with pipes (gemini falls back to them when it cannot open one).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/shm")
# Entries of /dev left unreadable: every terminal (ptys, consoles, serial lines) and the
# consoles' screen memory (vcs*).
TERMINAL_PREFIXES = ("tty", "pts", "ptmx", "console", "vcs")
# The user's credential files, relative to HOME: what git, ssh and the forges' CLIs push
# with. Unreadable to agents unless config `sandbox.readable` lists them.
CREDENTIAL_FILES = (
    ".ssh",
    ".git-credentials",
    ".config/git/credentials",
    ".netrc",
    "_netrc",
    ".config/gh",
    ".config/glab-cli",
    ".config/hub",
    ".docker/config.json",
)


class Confinement(NamedTuple):
    """What one supervised program may write, and whether Landlock enforces it.

    `writable` is what gsd asks for even when nothing enforces it (`landlock` False,
    `reason` says why); `names` says the same for people, in `describe`.
    """

    writable: tuple[Path, ...]
    landlock: bool
    reason: str  # why there is no Landlock; "" when there is
    names: tuple[str, ...] = ()
    # What the program may not read (launch.py `--hide`): gsd's private folder and the
    # terminals; a `writable` path stays readable even inside one of them.
    unreadable: tuple[Path, ...] = ()
    # the TCP ports it may connect to (`gsd.io.confine.netports`; from Landlock ABI 4); None: any
    connect: tuple[int, ...] | None = None
    # the credential variables it gets after all (`gsd.core.safety.credentials`)
    pass_env: tuple[str, ...] = ()
    limits: Limits | None = None  # memory and processes (gsd.io.confine.limits), kept by its warden


def landlock_abi() -> int:
    """The running kernel's Landlock ABI version; 0 where gsd cannot use Landlock (not
    Linux, a kernel before 5.13, Landlock not enabled at boot, a seccomp filter that
    denies it). Probed once per process (one syscall), then cached."""
    return _probe()[0]


def unavailable_reason() -> str:
    """Why `landlock_abi()` is 0, in a few words; "" when it is not."""
    return _probe()[1]


_PROBED: tuple[int, str] | None = None


def _probe() -> tuple[int, str]:
    global _PROBED
    if _PROBED is None:
        _PROBED = _probe_kernel()
    return _PROBED


def _probe_kernel() -> tuple[int, str]:
    import errno

    if not sys.platform.startswith("linux"):
        return 0, f"Landlock is Linux-only (this is {sys.platform})"
    from gsd.io.process import landlock, launch

    library = launch.libc()
    if library is None:
        return 0, "Landlock is not available (no C library to call it)"
    try:
        return landlock.landlock_abi(library), ""
    except OSError as exc:
        if exc.errno == errno.ENOSYS:
            return 0, "Landlock is not available on this kernel (Linux 5.13+ has it)"
        if exc.errno == errno.EOPNOTSUPP:
            return 0, "Landlock is disabled on this kernel (not in its lsm= list)"
        return 0, f"Landlock is not usable here ({exc.strerror})"


def runner_state(runner: str, home: Path, environ: Mapping[str, str]) -> list[Path]:
    """The files and folders a runner keeps its own state in (logins, sessions, caches).

    `~/.claude.json` is a file, and a rule on a file gives only file rights: the runner
    may rewrite it in place (Claude Code truncates and writes it), not replace it by a
    rename, and not create it: run the runner once outside gsd so that it exists.
    A missing state folder is created by `make_state_folders` before the spawn (codex
    0.169.0 exits 1 without a writable `~/.codex`, and would create it itself).
    """
    if runner == "claude":
        state = [home / ".claude", home / ".claude.json"]
        if environ.get("CLAUDE_CONFIG_DIR"):
            state.append(Path(environ["CLAUDE_CONFIG_DIR"]))
        return state
    if runner == "gemini":
        state = [home / ".gemini"]
        if environ.get("GEMINI_CLI_HOME"):  # gemini-cli 0.61.0's home instead of HOME
            state.append(Path(environ["GEMINI_CLI_HOME"]) / ".gemini")
        return state
    if runner == "codex":
        state = [home / ".codex"]
        if environ.get("CODEX_HOME"):
            state.append(Path(environ["CODEX_HOME"]))
        return state
    return []  # `command` agents and verify commands: nothing of their own


def make_state_folders(runner: str, environ: Mapping[str, str]) -> None:
    """Create the runner's missing state folders (private), as the runner itself would
    on its first run: inside the sandbox it could not. Files are left alone."""
    home = Path(environ.get("HOME") or Path.home())
    for state in runner_state(runner, home, environ):
        if state.suffix != ".json" and not os.path.lexists(state):
            with contextlib.suppress(OSError):  # a read-only HOME: the runner will say so
                state.mkdir(mode=0o700, parents=True)


def confine(
    *,
    tier: str,
    runner: str,
    worktree: Path | None,
    tmpdir: Path,
    home: Path,
    extra: Sequence[str],
    root: Path,
    enabled: bool,
    environ: Mapping[str, str],
    in_place: bool = False,
    connect: tuple[int, ...] | None = (),
    pass_env: tuple[str, ...] = (),
    readable: tuple[str, ...] = (),
) -> Confinement:
    """The confinement of one agent (or verify command) of `tier` run by `runner`.

    Writable: the worktree (read+write and full tiers only), `tmpdir`, the runner's
    state (`runner_state`), each `extra` path (config `sandbox.writable`: absolute,
    `~/`-relative, or relative to `root`) and `DEVICES`. A path that does not exist when
    the program starts is left out by the launcher: the caller creates `tmpdir` (and
    points TMPDIR at it); a file the program must write (a result file) belongs there.

    In place (`in_place`, or a worktree holding a `.git` folder, as the repository root
    does), Landlock cannot grant a folder but one folder beneath it, so each top-level
    entry of the worktree but `.git` is granted on its own: the agent cannot create,
    delete or rename a top-level entry, only work inside the existing ones (and rewrite
    top-level files in place). Top-level symbolic links are not granted (a link would
    grant its target, wherever that is).

    An `extra` path inside the git folder, or holding it, is refused (UsageError): no
    agent may write the git folder.

    TCP connections: only to `netports.allowed` (`connect` None: any port); credential
    variables (gsd.core.safety.credentials): only those `pass_env` names. Unreadable
    (`unreadable`): gsd's private folder, the terminals, and the credential files but
    those `readable` hands over.
    """
    paths, names = _worktree_grant(worktree, tier, in_place)
    paths.append(tmpdir)
    names.append("private tmp")
    more = [*runner_state(runner, home, environ), *(_extra_path(e, home, root) for e in extra)]
    paths += more
    names += [_tilde(path, home) for path in more]
    paths += [Path(device) for device in DEVICES]
    names.append("/dev/null")
    reason = "sandbox disabled in config.json" if not enabled else unavailable_reason()
    return Confinement(
        writable=tuple(paths),
        landlock=enabled and landlock_abi() > 0,
        reason=reason,  # "" with Landlock on and available
        names=tuple(names),
        unreadable=unreadable(home, readable),
        connect=netports.allowed(runner, environ, connect),
        pass_env=pass_env,
    )


def unreadable(home: Path, readable: Sequence[str] = ()) -> tuple[Path, ...]:
    """What no agent may read: gsd's private folder (the record-signing key), the user's
    credential files (`CREDENTIAL_FILES` that exist, but those config `sandbox.readable`
    hands over) and every terminal in /dev (`TERMINAL_PREFIXES`)."""
    from gsd.io import records

    handed = {os.path.realpath(home / entry[2:]) for entry in readable if entry.startswith("~/")}
    handed |= {os.path.realpath(entry) for entry in readable if entry.startswith("/")}
    hidden = [records.private_folder()]
    for entry in CREDENTIAL_FILES:
        path = os.path.realpath(home / entry)
        if os.path.lexists(path) and path not in handed:
            hidden.append(Path(path))
    try:
        with os.scandir("/dev") as entries:
            hidden += [
                Path(entry.path) for entry in entries if entry.name.startswith(TERMINAL_PREFIXES)
            ]
    except OSError:
        pass  # no /dev (not Linux): nothing there to hide
    return tuple(sorted(hidden))


class Settings(NamedTuple):
    """A run's sandbox settings (config.json `sandbox`), for every spawn of the run."""

    enabled: bool
    writable: tuple[str, ...]  # `sandbox.writable`
    root: Path  # the user's checkout: relative `sandbox.writable` entries start there
    in_place: bool  # `workflow.use_worktrees: false`: agents work in the user's checkout
    connect: tuple[int, ...] | None = ()  # `sandbox.connect`; None: "any"
    pass_env: tuple[str, ...] = ()  # `sandbox.pass_env`
    readable: tuple[str, ...] = ()  # `sandbox.readable`: credential files handed over
    limits: Limits | None = None  # `sandbox.memory`, `sandbox.processes`

    def confine(
        self, *, tier: str, runner: str, worktree: Path, tmpdir: Path, environ: Mapping[str, str]
    ) -> Confinement:
        """The confinement of one agent (or verify command) working in `worktree`."""
        home = Path(environ.get("HOME") or Path.home())
        return confine(
            tier=tier,
            runner=runner,
            worktree=worktree,
            tmpdir=tmpdir,
            home=home,
            extra=self.writable,
            root=self.root,
            enabled=self.enabled,
            environ=environ,
            in_place=self.in_place,
            connect=self.connect,
            pass_env=self.pass_env,
            readable=self.readable,
        )._replace(limits=self.limits)


def _worktree_grant(
    worktree: Path | None, tier: str, in_place: bool
) -> tuple[list[Path], list[str]]:
    """What of the worktree a tier may write (`confine`), and its name for people."""
    if worktree is None or tier in READ_ONLY_TIERS:
        return [], []
    if in_place or (worktree / ".git").is_dir():
        return _top_level_entries(worktree), ["the checkout's top-level entries but .git"]
    return [worktree], ["the worktree"]


def _top_level_entries(folder: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return []
    return [
        Path(entry.path) for entry in entries if entry.name != ".git" and not entry.is_symlink()
    ]


def _extra_path(entry: str, home: Path, root: Path) -> Path:
    """A `sandbox.writable` entry as an absolute path; one outside the git folder."""
    if entry == "~" or entry.startswith("~/"):
        path = home / entry[2:]
    else:
        path = root / entry  # an absolute entry stays as it is
    resolved = Path(os.path.realpath(path))
    git_dir = Path(os.path.realpath(root / ".git"))
    if resolved == git_dir or git_dir in resolved.parents or resolved in git_dir.parents:
        raise UsageError(
            f"config.json: sandbox.writable: {entry} would let agents write the git "
            f"folder {git_dir}",
            hint="list folders outside the repository's .git, and none that holds it",
        )
    return path


def _tilde(path: Path, home: Path) -> str:
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


def describe(confinement: Confinement) -> str:
    """One line for `gsd execute-phase --dry-run`: what the program may write, and how."""
    if not confinement.landlock:
        return f"none: {confinement.reason} (git checks only; {ALWAYS})"
    names = list(confinement.names) or [str(path) for path in confinement.writable]
    line = "landlock: writes only " + ", ".join(names)
    if not any("worktree" in name or "checkout" in name for name in names):
        line += " (not the worktree)"
    if confinement.unreadable:
        line += "; reads all but gsd's private folder, credentials and the terminals"
    return line + "; " + netports.describe(confinement.connect, landlock_abi())


# What launch.py does for every program, with or without Landlock.
ALWAYS = "still: no terminal, no_new_privs, root's capabilities dropped"


def launcher_argv(
    argv: list[str],
    confinement: Confinement | None,
    parent_pid: int,
    *,
    status_fd: int | None = None,
    warden: str | None = None,
) -> list[str]:
    """`argv` run through gsd/io/process/launch.py: with the parent-death signal always (gsd is
    `parent_pid`), Landlock when `confinement` asks for it, `status_fd` as the pipe
    the launcher writes its one-line failure to (see launch.py), and the warden's spec
    (gsd/io/process/warden.py) when one is to end what the program leaves and keep its limits."""
    python = sys.executable or "python3"
    command = [python, "-I", "-S", "-c", _BOOT, "--parent", str(parent_pid)]
    if status_fd is not None:
        command += ["--status-fd", str(status_fd)]
    if warden is not None:
        command += ["--warden", warden]
    if confinement is not None and confinement.landlock:
        command.append("--landlock")
        for path in confinement.writable:
            command += ["--write", str(path)]
        for path in confinement.unreadable:
            command += ["--hide", str(path)]
        if confinement.connect is not None:
            command += ["--connect", ",".join(map(str, confinement.connect))]
    return [*command, "--", *argv]
