"""`gsd doctor`'s codex check: one command run the way a codex spawn runs its commands.

Inside gsd's Landlock sandbox gsd gives codex `--sandbox danger-full-access` (codex's
bubblewrap cannot start there: gsd.formats.runners.codex), so the check runs `codex sandbox`
in that mode under a read-only confinement, as a read-only task's codex would. Without
gsd's sandbox (config.json `sandbox.enabled` false, or no Landlock) codex's own sandbox
holds the tier, so the check runs `codex sandbox` in its `read-only` mode, which needs
bubblewrap and user namespaces (a container without them fails here).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path

from gsd.formats.runners.codex import CONFINED_SANDBOX
from gsd.io.confine import sandbox
from gsd.io.process import proc

CHECK_TIMEOUT_S = 20.0


def codex_sandbox_check(
    program: str, environ: Mapping[str, str], *, enabled: bool
) -> tuple[bool, str]:
    """Run `true` as a codex spawn's command would run; (worked, one line saying how or
    what failed). `enabled`: config.json's `sandbox.enabled`."""
    confined = enabled and sandbox.landlock_abi() > 0
    mode = CONFINED_SANDBOX if confined else "read-only"
    argv = [program, "sandbox", "-c", f'sandbox_mode="{mode}"', "--", "true"]
    env = dict(environ)
    with tempfile.TemporaryDirectory(prefix="gsd-doctor-codex-") as tmp:
        folder = Path(tmp)
        env.update({"TMPDIR": tmp, "TMP": tmp, "TEMP": tmp})
        confinement = None
        if confined:
            sandbox.make_state_folders("codex", env)
            home = Path(env.get("HOME") or Path.home())
            confinement = sandbox.confine(
                tier="read-only",
                runner="codex",
                worktree=folder,
                tmpdir=folder,
                home=home,
                extra=(),
                root=folder,
                enabled=True,
                environ=env,
            )
        done = proc.supervise(
            argv,
            cwd=folder,
            stdout_path=folder / "stdout",
            stderr_path=folder / "stderr",
            timeout_s=CHECK_TIMEOUT_S,
            grace_s=2.0,
            env=env,
            confinement=confinement,
        )
        said = _last_line((folder / "stderr").read_bytes())
    where = (
        "inside gsd's Landlock sandbox (codex --sandbox danger-full-access)"
        if confined
        else "in codex's own read-only sandbox (bubblewrap)"
    )
    if done.error is not None:
        return False, f"codex cannot be started: {done.error}"
    if done.timed_out:
        return False, f"codex ran no command {where} in {CHECK_TIMEOUT_S:g} s"
    if done.exit_code != 0:
        return False, f"codex runs no command {where}: {said or f'exit {done.exit_code}'}"
    return True, f"codex runs its commands {where}"


def _last_line(data: bytes) -> str:
    """The line that says what failed: codex's `Error:` line, else the last one that is
    not a warning or part of a panic's trace."""
    lines = [s.strip() for s in data[-8192:].decode("utf-8", "replace").splitlines()]
    errors = [s for s in lines if s.startswith("Error:")]
    noise = ("warning:", "note:", "stack backtrace", "thread '")
    useful = [s for s in lines if s and not s.lower().startswith(noise) and not s[:1].isdigit()]
    found = errors[0] if errors else useful[-1] if useful else ""
    return found[:200]
