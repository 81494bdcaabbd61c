"""Agent definitions: the Markdown + YAML schema, tool tiers, and discovery by name."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gsd import frontmatter
from gsd.files import bundled_dir
from gsd.roster import NAME_RE

Tier = Literal["read-only", "read+shell", "read+write", "full"]
Runner = Literal["claude", "gemini", "codex", "command"]

READ_TOOLS = frozenset({"read_file", "glob", "search_file_content", "read_many_files"})
WEB_TOOLS = frozenset({"google_web_search", "web_fetch", "web_search"})
SHELL_TOOL = "run_shell_command"
WRITE_TOOLS = frozenset({"write_file", "replace"})
KNOWN_TOOLS = READ_TOOLS | WEB_TOOLS | WRITE_TOOLS | {SHELL_TOOL}

EXECUTOR = "gsd-executor"  # the fallback every task can run on


class AgentError(Exception):
    """An agent file gsd cannot use; the message names the file and the reason."""


class Agent(BaseModel):
    """One agent file (Maestro's schema, plus how to run it)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    description: str = ""
    kind: str = "local"
    tools: list[str] = Field(default_factory=list)
    model: str | None = None
    temperature: float | None = None
    max_turns: int | None = Field(default=None, ge=1)
    timeout_mins: float | None = Field(default=None, gt=0)
    runner: Runner = "claude"
    command: list[str] | None = None
    # not frontmatter: where the agent came from and its persona text
    body: str = ""
    source: str = ""

    @field_validator("name")
    @classmethod
    def _name_is_safe(cls, value: str) -> str:
        if not NAME_RE.fullmatch(value):
            raise ValueError(f"name {value!r} may hold only letters, digits and _.:-")
        return value

    @field_validator("tools", mode="before")
    @classmethod
    def _tools_list(cls, value: Any) -> Any:
        if isinstance(value, str):  # `tools: read_file, glob` (Claude Code's own form)
            return [t.strip() for t in value.split(",") if t.strip()]
        return value

    @field_validator("tools")
    @classmethod
    def _tools_known(cls, value: list[str]) -> list[str]:
        unknown = [t for t in value if t not in KNOWN_TOOLS]
        if unknown:
            raise ValueError(
                f"unknown tools {', '.join(unknown)}; known: {', '.join(sorted(KNOWN_TOOLS))}"
            )
        return value

    @model_validator(mode="after")
    def _command_for_command_runner(self) -> Agent:
        if self.runner == "command" and not self.command:
            raise ValueError("runner: command needs `command: [program, args...]`")
        if self.runner != "command" and self.command:
            raise ValueError(
                f"`command` is only read with runner: command (runner is {self.runner})"
            )
        return self

    @property
    def tier(self) -> Tier:
        return tier_of(self.tools)

    @property
    def is_system(self) -> bool:
        """gsd's own agents (gsd-executor, gsd-planner) are not specialists."""
        return self.name.split(":")[-1].startswith("gsd-")


def tier_of(tools: Iterable[str]) -> Tier:
    """read-only < read+shell < read+write < full, from what the tools allow."""
    tools = set(tools)
    shell = SHELL_TOOL in tools
    write = bool(tools & WRITE_TOOLS)
    if shell and write:
        return "full"
    if write:
        return "read+write"
    if shell:
        return "read+shell"
    return "read-only"


def parse_agent(text: str, source: str, expected_name: str | None = None) -> Agent:
    """An agent from its file text; AgentError says what is wrong, with the line."""
    try:
        cut = frontmatter.split(text)
        data, _ = frontmatter.load(cut.yaml_text)
    except frontmatter.FrontmatterError as exc:
        raise AgentError(f"{source}:{exc.line}: {exc.message}") from None
    data = _coerce(data)
    if expected_name is not None:
        data.setdefault("name", expected_name)
        if data["name"] != expected_name:
            raise AgentError(
                f"{source}: name {data['name']!r} does not match its path ({expected_name!r}); "
                "rename the file or fix `name:`"
            )
    try:
        return Agent(**data, body=cut.body.strip("\n") + "\n", source=source)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'agent'}: {e['msg']}" for e in exc.errors()
        )
        raise AgentError(f"{source}: {problems}") from None


def _coerce(data: dict[str, Any]) -> dict[str, Any]:
    """Frontmatter is all strings; pydantic turns "0.2" into 0.2, but empty means unset."""
    return {k: v for k, v in data.items() if v != "" and k not in ("body", "source")}


def bundled_agents_dir() -> Path:
    return bundled_dir("agents")


def search_path(root: Path, extra: Iterable[str] = ()) -> list[Path]:
    """Where agents are found, in order; a later folder overrides an earlier one by name."""
    home = Path(os.environ.get("HOME", "~")).expanduser()
    folders = [
        bundled_agents_dir(),
        home / ".claude" / "agents",
        root / ".claude" / "agents",
        root / "agents",
    ]
    folders.extend(extra_folder(root, entry) for entry in extra)
    unique: list[Path] = []
    for folder in folders:
        if folder not in unique:
            unique.append(folder)
    return unique


def extra_folder(root: Path, entry: str) -> Path:
    """A `specialists.agent_paths` entry as a folder: `~`, `~/x` and `$VARS` expanded as a
    shell would, a relative path taken from the project root."""
    path = os.path.expandvars(os.path.expanduser(entry))
    return Path(path) if os.path.isabs(path) else (root / path).resolve()


def discover(folders: Iterable[Path]) -> tuple[dict[str, Agent], list[str]]:
    """Every agent in the folders, by name, and a warning per broken file (then skipped).

    A file's name below its folder is the agent's name; a subfolder is a namespace:
    `voltagent-lang/python-pro.md` is `voltagent-lang:python-pro`.
    """
    agents: dict[str, Agent] = {}
    warnings: list[str] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.md")):
            relative = path.relative_to(folder)
            if path.name.upper() == "README.MD" or any(p.startswith(".") for p in relative.parts):
                continue
            name = ":".join(relative.with_suffix("").parts)
            try:
                agent = parse_agent(path.read_text(encoding="utf-8"), str(path), name)
            except (AgentError, UnicodeDecodeError, OSError) as exc:
                warnings.append(
                    f"skipped agent {exc}"
                    if isinstance(exc, AgentError)
                    else f"skipped agent {path}: {exc}"
                )
                continue
            agents[agent.name] = agent
    return agents, warnings
