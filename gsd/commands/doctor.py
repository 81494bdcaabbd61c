"""`gsd doctor`: what this machine and project give a run, and what a run would miss."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gsd.core.errors import GsdError, UsageError
from gsd.io.process import proc
from gsd.run.preflight import INSTALL, find_program

if TYPE_CHECKING:
    from gsd.formats.agents import Agent
    from gsd.io.dispatch import TaskDispatch
    from gsd.io.plans.project import Project

# The oldest git gsd runs on: `git restore` (git.Git.restore_paths) came in 2.23;
# `%(trailers:key=...,valueonly)` (reading Gsd-Task trailers) in 2.22; linked
# worktrees, `worktree remove` and `status --porcelain=v2` are older than both.
MIN_GIT = (2, 23)
RUNNER_PROGRAMS = ("claude", "gemini", "codex")
VERSION_TIMEOUT_S = 10.0  # a node CLI's first start can be slow; none waits for input
SHOWN = 3  # tasks, agents or skipped files named on one line before "and N more"

OK, INFO, WARNING, PROBLEM = "ok", "info", "warning", "problem"


class Finding(NamedTuple):
    """One line of the report; a `problem` is something a run needs and lacks."""

    status: str  # ok | info | warning | problem
    topic: str  # git, landlock, runner, agents, config, plans
    message: str


class Program(NamedTuple):
    """A program gsd starts, as found on PATH."""

    name: str
    path: str | None
    version: str | None
    error: str | None  # why no version was read (not installed, timed out, failed)


class Diagnosis(NamedTuple):
    project: Path | None  # None outside a project: machine checks only
    git: Program
    landlock_abi: int
    landlock_reason: str
    runners: dict[str, Program]
    findings: list[Finding]

    @property
    def exit_code(self) -> int:
        return 1 if any(f.status == PROBLEM for f in self.findings) else 0

    def to_dict(self) -> dict[str, object]:
        return {
            "project": str(self.project) if self.project else None,
            "exit_code": self.exit_code,
            "git": {**self.git._asdict(), "minimum": ".".join(map(str, MIN_GIT))},
            "landlock": {"abi": self.landlock_abi, "reason": self.landlock_reason or None},
            "runners": {name: p._asdict() for name, p in self.runners.items()},
            "findings": [f._asdict() for f in self.findings],
        }


def diagnose(start: Path, environ: Mapping[str, str] = os.environ) -> Diagnosis:
    """Every check: the machine's, then (inside a project) the project's."""
    from gsd.io.confine import sandbox

    with ThreadPoolExecutor(max_workers=1 + len(RUNNER_PROGRAMS)) as pool:
        asked = {n: pool.submit(program, n, environ) for n in ("git", *RUNNER_PROGRAMS)}
        found = {name: future.result() for name, future in asked.items()}
    git = found.pop("git")
    abi, reason = sandbox.landlock_abi(), sandbox.unavailable_reason()
    findings = [git_finding(git), landlock_finding(abi, reason)]
    project = find_project(start)
    findings += codex_findings(found["codex"], project, environ)
    if project is None:
        findings += [runner_finding(p, None) for p in found.values()]
        return Diagnosis(
            project=None,
            git=git,
            landlock_abi=abi,
            landlock_reason=reason,
            runners=found,
            findings=findings,
        )
    findings += project_findings(project, found, environ)
    return Diagnosis(
        project=project.root,
        git=git,
        landlock_abi=abi,
        landlock_reason=reason,
        runners=found,
        findings=findings,
    )


def codex_findings(
    codex: Program, project: Project | None, environ: Mapping[str, str]
) -> list[Finding]:
    """When codex is installed: one command run as a codex spawn would run it
    (gsd.commands.doctorcodex), under the project's sandbox setting."""
    if codex.path is None:
        return []
    from gsd.commands.doctorcodex import codex_sandbox_check

    try:
        enabled = project.sandbox().enabled if project is not None else True
    except GsdError:  # config.json unusable: config_findings says so
        enabled = True
    worked, said = codex_sandbox_check(codex.path, environ, enabled=enabled)
    return [Finding(OK if worked else WARNING, "sandbox", said)]


def find_project(start: Path) -> Project | None:
    """The project at or above `start` (one with `.planning/`), or None."""
    from gsd.core.layout import PLANNING
    from gsd.io.plans.project import Project, find_root

    try:
        root = find_root(start)
    except UsageError:
        return None
    return Project(root) if (root / PLANNING).is_dir() else None


def program(name: str, environ: Mapping[str, str]) -> Program:
    """`name` on PATH and what its `--version` prints (first line), run supervised with
    a short timeout: never through a shell, its whole process group ended after."""
    path = find_program(name, Path.cwd(), environ)
    if path is None:
        return Program(name, None, None, "not installed or not on PATH")
    with tempfile.TemporaryDirectory(prefix="gsd-doctor-") as tmp:
        out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
        done = proc.supervise(
            [path, "--version"],
            cwd=Path(tmp),
            stdout_path=out,
            stderr_path=err,
            timeout_s=VERSION_TIMEOUT_S,
            grace_s=2.0,
            env=dict(environ),
        )
        printed = _first_line(out) or _first_line(err)
    if done.error is not None:
        return Program(name, path, None, f"cannot be started: {done.error}")
    if done.timed_out:
        return Program(name, path, None, f"`--version` gave no answer in {VERSION_TIMEOUT_S:g} s")
    if done.exit_code != 0:
        said = f": {printed}" if printed else ""
        return Program(name, path, None, f"`--version` exited {done.exit_code}{said}")
    return Program(name, path, printed or "(printed nothing)", None)


def _first_line(path: Path) -> str:
    text = path.read_bytes()[:4096].decode("utf-8", "replace")
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line[:100]


def git_version(text: str) -> tuple[int, int] | None:
    """(2, 39) from `git version 2.39.5` (or `2.39.5.windows.1`); None if no version."""
    match = re.search(r"(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def git_finding(git: Program) -> Finding:
    need = ".".join(map(str, MIN_GIT))
    if git.version is None:
        return Finding(PROBLEM, "git", f"git: {git.error} (gsd needs git {need} or newer)")
    version = git_version(git.version)
    shown = git.version.removeprefix("git version ")
    if version is None or version < MIN_GIT:
        return Finding(
            PROBLEM, "git", f"git {shown} is too old: gsd needs {need} or newer (for `git restore`)"
        )
    return Finding(OK, "git", f"git {shown} (gsd needs {need} or newer)")


def landlock_finding(abi: int, reason: str) -> Finding:
    if abi:
        return Finding(OK, "landlock", f"Landlock ABI {abi}: each agent writes only its worktree")
    return Finding(
        WARNING,
        "landlock",
        f"no Landlock sandbox: {reason}; agents are held by gsd's git checks only",
    )


def runner_finding(found: Program, tasks: list[TaskDispatch] | None) -> Finding:
    """One runner program: its version, or why there is none; a problem when `tasks`
    (tasks of the project's plans that run on it; None outside a project) need it."""
    if found.version is not None:
        return Finding(OK, "runner", f"{found.name} {found.version} ({found.path})")
    if found.path is not None:  # there, but --version failed: a run may still work
        return Finding(WARNING, "runner", f"{found.name} ({found.path}): {found.error}")
    how = f"install: {INSTALL[found.name]}" if found.name in INSTALL else ""
    if not tasks:
        idle = "" if tasks is None else "; no task runs on it"
        return Finding(
            INFO, "runner", f"{found.name}: {found.error}{idle}" + (f" ({how})" if how else "")
        )
    return Finding(
        PROBLEM,
        "runner",
        f"{found.name}: {found.error}, and {_tasks(tasks)}" + (f" ({how})" if how else ""),
    )


def _tasks(tasks: list[TaskDispatch]) -> str:
    """`2 tasks run on it: 01-01 task 1 (python-pro), 01-02 task 1 (coder)`."""
    named = [f"{t.plan} task {t.task} ({t.agent})" for t in tasks[:SHOWN]]
    more = f" and {len(tasks) - SHOWN} more" if len(tasks) > SHOWN else ""
    count = "1 task runs" if len(tasks) == 1 else f"{len(tasks)} tasks run"
    return f"{count} on it: {', '.join(named)}{more}"


def _names(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


# --- the project ------------------------------------------------------------------------------


def project_findings(
    project: Project, found: dict[str, Program], environ: Mapping[str, str]
) -> list[Finding]:
    """Config, agent files, and the programs the plans' tasks (every phase) run."""
    findings = config_findings(project)
    try:
        dispatcher, warnings = project.dispatcher(environ=environ)
    except GsdError as exc:  # config.json unusable, no gsd-executor, ...
        if not any(f.message == str(exc) for f in findings):
            findings.append(Finding(PROBLEM, "config", str(exc)))
        # which tasks run on what is unknown: the programs alone
        return findings + [runner_finding(p, None) for p in found.values()]
    findings += warning_findings(warnings)
    tasks: list[TaskDispatch] = []
    for phase in project.phases():
        try:
            tasks += dispatcher.phase(project.phase_graph(phase))
        except GsdError as exc:  # a task's runner= the agent cannot take, a bad model
            findings.append(Finding(PROBLEM, "plans", f"phase {phase.name}: {exc}"))
    runs = [t for t in tasks if t.argv]  # a human checkpoint starts nothing
    by_program: dict[str, list[TaskDispatch]] = {}
    for task in runs:
        by_program.setdefault(task.argv[0], []).append(task)
    agents = dispatcher.agents
    named = [*by_program, *(agent_program(a) for a in agents.values())]
    where = program_paths(named, found, project.root, environ)
    findings += [runner_finding(p, by_program.get(name, [])) for name, p in found.items()]
    for name, needing in by_program.items():  # command agents' own programs
        if name in found:
            continue
        if where[name] is not None:
            findings.append(Finding(OK, "runner", f"`{name}` ({where[name]}): {_tasks(needing)}"))
        else:
            findings.append(
                Finding(
                    PROBLEM,
                    "runner",
                    f"`{name}`: not installed or not on "
                    f"PATH, and {_tasks(needing)} (check the agent's "
                    "`command:`)",
                )
            )
    used = {t.agent for t in runs}
    findings += idle_agent_findings(agents, used, where)
    findings += fallback_findings(project, agents, runs, where)
    return findings


def program_paths(
    names: list[str], found: Mapping[str, Program], root: Path, environ: Mapping[str, str]
) -> dict[str, str | None]:
    """Where each program is (None: missing), each looked up on PATH once: the runners'
    CLIs as `found` has them already."""
    where = {name: p.path for name, p in found.items()}
    for name in names:
        if name not in where:
            where[name] = find_program(name, root, environ)
    return where


def config_findings(project: Project) -> list[Finding]:
    """Each setting gsd reads, of the type it must have (a run refuses any other); a key
    of gsd's own sections it does not read (gsd.formats.configkeys); no config.json."""
    from gsd.core.layout import CONFIG_FILE
    from gsd.formats.configkeys import unread_in
    from gsd.formats.files import display_path
    from gsd.formats.settings import InvalidSettings

    try:
        project.config  # noqa: B018 (loading is the check)
    except InvalidSettings as exc:
        return [Finding(PROBLEM, "config", problem) for problem in exc.problems]
    except GsdError as exc:
        return [Finding(PROBLEM, "config", str(exc))]
    path = project.planning / CONFIG_FILE
    shown = display_path(path, project.root)
    if not path.is_file():
        missing = f"{shown}: missing, so every setting has its default (gsd init writes one)"
        return [Finding(WARNING, "config", missing), *worktrees_finding(project)]
    usable = Finding(OK, "config", f"{shown}: every setting gsd reads is usable")
    unread = [Finding(WARNING, "config", f"{shown}:{k.line}: {k.message}") for k in unread_in(path)]
    return [usable, *unread, *worktrees_finding(project)]


def worktrees_finding(project: Project) -> list[Finding]:
    """Where the plans' worktrees go (gsd.io.statedir), or why a run refuses it; nothing
    outside a repository."""
    from gsd.io.git.repo import Git

    try:
        git = Git(project.root)
    except GsdError:
        return []
    try:
        folder = project.worktrees_folder(git.root, git.common_dir, os.environ)
    except GsdError as exc:
        return [Finding(PROBLEM, "worktrees", str(exc))]
    return [Finding(OK, "worktrees", f"plan worktrees go in {folder}")]


def warning_findings(warnings: list[str]) -> list[Finding]:
    """`agent_paths` entries that are not folders, and the agent folders' own summary
    lines (one per folder with trouble, `gsd.io.plans.agentscan.Scan.warnings`)."""
    return [
        Finding(WARNING, "config" if w.startswith("config.json:") else "agents", w)
        for w in warnings
    ]


def idle_agent_findings(
    agents: Mapping[str, Agent], used: set[str], where: Mapping[str, str | None]
) -> list[Finding]:
    """Agents no task runs whose runner program is missing: one line per program."""
    idle: dict[str, list[str]] = {}
    for agent in agents.values():
        name = agent_program(agent)
        if agent.name not in used and where[name] is None:
            idle.setdefault(name, []).append(agent.name)
    return [
        Finding(
            INFO,
            "agents",
            f"{len(names)} agent{'s' if len(names) != 1 else ''} no task "
            f"runs need{'s' if len(names) == 1 else ''} `{program}`, which is "
            f"missing: {_names(sorted(names))}",
        )
        for program, names in idle.items()
    ]


def fallback_findings(
    project: Project,
    agents: Mapping[str, Agent],
    runs: list[TaskDispatch],
    where: Mapping[str, str | None],
) -> list[Finding]:
    """gsd-executor takes over a failed task (`voltagent.fallback_on_error`): a run
    checks its runner before it starts, as it checks the tasks' own, and refuses to
    start while it is missing."""
    from gsd.core.specialists import EXECUTOR

    executor = agents.get(EXECUTOR)
    if executor is None or not runs or not project.config.voltagent.fallback_on_error:
        return []
    # runner= carries over to it; gsd-executor's own tasks have nothing to hand over
    own = [t for t in runs if t.runner_source != "plan" and t.agent != EXECUTOR]
    name = agent_program(executor)
    if not own or where[name] is not None:
        return []
    return [
        Finding(
            PROBLEM,
            "agents",
            f"{EXECUTOR}, which takes over a failed task, runs `{name}`, which is missing: "
            "a run refuses to start until it is installed or `voltagent.fallback_on_error` "
            "is false in .planning/config.json",
        )
    ]


def agent_program(agent: Agent) -> str:
    """The program an agent's runs start: its runner's CLI, or its `command`'s first word."""
    return agent.command[0] if agent.runner == "command" and agent.command else agent.runner
