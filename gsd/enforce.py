"""What an agent was allowed to change, checked from git after every spawn (SPEC 6)."""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

# Paths no agent may change, whatever its tier and its task.
PROTECTED_FILES = (".planning/config.json",)
PROTECTED_PATTERNS = ("*.pem", "*.key", ".env*")
READ_ONLY_TIERS = ("read-only", "read+shell")


class Violation(NamedTuple):
    """One thing the agent did that it may not do."""

    kind: str  # tier | scope | protected | refs | git-internals
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
) -> list[Violation]:
    """Every violation, fatal ones first. `scope` is `warn` (a deviation) or `fail`."""
    changed = sorted(set(changed))
    found: list[Violation] = []
    if tier in READ_ONLY_TIERS and changed:
        found.append(Violation("tier", f"a {tier} agent changed {_listed(changed)}", fatal=True))
    protected = [p for p in changed if is_protected(p)]
    if protected:
        found.append(Violation("protected", f"changed protected {_listed(protected)}", True))
    internals = sorted(git_internals_changed)
    if internals:
        found.append(Violation("git-internals", f"changed .git/ ({_listed(internals)})", True))
    refs = list(changed_refs)
    if refs:
        found.append(Violation("refs", "; ".join(refs), fatal=True))
    patterns = [_normal(a) for a in allowed if a.strip()]
    outside = [p for p in changed if not in_scope(p, patterns)]
    if outside and tier not in READ_ONLY_TIERS:
        found.append(
            Violation(
                "scope",
                f"changed {_listed(outside)} outside the task's <files> and files_modified",
                fatal=scope == "fail",
            )
        )
    return sorted(found, key=lambda v: not v.fatal)


def is_protected(path: str) -> bool:
    name = posixpath.basename(path)
    return (
        path in PROTECTED_FILES
        or path.startswith(".git/")
        or any(fnmatch.fnmatch(name, pattern) for pattern in PROTECTED_PATTERNS)
    )


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
    text = entry.strip().strip("`\"'")
    text = text.split(" (", 1)[0].strip()
    return posixpath.normpath(text) if text else text


def _listed(paths: list[str], limit: int = 5) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def git_internals_digest(git_dir: Path) -> dict[str, str]:
    """Hashes of what an agent could use to run code later: config, hooks, info/."""
    digests: dict[str, str] = {}
    for rel in ("config", "hooks", "info"):
        target = git_dir / rel
        files = (
            [target] if target.is_file() else sorted(target.rglob("*")) if target.is_dir() else []
        )
        for path in files:
            if path.is_file():
                key = path.relative_to(git_dir).as_posix()
                digests[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def digest_changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Which of those files were added, removed or changed."""
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
