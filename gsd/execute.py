"""`gsd execute-phase N`: SPEC section 7's steps, in order, over the modules below them.

This version runs plans one after another in the repository itself (what SPEC 7 step 4
calls `use_worktrees: false` / `--max-parallel 1`); parallel waves in worktrees are not
built yet, and a run says so when a wave has several plans.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from gsd import execlog, prompt, roadmap, state, summary
from gsd.agents import EXECUTOR
from gsd.dispatch import Dispatcher
from gsd.errors import EXIT_FINDINGS, EXIT_OK, EXIT_PAUSED, GsdError
from gsd.git import Git
from gsd.lock import RunLock
from gsd.models import Plan, Task
from gsd.phases import Phase
from gsd.project import Project
from gsd.taskrun import TaskOutcome, run_task
from gsd.validate import validate

TRANSIENT = frozenset({"timeout", "timeout-kill"})  # retried (SPEC 7 step 5)

# Logs written during a run go to a journal inside .git first and reach .planning/ just
# before each docs commit: the tracked tree stays clean between tasks (so checkpoints
# see only the agent's work) and a rollback can never take log lines back.
JOURNALED = (".planning/execution-log.jsonl", ".planning/specialist-errors.jsonl")
APPROVALS = ".planning/approvals.jsonl"  # `gsd approve` answers to human checkpoints


class Journal:
    """The run's log lines, kept in .git/gsd/journal until the next docs commit."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.folder = git.git_dir / "gsd" / "journal"

    def path(self, target: str) -> Path:
        return self.folder / Path(target).name

    def event(self, kind: str, **fields: object) -> None:
        execlog.append(self.path(JOURNALED[0]), execlog.event(kind, **fields))

    def discard(self) -> None:
        for target in JOURNALED:
            self.path(target).unlink(missing_ok=True)

    def flush(self) -> list[str]:
        """Append what the journal holds to the files in .planning/; return them."""
        flushed = []
        for target in JOURNALED:
            source = self.path(target)
            if source.exists() and source.stat().st_size:
                data = source.read_bytes()
                if not data.endswith(b"\n"):
                    data = data[: data.rfind(b"\n") + 1]  # a torn line from a crash
                with open(self.git.root / target, "ab") as out:
                    out.write(data)
                flushed.append(target)
            source.unlink(missing_ok=True)
        return flushed


class RunOptions(NamedTuple):
    timeout: float | None = None
    allow_dirty: bool = False
    auto: bool = False
    only_plan: str | None = None  # `gsd execute-plan ID`: this plan alone


class RunResult(NamedTuple):
    exit_code: int
    outcomes: list[TaskOutcome]
    message: str


def say(line: str) -> None:
    """Progress a person can follow in a terminal and in CI logs."""
    sys.stderr.write(f"[gsd] {line}\n")
    sys.stderr.flush()


def execute_phase(
    project: Project, phase: Phase, options: RunOptions, environ: Mapping[str, str] = os.environ
) -> RunResult:
    git = Git(project.root)
    registry = git.git_dir / "gsd" / "running"
    # 1. one live run per project; a dead run's lock and processes are taken over
    with RunLock(project.planning, registry):
        # a run killed during a spawn left a checkpoint open: put the tree back first
        for tag in git.recover():
            say(f"rolled back {tag}, left open by an interrupted run")
        # 2. config, roster, plans; refuse to run on validation errors
        folder = phase.path.relative_to(project.root).as_posix()
        report = validate(project, [folder])
        if report.errors:
            raise GsdError(
                f"{folder} has {report.errors} validation error(s); nothing was run",
                hint=f"see `gsd validate --phase {phase.number}`",
            )
        graph = project.phase_graph(phase)
        if options.only_plan is not None:
            _check_plan_ready(phase, graph.plans, options.only_plan)
        run = _Run(project, git, phase, options, environ, len(graph.waves))
        _commit_docs(project, git, run.journal, "docs: log of an interrupted gsd run")
        run.journal.event("run-start", phase=phase.name)
        for wave_number, wave in enumerate(graph.waves, 1):
            # 4. waves in order (plans one after another, in place)
            if len(wave) > 1:
                say(f"phase {phase.number} wave {wave_number}/{len(graph.waves)}: "
                    f"{len(wave)} plans run one after another in place")  # fmt: skip
            for plan_id in wave:
                if options.only_plan is not None and plan_id != options.only_plan:
                    continue
                # 3. what is already done: plans with a SUMMARY (tasks: in run.plan)
                if summary.exists(phase.path, plan_id):
                    say(f"plan {plan_id}: done (SUMMARY.md exists), skipped")
                    continue
                stopped = run.plan(graph.plans[plan_id], wave_number)
                if stopped is not None:
                    run.journal.event("run-end", status="stopped")
                    _commit_docs(project, git, run.journal, f"docs({plan_id}): run stopped")
                    return RunResult(stopped[0], run.outcomes, stopped[1])
        if not run.outcomes:  # everything was done already: nothing to record
            run.journal.discard()
            return RunResult(EXIT_OK, run.outcomes, f"phase {phase.name}: already complete")
        run.journal.event("run-end", status="complete")
        _commit_docs(project, git, run.journal, f"docs({phase.number}): phase run complete")
        return RunResult(EXIT_OK, run.outcomes, f"phase {phase.name} complete")


class _Run:
    """What every plan and task of one run shares (read once, at the start)."""

    def __init__(
        self,
        project: Project,
        git: Git,
        phase: Phase,
        options: RunOptions,
        environ: Mapping[str, str],
        waves: int,
    ) -> None:
        self.project, self.git, self.phase, self.options = project, git, phase, options
        self.environ, self.waves = environ, waves
        agents, warnings = project.agents()
        for warning in warnings:
            say(f"warning: {warning}")
        self.agents = agents
        self.dispatcher = Dispatcher(project.root, agents, project.roster, project.config,
                                     cli_timeout=options.timeout, environ=environ)  # fmt: skip
        self.templates = prompt.Templates.load(project.root)
        self.journal = Journal(git)
        self.committed = git.committed_tasks()  # Gsd-Task trailer -> commit
        scope = project.config.get("specialists.scope")
        if scope not in ("warn", "fail"):
            raise GsdError(f"config.json: `specialists.scope` is {scope!r}; use warn or fail")
        self.scope = str(scope)
        self.retries = int(project.config.number("specialists.max_retries"))
        self.fallback = project.config.flag("voltagent.fallback_on_error")
        self.outcomes: list[TaskOutcome] = []

    def plan(self, plan: Plan, wave: int) -> tuple[int, str] | None:
        """Tasks of one plan in order (SPEC 7 step 5); None when the plan completed."""
        project, phase = self.project, self.phase
        started = datetime.now(timezone.utc)
        plan_text = (project.root / plan.path).read_text(encoding="utf-8")
        summaries = _summaries(project, plan)
        earlier: list[tuple[int, str | None]] = []
        attempts: list[TaskOutcome] = []  # every attempt, failed ones too (SUMMARY issues)
        for task in plan.tasks:
            label = (
                f"phase {phase.number} wave {wave}/{self.waves} plan {plan.id} task {task.index}"
            )
            if f"{plan.id}-{task.index}" in self.committed:
                say(f"{label}: already committed, skipped")
                earlier.append((task.index, None))
                continue
            if task.is_checkpoint:
                # 6. a human checkpoint pauses the run until `gsd approve` answers it
                answer = _answer(project, plan, task, self.options)
                if answer is None:
                    message = (
                        f"{label}: {task.type} waits for a person: {_what_to_check(task)} "
                        f"(then `gsd approve {plan.id}`)"
                    )
                    _block(project, plan, "checkpoint-paused", message)
                    self.journal.event("checkpoint-paused", plan=plan.id, task=task.index)
                    say(message)
                    return EXIT_PAUSED, message
                say(f"{label}: {task.type} approved ({answer})")
                earlier.append((task.index, f"- Human checkpoint answered: {answer}"))
                continue
            context = prompt.PromptContext(
                earlier=list(earlier), summaries=summaries, repo=str(self.git.root),
                plan_text=plan_text,
            )  # fmt: skip
            outcome = self.attempts(wave, plan, task, context, label, attempts)
            self.outcomes.append(outcome)
            if not outcome.success:
                # 8. error line (written by taskrun), a Blockers line, exit 1
                message = f"{label}: {outcome.error_type}: {outcome.details}"
                _block(project, plan, outcome.error_type or "unknown", outcome.details)
                return EXIT_FINDINGS, message
            earlier.append((task.index, _downstream(outcome)))
        # 7. the plan is complete: SUMMARY.md, STATE.md, ROADMAP.md, a docs commit
        text = summary.render(
            phase_dir=phase.name, plan_id=plan.id, plan_frontmatter=plan.frontmatter,
            outcomes=attempts, task_names={t.index: t.name for t in plan.tasks},
            started=started, finished=datetime.now(timezone.utc),
        )  # fmt: skip
        summary.write(phase.path / f"{plan.id}-SUMMARY.md", text)
        _update_state(project, phase, plan)
        self.journal.event("plan-complete", plan=plan.id)
        _commit_docs(project, self.git, self.journal, f"docs({plan.id}): complete plan")
        say(f"plan {plan.id}: complete")
        return None

    def attempts(
        self,
        wave: int,
        plan: Plan,
        task: Task,
        context: prompt.PromptContext,
        label: str,
        tried: list[TaskOutcome],
    ) -> TaskOutcome:
        """The retry ladder: transient failures retried up to `specialists.max_retries`,
        then one fallback to gsd-executor when `voltagent.fallback_on_error`; validation
        failures and policy violations are final."""
        journal = self.journal
        dispatch = self.dispatcher.task(wave, plan, task)
        retries = self.retries
        attempt = 0
        while True:
            attempt += 1
            agent = self.agents[dispatch.agent]
            text = prompt.build_prompt(agent, plan, task, context, self.templates)
            say(f"{label}: {agent.name} (attempt {attempt}, timeout {dispatch.timeout_s:g} s)")
            journal.event("spawn", plan=plan.id, task=task.index, agent=agent.name,
                          attempt=attempt)  # fmt: skip
            outcome = run_task(
                git=self.git, plan=plan, task=task, agent=agent, dispatch=dispatch,
                prompt=text, attempt=attempt, allow_dirty=self.options.allow_dirty,
                scope=self.scope, environ=self.environ, error_log=journal.path(JOURNALED[1]),
            )  # fmt: skip
            tried.append(outcome)
            journal.event(
                "result", plan=plan.id, task=task.index, agent=agent.name, attempt=attempt,
                success=outcome.success, soft_success=outcome.soft_success,
                error_type=outcome.error_type, duration_s=outcome.duration_s,
                input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens,
                cost_usd=outcome.cost_usd,
            )  # fmt: skip
            if outcome.success:
                journal.event("commit", plan=plan.id, task=task.index, commit=outcome.commit)
                commit = outcome.commit
                say(f"{label}: " + (f"committed {commit[:7]}" if commit else
                                    "done, nothing to commit"))  # fmt: skip
                return outcome
            say(f"{label}: {outcome.error_type}: {outcome.details}")
            if outcome.error_type in TRANSIENT and attempt <= retries:
                journal.event("retry", plan=plan.id, task=task.index)
                continue
            final = outcome.error_type in ("validation-failed", "policy-violation")
            if self.fallback and not final and agent.name != EXECUTOR and EXECUTOR in self.agents:
                journal.event("fallback", plan=plan.id, task=task.index, agent=EXECUTOR)
                dispatch = self.dispatcher.task(
                    wave, plan, task, fallback=f"{agent.name} failed: {outcome.error_type}"
                )
                retries = attempt  # the fallback gets exactly one attempt
                continue
            return outcome


def auto_approves(project: Project, options: RunOptions) -> bool:
    return options.auto or project.config.get("mode") == "yolo"


def _answer(project: Project, plan: Plan, task: Task, options: RunOptions) -> str | None:
    """How a human checkpoint was answered, or None: it still waits (SPEC 7 step 6).

    `--auto` or `"mode": "yolo"` approve a human-verify and take a decision's first
    option; a human-action and `gate="blocking-human"` always wait for a person.
    """
    for record in read_approvals(project):
        if record.get("plan") == plan.id and record.get("task") in (None, task.index):
            option = record.get("option")
            return f"approved{f', option {option}' if option else ''} by gsd approve"
    always = task.type == "checkpoint:human-action" or task.attrs.get("gate") == "blocking-human"
    if always or not auto_approves(project, options):
        return None
    if task.type == "checkpoint:decision":
        options_element = task.child("options")
        choices = (
            [c for c in options_element.children if c.tag == "option"] if options_element else []
        )
        first = choices[0].attrs.get("id", "?") if choices else "?"
        return f"auto: first option {first}"
    return "auto"


def read_approvals(project: Project) -> list[dict[str, object]]:
    """The answers `gsd approve` appended (a torn or broken line is skipped)."""
    from gsd.files import jsonl_objects, read_lines_file

    text = read_lines_file(project.root / APPROVALS, "approvals") or ""
    return list(jsonl_objects(text, APPROVALS)[0])


def _what_to_check(task: Task) -> str:
    text = (
        task.child_text("how-to-verify")
        or task.child_text("decision")
        or task.child_text("instructions")
        or task.name
    )
    return " ".join(text.split())[:200]


def _check_plan_ready(phase: Phase, plans: Mapping[str, Plan], plan_id: str) -> None:
    """`execute-plan` runs one plan: it must exist and its dependencies must be done."""
    if plan_id not in plans:
        known = ", ".join(plans) or "none"
        raise GsdError(f"no plan {plan_id} in {phase.name} (plans: {known})")
    waiting = [d for d in plans[plan_id].depends_on
               if d in plans and not summary.exists(phase.path, d)]  # fmt: skip
    if waiting:
        raise GsdError(
            f"plan {plan_id} depends on {', '.join(waiting)}, not done yet",
            hint=f"run those first, or `gsd execute-phase {phase.number}`",
        )


def _downstream(outcome: TaskOutcome) -> str | None:
    report = outcome.report
    if report is None:
        return None
    parts = [
        f"- Key Interfaces Introduced: {report.key_interfaces or 'none'}",
        f"- Patterns Established: {report.patterns or 'none'}",
        f"- Warnings: {report.warnings or 'none'}",
    ]
    return "\n".join(parts)


def _summaries(project: Project, plan: Plan) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    for dep in plan.depends_on:
        matches = sorted(project.planning.rglob(f"{dep}-SUMMARY.md"))
        found.append((dep, matches[0].read_text(encoding="utf-8") if matches else None))
    return found


def _block(project: Project, plan: Plan, kind: str, details: str) -> None:
    """A `- [plan] error_type: ...` line under STATE.md's Blockers (the file is created
    when the project has none: it is where a person looks first)."""
    path = project.planning / "STATE.md"
    text = state.load(path) if path.exists() else "# Project State\n"
    state.save(path, state.add_blocker(text, f"- [{plan.id}] {kind}: {_one_line(details)}"))


def _update_state(project: Project, phase: Phase, plan: Plan) -> None:
    """STATE.md's Current Position and ROADMAP.md's checkbox and progress row (SPEC 7)."""
    plans = project.phase_plans(phase)
    total = len(plans)
    done = sum(summary.exists(phase.path, p.id) for p in plans)
    complete = done >= total
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    path = project.planning / "STATE.md"
    if path.exists():
        text = state.remove_blockers(state.load(path), plan.id)
        text = state.set_position(
            text,
            plan=f"{done} of {total} in current phase",
            status="Phase complete" if complete else "In progress",
            last_activity=f"{today} - Completed {plan.id}-PLAN.md",
            progress=done / total if total else 1.0,
        )
        state.save(path, text)
    road = project.planning / "ROADMAP.md"
    if road.exists():
        text = roadmap.check_plan(roadmap.load(road), plan.id, True)
        status = "Complete" if complete else "In Progress"
        text = roadmap.set_progress(text, phase.number, done, total, status,
                                    today if complete else None)  # fmt: skip
        roadmap.save(road, text)


def _commit_docs(project: Project, git: Git, journal: Journal, message: str) -> None:
    """gsd's own bookkeeping, committed when `git.commit_docs` is true (SPEC 7 step 9)."""
    journal.flush()
    if not project.config.flag("git.commit_docs"):
        return
    paths = [p for p in git.dirty_paths() + sorted(git.untracked_files())
             if p.startswith(".planning/") and not p.endswith(".gsd.lock")]  # fmt: skip
    if paths:
        git.commit_docs(message, paths)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
