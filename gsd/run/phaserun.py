"""One phase run: its context by concern (`gsd.run.context`), what it gathers (the
outcomes, how each plan ended), and how each of its plans ended (`PlanEnd`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from gsd.core.errors import Interrupted
from gsd.core.ids import task_key
from gsd.core.models import Plan
from gsd.core.safety.budget import RunBudget
from gsd.core.verdict.outcomes import TaskOutcome
from gsd.io.dispatch import TaskDispatch
from gsd.io.git.commits import Commits
from gsd.io.live import Console
from gsd.io.plans import summaries
from gsd.io.process.signals import Interruption
from gsd.run import bookkeeping, runbudget
from gsd.run.context import RunEffects, RunInputs, RunOptions, RunPolicy, RunRepo
from gsd.run.journal import Journal, side_log
from gsd.run.runbudget import RunSpend


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


@dataclass
class PhaseRun:
    """One phase run: what it was asked, read, decided, where it works and what it does
    besides running agents (each read once, at the start: `gsd.run.context`), and what
    it gathers as it goes: every attempt's outcome, how each plan ended."""

    options: RunOptions
    read: RunInputs
    policy: RunPolicy
    repo: RunRepo
    effects: RunEffects
    outcomes: list[TaskOutcome] = field(default_factory=list)
    ended: dict[str, str] = field(default_factory=dict)  # plan id -> complete, failed: ...
    spend: RunSpend = field(default_factory=lambda: RunSpend(RunBudget()))  # against its budget

    @classmethod
    def start(
        cls,
        options: RunOptions,
        read: RunInputs,
        repo: RunRepo,
        console: Console,
        stop: Interruption,
    ) -> PhaseRun:
        """The run's policy decided, its journal and books opened."""
        policy = RunPolicy.decide(read.project.config, options)
        journal = _journal(read, repo, policy, options.only_plan)
        books = bookkeeping.Books(
            read.project, repo.git, journal, lambda line: console.say(f"warning: {line}")
        )
        # a CI job's `execute-plan` on the plan's own branch: STATE.md and ROADMAP.md are
        # derived on the branch it is merged into, never on this one (they would conflict)
        books.on_plan_branch = any(repo.worktrees.on_checkout(p) for p in read.graph.plans)
        effects = RunEffects(console=console, journal=journal, books=books, stop=stop)
        budget = runbudget.decide(read.project.config, options.budget_usd, options.budget_tokens)
        return cls(
            options=options,
            read=read,
            policy=policy,
            repo=repo,
            effects=effects,
            spend=RunSpend(budget),
        )

    # -- what runs ---------------------------------------------------------------------

    def pending(self, wave: list[str]) -> list[str]:
        """The plans of a wave this run was asked for (`--plan` picks one)."""
        only = self.options.only_plan
        return [plan_id for plan_id in wave if only is None or plan_id == only]

    def to_spawn(self) -> list[TaskDispatch]:
        """Every task this run may start an agent for (not done, not committed)."""
        # the plans' branches too: a task an unmerged plan branch committed is not run again
        committed = Commits(self.repo.git).committed_tasks(plan_branches=True)
        found = []
        for number, wave in enumerate(self.read.graph.waves, 1):
            if self.options.only_wave not in (None, number):
                continue
            for plan_id in self.pending(wave):
                if summaries.exists(self.read.phase.path, plan_id):
                    continue
                plan = self.read.graph.plans[plan_id]
                found += [
                    self.read.dispatcher.task(number, plan, task)
                    for task in plan.tasks
                    if task_key(plan_id, task.index) not in committed
                ]
        return found

    def interrupted(self, where: str) -> None:
        """A signal stopped the run: every attempt is rolled back by now. Say where it
        stopped in STATE.md, commit the logs, and stop (exit 128 + the signal)."""
        effects = self.effects
        name = Interrupted(effects.stop.signum or 2).name
        effects.journal.event("run-end", status="interrupted", signal=name)
        with effects.books.looking():
            effects.books.derive()  # Session Continuity: where it stopped, what resumes it
            effects.books.commit(f"docs({self.read.phase.number}): run interrupted")
        effects.stop.check(where)

    def sorted_outcomes(self) -> list[TaskOutcome]:
        """Outcomes in plan and task order (the threads of a wave finish in any order)."""
        order = {pid: i for i, pid in enumerate(self.read.graph.plans)}
        return sorted(self.outcomes, key=lambda o: (order.get(o.plan, 0), o.task, o.attempt))


def _journal(read: RunInputs, repo: RunRepo, policy: RunPolicy, only_plan: str | None) -> Journal:
    """The run's log lines: on the user's branch the phase's log, on a plan's own branch
    (`only_plan` run there) the plan's (`gsd.run.journal.side_log`)."""
    project = read.project
    planning_rel = project.planning.relative_to(project.root).as_posix()
    side = side_log(planning_rel, read.phase.number, repo.worktrees.here, only_plan)
    return Journal(repo.git, side, in_place=policy.in_place, planning_rel=planning_rel)
