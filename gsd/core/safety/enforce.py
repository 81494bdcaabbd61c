"""What an agent was allowed to change, checked from git after every spawn (SPEC 6)."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from gsd.core.safety import planguard

# Paths no agent may change, whatever its tier and its task.
PROTECTED_FILES = (".planning/config.json",)
PROTECTED_PATTERNS = ("*.pem", "*.key", ".env*")
READ_ONLY_TIERS = ("read-only", "read+shell")
# PROTECTED_PATTERNS as one expression: a name is matched once, not once per pattern
_PROTECTED_NAME = re.compile("|".join(fnmatch.translate(p) for p in PROTECTED_PATTERNS))


class Violation(NamedTuple):
    """One thing the agent did that it may not do."""

    kind: str  # tier scope protected planning refs git-internals index-flags user-checkout
    detail: str
    fatal: bool  # True: policy-violation, rolled back; False: a deviation, recorded


def check(
    *,
    tier: str,
    changed: Iterable[str],
    allowed: Iterable[str],
    scope: str,
    changed_refs: Iterable[str] = (),
    git_internals_changed: Iterable[str] = (),
    flags: Iterable[str] = (),
    ignored_protected: Iterable[str] = (),
    user_checkout: Iterable[str] = (),
    own_files: Iterable[str] = (),
    special: Mapping[str, str] = {},
) -> list[Violation]:
    """Every violation, fatal ones first. `scope` is `warn` (a deviation) or `fail`.

    The keyword lists come from `Git.observe`: refs rewritten, .git internals changed
    (already put back), index flags set ("skip-worktree on path", already cleared) and
    ignored protected files (.env*, *.pem, *.key) created, changed or deleted; and from
    `gsd.io.confine.userguard`, what the agent changed in the user's checkout (already put back);
    `special` holds the protected and `.planning/` paths that are FIFOs, sockets or
    symlinks now (`gsd.io.plans.specialfiles`), and `own_files` the task's own `<files>`, the
    only `.planning/` paths it may write (`gsd.core.safety.planguard`).
    """
    changed = sorted(set(changed))
    found: list[Violation] = []
    if tier in READ_ONLY_TIERS and changed:
        found.append(Violation("tier", f"a {tier} agent changed {_listed(changed)}", fatal=True))
    protected = [p for p in changed if is_protected(p)]
    protected += [f"{p} (ignored by git)" for p in sorted(set(ignored_protected))]
    protected += [f"{p} (a {kind})" for p, kind in sorted(special.items()) if is_protected(p)]
    if protected:
        found.append(Violation("protected", f"changed protected {_listed(protected)}", True))
    found += _planning(changed, own_files, special)
    theirs = list(user_checkout)
    if theirs:
        what = f"changed your checkout: {_listed(theirs)}; put back (what it replaced is kept in"
        found.append(Violation("user-checkout", f"{what} .git/gsd/displaced/)", True))
    internals = sorted(git_internals_changed)
    if internals:
        found.append(
            Violation("git-internals", f"changed .git/ ({_listed(internals)}); put back", True)
        )
    hidden = sorted(flags)
    if hidden:
        found.append(Violation("index-flags", f"set {_listed(hidden)} in the index; cleared", True))
    refs = list(changed_refs)
    if refs:
        found.append(Violation("refs", "; ".join(refs), fatal=True))
    patterns = [_normal(a) for a in allowed if a.strip()]
    outside = [p for p in changed if not in_scope(p, patterns) and not planguard.in_planning(p)]
    if outside and tier not in READ_ONLY_TIERS:
        found.append(
            Violation(
                "scope",
                f"changed {_listed(outside)} outside the task's <files> and files_modified",
                fatal=scope == "fail",
            )
        )
    return sorted(found, key=lambda v: not v.fatal)


def _planning(
    changed: list[str], own_files: Iterable[str], special: Mapping[str, str]
) -> list[Violation]:
    """The `.planning/` paths the task may not have changed (`gsd.core.safety.planguard`), the
    protected ones (config.json) left to their own violation."""
    planning = planguard.forbidden(
        [p for p in changed if not is_protected(p)],
        own_files,
        {p: kind for p, kind in special.items() if not is_protected(p)},
    )
    if not planning:
        return []
    what = f"changed {_listed(planning)} in .planning/, which is yours and gsd's; put back"
    return [Violation("planning", what, fatal=True)]


def is_protected(path: str) -> bool:
    name = posixpath.basename(path)
    return (
        path in PROTECTED_FILES
        or path.startswith(".git/")
        or _PROTECTED_NAME.match(name) is not None
    )


def _name_parts(patterns: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """PROTECTED_PATTERNS as lower-case suffixes (`*.pem`), prefixes (`.env*`) and an
    expression for any other form."""
    plain = [p.lower() for p in patterns]
    suffixes = tuple(p[1:] for p in plain if p.startswith("*") and not _wild(p[1:]))
    prefixes = tuple(p[:-1] for p in plain if p.endswith("*") and not _wild(p[:-1]))
    simple = {f"*{s}" for s in suffixes} | {f"{p}*" for p in prefixes}
    rest = [fnmatch.translate(p) for p in plain if p not in simple]
    return suffixes, prefixes, "|".join(rest)


def _wild(text: str) -> bool:
    return any(c in text for c in "*?[")


_SUFFIXES, _PREFIXES, _REST = _name_parts(PROTECTED_PATTERNS)
_OTHER_NAME = re.compile(_REST, re.IGNORECASE) if _REST else None


_EDGES = [
    *(re.escape(suffix) + r"(?:\x00|\Z)" for suffix in _SUFFIXES),
    *(r"(?:\A|\x00)" + re.escape(prefix) for prefix in _PREFIXES),
]
_ANY_EDGE = re.compile("|".join(_EDGES)) if _EDGES else None


def may_be_protected(name: str) -> bool:
    """Whether a file or folder name matches a protected pattern in some letter case: a
    path git's listing of ignored protected files (`:(glob)**/PATTERN`, case-blind under
    GIT_ICASE_PATHSPECS) can hold has such a name in it; a tree without one, none."""
    return any_may_be_protected([name])


def any_may_be_protected(names: list[str]) -> bool:
    """`may_be_protected` of any of `names` (a folder's entries): one search of them all."""
    low = "\0".join(names).lower()
    if _ANY_EDGE is not None and _ANY_EDGE.search(low):
        return True
    return _OTHER_NAME is not None and any(_OTHER_NAME.match(name) for name in names)


def in_scope(path: str, patterns: list[str]) -> bool:
    """A path is in scope if a pattern names it, a folder holding it, or a glob matching it."""
    for pattern in patterns:
        if path == pattern or path.startswith(pattern.rstrip("/") + "/"):
            return True
        if any(c in pattern for c in "*?[") and fnmatch.fnmatch(path, pattern):
            return True
    return False


def _normal(entry: str) -> str:
    """`<files>` entries as authors write them: `./src/a.py`, `` `src/a.py` ``, `src/a.py (new)`."""
    return planguard.normal_entry(entry)


def _listed(paths: list[str], limit: int = 5) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def outside_scope(paths: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """The paths no `<files>` or files_modified entry of `allowed` covers."""
    patterns = [_normal(a) for a in allowed if a.strip()]
    return [p for p in paths if not in_scope(p, patterns)]
