"""The rules of `gsd validate`: one small function per rule, diagnostics out."""

from __future__ import annotations

import gc
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from gsd.core.graph import PhaseGraph
from gsd.core.ids import PLAN_NUMBER_RE, phase_key, split_plan_id
from gsd.core.models import REQUIRED_FIELDS, RUNNERS, Diagnostic, Plan, Severity, Task
from gsd.formats.roster import classify
from gsd.io.project import Project


class Rule(NamedTuple):
    code: str
    severity: Severity
    summary: str


RULES: dict[str, Rule] = {
    r.code: r
    for r in (
        Rule("GSD001", "error", "frontmatter missing or unparseable"),
        Rule("GSD002", "error", "required frontmatter field missing"),
        Rule(
            "GSD003", "error", "frontmatter value of the wrong type or outside its allowed values"
        ),
        Rule("GSD010", "warning", "plan has no tasks"),
        Rule("GSD011", "error", "unknown task type (or `gate` value)"),
        Rule("GSD012", "error", "task lacks a child its type requires"),
        Rule("GSD013", "warning", "task lacks a recommended child"),
        Rule("GSD014", "error", "checkpoint task in a plan whose `autonomous` is not false"),
        Rule("GSD015", "error", "task block not closed, nested, or a stray closing tag"),
        Rule("GSD020", "error", "malformed specialist name (allowed: [A-Za-z0-9][A-Za-z0-9_.:-]*)"),
        Rule("GSD021", "warning", "specialist not in the roster: falls back to gsd-executor"),
        Rule("GSD022", "error", "task `runner=` names no runner, or its `model=` is unusable"),
        Rule(
            "GSD030",
            "error",
            "unsafe path in <files> or files_modified (absolute, `..`, leaves the repo)",
        ),
        Rule("GSD040", "error", "depends_on names a plan that does not exist"),
        Rule("GSD041", "error", "dependency cycle"),
        Rule("GSD042", "warning", "declared wave differs from the wave computed from depends_on"),
        Rule("GSD043", "warning", "wave > 1 with empty depends_on"),
        Rule(
            "GSD044",
            "warning",
            "plans of one wave both modify a file: they will run one after another",
        ),
        Rule("GSD045", "error", "two plans in a phase share an id"),
        Rule("GSD050", "error", "file is not valid UTF-8, or is not a regular text file"),
    )
}

# Rules that are errors under --strict.
STRICT_ERRORS = frozenset({"GSD021"})

TASK_TYPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # type: (required children, recommended children) -- SPEC section 2
    "auto": (("name", "action"), ("files", "verify", "done")),
    "checkpoint:human-verify": (("what-built", "how-to-verify", "resume-signal"), ("name",)),
    "checkpoint:decision": (("decision", "options", "resume-signal"), ("name", "context")),
    "checkpoint:human-action": (
        ("action", "instructions", "verification", "resume-signal"),
        ("name",),
    ),
}
PLAN_TYPES = ("execute", "tdd")
GATES = ("blocking", "blocking-human")


class Report:
    """What one run of the rules found."""

    __slots__ = ("files", "diagnostics", "paths")

    def __init__(
        self, files: int, diagnostics: list[Diagnostic], paths: Sequence[str] = ()
    ) -> None:
        self.files = files
        self.diagnostics = diagnostics
        self.paths = paths  # the plan files checked, findings or not (JUnit lists each)

    @property
    def errors(self) -> int:
        return sum(d.severity == "error" for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        return sum(d.severity == "warning" for d in self.diagnostics)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "errors": self.errors,
            "warnings": self.warnings,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


# Below this many plans, starting worker processes costs more than it saves.
PARALLEL_MIN_PLANS = 400


def validate(
    project: Project, targets: Iterable[str], *, strict: bool = False, jobs: int | None = None
) -> Report:
    """Check the plan files under `targets` (repo-relative paths).

    Rules that look across plans (dependencies, waves, ids) read every plan of
    the phase directory, but only the requested files are reported on. Large
    trees are checked by `jobs` processes (default: one per CPU), a phase
    directory each at a time.
    """
    requested: dict[str, None] = {}
    for target in targets:
        requested.update(dict.fromkeys(project.plans_under(target)))
    folders: dict[str, list[str]] = {}
    for path in requested:
        folders.setdefault(posixpath.dirname(path), []).append(path)
    jobs = jobs or os.cpu_count() or 1
    if jobs > 1 and len(requested) >= PARALLEL_MIN_PLANS and len(folders) > 1:
        found = _check_in_workers(project, list(folders.values()), jobs)
    else:
        found = _check_folders(project, list(folders.values()))
    diagnostics = sorted(set(_escalate(found, strict)), key=Diagnostic.sort_key)
    return Report(len(requested), diagnostics, list(requested))


def _check_folders(project: Project, folders: list[list[str]]) -> list[Diagnostic]:
    """Every rule for the given plan files, grouped by phase directory."""
    found: list[Diagnostic] = []
    # Parsed plans hold no reference cycles: the collector would only walk them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for paths in folders:
            project.preload(paths)
            wanted = set(paths)
            for path in paths:
                found.extend(check_plan(project.plan(path), project))
            found.extend(d for d in check_phase(paths[0], project) if d.path in wanted)
            project.release(posixpath.dirname(paths[0]))  # done with this phase
    finally:
        if collecting:
            gc.enable()
    return found


_WORK: tuple[Project, list[list[list[str]]]] | None = None  # set before the fork


def _check_chunk(index: int) -> list[Diagnostic]:
    assert _WORK is not None
    project, chunks = _WORK
    return _check_folders(project, chunks[index])


def _check_in_workers(project: Project, folders: list[list[str]], jobs: int) -> list[Diagnostic]:
    """Fork `jobs` workers that share the parent's state; only diagnostics come back."""
    import multiprocessing

    global _WORK
    _ = (project.all_plan_ids, project.roster)  # computed once, before the fork
    total = sum(len(paths) for paths in folders)
    chunks: list[list[list[str]]] = [[] for _ in range(jobs)]
    done = 0
    for paths in folders:  # contiguous chunks of about equal plan counts
        chunks[min(jobs - 1, done * jobs // total)].append(paths)
        done += len(paths)
    _WORK = (project, chunks)
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(_check_chunk, range(jobs))
    finally:
        _WORK = None
    return [d for result in results for d in result]


def _escalate(found: list[Diagnostic], strict: bool) -> Iterator[Diagnostic]:
    for d in found:
        if strict and d.code in STRICT_ERRORS:
            d = d._replace(severity="error")
        yield d


def _diag(plan: Plan, line: int, code: str, message: str) -> Diagnostic:
    return Diagnostic(path=plan.path, line=line, col=1, severity=RULES[code].severity,
                      code=code, message=message)  # fmt: skip


# --- one plan -------------------------------------------------------------------------------


def check_plan(plan: Plan, project: Project) -> Iterator[Diagnostic]:
    yield from plan.diagnostics
    if not plan.readable:
        return
    has_frontmatter = not any(d.code == "GSD001" for d in plan.diagnostics)
    if has_frontmatter:
        yield from _required_fields(plan)
        yield from _field_types(plan)
    if not plan.tasks:
        yield _diag(plan, plan.body_line, "GSD010", "plan has no <task> blocks")
    for task in plan.tasks:
        for rule in TASK_RULES:
            yield from rule(plan, task, project)
    yield from _unsafe_paths(
        plan, plan.field_line("files_modified"), plan.files_modified, project.root
    )


def _required_fields(plan: Plan) -> Iterator[Diagnostic]:
    present = set(plan.frontmatter)
    if "files-modified" in present:
        present.add("files_modified")
    for key in REQUIRED_FIELDS:
        if key not in present:
            yield _diag(plan, 1, "GSD002", f"frontmatter lacks required field `{key}`")


def _field_types(plan: Plan) -> Iterator[Diagnostic]:
    fm = plan.frontmatter

    def wrong(key: str, message: str) -> Diagnostic:
        return _diag(plan, plan.field_line(key), "GSD003", f"`{key}` {message}")

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
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            yield f"{key} must be a list of mappings"
            continue
        for number, item in enumerate(items, 1):
            missing = [k for k in needed if k not in item]
            if missing:
                yield f"{key} entry {number} lacks {', '.join(missing)}"


# --- one task -------------------------------------------------------------------------------


def _task_type(plan: Plan, task: Task, project: Project) -> Iterator[Diagnostic]:
    if task.type not in TASK_TYPES:
        shown = f"type {task.type!r}" if task.type else "no type attribute"
        yield _diag(
            plan, task.line, "GSD011",
            f"task {task.index} has {shown}; allowed: {', '.join(TASK_TYPES)}",
        )  # fmt: skip
    gate = task.attrs.get("gate")
    if gate is not None and gate not in GATES:
        yield _diag(
            plan,
            task.line,
            "GSD011",
            f"task {task.index} has gate={gate!r}; allowed: {', '.join(GATES)}",
        )


def _task_children(plan: Plan, task: Task, project: Project) -> Iterator[Diagnostic]:
    required, recommended = TASK_TYPES.get(task.type, ((), ()))
    present = {e.tag for e in task.children if e.text.strip() or e.children}
    label = f"task {task.index} ({task.type})"
    for tag in required:
        if tag not in present:
            yield _diag(plan, task.line, "GSD012", f"{label} lacks <{tag}>")
    for tag in recommended:
        if tag not in present:
            yield _diag(plan, task.line, "GSD013", f"{label} has no <{tag}>")
    options = task.child("options")
    if task.type == "checkpoint:decision" and options is not None:
        choices = [e for e in options.children if e.tag == "option"]
        if not choices:
            yield _diag(
                plan, options.line, "GSD012", f"{label}: <options> holds no <option id=...>"
            )
        for choice in choices:
            if not choice.attrs.get("id"):
                yield _diag(
                    plan, choice.line, "GSD012", f"{label}: an <option> lacks its id attribute"
                )


def _checkpoint_autonomy(plan: Plan, task: Task, project: Project) -> Iterator[Diagnostic]:
    if task.is_checkpoint and plan.autonomous is not False:
        yield _diag(
            plan, task.line, "GSD014",
            f"task {task.index} is a {task.type} but the plan does not say `autonomous: false`",
        )  # fmt: skip


def _specialist(plan: Plan, task: Task, project: Project) -> Iterator[Diagnostic]:
    name = task.specialist
    standing = classify(name, project.roster)
    if standing == "malformed":
        yield _diag(
            plan, task.line, "GSD020",
            f"task {task.index} names specialist {name!r}: only letters, digits and _.:- are "
            "allowed; it will run as gsd-executor",
        )  # fmt: skip
    elif standing == "no-roster":
        yield _diag(
            plan, task.line, "GSD021",
            f"task {task.index} names specialist {name!r} but there is no "
            ".planning/available_agents.md (run `gsd agents sync`); it falls back to gsd-executor",
        )  # fmt: skip
    elif standing == "not-in-roster":
        yield _diag(
            plan, task.line, "GSD021",
            f"task {task.index} names specialist {name!r}, which is not in "
            ".planning/available_agents.md; it falls back to gsd-executor",
        )  # fmt: skip


def _runner_override(plan: Plan, task: Task, project: Project) -> Iterator[Diagnostic]:
    """`runner=` and `model=` on a task (SPEC 0); whether `runner="command"` fits the
    agent is decided when the task is dispatched: agent files are not read here."""
    runner, model = task.runner, task.model
    if runner is not None and runner not in RUNNERS:
        yield _diag(
            plan, task.line, "GSD022",
            f"task {task.index} has runner={runner!r}; allowed: {', '.join(RUNNERS)} "
            "(command only for an agent whose file says runner: command)",
        )  # fmt: skip
    if model is not None:
        from gsd.formats.runners import check_model  # no pydantic: fine on the hook path

        try:
            check_model(model)
        except ValueError as exc:
            yield _diag(plan, task.line, "GSD022", f"task {task.index} has model=: {exc}")


def _task_files(plan: Plan, task: Task, project: Project) -> Iterator[Diagnostic]:
    files = task.child("files")
    if files is not None:
        yield from _unsafe_paths(plan, files.line, task.files, project.root)


TaskRule = Callable[[Plan, Task, Project], Iterator[Diagnostic]]
TASK_RULES: tuple[TaskRule, ...] = (
    _task_type,
    _task_children,
    _checkpoint_autonomy,
    _specialist,
    _runner_override,
    _task_files,
)


def _unsafe_paths(plan: Plan, line: int, paths: list[str], root: Path) -> Iterator[Diagnostic]:
    for raw in paths:
        problem = path_problem(raw, root)
        if problem:
            yield _diag(plan, line, "GSD030", f"path {raw!r} {problem}; use a repo-relative path")


def path_problem(raw: str, root: Path) -> str | None:
    """Why a path from a plan is unsafe to hand to an agent, or None if it is fine."""
    return _path_problem(raw, str(root))


_CONTROL_RE = re.compile(r"[\x00-\x1f]")


@lru_cache(maxsize=8192)
def _path_problem(raw: str, root: str) -> str | None:
    path = raw.strip().strip("`\"'")
    if not path:
        return None
    if path.startswith(("/", "\\", "~")) or (len(path) > 1 and path[1] == ":"):
        return "is absolute"
    normal = posixpath.normpath(path.replace("\\", "/"))
    if normal == ".." or normal.startswith("../"):
        return "leaves the repository"
    if _CONTROL_RE.search(path):
        return "holds control characters"
    if _leaves_through_symlink(_realpath(root), normal):
        return "leads out of the repository through a symlink"
    return None


@lru_cache(maxsize=8192)
def _realpath(path: str) -> str:
    """`os.path.realpath`, one lstat per new directory: parents come from the cache."""
    parent, name = os.path.split(path)
    if not name or parent == path:
        return os.path.realpath(path)
    real = os.path.join(_realpath(parent), name)
    return os.path.realpath(real) if os.path.islink(real) else real


def _leaves_through_symlink(real_root: str, normal: str) -> bool:
    """Does `normal` (repo-relative, no `..`) resolve outside the repository?"""
    real = _realpath(os.path.join(real_root, normal))
    return real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep)


# --- one phase ------------------------------------------------------------------------------


def check_phase(path: str, project: Project) -> Iterator[Diagnostic]:
    """Rules across the plans of the phase directory holding `path`."""
    graph = project.graph_of(path)
    plans = [p for p in project.siblings(path) if p.readable]
    yield from _duplicate_ids(plans)
    yield from _missing_dependencies(plans, graph, project)
    yield from _cycles(graph)
    yield from _waves(graph)
    yield from _overlaps(graph)


def _duplicate_ids(plans: list[Plan]) -> Iterator[Diagnostic]:
    seen: dict[str, Plan] = {}
    for plan in sorted(plans, key=lambda p: p.path):
        if not plan.id:
            continue  # no id at all (GSD001, GSD002 or GSD003 says why), none shared
        first = seen.setdefault(plan.id, plan)
        if first is not plan:
            yield _diag(plan, 1, "GSD045", f"plan id {plan.id} is also used by {first.path}")


def _missing_dependencies(
    plans: list[Plan], graph: PhaseGraph, project: Project
) -> Iterator[Diagnostic]:
    for plan in plans:
        for dep in plan.depends_on:
            if dep in graph.plans:
                continue
            dep_phase, own_phase = phase_key(split_plan_id(dep)[0]), phase_key(plan.phase)
            exists = dep in project.all_plan_ids
            if exists and dep_phase and own_phase and dep_phase < own_phase:
                continue  # an earlier phase's plan: done before this phase starts
            what = "a plan of a later phase" if exists else "not a plan of this or an earlier phase"
            yield _diag(
                plan,
                plan.field_line("depends_on"),
                "GSD040",
                f"depends_on names {dep!r}, which is {what}",
            )


def _cycles(graph: PhaseGraph) -> Iterator[Diagnostic]:
    for cycle in graph.cycles:
        for pid in dict.fromkeys(cycle):
            plan = graph.plans[pid]
            yield _diag(
                plan, plan.field_line("depends_on"), "GSD041",
                f"dependency cycle: {' -> '.join(cycle)}",
            )  # fmt: skip


def _waves(graph: PhaseGraph) -> Iterator[Diagnostic]:
    for pid, plan in graph.plans.items():
        declared = plan.wave
        if declared is None:
            continue
        computed = graph.wave_of.get(pid)
        line = plan.field_line("wave")
        # with a missing dependency (GSD040) the computed wave means nothing; a
        # dependency named twice is still one dependency
        complete = all(
            d in graph.plans for d in plan.depends_on if split_plan_id(d)[0] == plan.phase
        )
        if computed is not None and complete and declared != computed:
            yield _diag(
                plan, line, "GSD042",
                f"wave is {declared} but depends_on puts {pid} in wave {computed}",
            )  # fmt: skip
        if declared > 1 and not plan.depends_on:
            yield _diag(plan, line, "GSD043", f"wave is {declared} but depends_on is empty")


def _overlaps(graph: PhaseGraph) -> Iterator[Diagnostic]:
    for pids, files in graph.shared_files.items():
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        for pid in pids:
            plan = graph.plans[pid]
            others = ", ".join(p for p in pids if p != pid)
            yield _diag(
                plan, plan.field_line("files_modified"), "GSD044",
                f"{pid} and {others} (wave {graph.wave_of[pid]}) both modify {shown}: "
                "they will run one after another",
            )  # fmt: skip
