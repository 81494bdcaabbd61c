"""`NN-MM-SUMMARY.md` rendered from every attempt at a plan's tasks, and written when the
plan completes (`gsd.formats.planning.summaryread` finds and reads it back)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from gsd.core.ids import split_plan_id
from gsd.core.utc import as_utc, utc_stamp
from gsd.core.verdict.judge import REPORTED_SOFT
from gsd.core.verdict.outcomes import TaskOutcome
from gsd.core.visible import visible
from gsd.core.words import plural
from gsd.formats.files import write_atomic
from gsd.formats.lines import markdown_table
from gsd.formats.planning.summaryreviews import review_section

NO_DEVIATIONS = "None - plan executed exactly as written."
NOT_REPORTED = "not reported"
MADE_NO_CHANGE = (
    "made no change - a task that may write changed no file and its Task Report claims none"
)

# A scalar is written bare when it holds only path-like characters and no YAML 1.1 or
# 1.2 reader would take it for a number, date, bool or null (see `_scalar`).
_PLAIN_RE = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./@+-]*(?: [A-Za-z0-9_./@+()-]+)*")
_YAML_WORDS = frozenset("y n yes no on off true false null ~".split())
_YAML12_ONLY_RE = re.compile(r"0o[0-7]+|[-+]?(?:\.[0-9]+|[0-9]+\.?[0-9]*)(?:[eE][-+]?[0-9]+)?")
# Characters a YAML stream may hold unescaped (YAML 1.1 "printable", as PyYAML checks it).
_UNPRINTABLE_RE = re.compile("[^\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TASK_PREFIX_RE = re.compile(r"^\s*task\s+\d+\s*[:.)-]\s*", re.IGNORECASE)


def render(
    *,
    phase_dir: str,
    plan_id: str,
    plan_frontmatter: Mapping[str, Any],
    outcomes: list[TaskOutcome],
    task_names: Mapping[int, str],
    started: datetime,
    finished: datetime,
    created: Iterable[str] | None = None,
    seconds: float | None = None,
) -> str:
    """The SUMMARY.md of a completed plan, from every attempt at its tasks.

    `outcomes` holds all attempts, failed ones included: the last successful attempt
    of a task is its result, the rest are issues. A changed file counts as created when
    it is in `created` (what git saw the task commits add: `with_commits`); without it,
    when a Task Report lists it under "Files created". `seconds`: how long the plan
    took in all its runs (default: `finished` - `started`). Agent text as `cat -v` shows it.
    """
    phase_number, plan_number = split_plan_id(plan_id)
    done = _final_outcomes(outcomes)
    numbers = sorted(set(task_names) | set(done))
    new_files = _new_files(done, created)
    files = _files(done)
    took = (as_utc(finished) - as_utc(started)).total_seconds()
    seconds = max(0.0, took if seconds is None else seconds)
    completed = as_utc(finished).strftime("%Y-%m-%d")
    front = _frontmatter_text(
        phase=phase_dir,
        plan=plan_number,
        subsystem=_subsystem(plan_frontmatter),
        created=[f for f in files if f in new_files],
        modified=[f for f in files if f not in new_files],
        duration=_short_duration(seconds),
        completed=completed,
        usage=_specialist_usage(done),
    )
    lines = [
        *_headline(phase_number or phase_dir, plan_number, done, numbers, files),
        "## Performance",
        "",
        f"- **Duration:** {_long_duration(seconds)}",
        f"- **Started:** {utc_stamp(started)}",
        f"- **Completed:** {utc_stamp(finished)}",
        f"- **Tasks:** {len(numbers)}",
        f"- **Files modified:** {len(files)}",
        "",
        *_section("Task Commits", _task_commit_lines(numbers, task_names, done)),
        *_section("Files Created/Modified", _file_lines(files, new_files, done)),
        *review_section(outcomes),
        *_section("Deviations from Plan", _deviation_lines(numbers, done)),
        *_section("Issues Encountered", _issue_lines(outcomes)),
        *_section("Tokens and Cost", _token_lines(outcomes)),
        "---",
        f"*Phase: {phase_dir}*",
        f"*Completed: {completed}*",
        "",
    ]
    return visible(f"---\n{front}---\n\n" + "\n".join(lines), lines=True)


def _new_files(done: Mapping[int, TaskOutcome], created: Iterable[str] | None) -> set[str]:
    """The files the plan created: what git saw its commits add (`created`) or, without
    that, what the Task Reports list under "Files created"."""
    new_files = set(created or ())
    for outcome in done.values() if created is None else ():
        if outcome.report is not None:
            new_files.update(outcome.report.files_created)
    return new_files


def _headline(
    phase_number: str,
    plan_number: str,
    done: Mapping[int, TaskOutcome],
    numbers: list[int],
    files: list[str],
) -> list[str]:
    """The title and the one-line account under it: tasks done, commits, files, agents."""
    committed = sum(1 for o in done.values() if o.commit)
    agents = list(_specialist_usage(done))
    return [
        f"# Phase {phase_number} Plan {plan_number}: Summary",
        "",
        f"**{len(done)} of {plural(len(numbers), 'task')} done in {plural(committed, 'commit')}, "
        f"{plural(len(files), 'file')} changed"
        + (f"; agents: {', '.join(agents)}**" if agents else "**"),
        "",
    ]


def _section(title: str, body: Iterable[str]) -> list[str]:
    """A `##` section: its heading, a blank line, its lines and a blank line."""
    return [f"## {title}", "", *body, ""]


def write(path: Path, text: str) -> None:
    """Write a rendered SUMMARY atomically: readers never see half of one."""
    write_atomic(path, text)


# --- what happened ---------------------------------------------------------------


def _final_outcomes(outcomes: Iterable[TaskOutcome]) -> dict[int, TaskOutcome]:
    """Task number -> its last successful attempt."""
    done: dict[int, TaskOutcome] = {}
    for outcome in outcomes:
        if outcome.success:
            done[outcome.task] = outcome
    return dict(sorted(done.items()))


def _files(done: Mapping[int, TaskOutcome]) -> list[str]:
    seen: dict[str, None] = {}
    for outcome in done.values():
        for path in outcome.changed:
            seen.setdefault(path, None)
    return sorted(seen)


def _specialist_usage(done: Mapping[int, TaskOutcome]) -> dict[str, list[int]]:
    usage: dict[str, list[int]] = {}
    for number, outcome in done.items():  # task order, so agents in order of first task
        usage.setdefault(outcome.agent, []).append(number)
    return usage


def _subsystem(plan_frontmatter: Mapping[str, Any]) -> str:
    for key in ("subsystem", "domain"):
        value = plan_frontmatter.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _task_label(number: int, task_names: Mapping[int, str]) -> str:
    name = _TASK_PREFIX_RE.sub("", " ".join(task_names.get(number, "").split()))
    return f"Task {number}: {name}" if name else f"Task {number}"


# --- body sections ---------------------------------------------------------------


def _task_commit_lines(
    numbers: list[int], task_names: Mapping[int, str], done: Mapping[int, TaskOutcome]
) -> list[str]:
    if not numbers:
        return ["None - the plan has no tasks."]
    lines = []
    for number in numbers:
        label = f"{number}. **{_task_label(number, task_names)}**"
        outcome = done.get(number)
        if outcome is None:
            lines.append(f"{label} - no run recorded (done in an earlier run, or a checkpoint)")
        elif outcome.commit:
            lines.append(f"{label} - `{outcome.commit[:7]}` ({outcome.agent})")
        elif outcome.no_change:
            lines.append(f"{label} - made no change ({outcome.agent})")
        else:
            lines.append(f"{label} - no changes to commit ({outcome.agent})")
    return lines


def _file_lines(
    files: list[str], new_files: set[str], done: Mapping[int, TaskOutcome]
) -> list[str]:
    if not files:
        return ["None - no files changed."]
    owners: dict[str, list[int]] = {}  # path -> the tasks that changed it, in their order
    for number, outcome in done.items():
        for path in set(outcome.changed):
            owners.setdefault(path, []).append(number)
    lines = []
    for path in files:
        tasks = owners.get(path, [])
        which = f"Task {tasks[0]}" if len(tasks) == 1 else "Tasks " + ", ".join(map(str, tasks))
        kind = "created" if path in new_files else "modified"
        lines.append(f"- `{path}` - {kind} ({which})")
    return lines


def _deviation_lines(numbers: list[int], done: Mapping[int, TaskOutcome]) -> list[str]:
    lines = []
    for number in numbers:
        outcome = done.get(number)
        if outcome is None:
            continue
        if outcome.no_change:
            lines.append(f"- **Task {number} ({outcome.agent}):** {MADE_NO_CHANGE}")
        for deviation in outcome.deviations:
            text = " ".join(deviation.split())
            lines.append(f"- **Task {number} ({outcome.agent}):** {text}")
    if not lines:
        return [NO_DEVIATIONS]
    return [*lines, "", f"**Total deviations:** {len(lines)}"]


def _issue_lines(outcomes: Iterable[TaskOutcome]) -> list[str]:
    lines = []
    for outcome in outcomes:
        step = "" if outcome.step == "first" else f", {outcome.step}"  # the retry ladder's
        where = f"Task {outcome.task} attempt {outcome.attempt} ({outcome.agent}{step})"
        if not outcome.success:
            details = " ".join(outcome.details.split())
            exit_note = "" if outcome.exit_code is None else f", exit {outcome.exit_code}"
            lines.append(
                f"- **{where}:** {outcome.error_type or 'failed'}{exit_note}"
                + (f" - {details}" if details else "")
                + "; rolled back"
            )
        elif outcome.soft_success and outcome.soft_reason not in (None, REPORTED_SOFT):
            lines.append(f"- **{where}:** {outcome.soft_reason}")
        elif outcome.soft_success:
            lines.append(
                f"- **{where}:** timed out after a complete success Task Report; "
                "accepted as a soft success"
            )
    return lines or ["None"]


def _token_lines(outcomes: list[TaskOutcome]) -> list[str]:
    if not outcomes:
        return ["None - no agent ran."]
    per_agent: dict[str, list[TaskOutcome]] = {}
    for outcome in outcomes:
        per_agent.setdefault(outcome.agent, []).append(outcome)
    table = [(agent, str(len(mine)), *_totals(mine)) for agent, mine in per_agent.items()]
    table.append(("**Total**", str(len(outcomes)), *_totals(outcomes)))
    headings = ("Agent", "Attempts", "Input tokens", "Output tokens", "Cost (USD)")
    rows = markdown_table(headings, table, right=(1, 2, 3, 4), fit=True)
    if any(o.input_tokens is None and o.output_tokens is None for o in outcomes):
        rows += ["", f"Attempts whose runner gave no usage count as {NOT_REPORTED!r}."]
    past = [o for o in outcomes if o.budget in ("over", "aborted")]
    rows += [""] if past else []
    for o in past:  # docs/inside/budgets.md
        how = "over its budget of" if o.budget == "over" else "stopped past its abort threshold of"
        limit = o.budget_warn if o.budget == "over" else o.budget_abort
        rows.append(
            f"- Task {o.task} attempt {o.attempt} ({o.agent}): {o.tokens or 0:,} "
            f"tokens, {how} {limit or 0:,}"
        )
    return rows


def _totals(outcomes: list[TaskOutcome]) -> tuple[str, str, str]:
    """Input tokens, output tokens and cost, summed (`_sum`)."""
    return (
        _sum([o.input_tokens for o in outcomes], "{:,}"),
        _sum([o.output_tokens for o in outcomes], "{:,}"),
        _sum([o.cost_usd for o in outcomes], "${:.4f}"),
    )


def _sum(values: list[int | None] | list[float | None], form: str) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return NOT_REPORTED
    text = form.format(sum(known))
    return text if len(known) == len(values) else f"{text} (partial)"


# --- time ------------------------------------------------------------------------


def _short_duration(seconds: float) -> str:
    """Upstream's frontmatter form: `3min`; under a minute `45s`."""
    if seconds < 60:
        return f"{round(seconds)}s"
    return f"{round(seconds / 60)}min"


def _long_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{round(seconds)} sec"
    return f"{round(seconds / 60)} min"


# --- frontmatter -----------------------------------------------------------------


def _frontmatter_text(
    *,
    phase: str,
    plan: str,
    subsystem: str,
    created: list[str],
    modified: list[str],
    duration: str,
    completed: str,
    usage: Mapping[str, list[int]],
) -> str:
    """Upstream's key order and layout; the plan number is always quoted ("02")."""
    lines = [
        f"phase: {_scalar(phase)}",
        f"plan: {_quoted(plan)}",
        f"subsystem: {_scalar(subsystem)}",
        "tags: []",
        "",
        "key-files:",
        *_block_list("created", created),
        *_block_list("modified", modified),
        "",
        "key-decisions: []",
        "",
        "# Metrics",
        f"duration: {_scalar(duration)}",
        f"completed: {completed}",  # a date, bare as upstream writes it
        "",
    ]
    if usage:
        lines.append("specialist_usage:")
        for agent, tasks in usage.items():
            lines.append(f"  {_scalar(agent)}: [{', '.join(str(t) for t in tasks)}]")
    else:
        lines.append("specialist_usage: {}")
    return "\n".join(lines) + "\n"


def _block_list(key: str, items: list[str]) -> list[str]:
    if not items:
        return [f"  {key}: []"]
    return [f"  {key}:", *(f"    - {_scalar(item)}" for item in items)]


def _scalar(text: str) -> str:
    """`text` as a YAML scalar that every reader gives back as this same string."""
    if (
        _PLAIN_RE.fullmatch(text)
        and text.casefold() not in _YAML_WORDS
        and not _YAML12_ONLY_RE.fullmatch(text)
        and _yaml11_tag(text) == "tag:yaml.org,2002:str"
    ):
        return text
    return _quoted(text)


def _yaml11_tag(text: str) -> str:
    """The tag PyYAML's implicit resolver gives a bare scalar: int, float, timestamp ..."""
    import yaml  # rendering only; parsing a SUMMARY does not need it

    return str(yaml.resolver.Resolver().resolve(yaml.ScalarNode, text, (True, False)))


def _quoted(text: str) -> str:
    """A double-quoted YAML scalar; the escapes are the ones YAML and gsd's reader share."""
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + _UNPRINTABLE_RE.sub(_escape, text) + '"'


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
