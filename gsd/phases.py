"""Phase directories: their numbers, sort order, and resolving `1`, `01`, `2.1`, `12A`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from gsd.errors import UsageError

# `01-foundation`, `02.1-hotfix`, `12A-x`, `12A.1-x`, `CK-01-x` (a project-code prefix)
_PHASE_DIR_RE = re.compile(r"^(?:([A-Za-z]+)-)?(\d+)([A-Za-z]?)((?:\.\d+)*)(?:-(.*))?$")
_PHASE_SPEC_RE = re.compile(r"^(\d+)([A-Za-z]?)((?:\.\d+)*)$")

PhaseKey = tuple[int, str, tuple[int, ...]]


class Phase(NamedTuple):
    """A phase directory under `.planning/phases/`."""

    path: Path
    key: PhaseKey
    slug: str

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def number(self) -> str:
        """The phase as plan ids spell it: `01`, `02.1`, `12A`."""
        match = _PHASE_DIR_RE.match(self.path.name)
        assert match is not None  # a Phase is only built from a matching name
        return match.group(2) + match.group(3) + match.group(4)


def phase_key(text: str) -> PhaseKey | None:
    """Sort key of a phase name or number: 2 < 2.1 < 2.2 < 3, 12 < 12A < 12A.1.

    Trailing `.0` parts are dropped so that `1`, `01` and `1.0` are one phase.
    """
    match = _PHASE_DIR_RE.match(text) or _PHASE_SPEC_RE.match(text)
    if match is None:
        return None
    groups = match.groups()
    number, letter, decimals = groups[1:4] if len(groups) == 5 else groups[0:3]
    parts = [int(p) for p in decimals.split(".") if p]
    while parts and parts[-1] == 0:
        parts.pop()
    return int(number), letter.upper(), tuple(parts)


def list_phases(planning: Path) -> list[Phase]:
    """Phase directories of a `.planning/` folder, in phase order."""
    phases_dir = planning / "phases"
    if not phases_dir.is_dir():
        return []
    phases = []
    for entry in phases_dir.iterdir():
        match = _PHASE_DIR_RE.match(entry.name)
        if match and entry.is_dir():
            key = phase_key(entry.name)
            assert key is not None
            phases.append(Phase(entry, key, match.group(5) or ""))
    return sorted(phases, key=lambda p: (p.key, p.name))


def resolve_phase(planning: Path, spec: str) -> Phase:
    """The phase directory named by `spec`: a number (`1`, `01`, `2.1`) or a name."""
    phases = list_phases(planning)
    text = spec.strip().rstrip("/")
    for phase in phases:
        if text in (phase.name, str(phase.path)):
            return phase
    key = phase_key(Path(text).name)
    matches = [p for p in phases if key is not None and p.key == key]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(p.name for p in phases) or "none"
    if len(matches) > 1:
        names = ", ".join(p.name for p in matches)
        raise UsageError(f"phase {spec!r} is ambiguous: {names}", hint="pass the directory name")
    raise UsageError(
        f"no phase {spec!r} under {planning / 'phases'} (phases: {known})",
        hint="pass a phase number such as 1 or 02.1",
    )


def plan_sort_key(plan_id: str) -> tuple[PhaseKey, int, str]:
    """Plans sort by phase, then by plan number: 02-09 < 02-10 < 02.1-01."""
    phase, _, number = plan_id.rpartition("-")
    key = phase_key(phase) or (1 << 30, "", ())
    return key, int(number) if number.isdigit() else 1 << 30, plan_id
