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
_LISTED = 12  # phases an error names before `and N more`


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
    """The phase directory named by `spec`: a number (`1`, `01`, `1.0`, `2.1`, `12A`, `CK-01`)
    or a directory's whole name (`01-setup`, or its path).

    A name with a slug must be the name of a directory: `01-nope` is not phase 01.
    """
    phases = list_phases(planning)
    text = spec.strip().rstrip("/")
    name = Path(text).name
    for phase in phases:
        if text == str(phase.path) or name == phase.name:
            return phase
    matches = [p for p in phases if _names_number(name, p)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(p.name for p in matches)
        raise UsageError(f"phase {spec!r} is ambiguous: {names}", hint="pass the directory name")
    raise _no_such_phase(planning, spec, phases)


def _names_number(spec: str, phase: Phase) -> bool:
    """Whether `spec` is `phase` spelled by its number (`1`, `02.1`, `12a`, `CK-3`), or by
    its number spelled another way and its own slug (`1-setup` for `01-setup`)."""
    if _PHASE_SPEC_RE.match(spec):
        return phase_key(spec) == phase.key
    given, own = _PHASE_DIR_RE.match(spec), _PHASE_DIR_RE.match(phase.name)
    if given is None or own is None or phase_key(spec) != phase.key:
        return False
    if given.group(5) is not None:  # a slug names one directory: `01-nope` is not 01-setup
        return given.group(5) == own.group(5) and given.group(1) == own.group(1)
    return given.group(1) is not None and given.group(1).upper() == (own.group(1) or "").upper()


def _no_such_phase(planning: Path, spec: str, phases: list[Phase]) -> UsageError:
    where = planning / "phases"
    if not planning.is_dir():
        hint = "run gsd init to create it, then add phase folders"
        return UsageError(f"no phase {spec!r}: no {planning.name}/ in {planning.parent}", hint=hint)
    if not phases:
        hint = "add one such as .planning/phases/01-setup/ holding its plans"
        return UsageError(f"no phase {spec!r}: {where} has no phase folders", hint=hint)
    shown = ", ".join(p.name for p in phases[:_LISTED])
    more = f" and {len(phases) - _LISTED} more" if len(phases) > _LISTED else ""
    example = phases[0]
    return UsageError(
        f"no phase {spec!r} under {where} (phases: {shown}{more})",
        hint=f"name a phase by its number ({example.number}) or its folder ({example.name})",
    )


def plan_sort_key(plan_id: str) -> tuple[PhaseKey, int, str]:
    """Plans sort by phase, then by plan number: 02-09 < 02-10 < 02.1-01."""
    phase, _, number = plan_id.rpartition("-")
    key = phase_key(phase) or (1 << 30, "", ())
    return key, int(number) if number.isdigit() else 1 << 30, plan_id
