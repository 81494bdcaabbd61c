"""What the three protocols share: the reply they build and how a step's path is made
absolute against the working folder the CLI told its model about."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """SSE events (name, data) or one JSON body; the usage (input, output) it reported,
    None when none; the scenario turn it answered, None for a side request; whether
    that turn is the scenario's final answer; whether it is held back."""

    events: list[tuple[str | None, dict[str, Any]]] = field(default_factory=list)
    body: dict[str, Any] | None = None
    usage: tuple[int, int] | None = None
    status: int = 200
    turn: int | None = None
    final: bool = False
    held: bool = False  # sent only when the server closes (a model that hangs)


# How each CLI tells its model where it works: claude "Working directory: /x",
# codex "<cwd>/x</cwd>", gemini "I'm currently working in the directory: /x".
_CWD_RE = re.compile(
    r"working directory: (\S+)|<cwd>([^<]+)</cwd>|working in the directory: (\S+?)\.?\s",
    re.IGNORECASE,
)


def cwd_in(text: str) -> str:
    """The working folder named in the conversation's text ("" when none is)."""
    match = _CWD_RE.search(text)
    if match is None:
        return ""
    return next(g for g in match.groups() if g)


def absolute(cwd: str, path: str) -> str:
    return path if path.startswith("/") else posixpath.join(cwd or "/", path)


def text_of(value: Any) -> str:
    """Every string inside a JSON value, joined (a system prompt, the messages)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(text_of(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(text_of(v) for v in value)
    return ""


@dataclass(frozen=True)
class Opening:
    """What identifies an agent loop's conversation on each of its requests.

    `key`: the text of its messages before the model's first answer (the prompt the CLI
    opened with), the same on every request of one conversation; `system`: its system
    prompt (searched by a route, not part of the key); `fresh`: the model has not
    answered yet, so this request starts a new conversation."""

    key: str
    system: str
    fresh: bool
    prompt: str = ""  # its last message's text: the prompt, after what the CLI adds

    @property
    def text(self) -> str:
        """What a route's pattern is searched in: the system prompt, then the opening."""
        return f"{self.system}\n{self.key}"


def opening(items: list[dict[str, Any]], answered: Any, system: Any) -> Opening:
    """The Opening of a conversation whose messages are `items`, `answered(item)` true
    for the model's own (a tool call, an answer): the items before the first of those."""
    before: list[str] = []
    for item in items:
        if answered(item):
            break
        before.append(texts(item))
    else:
        return Opening("\n".join(before), texts(system), True, _last(items))
    return Opening("\n".join(before), texts(system), False, _last(items[: len(before)]))


def _last(value: Any) -> str:
    """The last text inside `value` (a CLI puts its own context before the prompt)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        value = [
            v
            for k, v in value.items()
            if isinstance(v, list | dict) or (k in ("text", "content") and isinstance(v, str))
        ]
    for each in reversed(value if isinstance(value, list) else []):
        if (text := _last(each)).strip():
            return text
    return ""


def texts(value: Any) -> str:
    """The text a message carries: a plain string, or every `text` or string `content`
    field inside it (never the markers a CLI moves between requests: `cache_control`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        found = [v for k, v in value.items() if k in ("text", "content") and isinstance(v, str)]
        found += [texts(v) for v in value.values() if isinstance(v, list | dict)]
        return "\n".join(t for t in found if t)
    if isinstance(value, list):
        return "\n".join(t for t in (texts(v) for v in value) if t)
    return ""
