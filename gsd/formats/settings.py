"""`.planning/config.json` as one pydantic model: every key gsd reads, its type and default."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from gsd.core import layout
from gsd.core.errors import InputError
from gsd.core.models import RUNNERS
from gsd.core.rules.select import CODES_WORDS, unknown_code
from gsd.core.safety.policy import RULE_FORMS, parse_rule
from gsd.core.specialists import NAME_RE
from gsd.core.words import suggested
from gsd.formats.budgetsettings import BudgetSettings
from gsd.formats.configkeys import key_lines
from gsd.formats.gatesettings import GateSettings
from gsd.formats.retrysettings import RetrySettings, step_problem
from gsd.formats.salvagesettings import SalvageSettings

# The one place a setting's kind becomes the words of its error: "`key` must be {words}".


def _kind(words: str, accepts: Callable[[Any], bool], convert: Callable[[Any], Any]) -> Any:
    def check(value: Any) -> Any:
        if not accepts(value):
            raise PydanticCustomError("gsd_setting", words)
        return convert(value)

    return PlainValidator(check)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole_at_least(least: int) -> Callable[[Any], bool]:
    return lambda v: _is_number(v) and v == int(v) and v >= least


def _is_paths(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(p, str) for p in value)


def _is_worktree_dir(value: Any) -> bool:
    """None, or a path none of whose parts is `.git` (where it lands is gsd.io.statedir's
    to check: that needs the repository)."""
    if value is None:
        return True
    return (
        isinstance(value, str) and bool(value.strip()) and ".git" not in PurePosixPath(value).parts
    )


def _is_ports(value: Any) -> bool:
    """`sandbox.connect`: "any", or a list of TCP ports (1-65535)."""
    if value == "any":
        return True
    return isinstance(value, list) and all(
        isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536 for port in value
    )


def _is_names(value: Any) -> bool:
    """`sandbox.pass_env`: a list of environment variable names."""
    return isinstance(value, list) and all(
        isinstance(name, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) for name in value
    )


def _is_rule(value: Any) -> bool:
    try:
        return isinstance(value, str) and bool(parse_rule(value))
    except ValueError:
        return False


def _is_rules(value: Any) -> bool:
    return isinstance(value, list) and all(_is_rule(rule) for rule in value)


def _is_codes(value: Any) -> bool:
    """`validate.select` and `validate.ignore`: codes of `gsd validate`'s rules, or their
    starts (gsd.core.rules.select, which the git hook's path reads them with)."""
    return isinstance(value, list) and all(
        isinstance(code, str) and unknown_code(code.upper()) is None for code in value
    )


Flag = Annotated[bool, _kind("true or false", lambda v: isinstance(v, bool), bool)]
Seconds = Annotated[float, _kind("a number >= 0", lambda v: _is_number(v) and v >= 0, float)]
Megabytes = Seconds  # a number >= 0 all the same
Retries = Annotated[int, _kind("a whole number >= 0", _whole_at_least(0), int)]
Agents = Annotated[int, _kind("a whole number of 1 or more", _whole_at_least(1), int)]
Paths = Annotated[list[str], _kind('a list of paths, e.g. ["~/.cache"]', _is_paths, list)]
Ports = Annotated[
    list[int] | str,
    _kind('"any" or a list of TCP ports, e.g. [443, 5432]', _is_ports, lambda v: v),
]
Names = Annotated[list[str], _kind('a list of variable names, e.g. ["GH_TOKEN"]', _is_names, list)]
Rules = Annotated[list[str], _kind(f"a list of rules, each {RULE_FORMS}", _is_rules, list)]
Codes = Annotated[list[str], _kind(CODES_WORDS, _is_codes, list)]
Scope = Annotated[str, _kind('"warn" or "fail"', lambda v: v in ("warn", "fail"), str)]
Outside = Annotated[str, _kind('"skip" or "check"', lambda v: v in ("skip", "check"), str)]
_FOLDER_WORDS = 'a folder outside the repository and every .git folder, e.g. "~/gsd-worktrees"'
WorktreeDir = Annotated[str | None, _kind(_FOLDER_WORDS, _is_worktree_dir, lambda v: v)]
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([KMGT]?)B?", re.IGNORECASE)
_SCALE = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}
MIN_MEMORY = 64 * 1024**2  # below this not even a runner starts


def size_bytes(value: Any) -> int | None:
    """A size as config.json writes it ("8G", "512M", 1073741824) in bytes; None for
    "none"; -1 when it is not one."""
    if value is None or value == "none":
        return None
    if _is_number(value) and value == int(value):
        return int(value)
    match = _SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        return -1
    return int(float(match[1]) * _SCALE[match[2].upper()])


def _is_memory(value: Any) -> bool:
    number = size_bytes(value)
    return number is None or number >= MIN_MEMORY


def _is_processes(value: Any) -> bool:
    return value is None or value == "none" or _whole_at_least(16)(value)


# kept as written (`size_bytes` gives the bytes): config.json's template shows "8G"
Memory = Annotated[
    str | int | None,
    _kind('a size of 64M or more, e.g. "8G", or "none"', _is_memory, lambda v: v),
]
Processes = Annotated[
    int | None,
    _kind(
        'a whole number of 16 or more, or "none"',
        _is_processes,
        lambda v: None if v in (None, "none") else int(v),
    ),
]
Mode = Annotated[
    str, _kind('a string such as "interactive" or "yolo"', lambda v: isinstance(v, str), str)
]


class _Section(BaseModel):
    # GSD's own config.json holds many keys gsd does not read: they are allowed, kept as read
    model_config = ConfigDict(extra="allow", frozen=True)


class Parallelization(_Section):
    enabled: Flag = True
    max_concurrent_agents: Agents = 3


class Workflow(_Section):
    use_worktrees: Flag = True
    use_specialists: Flag = True  # false: every task goes to gsd-executor
    worktree_dir: WorktreeDir = None  # None: the user's state folder (gsd.io.statedir)


class Voltagent(_Section):
    fallback_on_error: Flag = True


class Specialists(_Section):
    timeout_seconds: Seconds = 300.0
    kill_grace_seconds: Seconds = 10.0
    max_retries: Retries = 2
    scope: Scope = "warn"
    agent_paths: Paths = Field(default_factory=list)
    # a specialist may start sub-agents (claude's Agent tool, gemini's invoke_agent,
    # codex's multi_agent), one level deep; off: one level of delegation, gsd's
    allow_subagents: Flag = False
    # over this outside the task's <files>: a warning (0: no limit; gsd/io/git/leftfiles.py)
    large_file_mb: Megabytes = 10.0


class Verification(_Section):
    must_haves: Scope = "warn"  # fail: a plan whose must_haves fail gsd verify fails
    # check: `@~/...` and `@/...` references are looked up too (skip: noted, not looked at)
    outside_references: Outside = "skip"


class GitSettings(_Section):
    commit_docs: Flag = True


class Sandbox(_Section):
    enabled: Flag = True  # SPEC 0: every agent runs in a Landlock sandbox where there is one
    writable: Paths = Field(default_factory=list)
    # TCP ports besides 443 and the runner's API (Landlock ABI 4+); "any": no rule (netports)
    connect: Ports = Field(default_factory=list)
    # the user's credentials an agent gets after all (gsd.core.safety.credentials)
    pass_env: Names = Field(default_factory=list)
    # the user's credential files an agent may read after all (gsd.io.confine.sandbox.unreadable)
    readable: Paths = Field(default_factory=list)
    # per agent, for it and all it starts (gsd.io.confine.limits); None: no limit
    memory: Memory = "8G"
    processes: Processes = 4096


Tokens = Annotated[int, _kind("a whole number of 1 or more", _whole_at_least(1), int)]


class TokenBudget(BaseModel):
    """A runner's token budget (docs/inside/budgets.md): `warn` records, `abort` stops."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    warn: Tokens
    abort: Tokens

    @field_validator("warn", "abort", mode="before")
    @classmethod
    def _digits(cls, value: Any) -> Any:
        """An agent file's frontmatter gives `warn: 30000` as text."""
        return int(value) if isinstance(value, str) and value.isdigit() else value

    @field_validator("abort")
    @classmethod
    def _abort_after_warn(cls, value: int, info: Any) -> int:
        warn = info.data.get("warn")
        if isinstance(warn, int) and value < warn:
            raise PydanticCustomError("gsd_setting", "at least `warn`")
        return value


Runner = Annotated[
    str, _kind('"claude", "gemini" or "codex"', lambda v: v in ("claude", "gemini", "codex"), str)
]


WHEN_KEYS = ("specialists", "domains", "paths")  # `review.when`'s lists, or "all"
_WHEN_WORDS = '"all", or an object of "specialists", "domains" and "paths" lists'
AgentName = Annotated[
    str | None,
    _kind('an agent\'s name, e.g. "code-reviewer"', lambda v: v is None or _named(v), lambda v: v),
]
AnyRunner = Annotated[
    str | None, _kind(f"one of {', '.join(RUNNERS)}", lambda v: v in (None, *RUNNERS), lambda v: v)
]
When = Annotated[str | dict[str, list[str]], PlainValidator(lambda v: _when(v))]


def _named(value: Any) -> bool:
    return isinstance(value, str) and bool(NAME_RE.fullmatch(value))


def _when(value: Any) -> Any:
    """`review.when`, or its error: a key a letter off one it reads is named."""
    lists = isinstance(value, dict) and all(
        k in WHEN_KEYS and _is_paths(v) for k, v in value.items()
    )
    if value == "all" or (lists and value):
        return value
    wrong = [k for k in value if k not in WHEN_KEYS] if isinstance(value, dict) else []
    close = suggested(wrong[0], WHEN_KEYS) if wrong else ""
    raise PydanticCustomError("gsd_setting", _WHEN_WORDS + close.replace("{", "").replace("}", ""))


class ReviewSettings(_Section):
    """The review gate (issue 24): who reviews a task's work before gsd accepts it."""

    agent: AgentName = None  # None: only tasks with `review="AGENT"` are reviewed
    runner: AnyRunner = None  # None: a runner other than the author's
    when: When = "all"
    max_rounds: Agents = 2  # reviews of one task, the last `changes` failing it


class PolicySettings(_Section):
    extra_deny: Rules = Field(default_factory=list)  # gsd.core.safety.policy: added to the baseline


class ValidateSettings(_Section):
    """Which rules `gsd validate` reports: `--select` replaces `select`, `--ignore` adds
    to `ignore` (docs/COMMANDS.md)."""

    select: Codes = Field(default_factory=lambda: ["GSD"])  # every rule
    ignore: Codes = Field(default_factory=list)


class Settings(_Section):
    """Every setting gsd reads (SPEC 7), with SPEC's defaults for the keys left out."""

    # `validate` is a method of pydantic's models: the section's field takes another name
    model_config = ConfigDict(
        extra="allow", frozen=True, serialize_by_alias=True, validate_by_name=True
    )
    mode: Mode = "interactive"
    parallelization: Parallelization = Parallelization()
    workflow: Workflow = Workflow()
    voltagent: Voltagent = Voltagent()
    specialists: Specialists = Specialists()
    git: GitSettings = GitSettings()
    verification: Verification = Verification()
    sandbox: Sandbox = Sandbox()
    # per runner, the same words as an agent file's `token_budget`
    budgets: dict[Runner, TokenBudget] = Field(default_factory=dict)
    policy: PolicySettings = PolicySettings()
    rules: ValidateSettings = Field(default_factory=ValidateSettings, alias="validate")
    review: ReviewSettings = ReviewSettings()
    salvage: SalvageSettings = SalvageSettings()
    budget: BudgetSettings = BudgetSettings()  # a whole run's (gsd.formats.budgetsettings)
    retry: RetrySettings = RetrySettings()  # the retry ladder's steps (gsd.formats.retrysettings)
    gates: GateSettings = GateSettings()  # plan-first gates (gsd.formats.gatesettings)

    @field_validator("parallelization", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        """Older GSD projects write `"parallelization": true` for `{"enabled": true}`."""
        return {"enabled": value} if isinstance(value, bool) else value


class InvalidSettings(InputError):
    """config.json holds settings gsd cannot use: the first problem is the message, every
    one of them is in `problems` (`gsd doctor` lists them all)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems[0])
        self.problems = problems


def parse(text: str, source: str = layout.CONFIG_FILE) -> Settings:
    """config.json's text as settings, validated once; errors name the file, line and key."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}", hint="fix config.json"
        ) from None
    except RecursionError:
        raise InputError(
            f"{source}: JSON nested too deeply to read", hint="fix config.json"
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{source}: must hold a JSON object")
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        lines = key_lines(text)
        raise InvalidSettings([_problem(e, source, lines) for e in exc.errors()]) from None


def load(planning: Path) -> Settings:
    """The project's settings, or the defaults when there is no config.json."""
    path = planning / layout.CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Settings()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    return parse(text, str(path))


def _problem(error: Any, source: str, lines: dict[tuple[str | int, ...], int]) -> str:
    """One pydantic error as gsd's one line: file:line, the dotted key, what it must be."""
    key = tuple(error["loc"])
    words = error["msg"]  # gsd's own words (`_kind`); pydantic's for anything else
    if error["type"] == "model_type":  # a section that is not an object
        words = "an object" + (" or true or false" if key == ("parallelization",) else "")
    line = _line_of((*key, *_first_bad_item(key, error["input"])), lines)
    where = f"{source}:{line}" if line else source
    dotted = ".".join(str(part) for part in key if not isinstance(part, int))
    if error["type"] == "missing":
        return f"{where}: `{dotted}` is missing (give both `warn` and `abort`)"
    shown = json.dumps(error["input"], ensure_ascii=False)
    return f"{where}: `{dotted}` must be {words}, not {shown}"


def _first_bad_item(key: tuple[Any, ...], value: Any) -> tuple[int, ...]:
    """In a list of paths or rules, the index of the first item that is not one (its line
    is shown)."""
    checks = {("policy", "extra_deny"): _is_rule, ("retry", "steps"): lambda v: not step_problem(v)}
    good = checks.get(key, lambda item: isinstance(item, str))
    if isinstance(value, list):
        return next(((i,) for i, item in enumerate(value) if not good(item)), ())
    return ()


def _line_of(key: tuple[str | int, ...], lines: dict[tuple[str | int, ...], int]) -> int:
    """The line of the deepest part of `key` the text holds (a list item, its key)."""
    for end in range(len(key), 0, -1):
        if key[:end] in lines:
            return lines[key[:end]]
    return 0
