"""`.planning/available_agents.md`: the roster of specialists a plan may name."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Literal

from gsd.formats.lines import Lines

# A specialist name gsd will ever pass on (SPEC section 3, step 2).
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")

# What a task writes for "no specialist" (SPEC 3, step 1), compared lower-cased.
NULL_NAMES = frozenset({"", "null", '"null"', "'null'", "none", "~"})

ROSTER_FILE = "available_agents.md"

# What SPEC section 3's steps 1-3 make of a specialist name as a plan wrote it.
Standing = Literal["empty", "malformed", "no-roster", "not-in-roster", "listed"]


def classify(name: str | None, roster: Collection[str] | None) -> Standing:
    """SPEC section 3, steps 1-3, for `gsd validate` and the resolver alike.

    1. empty, missing or null (padding ignored) -> "empty"
    2. anything outside NAME_RE, padding included (a space is malformed) -> "malformed"
    3. no roster file -> "no-roster"; not in it -> "not-in-roster"; else "listed"
    """
    if name is None or name.strip().lower() in NULL_NAMES:
        return "empty"
    if not NAME_RE.fullmatch(name):
        return "malformed"
    if roster is None:
        return "no-roster"
    return "listed" if name in roster else "not-in-roster"


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
