"""A phase run's context, one record per concern, each built once at the start.

What the command line asked (`RunOptions`), what the run read (`RunInputs`), what the
settings and the options decide (`RunPolicy`), the repository it works in (`RunRepo`)
and what it does besides running agents (`RunEffects`). `gsd.run.phaserun.PhaseRun`
composes them, with what the run gathers as it goes.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from gsd.core.graph import PhaseGraph
from gsd.core.verdict.outcomes import Step
from gsd.formats import prompt
from gsd.formats.settings import Settings
from gsd.io.confine.sandbox import Settings as SandboxSettings
from gsd.io.dispatch import Dispatcher
from gsd.io.git.commits import Commits
from gsd.io.git.repo import Git
from gsd.io.git.worktree import Worktrees
from gsd.io.live import Console
from gsd.io.plans.phases import Phase
from gsd.io.plans.project import Project
from gsd.io.process.signals import Interruption
from gsd.run import bookkeeping
from gsd.run.journal import Journal


class RunOptions(NamedTuple):
    """What the command line asked of the run (`execute-phase`, `execute-plan`)."""

    timeout: float | None = None
    allow_dirty: bool = False
    auto: bool = False
    only_plan: str | None = None  # `gsd execute-plan ID`: this plan alone
    max_parallel: int | None = None  # `--max-parallel K`; 1 runs everything in place
    only_wave: int | None = None  # `--wave W`: this wave alone
    budget_usd: float | None = None  # `--budget-usd N`: the whole run's (gsd.run.runbudget)
    budget_tokens: int | None = None  # `--budget-tokens N`


@dataclass(frozen=True)
class RunInputs:
    """What the run read once, at the start: the project (and its settings), the phase
    and its plans in waves, the agents and how each task is dispatched to one, the
    prompt templates, the sandbox settings and the environment agents start from."""

    project: Project
    phase: Phase
    graph: PhaseGraph
    dispatcher: Dispatcher
    templates: prompt.Templates
    sandbox: SandboxSettings
    environ: Mapping[str, str]

    @property
    def waves(self) -> int:
        """How many waves the phase has (`wave 2/3`)."""
        return len(self.graph.waves)


@dataclass(frozen=True)
class RunPolicy:
    """What config.json's settings and the command line decide for the whole run."""

    auto: bool  # human checkpoints approved: `--auto`, or mode yolo (SPEC 7 step 6)
    # with `git.commit_docs` false, gsd's own edits stay uncommitted in .planning/:
    # checkpoints snapshot them (as --allow-dirty does) so a rollback keeps them
    commit_docs: bool
    allow_dirty: bool
    in_place: bool  # plans run in the user's checkout (`workflow.use_worktrees: false`)
    parallel: int  # how many plans of a wave run at once, each in its worktree
    scope: str  # `specialists.scope`: warn or fail on files outside a task's list
    large_file_mb: float
    must_haves: str  # warn or fail
    outside_references: str  # skip or check
    # each attempt after a task's first, in order (config `retry.steps`, or the ladder of
    # `specialists.max_retries` and `voltagent.fallback_on_error`):
    # gsd.core.verdict.outcomes.next_step
    ladder: tuple[Step, ...] = ()
    # `salvage.accept_timeout_when_verified`: a timed-out attempt whose checks pass is a
    # soft success (gsd.run.taskassess)
    accept_timeout: bool = False

    @classmethod
    def decide(cls, settings: Settings, options: RunOptions) -> RunPolicy:
        commit_docs = settings.git.commit_docs
        return cls(
            auto=options.auto or settings.mode == "yolo",
            commit_docs=commit_docs,
            allow_dirty=options.allow_dirty or not commit_docs,
            in_place=not settings.workflow.use_worktrees,
            parallel=_max_parallel(settings, options),
            scope=settings.specialists.scope,
            large_file_mb=settings.specialists.large_file_mb,
            must_haves=settings.verification.must_haves,
            outside_references=settings.verification.outside_references,
            ladder=settings.retry.ladder(
                settings.specialists.max_retries, settings.voltagent.fallback_on_error
            ),
            accept_timeout=settings.salvage.accept_timeout_when_verified,
        )


def _max_parallel(settings: Settings, options: RunOptions) -> int:
    """How many plans of a wave may run at once, each in its worktree (SPEC 7 step 4)."""
    parallelization = settings.parallelization
    if not parallelization.enabled:
        return 1
    if options.max_parallel is not None:
        return max(1, options.max_parallel)
    return parallelization.max_concurrent_agents


@dataclass(frozen=True)
class RunRepo:
    """The repository the run works in: its git handle (pinned to the branch HEAD is
    on: merges and docs commits go there, or the run stops), the plans' worktrees, and
    the tasks its checkout had committed when the run started."""

    git: Git
    worktrees: Worktrees
    committed: Mapping[str, str]  # `Gsd-Task` trailer -> commit

    @classmethod
    def open(cls, git: Git, worktrees: Worktrees) -> RunRepo:
        git.pin_branch()
        return cls(git=git, worktrees=worktrees, committed=Commits(git).committed_tasks())


@dataclass(frozen=True)
class RunEffects:
    """What the run does besides running agents: its live output, its log lines (the
    journal), gsd's own files and the commits that carry them (the books), and the
    signals that stop it."""

    console: Console
    journal: Journal
    books: bookkeeping.Books
    stop: Interruption

    def say(self, line: str) -> None:
        """One progress line."""
        self.console.say(line)

    @property
    def cancel(self) -> threading.Event:
        """Set on SIGINT, SIGTERM, SIGHUP: every agent is ended."""
        return self.stop.event
