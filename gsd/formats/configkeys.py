"""The keys of config.json's own gsd sections that gsd does not read: a misspelt setting
(`specialists.max_retry`) is a warning with its line, not silence.

gsd owns `specialists`, `sandbox`, `policy`, `validate`, `retry`, `salvage` and
`budget`: no GSD writes them but gsd. `budgets` is checked whole by its model (an
unknown key there is an error).
Every other section is shared with upstream GSD and its forks (`workflow`,
`parallelization`, `git`, `voltagent`, `verification` hold their keys too, upstream
keeps its confirmations under `gates`: `confirm_plan`..., and forks keep their own
reviewers under `review`: `enabled`, `fail_mode`...): a key there
is warned about only when it is a letter or two off one gsd reads
(`workflow.use_worktree`), as is a top-level key a letter or two off one of gsd's own
sections (`specialist`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from gsd.core.words import suggested

OWNED = (
    "specialists",
    "sandbox",
    "policy",
    "validate",
    "retry",
    "salvage",
    "budget",
)

# The keys gsd reads, by section: gsd.formats.settings.Settings's fields (kept here, with a
# test that they match it, so that `gsd validate` need not load pydantic).
READ: dict[str, tuple[str, ...]] = {
    "parallelization": ("enabled", "max_concurrent_agents"),
    "workflow": ("use_worktrees", "use_specialists", "worktree_dir"),
    "voltagent": ("fallback_on_error",),
    "specialists": (
        "timeout_seconds",
        "kill_grace_seconds",
        "max_retries",
        "scope",
        "agent_paths",
        "allow_subagents",
        "large_file_mb",
    ),
    "git": ("commit_docs",),
    "verification": ("must_haves", "outside_references"),
    "sandbox": ("enabled", "writable", "connect", "pass_env", "readable", "memory", "processes"),
    "policy": ("extra_deny",),
    "validate": ("select", "ignore"),
    "review": ("agent", "runner", "when", "max_rounds"),
    "salvage": ("keep_days", "accept_timeout_when_verified"),
    "retry": ("steps",),
    "gates": ("plan_first", "approver", "runner"),
    "budget": ("usd", "tokens"),
}
TOP = ("mode", *READ, "budgets")  # budgets: checked whole by its model


class UnreadKey(NamedTuple):
    line: int  # 0: not found in the text
    key: str  # dotted: specialists.max_retry
    message: str  # what it is and, where one is close, the key meant


def unread_in(path: Path) -> list[UnreadKey]:
    """`unread_keys` of a config.json on disk; none when it cannot be read (the settings'
    own load says why)."""
    try:
        return unread_keys(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def unread_keys(text: str) -> list[UnreadKey]:
    """Each key of gsd's own sections it does not read, in file order; none when the text
    is not a JSON object (the settings' own check says so)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return []
    if not isinstance(data, dict):
        return []
    lines = key_lines(text)
    found: list[UnreadKey] = []
    for key in data:
        close = "" if key in TOP else suggested(key, OWNED)
        if close:
            found.append(_unread(lines, (key,), close))
    for section, value in data.items():
        known = READ.get(section, ())
        if not known or not isinstance(value, dict):
            continue
        for key in value:
            close = "" if key in known else suggested(key, known, prefix=f"{section}.")
            if close or (key not in known and section in OWNED):
                found.append(_unread(lines, (section, key), close))
    return sorted(found, key=lambda k: k.line)


def _unread(lines: dict[tuple[str | int, ...], int], key: tuple[str, ...], close: str) -> UnreadKey:
    dotted = ".".join(key)
    message = f"`{dotted}` is not a setting gsd reads: it has no effect{close}"
    return UnreadKey(lines.get(key, 0), dotted, message)


def key_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """The line of every key and list item in valid JSON text, by its path (the last of
    duplicate keys wins, as in `json.loads`)."""
    lines: dict[tuple[str | int, ...], int] = {}
    _scan(text, _skip_space(text, 0), (), lines)
    return lines


_DECODER = json.JSONDecoder()


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _scan(text: str, at: int, path: tuple[str | int, ...], lines: dict[Any, int]) -> int:
    """Record the lines under the value starting at `at`; return where it ends."""
    opening = text[at : at + 1]
    if opening not in ("{", "["):
        return _DECODER.raw_decode(text, at)[1]
    closing, index = ("}" if opening == "{" else "]"), 0
    at = _skip_space(text, at + 1)
    while text[at] != closing:
        if opening == "{":
            lines_before = text.count("\n", 0, at)
            key, at = json.decoder.scanstring(text, at + 1)  # type: ignore[attr-defined]
            child: tuple[str | int, ...] = (*path, key)
            lines[child] = lines_before + 1
            at = _skip_space(text, _skip_space(text, at) + 1)  # past the colon
        else:
            child, index = (*path, index), index + 1
            lines[child] = text.count("\n", 0, at) + 1
        at = _skip_space(text, _scan(text, at, child, lines))
        if text[at] == ",":
            at = _skip_space(text, at + 1)
    return at + 1
