"""A specialist's name as a plan writes it: its grammar, what counts as none, and the fallback."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Literal

# A specialist name gsd will ever pass on (SPEC section 3, step 2).
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")

# What a task writes for "no specialist" (SPEC 3, step 1), compared lower-cased.
NULL_NAMES = frozenset({"", "null", '"null"', "'null'", "none", "~"})

EXECUTOR = "gsd-executor"  # the fallback every task can run on

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
