"""The rules over the files beside the plans: a file of a phase folder that looks like a
plan but is misnamed (GSD046), a key of config.json gsd does not read (GSD060). Which files
to look at is gsd.io.plans.validate's to find; what they mean is decided here."""

from __future__ import annotations

import posixpath
import re
from functools import cache

from gsd.core.ids import PLAN_NUMBER, phase_key
from gsd.core.models import Diagnostic
from gsd.core.rules.registry import Rule, finding, register, rule

# Found in config.json by gsd.formats.configkeys.unread_keys (io/validate hands them on).
register(
    Rule(
        "GSD060",
        "warning",
        "config.json key gsd does not read in a section gsd reads",
        docs="`.planning/config.json` holds a key gsd does not read in a section gsd reads "
        "(`specialists.max_retry`: did you mean `specialists.max_retries`?); only when all "
        "of `.planning/` is validated",
    )
)


def unread_setting(path: str, line: int, message: str) -> Diagnostic:
    """GSD060 for a key of config.json at `path` (line 0: not found in the text)."""
    return finding(path, line or 1, "GSD060", message)


@rule(
    "GSD046",
    "warning",
    "file in a phase folder looks like a plan but is not named NN-MM-name-PLAN.md",
    docs="a file in a phase folder looks like a plan but is not named `NN-MM-name-PLAN.md`; "
    "the message names the file gsd expects (`01-PLAN-01-foundation.md` -> "
    "`01-01-foundation-PLAN.md`); working tree only, when validate is given a folder",
)
def misnamed_plan(path: str, phase_number: str) -> Diagnostic | None:
    """GSD046 for the file at `path` in the folder of phase `phase_number`, when it looks
    like a plan gsd will never read."""
    name = posixpath.basename(path)
    expected = expected_plan_name(name, phase_number)
    if expected is None:
        return None
    message = f"{name} looks like a plan but gsd reads only *-PLAN.md files: rename it {expected}"
    return finding(path, 1, "GSD046", message)


@cache
def _plan_word() -> re.Pattern[str]:
    return re.compile(r"(?:^|[-_ ])plan(?:$|[-_ ])", re.IGNORECASE)


@cache
def _number_token() -> re.Pattern[str]:
    return re.compile(rf"^{PLAN_NUMBER}$")


def expected_plan_name(name: str, phase_number: str) -> str | None:
    """The name gsd would read a misnamed plan file under (`01-PLAN-01-foundation.md` ->
    `01-01-foundation-PLAN.md`), or None when `name` is no plan or is named right.

    Upstream warns about such files too (get-shit-done issue #2893); gsd reads only
    `*-PLAN.md`, so without this a misnamed plan is silently never run."""
    if not name.lower().endswith(".md") or name.endswith("-PLAN.md"):
        return None
    stem = name[:-3]
    if not _plan_word().search(stem):
        return None
    tokens = [t for t in re.split(r"[-_ ]+", stem) if t and t.lower() != "plan"]
    if (
        tokens
        and phase_key(tokens[0]) is not None
        and phase_key(tokens[0]) == phase_key(phase_number)
    ):
        tokens = tokens[1:]  # the phase's own number; the plan's number follows
    numbers = [t for t in tokens if _number_token().match(t)]
    words = [t for t in tokens if not _number_token().match(t)]
    number = numbers[0] if numbers else "01"
    slug = "-".join(w.lower() for w in words)
    return f"{phase_number}-{number.zfill(2)}{'-' + slug if slug else ''}-PLAN.md"
