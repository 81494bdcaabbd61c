"""A private home for one spawn of codex or gemini: the user's own, entry by entry, plus
what gsd must hand the CLI in files.

Neither CLI takes all of it on its command line: codex 0.169.0 reads command rules only
from `$CODEX_HOME/rules` (gsd.formats.runners.codex), and gemini-cli 0.61.0 reads hooks and
`model.maxSessionTurns` only from settings files, of which the project's is ignored in
a folder not trusted when gemini starts (a plan's worktree) and the system's only when
root owns it and every folder above it (gsd.formats.runners.gemini). So such a spawn gets a
folder of its own inside the user's state folder (`~/.codex/gsd-runs/<spawn>/`,
`~/.gemini/gsd-runs/<spawn>/`): the sandbox already lets the runner write there, and
codex creates its helper programs (`apply_patch`) only in a home outside the temporary
folder. Its entries are symbolic links to the user's (logins, sessions, history,
tmp/, ...: the CLI writes through a link, in place, so a refreshed login reaches the
user's file), but for gsd's own files. The folder is removed after the spawn.

What the CLI wrote in the private folder itself is carried to the user's folder first
(`_carry_back`): a file or folder the user had none of (gemini's first
`installation_id`, say), and a file the CLI put in place of a link by a rename
(gemini's `projects.json`). A folder the user has one of already stays behind and goes
with the private folder; so do gsd's own entries (a CLI's change to gsd's settings).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from gsd.formats.runners import codex, gemini

FOLDER = "gsd-runs"  # in the user's state folder: one folder per running spawn
MCP_SERVER = "gsd"  # the name docs/inside/mcp.md registers `gsd mcp` under
# its table as `codex mcp add gsd -- gsd mcp` writes it (TOML without a parser: 3.10)
_GSD_TABLE = re.compile(r'^[ \t]*\[[ \t]*mcp_servers\.(?:gsd|"gsd")[ \t]*\]', re.MULTILINE)
# gemini's state folders: made in the user's folder first, so that what gemini writes
# there (chats, shell history, the project registry's folders) stays the user's
GEMINI_FOLDERS = ("tmp", "history")


@contextlib.contextmanager
def private_home(
    user: Path,
    name: str,
    files: Mapping[str, str],
    links: Mapping[str, Path],
    *,
    mirror: str = "",
    made: Collection[str] = (),
) -> Iterator[Path | None]:
    """Make `user/gsd-runs/name` (`name`: a file name: plan, task, pid), yield it (None
    when it cannot be made: a read-only home), carry back what the CLI wrote there,
    then remove it. Its folder `mirror` holds a link to each entry of `user` (after
    `made`, folders created in `user` first) but those `files` (path -> text) and
    `links` (path -> target) give, which are paths from the private folder."""
    base = user / FOLDER / name
    folder = base / mirror
    own = {Path(p).relative_to(mirror).parts[0] for p in [*files, *links] if _under(p, mirror)}
    try:
        shutil.rmtree(base, ignore_errors=True)  # a killed run's leftover of that name
        folder.mkdir(mode=0o700, parents=True)
        for made_folder in made:
            (user / made_folder).mkdir(mode=0o700, exist_ok=True)
        for entry in sorted(os.scandir(user), key=lambda e: e.name):
            if entry.name not in own and entry.name != FOLDER:
                (folder / entry.name).symlink_to(entry.path)
        for path, target in links.items():
            (base / path).parent.mkdir(parents=True, exist_ok=True)
            (base / path).symlink_to(target)
        for path, text in files.items():
            (base / path).parent.mkdir(parents=True, exist_ok=True)
            (base / path).write_text(text, encoding="utf-8")
    except OSError:
        shutil.rmtree(base, ignore_errors=True)
        yield None
        return
    try:
        yield base
    finally:
        with contextlib.suppress(OSError):
            _carry_back(folder, user, own)
        shutil.rmtree(base, ignore_errors=True)
        with contextlib.suppress(OSError):
            (user / FOLDER).rmdir()  # only when no other spawn is using it


def _under(path: str, folder: str) -> bool:
    return not folder or Path(path).parts[:1] == (folder,)


def _carry_back(folder: Path, user: Path, own: Collection[str]) -> None:
    """Move what the CLI wrote in `folder` itself (not through a link) to `user`: a file
    in place of the user's file or of none, a folder where the user has none."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name in own or entry.is_symlink():
            continue
        target = user / entry.name
        if entry.is_dir():
            if not os.path.lexists(target):
                os.rename(entry.path, target)
        elif not target.is_dir():
            os.replace(entry.path, target)


def codex_user_home(environ: Mapping[str, str]) -> Path:
    """The codex home the user's own sessions use: $CODEX_HOME, else ~/.codex."""
    if environ.get("CODEX_HOME"):
        return Path(environ["CODEX_HOME"])
    return Path(environ.get("HOME") or Path.home()) / ".codex"


@contextlib.contextmanager
def codex_home(environ: Mapping[str, str], name: str, rules: str) -> Iterator[dict[str, str]]:
    """The variables that point codex at a private home for spawn `name` whose `rules/`
    holds links to the user's rules files and gsd's `rules` (codex's exec-policy file).
    A read-only home: none, and codex runs on the user's, without gsd's rules."""
    user = codex_user_home(environ)
    links: dict[str, Path] = {}
    if (user / "rules").is_dir():
        for entry in sorted(os.scandir(user / "rules"), key=lambda e: e.name):
            if entry.name.endswith(".rules") and entry.name != codex.RULES_FILE:
                links[f"rules/{entry.name}"] = Path(entry.path)
    files = {f"rules/{codex.RULES_FILE}": rules}
    with private_home(user, name, files, links, made=("tmp",)) as home:  # tmp: its helpers
        yield {} if home is None else {"CODEX_HOME": str(home)}


def mcp_overrides(environ: Mapping[str, str]) -> list[str]:
    """`-c` overrides for the user's `gsd mcp` server, when config.toml registers one:
    `required`, so that codex 0.169.0 starts it before the first request. Otherwise
    `codex exec` starts MCP servers beside the turn, and a server not ready in time
    is missing from the model's tools or its call fails ("unsupported call")."""
    try:
        text = (codex_user_home(environ) / "config.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    if not _GSD_TABLE.search(text):
        return []
    return ["-c", f"mcp_servers.{MCP_SERVER}.required=true"]


def gemini_user_home(environ: Mapping[str, str]) -> Path:
    """The folder holding the `.gemini` of the user's own sessions: $GEMINI_CLI_HOME,
    else HOME (gemini-cli 0.61.0 `homedir()`)."""
    return Path(environ.get(gemini.HOME_VARIABLE) or environ.get("HOME") or Path.home())


@contextlib.contextmanager
def gemini_home(
    environ: Mapping[str, str], name: str, max_turns: int | None, hooks: Mapping[str, Any] | None
) -> Iterator[dict[str, str]]:
    """The variables that point gemini at a private home for spawn `name` whose
    `.gemini/settings.json` is the user's with `max_turns` and gsd's `hooks` added
    (`gsd.formats.runners.gemini.user_settings`). gemini's launcher reads
    `$GEMINI_CLI_HOME/settings.json` (without `.gemini/`: `getMemoryNodeArgs`) before
    it starts the CLI, so that path links to the same file; `.agents/` (its user
    skills beside `.gemini`) links to the user's. No variables when the user's settings are
    unreadable or not a JSON object (gemini reads them itself and says what is wrong)
    or the home cannot be made."""
    home = gemini_user_home(environ)
    user = home / gemini.STATE
    try:
        text = (user / gemini.SETTINGS_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError):
        text = "-"  # not JSON: no private home
    settings = gemini.user_settings(text, max_turns, hooks)
    if settings is None:
        yield {}
        return
    inner = f"{gemini.STATE}/{gemini.SETTINGS_FILE}"
    links = {gemini.SETTINGS_FILE: Path(inner)}
    if (home / ".agents").is_dir():
        links[".agents"] = home / ".agents"
    with private_home(
        user, name, {inner: settings}, links, mirror=gemini.STATE, made=GEMINI_FOLDERS
    ) as private:
        yield {} if private is None else {gemini.HOME_VARIABLE: str(private)}
