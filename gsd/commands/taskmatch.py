"""Which task of a plan's BASE side is which of its HEAD side, for `gsd diff` (pure).

Tasks are matched by name first (in order, so two tasks of one name pair up in order).
Name matches that keep their relative order anchor the rest; between two anchors, a
task that lost its name is paired with the new task in the same place whose name or
action text is most alike, if it is mostly the same (difflib ratio >= 0.5): a rename,
not a removal plus an addition.
"""

from __future__ import annotations

import difflib
import textwrap

from gsd.core.models import Task

SIMILAR = 0.5  # difflib ratio above which a changed task is the same task, renamed


def compared_text(text: str | None) -> str | None:
    """Child text as compared: indentation and trailing blanks are not changes."""
    if text is None:
        return None
    return "\n".join(line.rstrip() for line in textwrap.dedent(text).strip("\n").split("\n"))


def match_tasks(base: list[Task], head: list[Task]) -> list[tuple[Task | None, Task | None, bool]]:
    """(BASE task, HEAD task, moved) in HEAD order, removed tasks where they stood.

    `moved`: a name match whose order relative to the other matches changed.
    """
    by_name: dict[str, list[int]] = {}
    for j, task in enumerate(head):
        if task.name:
            by_name.setdefault(task.name, []).append(j)
    pairs: dict[int, int] = {}
    for i, task in enumerate(base):
        if by_name.get(task.name):
            pairs[i] = by_name[task.name].pop(0)
    anchors = _in_order(sorted(pairs.items()))
    kept = set(anchors)
    moved = {i for i in pairs if (i, pairs[i]) not in kept}
    taken = set(pairs.values())
    bounds = [(-1, -1), *anchors, (len(base), len(head))]
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:], strict=False):
        olds = [base[i] for i in range(i0 + 1, i1) if i not in pairs]
        news = [head[j] for j in range(j0 + 1, j1) if j not in taken]
        pairs.update((old.index - 1, new.index - 1) for old, new in _pair_gap(olds, news))
    return _in_head_order(base, head, pairs, moved)


def _pair_gap(olds: list[Task], news: list[Task]) -> list[tuple[Task, Task]]:
    """Unmatched tasks between two anchors, paired in order with their most alike."""
    paired: list[tuple[Task, Task]] = []
    start = 0
    for old in olds:
        # the best score wins; on a tie, the earliest task
        scored = [(_likeness(old, news[k]), -k) for k in range(start, len(news))]
        score, minus_k = max(scored, default=(0.0, 0))
        if score >= SIMILAR:
            paired.append((old, news[-minus_k]))
            start = -minus_k + 1
    return paired


def _in_order(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of (base, head) pairs whose head indices increase."""
    best: list[list[tuple[int, int]]] = []
    for n, pair in enumerate(pairs):
        longest = max((best[m] for m in range(n) if pairs[m][1] < pair[1]), key=len, default=[])
        best.append([*longest, pair])
    return max(best, key=len, default=[])


def _likeness(old: Task, new: Task) -> float:
    """How much two tasks look like one task edited: their names, or what they do.

    Not the whole block: plans share boilerplate (`<verify>`, `<done>`) that would
    make any two tasks look alike.
    """
    before, after = old.child_text("action"), new.child_text("action")
    if before is None or after is None:  # checkpoint tasks: what they ask of a person
        before, after = old.raw.replace(old.name, ""), new.raw.replace(new.name, "")
    return max(
        _ratio(old.name, new.name), _ratio(compared_text(before) or "", compared_text(after) or "")
    )


def _ratio(a: str, b: str) -> float:
    matcher = difflib.SequenceMatcher(None, a, b)
    # the cheap upper bounds first: most pairs of unrelated tasks stop here
    if matcher.real_quick_ratio() < SIMILAR or matcher.quick_ratio() < SIMILAR:
        return 0.0
    return matcher.ratio()


def _in_head_order(
    base: list[Task], head: list[Task], pairs: dict[int, int], moved: set[int]
) -> list[tuple[Task | None, Task | None, bool]]:
    back = {j: i for i, j in pairs.items()}
    out: list[tuple[tuple[float, int], Task | None, Task | None, bool]] = []
    for j, task in enumerate(head):
        i = back.get(j)
        out.append(((j, 0), None if i is None else base[i], task, i in moved))
    last_head = -1.0
    for i, task in enumerate(base):
        if i in pairs:
            last_head = pairs[i]
        else:
            out.append(((last_head + 0.5, i), task, None, False))
    return [(old, new, moved) for _key, old, new, moved in sorted(out, key=lambda e: e[0])]
