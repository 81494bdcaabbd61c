"""Phase numbers, phase folder names and plan ids: their grammar, equality and order.

The one place that says what `01`, `02.1`, `12A.1`, `01-foundation`, `CK-01-x` and the
plan ids `01-02`, `02.1-01`, `12A-03` are (SPEC section 1). Pure and stdlib only: the
validate hook imports it. ASCII digits only: ids become file, tag and branch names.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import NamedTuple

# Pattern text, for the regexes of other modules that find these forms inside a line.
PHASE_NUMBER = r"[0-9]+[A-Za-z]?(?:\.[0-9]+)*"  # 01, 2.1, 12A, 12A.1
PHASE_REF = rf"(?:[A-Za-z]+-)?{PHASE_NUMBER}"  # a number, or one with a project code: CK-01
PLAN_NUMBER = r"[0-9]+"  # a plan's number within its phase: the 02 of 01-02

PLAN_NUMBER_RE = re.compile(PLAN_NUMBER)
# A plan id: phase number, a dash, plan number; the two groups are the two parts.
PLAN_ID_RE = re.compile(rf"({PHASE_NUMBER})-({PLAN_NUMBER})")
# A phase folder: `01-foundation`, `02.1-hotfix`, `12A-x`, `12A.1-x`, `CK-01-x`, or the
# bare number; groups: project code, number, letter, decimals, slug.
_PHASE_DIR_RE = re.compile(r"^(?:([A-Za-z]+)-)?([0-9]+)([A-Za-z]?)((?:\.[0-9]+)*)(?:-(.*))?$")


@cache
def _phase_spec_re() -> re.Pattern[str]:
    return re.compile(r"^([0-9]+)([A-Za-z]?)((?:\.[0-9]+)*)$")


# (number, letter, decimals): 2 < 2.1 < 2.2 < 3 and 12 < 12A < 12A.1.
PhaseKey = tuple[int, str, tuple[int, ...]]
PlanKey = tuple[PhaseKey, int]
_LAST: PhaseKey = (1 << 30, "", ())  # where what is no phase sorts: after every phase


class PhaseName(NamedTuple):
    """A phase folder's name in its parts: `CK-02.1-hotfix` is ("CK", "02.1", "hotfix")."""

    code: str | None  # the project code before the number, if any
    number: str  # the phase as plan ids spell it: `01`, `02.1`, `12A`
    slug: str | None  # the words after the number; None when there is no dash


def parse_phase_name(text: str) -> PhaseName | None:
    """The parts of a phase folder's name (or a bare number); None when it is neither."""
    match = _PHASE_DIR_RE.match(text)
    if match is None:
        return None
    code, number, letter, decimals, slug = match.groups()
    return PhaseName(code, number + letter + decimals, slug)


def is_phase_number(text: str) -> bool:
    """`1`, `01`, `1.0`, `2.1`, `12A`, `12a.1`: a phase number alone, no folder name."""
    return _phase_spec_re().match(text) is not None


def phase_key(text: str) -> PhaseKey | None:
    """Sort and equality key of a phase number or folder name; None when it is neither.

    Trailing `.0` parts are dropped and the letter is upper case, so `1`, `01`, `1.0` and
    `01-foundation` are one phase, as are `12a` and `12A-extra`; `12A` is not `12`.
    """
    match = _PHASE_DIR_RE.match(text) or _phase_spec_re().match(text)
    if match is None:
        return None
    groups = match.groups()
    number, letter, decimals = groups[1:4] if len(groups) == 5 else groups[0:3]
    parts = [int(p) for p in decimals.split(".") if p]
    while parts and parts[-1] == 0:
        parts.pop()
    return int(number), letter.upper(), tuple(parts)


def same_phase(a: str, b: str) -> bool:
    """Whether two spellings name one phase (`1.0` and `01-setup`); text that is no
    phase number is the same only as itself, ignoring case and outer spaces."""
    key_a, key_b = phase_key(a.strip()), phase_key(b.strip())
    if key_a is not None or key_b is not None:
        return key_a == key_b
    return a.strip().casefold() == b.strip().casefold()


def short_phase_number(number: str) -> str:
    """`01` as `1`, `02.1` as `2.1`: the number without its padding zeros."""
    return re.sub(r"(?<![0-9.])0+(?=[0-9])", "", number)


def is_plan_id(text: str) -> bool:
    """`01-02`, `02.1-01`, `12A-03`: the whole text is a plan id, nothing else."""
    return PLAN_ID_RE.fullmatch(text) is not None


def split_plan_id(plan_id: str) -> tuple[str, str]:
    """`02.1-03` -> (`02.1`, `03`): the phase and the plan's number within it."""
    phase, _, number = plan_id.rpartition("-")
    return phase, number


def plan_key(text: str) -> PlanKey | None:
    """Equality and sort key of a plan id however padded (`01-02`, `1-2`); None if the
    text is not `{phase}-{number}`."""
    phase, _, number = text.strip().rpartition("-")
    key = phase_key(phase) if phase else None
    if key is None or not PLAN_NUMBER_RE.fullmatch(number):
        return None
    return key, int(number)


def same_plan(a: str, b: str) -> bool:
    """`01-02`, `1-2` and `01-2` are one plan; `02.1-01` is not `02-01`."""
    a, b = a.strip(), b.strip()
    if a.lower() == b.lower():
        return True
    key_a, key_b = plan_key(a), plan_key(b)
    return key_a is not None and key_a == key_b


def plan_sort_key(plan_id: str) -> tuple[PhaseKey, int, str]:
    """Plans sort by phase, then by plan number: 02-09 < 02-10 < 02.1-01."""
    phase, number = split_plan_id(plan_id)
    key = phase_key(phase) or _LAST
    return key, int(number) if PLAN_NUMBER_RE.fullmatch(number) else 1 << 30, plan_id


@lru_cache(maxsize=1 << 16)
def plan_id_from_filename(path: str) -> str | None:
    """The first two numeric tokens of the file name: `02.1-01-x-PLAN.md` -> `02.1-01`."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    match = PLAN_ID_RE.search(name)
    return f"{match.group(1)}-{match.group(2)}" if match else None


def normalize_plan_ref(ref: str) -> str:
    """`"01-01"`, `01-01-PLAN.md` and `01-foundation/01-01` all name plan `01-01`."""
    ref = ref.strip().strip("\"'")
    return plan_id_from_filename(ref) or ref


def task_key(plan_id: str, index: int) -> str:
    """`01-02` task 3 -> `01-02-3`: a task's name across the run, the value of its
    commit's `Gsd-Task` trailer, and the name of its run folder."""
    return f"{plan_id}-{index}"


def split_task_key(key: str) -> tuple[str, int] | None:
    """`01-02-3` -> (`01-02`, 3), as `task_key` made it; None when it ends in no number."""
    plan_id, dash, number = key.strip().rpartition("-")
    if not dash or not number.isdigit():
        return None
    return plan_id, int(number)
