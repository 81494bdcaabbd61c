"""Which rules `gsd validate` reports: `--select` and `--ignore` (and config.json's
`validate` section) as ruff reads them, and the one-line suppression a Markdown file
writes, `<!-- gsd: ignore GSD013 -->` (gsd.formats.planning.plan reads them; GSD047 when one names
no rule)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from gsd.core.errors import UsageError
from gsd.core.models import Diagnostic, Suppression
from gsd.core.rules.registry import RULES, finding, rule
from gsd.core.words import did_you_mean

# What config.json's `validate.select` and `validate.ignore` hold (their error's words).
CODES_WORDS = 'a list of rule codes or their starts, e.g. ["GSD01", "GSD040"]'


def unknown_code(code: str) -> str | None:
    """Why `code` (a rule's code or the start of some: GSD01) names no rule, or None."""
    if code and any(known.startswith(code) for known in RULES):
        return None
    close = did_you_mean(code, RULES)
    return f"{code!r} is no rule's code nor the start of one" + (f" ({close})" if close else "")


def parse_codes(given: str | Iterable[str], where: str) -> tuple[str, ...]:
    """Codes as `--select GSD01,GSD040` or a config list gives them (upper-cased); an
    unknown one is a usage error that says `where` it was given."""
    words = re.split(r"[\s,]+", given) if isinstance(given, str) else list(given)
    codes = tuple(word.upper() for word in words if word)
    for code in codes:
        problem = unknown_code(code)
        if problem is not None:
            raise UsageError(f"{where}: {problem}", hint="`gsd rules` lists the codes")
    return codes


class Selection(NamedTuple):
    """The rules reported: those `select` names less those `ignore` names; a longer
    prefix wins over a shorter one, and `ignore` wins a tie (as in ruff)."""

    select: tuple[str, ...] = ("GSD",)  # every rule
    ignore: tuple[str, ...] = ()

    def keeps(self, code: str) -> bool:
        chosen = max((len(s) for s in self.select if code.startswith(s)), default=-1)
        dropped = max((len(s) for s in self.ignore if code.startswith(s)), default=-1)
        return chosen > dropped


def selection(
    config: tuple[tuple[str, ...] | None, tuple[str, ...]],
    select: str | None,
    ignore: str | None,
) -> Selection:
    """The command line over config.json's (select, ignore): `--select` replaces its
    select, `--ignore` adds to its ignore."""
    configured, ignored = config
    chosen = parse_codes(select, "--select") if select is not None else configured
    more = parse_codes(ignore, "--ignore") if ignore is not None else ()
    return Selection(chosen or Selection().select, (*ignored, *more))


# --- one line in Markdown ----------------------------------------------------------------


@rule(
    "GSD047",
    "warning",
    "a `<!-- gsd: ignore -->` comment names no rule",
    docs="a `<!-- gsd: ignore CODES -->` comment names a code that is no rule's (nor the "
    "start of one); the message says which and, where one is close, the code meant",
)
def suppressed(
    path: str, comments: Iterable[Suppression], found: Iterable[Diagnostic]
) -> list[Diagnostic]:
    """The findings in the file at `path` its `<!-- gsd: ignore -->` comments leave
    shown, and GSD047 for each code a comment names that is no rule's."""
    hidden: dict[int, set[str] | None] = {}
    unknown: list[Diagnostic] = []
    for comment in comments:
        if not comment.codes:
            hidden[comment.line] = None
        elif (codes := hidden.setdefault(comment.line, set())) is not None:
            codes.update(comment.codes)
        for code in comment.codes:
            problem = unknown_code(code)
            if problem is not None:
                message = f"this `gsd: ignore` hides nothing: {problem}"
                unknown.append(finding(path, comment.at, "GSD047", message))
    return [d for d in (*found, *unknown) if not _hidden(d, hidden)]


def _hidden(d: Diagnostic, hidden: dict[int, set[str] | None]) -> bool:
    if d.line not in hidden:
        return False
    codes = hidden[d.line]
    return codes is None or any(d.code.startswith(c) for c in codes)
