"""One phase run's shared state, and how each of its plans ended.

What every wave, plan and task of the run reads (once, at the start) and what it
gathers (the outcomes, how each plan ended).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from gsd.core.errors import Interrupted
from gsd.core.graph import PhaseGraph
from gsd.core.ids import task_key
from gsd.core.models import Plan
from gsd.core.outcomes import TaskOutcome
from gsd.formats import prompt
from gsd.io import summaries
from gsd.io.commits import Commits
from gsd.io.dispatch import TaskDispatch
from gsd.io.git import Git
from gsd.io.live import Console
from gsd.io.phases import Phase
from gsd.io.project import Project
from gsd.io.signals import Interruption
from gsd.io.worktree import Worktrees
from gsd.run import bookkeeping

if TYPE_CHECKING:
    from gsd.run.execute import RunOptions


class PlanEnd(NamedTuple):
    """How one plan's run ended: complete, failed or paused (at a human checkpoint)."""

    plan: Plan
    status: str
    message: str = ""  # the progress line that says what happened
    error_type: str | None = None
    details: str = ""
    attempts: tuple[TaskOutcome, ...] = ()  # every attempt, failed ones too (SUMMARY issues)
    started: datetime | None = None
    finished: datetime | None = None
    summary: str = ""  # the SUMMARY.md of a complete plan run in a worktree


class PhaseRun:
    """What every plan and task of one run shares (read once, at the start)."""

    def __init__(
        self,
        project: Project,
        git: Git,
        phase: Phase,
        graph: PhaseGraph,
        options: RunOptions,
        environ: Mapping[str, str],
        console: Console,
        worktrees: Worktrees,
        stop: Interruption,
    ) -> None:
        self.project, self.git, self.phase, self.graph = project, git, phase, graph
        git.pin_branch()  # merges and docs commits go to this branch, or the run stops
        self.options, self.environ, self.console = options, environ, console
        self.worktrees = worktrees
        self.say = console.say
        self.waves = len(graph.waves)
        self.dispatcher, warnings = project.dispatcher(cli_timeout=options.timeout, environ=environ)
        for warning in warnings:
            self.say(f"warning: {warning}")
        self.agents = self.dispatcher.agents
        self.templates = prompt.Templates.load(project.root)
        planning_rel = project.planning.relative_to(project.root).as_posix()
        side = bookkeeping.side_log(planning_rel, phase.number, worktrees.here, options.only_plan)
        in_place = not project.config.workflow.use_worktrees
        self.journal = bookkeeping.Journal(git, side, in_place=in_place, planning_rel=planning_rel)
        self.books = bookkeeping.Books(
            project, git, self.journal, lambda line: self.say(f"warning: {line}")
        )
        # a CI job's `execute-plan` on the plan's own branch: STATE.md and ROADMAP.md are
        # derived on the branch it is merged into, never on this one (they would conflict)
        self.books.on_plan_branch = any(worktrees.on_checkout(p) for p in graph.plans)
        self.committed = Commits(git).committed_tasks()  # Gsd-Task trailer -> commit
        settings = project.config
        self.scope = settings.specialists.scope
        self.retries = settings.specialists.max_retries
        self.fallback = settings.voltagent.fallback_on_error
        self.auto = options.auto or settings.mode == "yolo"  # SPEC 7 step 6
        # with `git.commit_docs` false, gsd's own edits stay uncommitted in .planning/:
        # checkpoints snapshot them (as --allow-dirty does) so a rollback keeps them
        self.commit_docs = settings.git.commit_docs
        self.must_haves = settings.verification.must_haves  # warn or fail
        self.outside_references = settings.verification.outside_references  # skip or check
        self.allow_dirty = options.allow_dirty or not self.commit_docs
        self.in_place = not settings.workflow.use_worktrees  # the opt-in
        self.parallel = _max_parallel(project, options)
        self.sandbox = project.sandbox()
        self.stop = stop
        self.cancel = stop.event  # set on SIGINT, SIGTERM, SIGHUP: every agent is ended
        self.outcomes: list[TaskOutcome] = []
        self.ended: dict[str, str] = {}  # plan id -> complete, failed: TYPE, paused, ...

    # -- what runs ---------------------------------------------------------------------

    def pending(self, wave: list[str]) -> list[str]:
        """The plans of a wave this run was asked for (`--plan` picks one)."""
        only = self.options.only_plan
        return [plan_id for plan_id in wave if only is None or plan_id == only]

    def to_spawn(self) -> list[TaskDispatch]:
        """Every task this run may start an agent for (not done, not committed)."""
        committed = Commits(self.git).committed_tasks(plan_branches=True)
        found = []
        for number, wave in enumerate(self.graph.waves, 1):
            if self.options.only_wave not in (None, number):
                continue
            for plan_id in self.pending(wave):
                if summaries.exists(self.phase.path, plan_id):
                    continue
                plan = self.graph.plans[plan_id]
                found += [
                    self.dispatcher.task(number, plan, task)
                    for task in plan.tasks
                    if task_key(plan_id, task.index) not in committed
                ]
        return found

    def interrupted(self, where: str) -> None:
        """A signal stopped the run: every attempt is rolled back by now. Say where it
        stopped in STATE.md, commit the logs, and stop (exit 128 + the signal)."""
        name = Interrupted(self.stop.signum or 2).name
        self.journal.event("run-end", status="interrupted", signal=name)
        self.books.derive()  # Session Continuity: where it stopped, what resumes it
        self.books.commit(f"docs({self.phase.number}): run interrupted")
        self.stop.check(where)

    def sorted_outcomes(self) -> list[TaskOutcome]:
        """Outcomes in plan and task order (the threads of a wave finish in any order)."""
        order = {pid: i for i, pid in enumerate(self.graph.plans)}
        return sorted(self.outcomes, key=lambda o: (order.get(o.plan, 0), o.task, o.attempt))


def _max_parallel(project: Project, options: RunOptions) -> int:
    """How many plans of a wave may run at once, each in its worktree (SPEC 7 step 4)."""
    parallelization = project.config.parallelization
    if not parallelization.enabled:
        return 1
    if options.max_parallel is not None:
        return max(1, options.max_parallel)
    return parallelization.max_concurrent_agents
