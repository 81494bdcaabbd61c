"""Agent files as users have them (Claude Code, Gemini CLI, Codex, gsd's own): one model, tiers.

docs/AGENTS.md holds the mapping from each dialect's fields to this model, table by table.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gsd.core.specialists import NAME_RE
from gsd.formats import frontmatter
from gsd.formats.settings import TokenBudget

Tier = Literal["read-only", "read+shell", "read+write", "full"]
Runner = Literal["claude", "gemini", "codex", "command"]
Ability = Literal["read", "shell", "write", "web"]

# What each tool lets an agent do. Gemini CLI names come from its
# packages/core/src/tools/definitions/base-declarations.ts and tool-names.ts
# (TOOL_LEGACY_ALIASES: search_file_content is grep_search's old name); Claude Code
# names from its tools reference. None: the tool neither reads, writes, runs nor
# reaches the web by itself (todo lists, questions, skills, sub-agents, plan mode).
TOOL_ABILITIES: dict[str, Ability | None] = {
    # Gemini CLI, current and older
    "read_file": "read",
    "read_many_files": "read",
    "glob": "read",
    "grep_search": "read",
    "search_file_content": "read",
    "list_directory": "read",
    "get_internal_docs": "read",
    "read_mcp_resource": "read",
    "list_mcp_resources": "read",
    "google_web_search": "web",
    "web_fetch": "web",
    "web_search": "web",
    "run_shell_command": "shell",
    "write_file": "write",
    "replace": "write",
    "write_todos": None,
    "save_memory": None,
    "ask_user": None,
    "activate_skill": None,
    "enter_plan_mode": None,
    "exit_plan_mode": None,
    "update_topic": None,
    "complete_task": None,
    "invoke_agent": None,
    # Claude Code
    "Read": "read",
    "Glob": "read",
    "Grep": "read",
    "LS": "read",
    "NotebookRead": "read",
    "ListMcpResourcesTool": "read",
    "ReadMcpResourceTool": "read",
    "WebFetch": "web",
    "WebSearch": "web",
    "Bash": "shell",
    "Write": "write",
    "Edit": "write",
    "MultiEdit": "write",
    "NotebookEdit": "write",
    "BashOutput": None,
    "KillShell": None,
    "KillBash": None,
    "Task": None,
    "Agent": None,
    "TodoWrite": None,
    "ExitPlanMode": None,
    "Skill": None,
    "SlashCommand": None,
    "AskUserQuestion": None,
}
# Claude Code's core set: what `tools` omitted expands to before `disallowedTools`.
ALL_TOOLS = (
    "Read",
    "Glob",
    "Grep",
    "LS",
    "Bash",
    "Write",
    "Edit",
    "WebFetch",
    "WebSearch",
    "TodoWrite",
    "Task",
)
KNOWN_TOOLS = frozenset(TOOL_ABILITIES)
WEB_TOOLS = frozenset(t for t, a in TOOL_ABILITIES.items() if a == "web")
PERMISSION_MODES = frozenset(
    {"default", "acceptEdits", "dontAsk", "bypassPermissions", "plan", "auto"}
)
# Codex `sandbox_mode` -> the widest gsd tier whose codex argv asks for that same
# sandbox (gsd.formats.runners.codex.SANDBOX), so gsd never widens what the file asked for.
CODEX_SANDBOX_TIERS: dict[str, Tier] = {
    "read-only": "read+shell",
    "workspace-write": "read+write",
    "danger-full-access": "full",
}
CODEX_DEFAULT_SANDBOX = "read-only"  # `codex exec`'s own default when a file sets none
# Claude Code's camelCase keys, read as gsd's snake_case fields.
CLAUDE_KEYS = {
    "maxTurns": "max_turns",
    "permissionMode": "permission_mode",
    "disallowedTools": "disallowed_tools",
}
IGNORED_KEYS = frozenset({"color"})  # display-only in Claude Code
# Every key of the dialects above: where a line-by-line read starts a new field.
KNOWN_KEYS = frozenset(
    {
        "name",
        "description",
        "kind",
        "tools",
        "model",
        "temperature",
        "max_turns",
        "timeout_mins",
        "runner",
        "command",
        "color",
        "maxTurns",
        "permissionMode",
        "disallowedTools",
        "skills",
        "hooks",
        "mcpServers",
        "mcp_servers",
        "memory",
        "background",
        "isolation",
        "display_name",
        "effort",
        "token_budget",
    }
)


class AgentError(Exception):
    """An agent file gsd cannot use; the message names the file and the reason."""


def _tool_list(value: Any) -> Any:
    """`tools: Read, Grep` (Claude Code's comma string) or a YAML list."""
    if isinstance(value, str):
        return [t.strip() for t in value.split(",") if t.strip()]
    return value


def base_tool(entry: str) -> str:
    """`Bash(git diff:*)` and `Task(reviewer)` are rules on a tool: the tool is `Bash`."""
    return entry.split("(", 1)[0].strip()


class Agent(BaseModel):
    """One agent file, in any dialect gsd reads, plus where it came from."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    description: str = ""
    kind: str = "local"
    tools: list[str] = Field(default_factory=list)  # as written; [] when omitted
    tools_omitted: bool = False  # no `tools` line: all tools (Claude Code's meaning)
    disallowed_tools: list[str] = Field(default_factory=list)
    permission_mode: str | None = None
    sandbox_mode: str | None = None  # Codex files only
    model: str | None = None
    temperature: float | None = None
    max_turns: int | None = Field(default=None, ge=1)
    timeout_mins: float | None = Field(default=None, gt=0)
    token_budget: TokenBudget | None = None  # over config.json's `budgets` for its runner
    runner: Runner = "claude"
    command: list[str] | None = None
    # not frontmatter: the persona text, and where the file was found
    body: str = ""
    source: str = ""  # the file's path
    origin: str = ""  # which search folder: bundled, user, project, agent_paths
    aliases: tuple[str, ...] = ()  # `ns:name` from a subfolder or plugin
    overrides: str = ""  # source of the agent of the same name this one replaced
    notes: tuple[str, ...] = ()  # what gsd noticed but loaded anyway

    @model_validator(mode="before")
    @classmethod
    def _dialects(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = {CLAUDE_KEYS.get(k, k): v for k, v in data.items() if k not in IGNORED_KEYS}
        if "tools" not in data and "sandbox_mode" not in data and not data.get("tools_omitted"):
            data["tools_omitted"] = data.get("runner") != "command"
        if "runner" not in data:
            model = str(data.get("model") or "")
            gemini = data.get("kind") == "local" or model.startswith("gemini-")
            data["runner"] = "gemini" if gemini else "claude"
        return data

    @field_validator("name")
    @classmethod
    def _name_is_safe(cls, value: str) -> str:
        if not NAME_RE.fullmatch(value):
            raise ValueError(f"name {value!r} may hold only letters, digits and _.:-")
        return value

    @field_validator("tools", "disallowed_tools", mode="before")
    @classmethod
    def _tools_list(cls, value: Any) -> Any:
        return _tool_list(value)

    @field_validator("kind")
    @classmethod
    def _local_only(cls, value: str) -> str:
        if value != "local":
            raise ValueError(f"{value!r} agents (Gemini's A2A remote agents) cannot be spawned")
        return value

    @field_validator("sandbox_mode")
    @classmethod
    def _known_sandbox(cls, value: str | None) -> str | None:
        if value is not None and value not in CODEX_SANDBOX_TIERS:
            raise ValueError(f"unknown sandbox_mode; known: {', '.join(CODEX_SANDBOX_TIERS)}")
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
    def effective_tools(self) -> frozenset[str]:
        """The tools the agent may use: as written (all when omitted) less the denied."""
        written = {base_tool(t) for t in self.tools}
        tools = set(ALL_TOOLS) if self.tools_omitted or "*" in written else written
        return frozenset(tools - {base_tool(t) for t in self.disallowed_tools if "(" not in t})

    @property
    def tier(self) -> Tier:
        if self.sandbox_mode is not None:
            found = CODEX_SANDBOX_TIERS[self.sandbox_mode]
        else:
            found = tier_of(self.effective_tools)
        return "read-only" if self.permission_mode == "plan" else found

    @property
    def web(self) -> bool:
        """May search or fetch the web (the claude runner then grants its web tools)."""
        if self.sandbox_mode is not None:
            return str(getattr(self, "web_search", "disabled")) not in ("disabled", "false")
        return bool(self.effective_tools & WEB_TOOLS)

    @property
    def unknown_tools(self) -> list[str]:
        return [t for t in self.tools if base_tool(t) not in KNOWN_TOOLS and t != "*"]

    @property
    def is_system(self) -> bool:
        """gsd's own agents (gsd-executor, gsd-planner) are not specialists."""
        return self.name.split(":")[-1].startswith("gsd-")


def abilities(tools: Iterable[str]) -> set[Ability]:
    """What a set of tools lets an agent do; unknown and mcp__ tools grant nothing."""
    found = (TOOL_ABILITIES.get(base_tool(t)) for t in tools)
    return {a for a in found if a is not None}


def tier_of(tools: Iterable[str]) -> Tier:
    """read-only < read+shell < read+write < full, from what the tools allow."""
    can = abilities(tools)
    if "shell" in can and "write" in can:
        return "full"
    if "write" in can:
        return "read+write"
    if "shell" in can:
        return "read+shell"
    return "read-only"


def parse_agent(
    text: str, source: str, expected_name: str | None = None, *, keep_body: bool = True
) -> Agent:
    """An agent from its Markdown file text; AgentError says what is wrong, with the line.

    `expected_name` (the file's stem) names an agent whose file has no `name:`; a
    different `name:` wins and is noted, as in Claude Code, where `name` is the name.
    Without `keep_body` its persona is left out (a listing holds thousands of agents).
    """
    yaml_error: frontmatter.FrontmatterError | None = None
    try:
        cut = frontmatter.split(text)
        try:
            data, _ = frontmatter.load(cut.yaml_text)
        except frontmatter.FrontmatterError as exc:
            if not exc.message.startswith("invalid YAML"):
                raise
            yaml_error, data = exc, frontmatter.lenient_frontmatter(cut.yaml_text, KNOWN_KEYS)
    except frontmatter.FrontmatterError as exc:
        raise AgentError(f"{source}:{exc.line}: {exc.message}") from None
    try:
        body = cut.body if keep_body else ""
        agent = build_agent(_coerce(data), body, source, expected_name)
    except AgentError:
        if yaml_error is None:
            raise
        raise AgentError(f"{source}:{yaml_error.line}: {yaml_error.message}") from None
    if yaml_error is None:
        return agent
    note = (
        f"frontmatter is not valid YAML (line {yaml_error.line}: {yaml_error.message}); "
        "read line by line"
    )
    return agent.model_copy(update={"notes": (note, *agent.notes)})


def parse_codex_agent(
    text: str, source: str, expected_name: str | None = None, *, keep_body: bool = True
) -> Agent:
    """A Codex custom agent (`.codex/agents/NAME.toml`): runner codex."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: tomli when it is installed, else each TOML file is skipped
        try:
            import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
        except ModuleNotFoundError:
            raise AgentError(f"{source}: Codex TOML agents need Python 3.11+ or tomli") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AgentError(f"{source}: invalid TOML: {exc}") from None
    body = str(data.pop("developer_instructions", "")) if keep_body else ""
    data.pop("developer_instructions", None)
    data = _coerce(data)  # a file's own `source` or `notes` key must not clash with gsd's
    data.setdefault("runner", "codex")
    data.setdefault("sandbox_mode", CODEX_DEFAULT_SANDBOX)
    return build_agent(data, body, source, expected_name)


def build_agent(data: dict[str, Any], body: str, source: str, expected: str | None) -> Agent:
    notes: list[str] = []
    if expected is not None:
        data.setdefault("name", expected)
        if _loose(str(data["name"]).split(":")[-1]) != _loose(expected):
            notes.append(f"name {data['name']!r} differs from its file name ({expected!r})")
    try:
        agent = Agent(**data, body=body.strip("\n") + "\n", source=source)
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors())
        raise AgentError(f"{source}: {problems}") from None
    if agent.unknown_tools:
        unknown = ", ".join(agent.unknown_tools)
        notes.append(f"tools unknown to gsd (kept, they grant nothing): {unknown}")
    if agent.permission_mode is not None and agent.permission_mode not in PERMISSION_MODES:
        notes.append(f"permissionMode {agent.permission_mode!r} unknown: read as default")
    return agent.model_copy(update={"notes": tuple(notes)}) if notes else agent


def _problem(error: Any) -> str:
    where = ".".join(str(p) for p in error["loc"]) or "agent"
    value = error.get("input")
    got = f" (got {value!r})" if isinstance(value, (str, int, float)) and where != "agent" else ""
    return f"{where}: {error['msg']}{got}"


def _loose(name: str) -> str:
    """Names compared as people write them: `code_reviewer` is `code-reviewer`."""
    return name.lower().replace("_", "-")


def _coerce(data: dict[str, Any]) -> dict[str, Any]:
    """What a file may set: gsd's own fields (where it came from, what it noticed) are
    not the file's to write, and an empty value means unset (pydantic turns "0.2" into
    0.2)."""
    reserved = ("body", "source", "origin", "aliases", "overrides", "notes", "tools_omitted")
    return {k: v for k, v in data.items() if v != "" and k not in reserved}
