"""`.planning/available_agents.md`: the roster of specialists a plan may name."""

from __future__ import annotations

import re
from functools import cache

from gsd.core.specialists import NAME_RE
from gsd.formats.lines import Lines

_BOLD_RE = re.compile(r"^[-*+]\s+\*\*([^*]+)\*\*\s*:?\s*(.*)$")


@cache
def _code_re() -> re.Pattern[str]:
    return re.compile(r"^[-*+]\s+`([^`]+)`\s*:?\s*(.*)$")


@cache
def _bare_re() -> re.Pattern[str]:
    return re.compile(rf"^(?:[-*+]\s+)?({NAME_RE.pattern})$")


_ALIASES_NOTE = "The same specialists by the `namespace:name` their folder or plugin gives them."


def parse(text: str) -> dict[str, str]:
    """Names and descriptions, from any of the three forms found in the wild:

    `- **name**: description`, ``- `name`: description`` and one bare name a line.
    Headings, prose and fenced examples are not names.
    """
    agents: dict[str, str] = {}
    lines = Lines(text)
    for index in lines.plain(frontmatter=False):  # fenced examples left out
        line = lines.body(index).strip()
        if not line or line.startswith(("#", "_", ">")):
            continue
        match = _BOLD_RE.match(line) or _code_re().match(line) or _bare_re().match(line)
        if match is None:
            continue
        name = match.group(1).strip()
        if NAME_RE.fullmatch(name):
            description = match.group(2) if match.lastindex == 2 else ""
            agents.setdefault(name, description.strip())
    return agents


def render(agents: dict[str, str], aliases: dict[str, str] | None = None) -> str:
    """available_agents.md as `gsd agents sync` writes it: specialists, one line each,
    then the `ns:name` alias each one answers to as well (alias -> name), one a line."""
    lines = [
        "# Available Specialists",
        "",
        'Written by `gsd agents sync`; plans may name these in `<task specialist="...">`.',
        "",
        "## Installed Specialists",
        "",
    ]
    for name in sorted(agents):
        description = " ".join(agents[name].split())
        lines.append(f"- **{name}**: {description}" if description else f"- **{name}**")
    shown = {alias: name for alias, name in (aliases or {}).items() if name in agents}
    if shown:
        lines += ["", "## Namespaced Names", "", _ALIASES_NOTE, ""]
        lines += [f"- **{alias}**: {shown[alias]}" for alias in sorted(shown)]
    return "\n".join(lines) + "\n"
