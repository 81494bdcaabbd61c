"""`NN-MM-SUMMARY.md`: written when a plan completes; its existence means the plan is done."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gsd.core.errors import InputError
from gsd.core.ids import split_plan_id
from gsd.core.outcomes import TaskCommit, TaskOutcome
from gsd.core.utc import as_utc, utc_stamp
from gsd.core.words import plural
from gsd.formats import frontmatter
from gsd.formats.files import write_atomic

if TYPE_CHECKING:
    from gsd.formats.errorlog import ErrorRecord

NO_DEVIATIONS = "None - plan executed exactly as written."
NOT_REPORTED = "not reported"

# A scalar is written bare when it holds only path-like characters and no YAML 1.1 or
# 1.2 reader would take it for a number, date, bool or null (see `_scalar`).
_PLAIN_RE = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./@+-]*(?: [A-Za-z0-9_./@+()-]+)*")
_YAML_WORDS = frozenset("y n yes no on off true false null ~".split())
_YAML12_ONLY_RE = re.compile(r"0o[0-7]+|[-+]?(?:\.[0-9]+|[0-9]+\.?[0-9]*)(?:[eE][-+]?[0-9]+)?")
# Characters a YAML stream may hold unescaped (YAML 1.1 "printable", as PyYAML checks it).
_UNPRINTABLE_RE = re.compile("[^\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TOP_KEY_RE = re.compile(r"[A-Za-z0-9_\"'][^:]*:(?:[ \t]|$)")
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
    took in all its runs (default: from `started` to `finished`).
    """
    phase_number, plan_number = split_plan_id(plan_id)
    done = _final_outcomes(outcomes)
    numbers = sorted(set(task_names) | set(done))
    new_files = _new_files(done, created)
    files = _files(done)
    if seconds is None:
        seconds = (as_utc(finished) - as_utc(started)).total_seconds()
    seconds = max(0.0, seconds)
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
        *_section("Deviations from Plan", _deviation_lines(numbers, done)),
        *_section("Issues Encountered", _issue_lines(outcomes)),
        *_section("Tokens and Cost", _token_lines(outcomes)),
        "---",
        f"*Phase: {phase_dir}*",
        f"*Completed: {completed}*",
        "",
    ]
    return f"---\n{front}---\n\n" + "\n".join(lines)


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


def parse(text: str, name: str = "SUMMARY.md", *, strict: bool = False) -> dict[str, Any]:
    """The frontmatter of a SUMMARY, every scalar a string; {} when it has none.

    Hand-written summaries are not always valid YAML (an unquoted `: ` in a list
    item). A SUMMARY only records a finished plan, so by default the top-level keys
    that do read are kept and the broken ones dropped; `strict` raises InputError.
    """
    try:
        parts = frontmatter.split(text)
    except frontmatter.FrontmatterError:
        return {}  # older upstream summaries are plain Markdown
    try:
        data, _ = frontmatter.load(parts.yaml_text, parts.yaml_line)
    except frontmatter.FrontmatterError as error:
        if strict:
            raise InputError(f"{name}:{error.line}: {error.message}") from None
        return _salvage(parts.yaml_text)
    return data


def _salvage(yaml_text: str) -> dict[str, Any]:
    """Each top-level key read on its own; the ones that do not read are left out."""
    blocks: list[list[str]] = []
    for line in yaml_text.split("\n"):
        if _TOP_KEY_RE.match(line) or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    data: dict[str, Any] = {}
    for block in blocks:
        try:
            part, _ = frontmatter.load("\n".join(block))
        except frontmatter.FrontmatterError:
            continue
        for key, value in part.items():
            data.setdefault(key, value)
    return data


def load(path: Path, *, strict: bool = False) -> dict[str, Any]:
    """`parse` of the file at `path`, with the path in any error."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise InputError(f"{path}: cannot read the summary: {error.strerror}") from None
    return parse(text, str(path), strict=strict)


def write(path: Path, text: str) -> None:
    """Write a rendered SUMMARY atomically: readers never see half of one."""
    write_atomic(path, text)


def summary_path(phase_dir_path: Path, plan_id: str) -> Path:
    """Where gsd writes the SUMMARY of `plan_id`."""
    return Path(phase_dir_path) / f"{plan_id}-SUMMARY.md"


def exists(phase_dir_path: Path | str, plan_id: str) -> bool:
    """Whether the plan is done: `{plan_id}-SUMMARY.md` (or `{plan_id}-slug-SUMMARY.md`)."""
    return find(phase_dir_path, plan_id) is not None


def find(phase_dir_path: Path | str, plan_id: str) -> Path | None:
    """The plan's SUMMARY.md in that phase folder: `{plan_id}-SUMMARY.md`, else
    `{plan_id}-slug-SUMMARY.md`; None when the plan is not done."""
    folder = Path(phase_dir_path)
    exact = summary_path(folder, plan_id)
    if exact.is_file():
        return exact
    prefix = f"{plan_id}-"
    for candidate in sorted(folder.glob(f"{_glob_escape(prefix)}*-SUMMARY.md")):
        rest = candidate.name[len(prefix) :]
        if rest[:1].isdigit():
            continue  # `01-02-SUMMARY.md` belongs to plan 01-02, not to plan 01
        if candidate.is_file():
            return candidate
    return None


def _glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


# --- the plan's whole history ------------------------------------------------------


def logged_attempts(plan_id: str, plannings: Iterable[Path]) -> list[TaskOutcome]:
    """Every attempt at the plan's tasks that its logs in these `.planning/` folders
    record (a line two checkouts both hold counts once), in time order: the `result`
    events, with the details and exit code of the matching error record."""
    from gsd.formats import errorlog  # pydantic models: `gsd status` reads summaries without them

    events: dict[str, dict[str, Any]] = {}
    records: dict[str, ErrorRecord] = {}
    for planning in plannings:
        found, errors, _ = errorlog.read_logs(planning)  # each log read once
        for event in found:
            if event.get("plan") == plan_id and event.get("event") == "result":
                events.setdefault(json.dumps(event, sort_keys=True), event)
        for record in errorlog.filter_records(errors, plan=plan_id):
            records.setdefault(errorlog.to_line(record), record)
    failures = {(r.task, r.attempt, r.specialist, r.error_type): r for r in records.values()}
    ordered = sorted(events.values(), key=lambda e: str(e.get("ts", "")))
    return [_attempt(plan_id, event, failures) for event in ordered]


def _attempt(
    plan_id: str, event: dict[str, Any], failures: Mapping[tuple[str, int, str, str], Any]
) -> TaskOutcome:
    task, attempt = _int(event.get("task")), _int(event.get("attempt")) or 1
    agent, error_type = str(event.get("agent") or "?"), event.get("error_type")
    record = failures.get((str(task), attempt, agent, str(error_type)))
    return TaskOutcome(
        plan=plan_id, task=task, agent=agent, success=bool(event.get("success")),
        soft_success=bool(event.get("soft_success")),
        error_type=str(error_type) if error_type else None,
        details=record.details if record else "", commit=None, changed=[], deviations=[],
        exit_code=record.exit_code if record else None,
        duration_s=float(event.get("duration_s") or 0), input_tokens=_count(event, "input_tokens"),
        output_tokens=_count(event, "output_tokens"), cost_usd=_cost(event), attempt=attempt,
        checkpoint=None, report=None,
    )  # fmt: skip


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _count(event: Mapping[str, Any], key: str) -> int | None:
    value = event.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _cost(event: Mapping[str, Any]) -> float | None:
    value = event.get("cost_usd")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def with_commits(
    plan_id: str, outcomes: list[TaskOutcome], commits: Mapping[int, TaskCommit]
) -> tuple[list[TaskOutcome], list[str]]:
    """The attempts with what git says of each committed task (`Gsd-Task` trailers): the
    task's last successful attempt gets its commit and the files it changed; a task
    committed with no attempt on record (its log lost) gets one from the commit. Also the
    files the task commits created."""
    result = list(outcomes)
    for number, commit in commits.items():
        last = max((i for i, o in enumerate(result) if o.task == number and o.success),
                   default=None)  # fmt: skip
        if last is None:
            result.append(TaskOutcome(
                plan=plan_id, task=number, agent=commit.agent or "?", success=True,
                soft_success=False, error_type=None, details="", commit=commit.sha,
                changed=list(commit.changed), deviations=[], exit_code=None, duration_s=0.0,
                input_tokens=None, output_tokens=None, cost_usd=None, attempt=1,
                checkpoint=None, report=None,
            ))  # fmt: skip
        else:
            result[last] = result[last]._replace(commit=commit.sha, changed=list(commit.changed))
    created = sorted({path for commit in commits.values() for path in commit.added})
    return result, created


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
        else:
            lines.append(f"{label} - no changes to commit ({outcome.agent})")
    return lines


def _file_lines(
    files: list[str], new_files: set[str], done: Mapping[int, TaskOutcome]
) -> list[str]:
    if not files:
        return ["None - no files changed."]
    lines = []
    for path in files:
        tasks = [n for n, o in done.items() if path in o.changed]
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
        for deviation in outcome.deviations:
            text = " ".join(deviation.split())
            lines.append(f"- **Task {number} ({outcome.agent}):** {text}")
    if not lines:
        return [NO_DEVIATIONS]
    return [*lines, "", f"**Total deviations:** {len(lines)}"]


def _issue_lines(outcomes: Iterable[TaskOutcome]) -> list[str]:
    lines = []
    for outcome in outcomes:
        where = f"Task {outcome.task} attempt {outcome.attempt} ({outcome.agent})"
        if not outcome.success:
            details = " ".join(outcome.details.split())
            exit_note = "" if outcome.exit_code is None else f", exit {outcome.exit_code}"
            lines.append(
                f"- **{where}:** {outcome.error_type or 'failed'}{exit_note}"
                + (f" - {details}" if details else "")
                + "; rolled back"
            )
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
    rows = [
        "| Agent | Attempts | Input tokens | Output tokens | Cost (USD) |",
        "|-------|---------:|-------------:|--------------:|-----------:|",
    ]
    for agent, mine in per_agent.items():
        rows.append(f"| {agent} | {len(mine)} | {_totals(mine)} |")
    rows.append(f"| **Total** | {len(outcomes)} | {_totals(outcomes)} |")
    if any(o.input_tokens is None and o.output_tokens is None for o in outcomes):
        rows += ["", f"Attempts whose runner gave no usage count as {NOT_REPORTED!r}."]
    return rows


def _totals(outcomes: list[TaskOutcome]) -> str:
    return " | ".join(
        (
            _sum([o.input_tokens for o in outcomes], "{:,}"),
            _sum([o.output_tokens for o in outcomes], "{:,}"),
            _sum([o.cost_usd for o in outcomes], "${:.4f}"),
        )
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
