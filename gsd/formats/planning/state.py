"""STATE.md, edited surgically: only the lines gsd owns change, every other byte stays.

gsd owns the `Phase:`, `Plan:`, `Status:`, `Last activity:` and `Progress:` lines under
`## Current Position`, the `- [01-02] ...` bullets under `### Blockers/Concerns` (or
`## Blockers`), the `Last session:`, `Stopped at:` and `Resume file:` lines under
`## Session Continuity`, and (in `gsd.formats.planning.metrics`) the Performance Metrics rows and
counters (SPEC section 7). Each edit is a pure `text -> text` function that keeps line endings (CRLF
stays CRLF, a missing final newline stays missing) and returns its input, the very same
string, when nothing needs to change. `load` and `save` are the only functions that
touch the disk.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from gsd.core.errors import ERROR_TYPES
from gsd.core.ids import same_plan
from gsd.core.visible import visible
from gsd.formats.lines import Lines, one_line

BAR_WIDTH = 10
PLACEHOLDER = "None yet."

_POSITION_RE = re.compile(r"current position", re.I)
_SESSION_RE = re.compile(r"session continuity", re.I)
_BLOCKERS_RE = re.compile(r"blockers\b.*", re.I)
# gsd's own blocker bullets: `- [01-02] timeout: ...`, the word after the tag an error type.
_BLOCKER_RE = re.compile(
    r"^[ \t]*[-*+][ \t]+\[(?P<plan>[^\]]+)\][ \t]+(?P<type>[\w-]+)(?::|[ \t]*$)"
)
# The one-line placeholder add_blocker replaces with the first bullet ("None yet.").
_EMPTY_RE = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?[_*]*(?:none|nothing)"
    r"(?:[ \t]+(?:yet|currently|so far|at this time))?[.!]?[_*]*[ \t]*$",
    re.I,
)
# A line saying there are none: "None.", "- No active blockers.", "None for v1.0 (shipped).
# See PROJECT.md ..." (real STATE.md files, issue 15); "None of the keys work" is a blocker.
_PLACEHOLDER_RE = re.compile(
    r"^[ \t]*(?:[-*+][ \t]+)?[_*]*(?:"
    r"(?:none|nothing)\b(?![ \t]+of\b)"
    r"|no[ \t]+(?:[\w-]+[ \t]+){0,3}?(?:blockers?|concerns?|issues?|blocking[ \t]+\w+)\b"
    r")",
    re.I,
)
# `[██████░░░░] 60%`, `[====..] 87%`: the bar and the number gsd redraws; the rest stays.
_BAR_RE = re.compile(r"^\[(?P<bar>[^\]]*)\][ \t]*(?P<pct>\d+(?:\.\d+)?)[ \t]*%")
_BAR_EMPTY = "░▒ .-_·"

# (keyword, label) in the order the GSD template writes them.
_POSITION_FIELDS = (
    ("phase", "Phase"),
    ("plan", "Plan"),
    ("status", "Status"),
    ("last_activity", "Last activity"),
)
_SESSION_FIELDS = (
    ("last_session", "Last session"),
    ("stopped_at", "Stopped at"),
    ("resume_file", "Resume file"),
)


# ------------------------------------------------------------------- fields (shared)


def _set_fields(
    text: str,
    title: re.Pattern[str],
    heading: str,
    labels: tuple[str, ...],
    edits: dict[str, Callable[[str | None], str]],
    apart: str = "",
) -> str:
    """Give each `Label:` line of a section the value `edit(old value)` returns.

    `labels` are the section's lines in the order GSD writes them. A missing line goes
    after the nearest earlier one present, else before the nearest later one, else at the
    end of the section; the `apart` label (Progress) goes at the end after a blank line.
    A missing section is added at the end of the text.
    """
    if not edits:
        return text
    lines = Lines(text)
    span = lines.section(title)
    if span is None:
        bodies: list[str] = []
        for label in labels:
            if label in edits:
                if label == apart and bodies:
                    bodies.append("")
                bodies.append(f"{label}: {edits[label](None)}")
        lines.append_section(heading, bodies)
        return lines.result(text)
    missing = []
    for label, edit in edits.items():
        found = lines.field(span, label)
        if found is None:
            missing.append(label)
            continue
        index, match = found
        old = match.group("value")
        new = edit(old)
        if new != old.rstrip():
            lines.set(index, match.group("prefix") + new)
    for label in sorted(missing, key=labels.index):
        body = f"{label}: {edits[label](None)}"
        span = lines.section(title) or span  # the section grows with each line added
        # gsd's lines live in the section's own text, before any subsection it holds
        sub = next((i for i, _, _ in lines.headings() if span.start < i < span.stop), None)
        if sub is not None:
            span = range(span.start, sub)
        rank = labels.index(label)
        earlier = [f[0] for other in labels[:rank] if (f := lines.field(span, other))]
        later = [f[0] for other in labels[rank + 1 :] if (f := lines.field(span, other))]
        if label == apart or not (earlier or later):
            lines.append_to(span, [body], apart=label == apart)
        elif earlier:
            lines.insert(max(earlier) + 1, [body])
        else:
            index = min(later)
            while index - 1 > span.start + 1 and not lines.body(index - 1).strip():
                index -= 1  # join the paragraph above, not the line below a blank
            lines.insert(index, [body])
    return lines.result(text)


def _constant(value: str) -> Callable[[str | None], str]:
    line = one_line(value)
    return lambda old: line


# ------------------------------------------------------------------ current position


def percent_of(progress: float) -> int:
    """A fraction 0..1 as a whole percentage, rounded half up; never 100 before done."""
    if not 0 <= progress <= 1:  # also refuses NaN
        raise ValueError(f"progress is a fraction from 0 to 1, not {progress!r}")
    percent = math.floor(progress * 100 + 0.5 + 1e-9)
    return 99 if percent == 100 and progress < 1 else percent


def progress_bar(
    progress: float, width: int = BAR_WIDTH, filled: str = "█", empty: str = "░"
) -> str:
    """`[███░░░░░░░] 30%`: whole cells only, so the bar is full only at 100%."""
    percent = percent_of(progress)
    cells = percent * width // 100
    return f"[{filled * cells}{empty * (width - cells)}] {percent}%"


def _redraw(old: str | None, progress: float) -> str:
    """The Progress value for `progress`: the file's own bar (its width and characters)
    redrawn when the percentage changes, text after the number kept; a value without a
    bar becomes one."""
    bar = _BAR_RE.match(old or "")
    if old is None or bar is None:
        return progress_bar(progress)
    percent = percent_of(progress)
    if float(bar.group("pct")) == percent:
        return old.rstrip()
    cells = bar.group("bar")
    filled = next((c for c in cells if c not in _BAR_EMPTY), "█")
    empty = next((c for c in cells if c in _BAR_EMPTY), "░" if filled == "█" else ".")
    drawn = progress_bar(progress, len(cells) or BAR_WIDTH, filled, empty)
    return (drawn + old[bar.end() :]).rstrip()


def set_position(
    text: str,
    *,
    phase: str | None = None,
    plan: str | None = None,
    status: str | None = None,
    last_activity: str | None = None,
    progress: float | None = None,
) -> str:
    """Update the lines under `## Current Position`; None leaves a line alone.

    Values are what follows the label, in the shapes GSD writes:
    `phase="2 of 5 (Auth)"`, `plan="1 of 3 in current phase"`, `status="In progress"`,
    `last_activity="2026-02-23 - Completed 02-01-PLAN.md"`. `progress` is a fraction
    from 0 to 1, drawn as `[███░░░░░░░] 30%` (a file's own wider or ASCII bar keeps its
    shape). A missing line joins its neighbours in template order, a missing Progress
    line ends the section, a missing section ends the file.
    """
    values = {"phase": phase, "plan": plan, "status": status, "last_activity": last_activity}
    edits = {
        label: _constant(value)
        for key, label in _POSITION_FIELDS
        if (value := values[key]) is not None
    }
    if progress is not None:
        percent_of(progress)  # refuse a bad value even when there is nothing to redraw
        edits["Progress"] = lambda old: _redraw(old, progress)
    labels = (*(label for _, label in _POSITION_FIELDS), "Progress")
    return _set_fields(text, _POSITION_RE, "## Current Position", labels, edits, "Progress")


def position(text: str) -> dict[str, str]:
    """The `Label: value` lines under `## Current Position` that gsd owns, by key (`phase`,
    `plan`, `status`, `last_activity`, `progress`); a missing line is left out."""
    lines = Lines(text)
    span = lines.section(_POSITION_RE)
    if span is None:
        return {}
    found = {}
    for key, label in (*_POSITION_FIELDS, ("progress", "Progress")):
        field = lines.field(span, label)
        if field is not None and (value := field[1].group("value").strip()):
            found[key] = value
    return found


def position_percent(progress: str) -> int | None:
    """The percentage of a Progress value: `[███░░] 60%` or `60%`; None without one."""
    bar = _BAR_RE.match(progress)
    if bar is not None:
        return round(float(bar.group("pct")))
    plain = re.match(r"^(\d+(?:\.\d+)?)[ \t]*%", progress)
    return round(float(plain.group(1))) if plain else None


# ------------------------------------------------------------------ session continuity


def set_session(
    text: str,
    *,
    last_session: str | None = None,
    stopped_at: str | None = None,
    resume_file: str | None = None,
) -> str:
    """Update `Last session:`, `Stopped at:` and `Resume file:` under `## Session Continuity`;
    None leaves a line alone, a missing line or section is added."""
    values = {"last_session": last_session, "stopped_at": stopped_at, "resume_file": resume_file}
    edits = {
        label: _constant(value)
        for key, label in _SESSION_FIELDS
        if (value := values[key]) is not None
    }
    labels = tuple(label for _, label in _SESSION_FIELDS)
    return _set_fields(text, _SESSION_RE, "## Session Continuity", labels, edits)


# ------------------------------------------------------------------------- blockers


def blocker_line(plan_id: str, error_type: str, details: str = "", width: int = 200) -> str:
    """`- [01-02] timeout: details`, on one line, details cut to `width` characters."""
    details = visible(one_line(details))  # an agent's text: no terminal control in STATE.md
    if len(details) > width:
        details = details[: width - 1].rstrip() + "…"
    return f"- [{plan_id}] {error_type}" + (f": {details}" if details else "")


def _bullet(line: str) -> str:
    line = one_line(line)
    return line if re.match(r"[-*+][ \t]", line) else f"- {line}"


def _own(body: str) -> tuple[str, str] | None:
    """(plan, error type) of a blocker bullet gsd wrote; None for any other line (people's
    notes about a plan included), which gsd never replaces or removes."""
    match = _BLOCKER_RE.match(body)
    if match is None or match.group("type") not in (*ERROR_TYPES, "checkpoint-paused"):
        return None  # gsd writes a failure's type, or a pause
    return match.group("plan"), match.group("type")


def _tag(body: str) -> str | None:
    """The plan of a blocker bullet gsd wrote, else None."""
    own = _own(body)
    return own[0] if own else None


def _blockers(lines: Lines) -> tuple[range, list[int]] | None:
    """The Blockers section and its non-blank lines outside code fences."""
    span = lines.section(_BLOCKERS_RE, (3,)) or lines.section(_BLOCKERS_RE, (2,))
    if span is None:
        return None
    return span, [i for i in lines.plain() if i in span[1:] and lines.body(i).strip()]


def add_blocker(text: str, line: str) -> str:
    """Add `- [01-02] timeout: details` under `### Blockers/Concerns` (or `## Blockers`).

    gsd's bullet for the same plan is replaced in place (one line per plan: its latest
    failure); a lone `None` / `None yet.` placeholder gives way to the bullet; a missing
    section is created at the end of the file.
    """
    bullet = _bullet(line)
    lines = Lines(text)
    found = _blockers(lines)
    if found is None:
        lines.append_section("## Blockers", [bullet])
        return lines.result(text)
    span, content = found
    tag = _tag(bullet)
    for index in content:
        body = lines.body(index)
        if body.strip() == bullet or (tag and (old := _tag(body)) and same_plan(old, tag)):
            if body.strip() != bullet:
                lines.set(index, bullet)
            return lines.result(text)
    if len(content) == 1 and _EMPTY_RE.match(lines.body(content[0])):
        lines.set(content[0], bullet)
    else:
        lines.append_to(span, [bullet])
    return lines.result(text)


def remove_blockers(text: str, plan_id: str) -> str:
    """Drop gsd's `- [plan_id] error_type: ...` bullets; an emptied section gets `None yet.`
    back."""
    lines = Lines(text)
    found = _blockers(lines)
    if found is None:
        return text
    content = found[1]
    doomed = [i for i in content if (tag := _tag(lines.body(i))) and same_plan(tag, plan_id)]
    if not doomed:
        return text
    if len(doomed) == len(content):
        lines.set(doomed.pop(0), PLACEHOLDER)
    for index in reversed(doomed):
        lines.delete(index)
    return lines.result(text)


def blockers(text: str) -> list[str]:
    """The lines under the Blockers heading, stripped; blank, fenced and placeholder lines
    left out."""
    lines = Lines(text)
    found = _blockers(lines)
    bodies = (lines.body(i).strip() for i in found[1]) if found else ()
    return [body for body in bodies if not _PLACEHOLDER_RE.match(body)]


def blocker_plans(text: str) -> list[tuple[str, str]]:
    """(plan, error type) of each Blockers bullet gsd wrote (`- [01-02] timeout: ...`,
    `- [01-02] checkpoint-paused: ...`), in file order; people's own notes are not in it.
    The plan is as written: compare it with `same_plan`."""
    lines = Lines(text)
    found = _blockers(lines)
    owned = (_own(lines.body(i)) for i in found[1]) if found else ()
    return [pair for pair in owned if pair]
