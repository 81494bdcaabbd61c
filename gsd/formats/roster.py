"""`.planning/available_agents.md`: the roster of specialists a plan may name."""

from __future__ import annotations

import re

from gsd.core.specialists import NAME_RE
from gsd.formats.lines import Lines

_BOLD_RE = re.compile(r"^[-*+]\s+\*\*([^*]+)\*\*\s*:?\s*(.*)$")
_CODE_RE = re.compile(r"^[-*+]\s+`([^`]+)`\s*:?\s*(.*)$")
_BARE_RE = re.compile(rf"^(?:[-*+]\s+)?({NAME_RE.pattern})$")


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
        match = _BOLD_RE.match(line) or _CODE_RE.match(line) or _BARE_RE.match(line)
        if match is None:
            continue
        name = match.group(1).strip()
        if NAME_RE.fullmatch(name):
            description = match.group(2) if match.lastindex == 2 else ""
            agents.setdefault(name, description.strip())
    return agents


def render(agents: dict[str, str]) -> str:
    """available_agents.md as `gsd agents sync` writes it: specialists, one line each."""
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
    return "\n".join(lines) + "\n"
