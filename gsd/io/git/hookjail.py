"""The user's git hooks, run inside the agents' sandbox on every git command of a run.

A hook runs whatever the checkout holds: a pre-commit hook that calls `scripts/lint.sh`
or `python -m unittest` runs code an agent may have written. So while a run is active
(`confined`), every git command gsd starts gets `-c core.hooksPath=SHIMS`: a folder of
small shell scripts, one per hook name git knows, each of which finds the user's real
hook (where `core.hooksPath`, or `.git/hooks`, said before the run began) and, when it
exists and is executable, runs it through gsd/io/process/launch.py with the confinement a
verify command gets: writable only the checkout git runs it in (a plan worktree; the
user's checkout's top-level entries but .git), a private tmp (TMPDIR), `sandbox.writable`
and the devices. Git itself keeps every hook's meaning (arguments, stdin, the message
file, what a failure stops); commit-msg and prepare-commit-msg may also rewrite the
message file they are given, as they exist to.

The shims live in a private folder gsd makes for the run (0700, outside every
repository and worktree), which no agent may write.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gsd.io.confine.sandbox import Settings

# githooks(5): every hook a git command gsd runs may start (commit, merge, checkout,
# worktree add, stash, reset, am, rebase, gc), and the rest for good measure: a hook
# without a shim here would not run at all, never unconfined.
HOOK_NAMES = (
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "post-rewrite",
    "pre-auto-gc",
    "reference-transaction",
    "post-index-change",
    "sendemail-validate",
    "push-to-checkout",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
)
# Hooks git runs on every ref or index write, when there is one: shimmed only where the
# user has one when the run starts (a shim that finds none still costs a shell per
# write, and widens the moment between a checkpoint's tag and its record).
_IF_PRESENT = ("reference-transaction", "post-index-change")
# Hooks whose first argument is the commit message file they may rewrite.
_MESSAGE_HOOKS = ("commit-msg", "prepare-commit-msg", "applypatch-msg")
_PARENT = "@GSD_PARENT@"  # the launcher's --parent: git, which runs the shim
HOOK_GRACE_S = 2.0  # what a hook left running gets between SIGTERM and SIGKILL


class Jail:
    """The shims of one run: one folder of them per checkout git runs in."""

    def __init__(
        self, settings: Settings, environ: Mapping[str, str], hooks_path: str, base: Path
    ) -> None:
        self._settings = settings
        self._environ = dict(environ)
        self._hooks_path = hooks_path  # core.hooksPath as the user set it, or .git/hooks
        self._base = base
        self._shims: dict[Path, Path] = {}
        self._lock = threading.Lock()

    def shims(self, checkout: Path) -> Path:
        """The shim folder for hooks git runs in `checkout` (made on first use)."""
        with self._lock:
            found = self._shims.get(checkout)
            if found is None:
                found = self._make(checkout, len(self._shims))
                self._shims[checkout] = found
            return found

    def has(self, name: str, checkout: Path) -> bool:
        """Whether the user has the hook `name` that git would run in `checkout`."""
        hooks = Path(self._hooks_path)
        return os.access((hooks if hooks.is_absolute() else checkout / hooks) / name, os.X_OK)

    def _make(self, checkout: Path, number: int) -> Path:
        from gsd.io.confine import sandbox
        from gsd.io.confine.limits import warden_spec

        folder = self._base / f"shims-{number}"
        tmp = self._base / f"tmp-{number}"
        folder.mkdir(mode=0o700)
        tmp.mkdir(mode=0o700)
        confinement = self._settings.confine(
            tier="full", runner="command", worktree=checkout, tmpdir=tmp, environ=self._environ
        )
        # its warden ends what the hook leaves running and keeps the agents' limits
        warden = warden_spec(confinement.limits, HOOK_GRACE_S)
        launcher = sandbox.launcher_argv(["HOOK"], confinement, 0, warden=warden)[:-2]
        env = _environment_lines(self._environ, confinement.pass_env)
        launcher[launcher.index("--parent") + 1] = _PARENT
        hooks = Path(self._hooks_path)
        hooks = hooks if hooks.is_absolute() else checkout / hooks
        for name in HOOK_NAMES:
            if name in _IF_PRESENT and not os.access(hooks / name, os.X_OK):
                continue
            path = folder / name
            path.write_text(_shim(name, self._hooks_path, launcher, tmp, env))
            path.chmod(0o700)
        return folder


def _environment_lines(environ: Mapping[str, str], passed: tuple[str, ...]) -> str:
    """Shell lines that make a hook's environment an agent's (gsd.core.safety.credentials): the
    user's push credentials unset, git's prompt and credential helpers off."""
    from shlex import quote

    from gsd.core.safety import credentials

    clean = credentials.agent_environ(environ, passed)
    gone = sorted(name for name in environ if name not in clean)
    lines = f"unset {' '.join(gone)}\n" if gone else ""
    for name, value in clean.items():
        if environ.get(name) != value:
            lines += f"{name}={quote(value)}; export {name}\n"
    return lines


def _shim(name: str, hooks_path: str, launcher: list[str], tmp: Path, env: str = "") -> str:
    """The shell script git runs for hook `name`: the real hook, confined, or nothing.

    A hook given the message file may rewrite it (as it exists to), but not gsd's own
    `Gsd-*` trailers: a task commit's are what a run counts as done, and a bookkeeping
    commit or merge has none. Compared as git parses them, before and after."""
    from shlex import quote  # not on the pre-commit hook's path, which writes no shim

    where = quote(hooks_path)
    if not os.path.isabs(hooks_path):
        where = f'"$PWD"/{where}'  # git runs hooks at the top of the checkout
    argv = " ".join(quote(part) for part in launcher)
    head = (
        "#!/bin/sh\n"
        f"# gsd: the user's {name} hook, run inside the sandbox (gsd/io/git/hookjail.py)\n"
        f"hook={where}/{name}\n"
        '[ -f "$hook" ] && [ -x "$hook" ] || exit 0\n'
        f"TMPDIR={quote(str(tmp))}; export TMPDIR\n"
        f"{env}"
    )
    if name not in _MESSAGE_HOOKS:
        exec_argv = argv.replace(_PARENT, '"$PPID"')  # exec'd: git is the parent
        return head + f'exec {exec_argv} -- "$hook" "$@"\n'
    argv = argv.replace(_PARENT, '"$$"')  # a child of this shell
    return head + (
        "gsd_trailers() { git interpret-trailers --parse \"$1\" | grep -i '^gsd-'; }\n"
        'before=$(gsd_trailers "$1")\n'
        f'{argv} --write "$1" -- "$hook" "$@" || exit\n'
        'if [ "$(gsd_trailers "$1")" != "$before" ]; then\n'
        f"  echo 'gsd: the {name} hook changed the Gsd- trailers of the message' >&2\n"
        "  exit 1\n"
        "fi\n"
    )


_ACTIVE: Jail | None = None


def config_args(cwd: Path) -> tuple[str, ...]:
    """The `-c` options every git command in `cwd` takes while a run is confined."""
    jail = _ACTIVE
    if jail is None:
        return ()
    return ("-c", f"core.hooksPath={jail.shims(Path(cwd))}")


def user_has_hook(name: str, checkout: Path) -> bool | None:
    """Whether the user has the hook `name` for `checkout` (None: no run is confined,
    so gsd does not know where the user's hooks are)."""
    jail = _ACTIVE
    return None if jail is None else jail.has(name, checkout)


@contextlib.contextmanager
def confined(
    settings: Settings, hooks_path: str, environ: Mapping[str, str] = os.environ
) -> Iterator[None]:
    """Every git command gsd starts meanwhile runs the user's hooks in the sandbox
    (nothing changes when the sandbox is off in config.json). `hooks_path`: the hooks
    folder as the user set it (`user_hooks_path`), read before any agent ran."""
    global _ACTIVE
    if not settings.enabled or _ACTIVE is not None:
        yield
        return
    import shutil  # with tempfile, 4 ms at import: not on the git hook's path
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="gsd-hooks-"))
    _ACTIVE = Jail(settings, environ, hooks_path, base)
    try:
        yield
    finally:
        _ACTIVE = None
        shutil.rmtree(base, ignore_errors=True)


def user_hooks_path(core_hooks_path: str | None, common_dir: Path, home: Path) -> str:
    """Where git finds the user's hooks: `core.hooksPath` (`~/` expanded; a relative
    path is taken from the checkout a hook runs in, as git does), else `.git/hooks`."""
    value = (core_hooks_path or "").strip()
    if not value:
        return str(common_dir / "hooks")
    if value == "~" or value.startswith("~/"):
        return str(home / value[2:])
    return value
