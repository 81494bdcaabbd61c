"""Phase directories: listing them in order, and resolving `1`, `01`, `2.1`, `12A` to one.

Current phases live in `.planning/phases/`; a shipped milestone's are archived in
`.planning/milestones/v1.0-phases/`, as GSD's `getArchivedPhaseDirs` finds them
(get-shit-done `get-shit-done/bin/lib/core.cjs`): folders matching `^v[\\d.]+-phases$`,
newest version first, each subfolder a phase of that milestone. A phase is looked up
among the current ones first, then in the archives, newest first.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from gsd.core import layout
from gsd.core.errors import UsageError
from gsd.core.ids import PhaseKey, is_phase_number, parse_phase_name, phase_key, plan_sort_key
from gsd.core.words import did_you_mean

__all__ = [
    "Phase",
    "PhaseKey",
    "list_archived_phases",
    "list_phases",
    "phase_key",
    "plan_sort_key",
    "resolve_phase",
]

_LISTED = 12  # phases an error names before `and N more`


class Phase(NamedTuple):
    """A phase directory under `.planning/phases/`, or archived with its milestone."""

    path: Path
    key: PhaseKey
    slug: str
    milestone: str | None = None  # `v1.0` for a phase archived in `milestones/v1.0-phases/`

    @property
    def archived(self) -> bool:
        return self.milestone is not None

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def number(self) -> str:
        """The phase as plan ids spell it: `01`, `02.1`, `12A`."""
        parsed = parse_phase_name(self.path.name)
        assert parsed is not None  # a Phase is only built from a matching name
        return parsed.number


def list_phases(planning: Path) -> list[Phase]:
    """Phase directories of a `.planning/` folder, in phase order (archived ones apart)."""
    return _phases_in(planning / layout.PHASES, None)


def list_archived_phases(planning: Path) -> list[Phase]:
    """Phases of shipped milestones: the newest milestone's first, each in phase order."""
    milestones = planning / layout.MILESTONES
    if not milestones.is_dir():
        return []
    archives = [
        (_version_key(version), version, entry)
        for entry in milestones.iterdir()
        if (version := layout.archive_version(entry.name)) and entry.is_dir()
    ]
    phases = []
    for _, version, folder in sorted(archives, reverse=True):
        phases += _phases_in(folder, version)
    return phases


def _version_key(version: str) -> tuple[int, ...]:
    """`v1.10` after `v1.9` (upstream's SDK compares numerically too)."""
    return tuple(int(part) for part in version[1:].split(".") if part)


def _phases_in(folder: Path, milestone: str | None) -> list[Phase]:
    if not folder.is_dir():
        return []
    phases = []
    for entry in folder.iterdir():
        parsed = parse_phase_name(entry.name)
        if parsed and entry.is_dir():
            key = phase_key(entry.name)
            assert key is not None
            phases.append(Phase(entry, key, parsed.slug or "", milestone))
    return sorted(phases, key=lambda p: (p.key, p.name))


def resolve_phase(planning: Path, spec: str) -> Phase:
    """The phase directory named by `spec`: a number (`1`, `01`, `1.0`, `2.1`, `12A`, `CK-01`)
    or a directory's whole name (`01-setup`, or its path).

    A name with a slug must be the name of a directory: `01-nope` is not phase 01. The
    current phases are searched first, then each archived milestone's, newest first.
    """
    phases = list_phases(planning)
    found = _find(spec, phases)
    if found is not None:
        return found
    archived = list_archived_phases(planning)
    for version in dict.fromkeys(p.milestone for p in archived):
        found = _find(spec, [p for p in archived if p.milestone == version])
        if found is not None:
            return found
    raise _no_such_phase(planning, spec, phases)


def _find(spec: str, phases: list[Phase]) -> Phase | None:
    text = spec.strip().rstrip("/")
    name = Path(text).name
    for phase in phases:
        if text == str(phase.path) or name == phase.name:
            return phase
    matches = [p for p in phases if _names_number(name, p)]
    if len(matches) > 1:
        names = ", ".join(p.name for p in matches)
        raise UsageError(f"phase {spec!r} is ambiguous: {names}", hint="pass the directory name")
    return matches[0] if matches else None


def _names_number(spec: str, phase: Phase) -> bool:
    """Whether `spec` is `phase` spelled by its number (`1`, `02.1`, `12a`, `CK-3`), or by
    its number spelled another way and its own slug (`1-setup` for `01-setup`)."""
    if is_phase_number(spec):
        return phase_key(spec) == phase.key
    given, own = parse_phase_name(spec), parse_phase_name(phase.name)
    if given is None or own is None or phase_key(spec) != phase.key:
        return False
    if given.slug is not None:  # a slug names one directory: `01-nope` is not 01-setup
        return given.slug == own.slug and given.code == own.code
    return given.code is not None and given.code.upper() == (own.code or "").upper()


def _no_such_phase(planning: Path, spec: str, phases: list[Phase]) -> UsageError:
    where = planning / layout.PHASES
    if not planning.is_dir():
        hint = "run gsd init to create it, then add phase folders"
        return UsageError(f"no phase {spec!r}: no {planning.name}/ in {planning.parent}", hint=hint)
    if not phases:
        hint = "add one such as .planning/phases/01-setup/ holding its plans"
        return UsageError(f"no phase {spec!r}: {where} has no phase folders", hint=hint)
    shown = ", ".join(p.name for p in phases[:_LISTED])
    more = f" and {len(phases) - _LISTED} more" if len(phases) > _LISTED else ""
    example = phases[0]
    close = did_you_mean(Path(spec.strip().rstrip("/")).name, (p.name for p in phases))
    return UsageError(
        f"no phase {spec!r} under {where} (phases: {shown}{more})",
        hint=close
        or f"name a phase by its number ({example.number}) or its folder ({example.name})",
    )
