"""Finding agent files in folders: what was loaded, skipped or ignored, and which agent wins."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Literal, NamedTuple

from gsd.formats.agents import Agent, AgentError, parse_agent, parse_codex_agent
from gsd.formats.files import bundled_dir, display_path

Status = Literal["loaded", "skipped", "ignored"]
TIER_RANK = {"read-only": 0, "read+shell": 1, "read+write": 2, "full": 3}
# README.md, CLAUDE.md, CONTRIBUTING.md, AGENTS.md: a collection's documents, not agents
_DOCUMENT = re.compile(r"[A-Z][A-Z0-9_.-]*")
_NAME_LINE = re.compile(r"^name\s*[:=]\s*[\"']?([^\"'\s]+)", re.MULTILINE)


@dataclass(frozen=True)
class FileReport:
    """One file of a folder and what gsd made of it."""

    path: Path
    status: Status
    reason: str = ""  # why it was skipped or ignored
    agent: Agent | None = None
    names: tuple[str, ...] = ()  # the names a skipped file would have answered to


@dataclass
class FolderReport:
    """One search folder: its origin and every file in it."""

    folder: Path
    origin: str
    exists: bool
    files: list[FileReport] = field(default_factory=list)

    @property
    def label(self) -> str:
        return display_path(self.folder)

    def count(self, status: Status) -> int:
        return sum(1 for f in self.files if f.status == status)


class AgentSet(Mapping[str, Agent]):
    """Agents by name; a lookup also finds an agent by its `ns:name` alias. Iterating
    gives names only, so an agent is listed once."""

    def __init__(self) -> None:
        self._by_name: dict[str, Agent] = {}
        self._by_alias: dict[str, Agent] = {}
        self.skipped: dict[str, str] = {}  # a name or alias -> "path: why it was skipped"

    def __getitem__(self, key: str) -> Agent:
        found = self._by_name.get(key) or self._by_alias.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)

    def add(self, agent: Agent) -> Agent:
        """Add an agent; one of the same name is replaced, and the new one says so."""
        earlier = self._by_name.get(agent.name)
        if earlier is not None and earlier.source != agent.source:
            agent = agent.model_copy(update={"overrides": earlier.source})
        self._by_name[agent.name] = agent
        for alias in agent.aliases:
            self._by_alias[alias] = agent
        for key in (agent.name, *agent.aliases):
            self.skipped.pop(key, None)
        return agent

    def roster_entries(self) -> dict[str, Agent]:
        """What `gsd agents sync` lists: every name, and the alias of an agent whose
        name another agent took (so it stays reachable)."""
        entries = dict(self._by_name)
        for alias, agent in self._by_alias.items():
            if self._by_name.get(agent.name) is not agent:
                entries.setdefault(alias, agent)
        return entries

    def aliases(self) -> dict[str, str]:
        """Each `ns:name` alias of an agent that also holds its plain name -> that name:
        a plan may write either (`voltagent-lang:python-pro` for python-pro)."""
        return {
            alias: agent.name
            for alias, agent in self._by_alias.items()
            if self._by_name.get(agent.name) is agent
        }


@dataclass
class Scan:
    """Every folder searched, every file in it, and the agents that won."""

    agents: AgentSet
    folders: list[FolderReport]
    narrowed: list[tuple[FolderReport, str]] = field(default_factory=list)

    @property
    def any_skipped(self) -> bool:
        return any(f.count("skipped") for f in self.folders)

    def warnings(self) -> list[str]:
        """One line per folder that had trouble, with counts; details: `gsd agents check`."""
        lines = []
        for folder in self.folders:
            parts = _trouble(folder)
            parts += [text for where, text in self.narrowed if where is folder]
            if parts:
                lines.append(f"{folder.label}: {', '.join(parts)} (see `gsd agents check`)")
        return lines


def _trouble(folder: FolderReport) -> list[str]:
    parts = []
    skipped, seen = folder.count("skipped"), folder.count("loaded") + folder.count("skipped")
    if skipped:
        parts.append(f"{skipped} of {seen} agent files skipped")
    loaded = [f.agent for f in folder.files if f.agent is not None]
    unknown = {t for a in loaded for t in a.unknown_tools}
    if unknown:
        holders = sum(1 for a in loaded if a.unknown_tools)
        names = "tool name" if len(unknown) == 1 else "tool names"
        files = "file" if holders == 1 else "files"
        parts.append(f"{len(unknown)} {names} unknown to gsd in {holders} {files}")
    differ = sum(1 for a in loaded if any(n.startswith("name ") for n in a.notes))
    if differ:
        parts.append(
            f"{differ} {'name differs' if differ == 1 else 'names differ'} from the file name"
        )
    lenient = sum(1 for a in loaded if any(n.startswith("frontmatter is not") for n in a.notes))
    if lenient:
        parts.append(f"{lenient} with frontmatter that is not valid YAML (read leniently)")
    return parts


def scan(folders: Iterable[Path | tuple[Path, str]], *, bodies: bool = True) -> Scan:
    """Read every agent file of the folders, in order; a later one overrides by name.
    Without `bodies`, no agent keeps its persona text (what a listing leaves out)."""
    result = Scan(AgentSet(), [])
    for item in folders:
        folder, origin = item if isinstance(item, tuple) else (item, "")
        report = FolderReport(folder, origin, folder.is_dir())
        result.folders.append(report)
        for path in _candidates(folder) if report.exists else ():
            file = read_file(folder, path, origin, bodies=bodies)
            if file.agent is not None:  # with `overrides` filled in
                file = replace(file, agent=_add(result, report, file.agent))
            report.files.append(file)
            if file.status == "skipped":
                for name in file.names:
                    if name not in result.agents:
                        result.agents.skipped[name] = f"{display_path(path)}: {file.reason}"
    return result


def _add(result: Scan, report: FolderReport, agent: Agent) -> Agent:
    earlier = result.agents.get(agent.name)
    added = result.agents.add(agent)
    if earlier is not None and earlier.origin == "bundled" and earlier.name == agent.name:
        if TIER_RANK[added.tier] < TIER_RANK[earlier.tier]:
            result.narrowed.append(
                (
                    report,
                    f"{agent.name} replaces the bundled {earlier.tier} "
                    f"agent with a {added.tier} one",
                )
            )
    return added


def _candidates(folder: Path) -> list[Path]:
    """Markdown and TOML files below the folder, hidden folders left out."""
    found = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder)
        if path.suffix in (".md", ".toml") and not any(p.startswith(".") for p in relative.parts):
            if path.is_file():
                found.append(path)
    return sorted(found)


def read_file(folder: Path, path: Path, origin: str, *, bodies: bool = True) -> FileReport:
    """One file: an agent, or why it was skipped (broken) or ignored (not an agent)."""
    plugin, namespace = _namespace(folder, path.parent)
    if _DOCUMENT.fullmatch(path.stem):
        return FileReport(path, "ignored", "a collection's document, not an agent")
    if plugin is not None and not plugin.holds_agent(path.resolve()):
        return FileReport(path, "ignored", "a plugin's file outside its agents")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return FileReport(path, "skipped", f"unreadable: {exc}", names=(path.stem,))
    if path.suffix == ".toml" and "developer_instructions" not in text:
        return FileReport(path, "ignored", "TOML without developer_instructions: not an agent")
    match = _NAME_LINE.search(text)
    names = tuple({path.stem, *([match.group(1)] if match else ())})
    names += tuple(f"{namespace}:{n}" for n in names) if namespace else ()
    parse = parse_codex_agent if path.suffix == ".toml" else parse_agent
    try:
        agent = parse(text, str(path), path.stem, keep_body=bodies)
    except AgentError as exc:
        reason = str(exc).removeprefix(str(path)).lstrip(":0123456789 ")
        return FileReport(path, "skipped", reason, names=names)
    short = agent.name.split(":")[-1]
    alias = f"{namespace}:{short}" if namespace else ""
    aliases = (alias,) if alias and alias != agent.name else ()
    agent = agent.model_copy(update={"origin": origin, "aliases": aliases})
    return FileReport(path, "loaded", agent=agent)


@lru_cache(maxsize=1024)
def _namespace(folder: Path, directory: Path) -> tuple[Plugin | None, str]:
    """The namespace of the files of `directory` (`folder` or below it): the name of the
    Claude Code plugin holding it (its `.claude-plugin/plugin.json`), else its
    subfolders joined by ':'. Asked once per folder, not once per file."""
    for parent in (directory, *directory.parents):
        plugin = _plugin(parent)
        if plugin is not None:
            return plugin, plugin.name
        if parent == folder or folder not in parent.parents:
            break
    return None, ":".join(directory.relative_to(folder).parts)


class Plugin(NamedTuple):
    """A Claude Code plugin folder: its name and where its agents are."""

    root: Path
    name: str
    agent_paths: tuple[Path, ...]  # `agents/` and what the manifest's `agents` lists

    def holds_agent(self, path: Path) -> bool:
        return any(path == p or p in path.parents for p in self.agent_paths)


@lru_cache(maxsize=256)
def _plugin(folder: Path) -> Plugin | None:
    manifest = folder / ".claude-plugin" / "plugin.json"
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        data = {}
    data = data if isinstance(data, dict) else {}
    listed = data.get("agents") or []
    listed = [listed] if isinstance(listed, str) else listed
    folder = folder.resolve()
    paths = [folder / "agents", *((folder / p).resolve() for p in listed if isinstance(p, str))]
    return Plugin(folder, str(data.get("name") or folder.name), tuple(paths))


def bundled_agents_dir() -> Path:
    return bundled_dir("agents")


def search_folders(root: Path, extra: Iterable[str] = ()) -> list[tuple[Path, str]]:
    """Where agents are found, in order, with their origin; a later folder overrides an
    earlier one by name. Claude Code ranks project over user, and so does gsd: bundled,
    then the user's (~/.codex, ~/.gemini, ~/.claude agents), then the project's (.codex,
    .gemini, .claude agents, then agents/), then `specialists.agent_paths`."""
    home = Path(os.environ.get("HOME", "~")).expanduser()
    folders = [(bundled_agents_dir(), "bundled")]
    folders += [(home / f".{tool}" / "agents", "user") for tool in ("codex", "gemini", "claude")]
    folders += [(root / f".{tool}" / "agents", "project") for tool in ("codex", "gemini", "claude")]
    folders.append((root / "agents", "project"))
    folders += [(extra_folder(root, entry), "agent_paths") for entry in extra]
    unique: list[tuple[Path, str]] = []
    for folder, origin in folders:
        if folder not in [f for f, _ in unique]:
            unique.append((folder, origin))
    return unique


def extra_folder(root: Path, entry: str) -> Path:
    """A `specialists.agent_paths` entry as a folder: `~`, `~/x` and `$VARS` expanded as a
    shell would, a relative path taken from the project root."""
    path = os.path.expandvars(os.path.expanduser(entry))
    return Path(path) if os.path.isabs(path) else (root / path).resolve()
