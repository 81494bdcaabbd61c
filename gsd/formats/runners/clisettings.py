"""An agent CLI's project settings.json: gsd's hook entries merged in and taken out again.

Both CLIs keep hooks in one shape (Claude Code 2.1.330, https://code.claude.com/docs/en/hooks;
Gemini CLI 0.61.0, bundle/docs/hooks/reference.md "Configuration schema"):

    {"hooks": {"<Event>": [{"matcher": "<regex>", "hooks": [{"type": "command",
                                                           "command": "<shell line>"}]}]}}

gsd's entries are told apart by their command alone (`<gsd> hooks run <cli>-<what>`), so
that everything else in the file (other keys, other hooks, a user's hook in the same
group) is kept as it was, in its order. Gemini CLI reads settings.json through
strip-json-comments (bundle/chunk-2YTYPKEZ.js `_doLoadSettings`); gsd writes plain JSON
only, so a file with comments is refused rather than rewritten without them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gsd.core.errors import InputError
from gsd.formats.files import write_atomic

# Where each CLI reads a project's settings, from the project's root.
SETTINGS = {"claude": ".claude/settings.json", "gemini": ".gemini/settings.json"}
HOOKS = "hooks"
# A command gsd wrote: the gsd program (any path, maybe quoted), then one of the names
# `gsd hooks run` answers, at the very end.
_OURS = re.compile(
    r"\shooks run (?:claude|gemini)-"
    r"(post-edit|session-start|session-end|pre-tool|after-agent|pre-compact)$"
)

Settings = dict[str, Any]
Group = dict[str, Any]  # {"matcher": ..., "hooks": [...]}: one entry of an event's list


def is_ours(hook: object) -> bool:
    """Whether one hook configuration is one gsd wrote."""
    return isinstance(hook, dict) and bool(_OURS.search(str(hook.get("command", ""))))


def parse(text: str, where: str) -> Settings:
    """The settings object; an empty file is an empty object. Not JSON is one line."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except RecursionError:
        raise InputError(f"{where} is JSON nested too deeply to read") from None
    except ValueError as exc:
        comments = "//" in text or "/*" in text
        why = "has comments, which rewriting would lose" if comments else f"is not JSON ({exc})"
        raise InputError(
            f"{where} {why}",
            hint="add gsd's hooks by hand (docs/inside/hooks.md shows them), or make it plain JSON",
        ) from None
    if not isinstance(data, dict):
        raise InputError(f"{where} holds a JSON {type(data).__name__}, not an object")
    _check_shape(data, where)
    return data


def render(settings: Settings, indent: int = 2) -> str:
    return json.dumps(settings, indent=indent, ensure_ascii=False) + "\n"


def indent_of(text: str) -> int:
    """The indent the file uses (that of its first indented line), so a rewrite keeps it."""
    match = re.search(r"^( +)\S", text, re.MULTILINE)
    return len(match.group(1)) if match else 2


def with_hooks(settings: Settings, groups: dict[str, Group]) -> Settings:
    """`settings` with gsd's earlier entries taken out and `groups` (event -> group) added."""
    result = without_hooks(settings)
    hooks = dict(result.get(HOOKS) or {})
    for event, group in groups.items():
        hooks[event] = [*hooks.get(event, []), group]
    return {**result, HOOKS: hooks}


def without_hooks(settings: Settings) -> Settings:
    """`settings` without gsd's hooks: a group, event list or hooks object only gsd's
    entries filled goes with them; anything of the user's stays, empty or not."""
    hooks = settings.get(HOOKS)
    if not isinstance(hooks, dict):
        return settings
    kept_events: dict[str, Any] = {}
    removed = False
    for event, groups in hooks.items():
        kept_groups, dropped = _without_ours(groups)
        removed = removed or dropped
        if kept_groups or not dropped:
            kept_events[event] = kept_groups
    if not removed:
        return settings
    if not kept_events:
        return {key: value for key, value in settings.items() if key != HOOKS}
    return {**settings, HOOKS: kept_events}


def ours(settings: Settings) -> list[str]:
    """The commands of gsd's hooks in `settings`, as `Event: command`."""
    found = []
    for event, groups in (settings.get(HOOKS) or {}).items():
        for group in groups:
            for hook in group.get(HOOKS, []) if isinstance(group, dict) else []:
                if is_ours(hook):
                    found.append(f"{event}: {hook['command']}")
    return found


def our_names(settings: Settings) -> list[str]:
    """Which of gsd's hooks `settings` holds (`post-edit`, `pre-tool`, ...)."""
    names = [_OURS.search(line) for line in ours(settings)]
    return [match.group(1) for match in names if match]


def load(path: Path) -> tuple[Settings, int]:
    """The settings in `path` (none when it is missing) and the indent it is written with."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, 2
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it ({exc})") from None
    return parse(text, str(path)), indent_of(text)


def save(path: Path, settings: Settings, indent: int = 2) -> None:
    write_atomic(path, render(settings, indent))


def _without_ours(groups: list[Any]) -> tuple[list[Any], bool]:
    """An event's groups without gsd's hooks, and whether any was taken out."""
    kept: list[Any] = []
    dropped = False
    for group in groups:
        hooks = group.get(HOOKS) if isinstance(group, dict) else None
        if not isinstance(hooks, list) or not any(is_ours(h) for h in hooks):
            kept.append(group)
            continue
        dropped = True
        others = [h for h in hooks if not is_ours(h)]
        if others:
            kept.append({**group, HOOKS: others})
    return kept, dropped


def _check_shape(data: Settings, where: str) -> None:
    """The parts gsd edits must have the documented shape; it edits nothing else."""
    hooks = data.get(HOOKS)
    if hooks is None:
        return
    if not isinstance(hooks, dict):
        raise InputError(f"{where}: `hooks` is not an object", hint="fix or remove it")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise InputError(f"{where}: `hooks.{event}` is not a list", hint="fix or remove it")
