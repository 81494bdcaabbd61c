"""Counted nouns for output: `1 task`, `2 tasks`, `1 process`, `3 processes`."""

from __future__ import annotations

# Nouns whose plural is not the noun plus `s`.
_IRREGULAR = {
    "process": "processes",
    "match": "matches",
    "branch": "branches",
    "entry": "entries",
    "retry": "retries",
    "dependency": "dependencies",
}


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`count noun`, the noun in its plural unless `count` is 1: plural(2, "task") is
    `2 tasks`; `many` spells a plural the table below does not know."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {many or _plural_of(noun)}"


def _plural_of(noun: str) -> str:
    head, _, last = noun.rpartition(" ")
    word = _IRREGULAR.get(last, last + "s")
    return f"{head} {word}" if head else word
