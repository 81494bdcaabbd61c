"""The rules over one plan and its tasks: frontmatter, task blocks, specialists, paths;
each declared (`@rule`) above the function that checks it."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator
from functools import lru_cache

from gsd.core.ids import PLAN_NUMBER_RE
from gsd.core.models import REQUIRED_FIELDS, RUNNERS, Diagnostic, Plan, Task
from gsd.core.rules.registry import Facts, Rule, diag, register, rule
from gsd.core.specialists import classify
from gsd.core.words import suggested

TASK_TYPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # type: (required children, recommended children) -- SPEC section 2, less a checkpoint's
    # <name>: upstream's own templates (get-shit-done's phase-prompt.md, checkpoints.md)
    # write none, and its <what-built>, <decision> or <action> says what it is
    "auto": (("name", "action"), ("files", "verify", "done")),
    "checkpoint:human-verify": (("what-built", "how-to-verify", "resume-signal"), ()),
    "checkpoint:decision": (("decision", "options", "resume-signal"), ("context",)),
    "checkpoint:human-action": (("action", "instructions", "verification", "resume-signal"), ()),
}
PLAN_TYPES = ("execute", "tdd")
GATES = ("blocking", "blocking-human")


# Found by the plan reader (gsd.formats.planning.plan) and handed on by check_plan.
register(
    Rule("GSD001", "error", "frontmatter missing or unparseable"),
    Rule("GSD015", "error", "task block not closed, nested, or a stray closing tag"),
    Rule("GSD050", "error", "file is not valid UTF-8, or is not a regular text file"),
)


def check_plan(plan: Plan, facts: Facts) -> Iterator[Diagnostic]:
    """Every finding in one plan: its parse findings, then frontmatter, tasks and paths."""
    yield from plan.diagnostics
    if not plan.readable:
        return
    has_frontmatter = not any(d.code == "GSD001" for d in plan.diagnostics)
    if has_frontmatter:
        yield from _required_fields(plan)
        yield from _field_types(plan)
    if not plan.tasks:
        yield _no_tasks(plan)
    for task in plan.tasks:
        for check in TASK_RULES:
            yield from check(plan, task, facts)
    yield from _unsafe_paths(plan, plan.field_line("files_modified"), plan.files_modified, facts)


@rule(
    "GSD010",
    "warning",
    "plan has no tasks",
    docs="plan has no tasks; with `## Task N` headings (the older format) the message says to "
    'wrap each task in `<task type="auto">` with `<name>`, `<action>`, `<verify>` and `<done>`',
)
def _no_tasks(plan: Plan) -> Diagnostic:
    """GSD010, saying how to convert `## Task N` headings where the plan has them."""
    legacy = plan.legacy_task_lines
    if not legacy:
        return diag(plan, plan.body_line, "GSD010", "plan has no <task> blocks")
    headings = f"{len(legacy)} `## Task N` heading" + ("s" if len(legacy) > 1 else "")
    return diag(
        plan,
        legacy[0],
        "GSD010",
        f"plan has no <task> blocks, only {headings} (the older format): wrap each "
        'task in <task type="auto"> with <name>, <action>, <verify> and <done> inside, '
        "then delete the heading",
    )


@rule("GSD002", "error", "required frontmatter field missing")
def _required_fields(plan: Plan) -> Iterator[Diagnostic]:
    present = set(plan.frontmatter)
    if "files-modified" in present:
        present.add("files_modified")
    for key in REQUIRED_FIELDS:
        if key not in present:
            yield diag(plan, 1, "GSD002", f"frontmatter lacks required field `{key}`")


@rule(
    "GSD003",
    "error",
    "frontmatter value of the wrong type or outside its allowed values",
    docs="frontmatter value of the wrong type or outside its allowed values "
    "(`must_haves.artifacts` may be plain paths, `[output.txt]`, as in upstream's fixtures)",
)
def _field_types(plan: Plan) -> Iterator[Diagnostic]:
    fm = plan.frontmatter

    def wrong(key: str, message: str) -> Diagnostic:
        return diag(plan, plan.field_line(key), "GSD003", f"`{key}` {message}")

    for key in ("phase", "plan"):
        if key in fm and (not isinstance(fm[key], str) or not fm[key].strip()):
            yield wrong(key, "must be a non-empty string")
    yield from _plan_number(plan, wrong)
    if "type" in fm and fm["type"] not in PLAN_TYPES:
        yield wrong("type", f"is {fm['type']!r}; allowed: {', '.join(PLAN_TYPES)}")
    if "wave" in fm and plan.wave is None:
        yield wrong("wave", f"is {fm['wave']!r}; it must be an integer >= 0")
    for key in ("depends_on", "files_modified", "files-modified"):
        if key in fm and not _is_str_list(fm[key]) and fm[key] != "":
            yield wrong(key, 'must be a list of strings, e.g. [] or ["01-01"]')
    if "autonomous" in fm and plan.autonomous is None:
        yield wrong("autonomous", f"is {fm['autonomous']!r}; it must be true or false")
    if "must_haves" in fm:
        yield from (wrong("must_haves", m) for m in _must_haves_problems(fm["must_haves"]))


def _plan_number(plan: Plan, wrong: Callable[[str, str], Diagnostic]) -> Iterator[Diagnostic]:
    """`plan` is a number ("01"); with no id in the file name, `phase` must give one too."""
    phase, number = plan.frontmatter.get("phase"), plan.frontmatter.get("plan")
    if not isinstance(number, str) or not number.strip():
        return  # missing or not a string: reported above
    if not PLAN_NUMBER_RE.fullmatch(number):
        yield wrong("plan", f'is {number!r}; it must be the plan number as a string, e.g. "01"')
    elif not plan.id and isinstance(phase, str) and phase.strip():
        yield wrong(
            "phase",
            f"is {phase!r} and the file name holds no plan id (NN-MM-name-PLAN.md): "
            "name the file after its plan, or start `phase` with its number, e.g. 01-name",
        )


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _must_haves_problems(value: object) -> Iterator[str]:
    if not isinstance(value, dict):
        yield "must be a mapping with truths, artifacts and key_links"
        return
    if "truths" in value and not _is_str_list(value["truths"]):
        yield "truths must be a list of strings"
    for key, needed in (("artifacts", ("path",)), ("key_links", ("from", "to"))):
        items = value.get(key, [])
        # an artifact may be a bare path (`artifacts: [output.txt]`), as upstream's fixtures write
        strings_ok = key == "artifacts"
        if not isinstance(items, list) or not all(
            isinstance(i, dict) or (strings_ok and isinstance(i, str) and i.strip()) for i in items
        ):
            yield f"{key} must be a list of mappings" + (" or paths" if strings_ok else "")
            continue
        for number, item in enumerate(items, 1):
            missing = [k for k in needed if isinstance(item, dict) and k not in item]
            if missing:
                yield f"{key} entry {number} lacks {', '.join(missing)}"


# --- one task -------------------------------------------------------------------------------


@rule("GSD011", "error", "unknown task type (or `gate` value)")
def _task_type(plan: Plan, task: Task, facts: Facts) -> Iterator[Diagnostic]:
    if task.type not in TASK_TYPES:
        shown = f"type {task.type!r}" if task.type else "no type attribute"
        yield diag(
            plan,
            task.line,
            "GSD011",
            f"task {task.index} has {shown}; allowed: {', '.join(TASK_TYPES)}",
        )
    gate = task.attrs.get("gate")
    if gate is not None and gate not in GATES:
        yield diag(
            plan,
            task.line,
            "GSD011",
            f"task {task.index} has gate={gate!r}; allowed: {', '.join(GATES)}",
        )


@rule("GSD012", "error", "task lacks a child its type requires")
@rule("GSD013", "warning", "task lacks a recommended child")
def _task_children(plan: Plan, task: Task, facts: Facts) -> Iterator[Diagnostic]:
    required, recommended = TASK_TYPES.get(task.type, ((), ()))
    # `text and not text.isspace()` is `text.strip()` without copying the text
    present = {e.tag for e in task.children if (e.text and not e.text.isspace()) or e.children}
    label = f"task {task.index} ({task.type})"
    for tag in required:
        if tag not in present:
            yield diag(plan, task.line, "GSD012", f"{label} lacks <{tag}>")
    for tag in recommended:
        if tag not in present:
            yield diag(plan, task.line, "GSD013", f"{label} has no <{tag}>")
    options = task.child("options")
    if task.type == "checkpoint:decision" and options is not None:
        choices = [e for e in options.children if e.tag == "option"]
        if not choices:
            yield diag(plan, options.line, "GSD012", f"{label}: <options> holds no <option id=...>")
        for choice in choices:
            if not choice.attrs.get("id"):
                yield diag(
                    plan, choice.line, "GSD012", f"{label}: an <option> lacks its id attribute"
                )


@rule("GSD014", "error", "checkpoint task in a plan whose `autonomous` is not false")
def _checkpoint_autonomy(plan: Plan, task: Task, facts: Facts) -> Iterator[Diagnostic]:
    if task.is_checkpoint and plan.autonomous is not False:
        yield diag(
            plan,
            task.line,
            "GSD014",
            f"task {task.index} is a {task.type} but the plan does not say `autonomous: false`",
        )


@rule(
    "GSD020",
    "error",
    "malformed specialist name (allowed: [A-Za-z0-9][A-Za-z0-9_.:-]*)",
    docs="malformed specialist name (allowed: `[A-Za-z0-9][A-Za-z0-9_.:-]*`)",
)
@rule(
    "GSD021",
    "warning",
    "specialist not in the roster: falls back to gsd-executor",
    strict=True,
)
def _specialist(plan: Plan, task: Task, facts: Facts) -> Iterator[Diagnostic]:
    name = task.specialist
    standing = classify(name, facts.roster)
    if standing == "malformed":
        yield diag(
            plan,
            task.line,
            "GSD020",
            f"task {task.index} names specialist {name!r}: only letters, digits and _.:- are "
            "allowed; it will run as gsd-executor",
        )
    elif standing == "no-roster":
        yield diag(
            plan,
            task.line,
            "GSD021",
            f"task {task.index} names specialist {name!r} but there is no "
            ".planning/available_agents.md (run `gsd agents sync`); it falls back to gsd-executor",
        )
    elif standing == "not-in-roster":
        yield diag(
            plan,
            task.line,
            "GSD021",
            f"task {task.index} names specialist {name!r}, which is not in "
            ".planning/available_agents.md; it falls back to gsd-executor"
            + suggested(str(name), facts.roster or ()),
        )


@rule("GSD022", "error", "task `runner=` names no runner, or its `model=` is unusable")
def _runner_override(plan: Plan, task: Task, facts: Facts) -> Iterator[Diagnostic]:
    """`runner=` and `model=` on a task (SPEC 0); whether `runner="command"` fits the
    agent is decided when the task is dispatched: agent files are not read here."""
    runner, model = task.runner, task.model
    if runner is not None and runner not in RUNNERS:
        yield diag(
            plan,
            task.line,
            "GSD022",
            f"task {task.index} has runner={runner!r}; allowed: {', '.join(RUNNERS)} "
            "(command only for an agent whose file says runner: command)",
        )
    problem = None if model is None else facts.model_problem(model)
    if problem is not None:
        yield diag(plan, task.line, "GSD022", f"task {task.index} has model=: {problem}")


@rule("GSD023", "error", "task `review=` names no agent of the roster, or a malformed name")
def _reviewer(plan: Plan, task: Task, facts: Facts) -> Iterator[Diagnostic]:
    """`review="AGENT"` (issue 24): unlike a specialist, a reviewer never falls back to
    gsd-executor, so a name the roster lacks is an error; `review="none"` opts out."""
    name = task.review
    standing = classify(name, facts.roster)
    if name is None or standing in ("empty", "no-roster", "listed"):
        return
    if standing == "malformed":
        why = "a malformed name (only letters, digits and _.:- are allowed)"
    else:
        why = "which is not in .planning/available_agents.md" + suggested(name, facts.roster or ())
    yield diag(
        plan,
        task.line,
        "GSD023",
        f"task {task.index} has review={name!r}, {why}; name an agent of the roster "
        '(or review="none")',
    )


@rule("GSD024", "error", 'task `plan-first=` is neither "true" nor "false"')
def _plan_first(plan: Plan, task: Task, facts: Facts) -> Iterator[Diagnostic]:
    """`plan-first="true"` (issue 24): the task proposes read-only before it works;
    `"false"` opts out of config's `gates.plan_first`. Anything else is an error, not a
    guess: a gate that silently did not apply would let the work run unapproved."""
    value = task.plan_first
    if value is None or value.strip().lower() in ("true", "false"):
        return
    yield diag(
        plan,
        task.line,
        "GSD024",
        f'task {task.index} has plan-first={value!r}; write plan-first="true" or '
        '"false"' + suggested(value.strip().lower(), ("true", "false")),
    )


def _task_files(plan: Plan, task: Task, facts: Facts) -> Iterator[Diagnostic]:
    files = task.child("files")
    if files is not None:
        yield from _unsafe_paths(plan, files.line, task.files, facts)


TaskRule = Callable[[Plan, Task, Facts], Iterator[Diagnostic]]
TASK_RULES: tuple[TaskRule, ...] = (
    _task_type,
    _task_children,
    _checkpoint_autonomy,
    _specialist,
    _runner_override,
    _reviewer,
    _plan_first,
    _task_files,
)


@rule(
    "GSD030",
    "error",
    "unsafe path in <files> or files_modified (absolute, `..`, leaves the repo)",
    docs="unsafe path in `<files>` or `files_modified` (absolute, `..`, leaves the repo)",
)
def _unsafe_paths(plan: Plan, line: int, paths: list[str], facts: Facts) -> Iterator[Diagnostic]:
    for raw in paths:
        problem = path_problem(raw, facts)
        if problem:
            yield diag(plan, line, "GSD030", f"path {raw!r} {problem}; use a repo-relative path")


def path_problem(raw: str, facts: Facts) -> str | None:
    """Why a path from a plan is unsafe to hand to an agent, or None if it is fine."""
    problem, normal = _written_problem(raw)
    if problem is None and normal and facts.leaves_through_symlink(normal):
        return "leads out of the repository through a symlink"
    return problem


_CONTROL_RE = re.compile(r"[\x00-\x1f]")


@lru_cache(maxsize=8192)
def _written_problem(raw: str) -> tuple[str | None, str]:
    """What is wrong with the path as written, and its normal form ("" for no path)."""
    path = raw.strip().strip("`\"'")
    if not path:
        return None, ""
    if path.startswith(("/", "\\", "~")) or (len(path) > 1 and path[1] == ":"):
        return "is absolute", ""
    normal = posixpath.normpath(path.replace("\\", "/"))
    if normal == ".." or normal.startswith("../"):
        return "leaves the repository", ""
    if _CONTROL_RE.search(path):
        return "holds control characters", ""
    return None, normal
