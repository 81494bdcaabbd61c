"""A private CODEX_HOME for one codex spawn: the user's own, entry by entry, plus gsd's
exec-policy rules.

Codex 0.169.0 takes no command rules on its command line; it reads `.rules` files from
`$CODEX_HOME/rules` when it starts (gsd.formats.codex). So each spawn gets a folder of
its own inside the user's codex home whose entries are symbolic links to the user's
(auth.json, config.toml, sessions/, tmp/, ...: codex writes auth.json through the link,
in place, so a refreshed login reaches the user's file), and whose `rules/` holds links
to the user's rules files and gsd's. It lives beside the user's files, not under a
temporary folder: codex creates its helper programs (`apply_patch`) only in a home
outside the temporary folder. The folder is removed after the spawn.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

from gsd.formats import codex

FOLDER = "gsd-runs"  # in the user's codex home: one folder per running spawn
MCP_SERVER = "gsd"  # the name docs/inside/mcp.md registers `gsd mcp` under
# its table as `codex mcp add gsd -- gsd mcp` writes it (TOML without a parser: 3.10)
_GSD_TABLE = re.compile(r'^[ \t]*\[[ \t]*mcp_servers\.(?:gsd|"gsd")[ \t]*\]', re.MULTILINE)


def user_home(environ: Mapping[str, str]) -> Path:
    """The codex home the user's own sessions use: $CODEX_HOME, else ~/.codex."""
    if environ.get("CODEX_HOME"):
        return Path(environ["CODEX_HOME"])
    return Path(environ.get("HOME") or Path.home()) / ".codex"


@contextlib.contextmanager
def private_home(environ: Mapping[str, str], name: str, rules: str) -> Iterator[dict[str, str]]:
    """Make the private home for spawn `name` (a file name: plan, task, pid), yield the
    variables that point codex at it, then remove it. `rules` is gsd's rules file."""
    user = user_home(environ)
    home = user / FOLDER / name
    try:
        shutil.rmtree(home, ignore_errors=True)  # a killed run's leftover of that name
        home.mkdir(mode=0o700, parents=True)
        _mirror(user, home, rules)
    except OSError:  # a read-only home: codex runs on the user's, without gsd's rules
        shutil.rmtree(home, ignore_errors=True)
        home = user
    try:
        yield {"CODEX_HOME": str(home)}
    finally:
        if home != user:
            shutil.rmtree(home, ignore_errors=True)
            with contextlib.suppress(OSError):
                (user / FOLDER).rmdir()  # only when no other spawn is using it


def mcp_overrides(environ: Mapping[str, str]) -> list[str]:
    """`-c` overrides for the user's `gsd mcp` server, when config.toml registers one:
    `required`, so that codex 0.169.0 starts it before the first request. Otherwise
    `codex exec` starts MCP servers beside the turn, and a server not ready in time
    is missing from the model's tools or its call fails ("unsupported call")."""
    try:
        text = (user_home(environ) / "config.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if not _GSD_TABLE.search(text):
        return []
    return ["-c", f"mcp_servers.{MCP_SERVER}.required=true"]


def _mirror(user: Path, home: Path, rules: str) -> None:
    (user / "tmp").mkdir(exist_ok=True)  # codex's helper programs: kept in the user's home
    for entry in sorted(os.scandir(user), key=lambda e: e.name):
        if entry.name not in ("rules", FOLDER):
            (home / entry.name).symlink_to(entry.path)
    folder = home / "rules"
    folder.mkdir()
    own = user / "rules"
    if own.is_dir():
        for entry in sorted(os.scandir(own), key=lambda e: e.name):
            if entry.name.endswith(".rules") and entry.name != codex.RULES_FILE:
                (folder / entry.name).symlink_to(entry.path)
    (folder / codex.RULES_FILE).write_text(rules, encoding="utf-8")
