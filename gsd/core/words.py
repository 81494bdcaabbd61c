"""Words for output: counted nouns (`1 task`, `2 tasks`, `3 processes`), the one
"did you mean" for a name that is close to one gsd knows, text on one line and the
first few of many paths."""

from __future__ import annotations

from collections.abc import Iterable

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


# difflib's 0.6 finds golang-pro in python-pro; a letter or two off a name is 0.8 or more
CLOSE = 0.8


def close_name(given: str, known: Iterable[str]) -> str | None:
    """The name of `known` closest to `given` when one is close (a letter or two off:
    difflib's ratio at least CLOSE), else None; never `given` itself."""
    import difflib  # only when a name is refused: not on the git hook's path

    names = [name for name in dict.fromkeys(known) if name != given]
    found = difflib.get_close_matches(given, names, n=1, cutoff=CLOSE)
    return found[0] if found else None


def did_you_mean(given: str, known: Iterable[str], prefix: str = "") -> str | None:
    """`did you mean NAME?` for the name of `known` close to `given` (shown after
    `prefix`, e.g. its section), or None when none is: the one spelling of the suggestion
    (a hint, or words in brackets after a warning)."""
    found = close_name(given, known)
    return f"did you mean {prefix}{found}?" if found else None


def suggested(given: str, known: Iterable[str], prefix: str = "") -> str:
    """` (did you mean NAME?)` to end a line with, or "" when no name is close."""
    words = did_you_mean(given, known, prefix)
    return f" ({words})" if words else ""


def one_line(text: str) -> str:
    """`text` with every run of whitespace, newlines included, as one space."""
    return " ".join(text.split())


def some(paths: Iterable[str], limit: int = 3) -> str:
    """The first `limit` paths, comma separated, and how many more."""
    items = list(paths)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
