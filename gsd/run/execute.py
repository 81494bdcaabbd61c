"""`gsd execute-phase N`: SPEC section 7's steps, in order, over the modules below them.

Plans of a wave run side by side in their own worktrees (worktree.py), one thread each
(the threads only wait on agents; git and the files are written by one thread at a time
or in a plan's own worktree); the merges and STATE.md are the main thread's alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from gsd.core.errors import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_PAUSED,
    GsdError,
    InputError,
    Interrupted,
    logged,
)
from gsd.core.graph import PhaseGraph
from gsd.core.models import Plan, Task
from gsd.core.validate import validate
from gsd.core.words import plural
from gsd.formats import attempts, prompt, summary, summaryread
from gsd.formats.agents import EXECUTOR, Agent
from gsd.io import approvals, sandbox
from gsd.io.dispatch import TaskDispatch
from gsd.io.git import Git, MergeRefused
from gsd.io.live import Console
from gsd.io.lock import RunLock
from gsd.io.phases import Phase
from gsd.io.project import Project
from gsd.io.signals import Interruption
from gsd.io.worktree import Worktrees, branch_of
from gsd.output import render
from gsd.run import bookkeeping, preflight
from gsd.run.taskrun import TaskOutcome, run_task, running_registry

# retried (SPEC 7 step 5), as are failures the runner blamed on a rate limit
TRANSIENT = frozenset({"timeout", "timeout-kill"})


class RunOptions(NamedTuple):
    timeout: float | None = None
    allow_dirty: bool = False
    auto: bool = False
    only_plan: str | None = None  # `gsd execute-plan ID`: this plan alone
    max_parallel: int | None = None  # `--max-parallel K`; 1 runs everything in place
    only_wave: int | None = None  # `--wave W`: this wave alone


class RunResult(NamedTuple):
    exit_code: int
    outcomes: list[TaskOutcome]
    message: str
    plans: dict[str, str] | None = None  # plan id -> how it ended in this run, in order


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


def execute_phase(
    project: Project,
    phase: Phase,
    options: RunOptions,
    environ: Mapping[str, str] = os.environ,
    console: Console | None = None,
) -> RunResult:
    git = Git(project.root)
    console = console or Console()
    try:
        # 1. one live run per repository (every worktree of it); a dead run's lock and
        # processes are taken over. SIGINT, SIGTERM and SIGHUP from here on end the
        # agents, roll back, then stop.
        with Interruption() as stop, RunLock(git.common_dir, running_registry(git)):
            return _execute(project, git, phase, options, environ, console, stop)
    finally:
        console.close()


def _execute(
    project: Project,
    git: Git,
    phase: Phase,
    options: RunOptions,
    environ: Mapping[str, str],
    console: Console,
    stop: Interruption,
) -> RunResult:
    """SPEC 7's run once the lock is held: recover, validate, check, the waves, the books."""
    worktrees = _recover(git, console.say)
    # 2. config, roster, plans; refuse to run on validation errors
    graph = _validated_graph(project, phase, options, console)
    run = _Run(project, git, phase, graph, options, environ, console, worktrees, stop)
    _preflight(run, environ)
    stop.check("before the run started")
    run.journal.event("run-start", phase=phase.name)
    for number, wave in enumerate(graph.waves, 1):
        # 4. waves in order
        if options.only_wave not in (None, number):
            continue
        stopped = _run_wave(run, number, wave)
        if stopped is not None:
            return stopped
    return _finish(run)


def _recover(git: Git, say: Callable[[str], None]) -> Worktrees:
    """Roll back what a killed run left open, tidy the plan worktrees; returns them."""
    # A run killed during a spawn left a checkpoint open. In the user's checkout (the
    # in-place opt-in) nothing is reset: what changed since may be the user's, and a
    # one-line error says what to do; plan worktrees are gsd's and are rolled back.
    recovery = git.recover(owned=False)
    for tag in recovery.rolled_back:
        say(f"rolled back {tag}, left open by an interrupted run")
    for line in recovery.warnings:
        say(f"warning: {line}")
    worktrees = Worktrees(git)
    for line in worktrees.tidy():
        say(line)
    return worktrees


def _validated_graph(
    project: Project, phase: Phase, options: RunOptions, console: Console
) -> PhaseGraph:
    """The phase's plan graph, once the phase validates and the plan or wave asked for
    is ready to run; a validation error stops the run before anything starts."""
    folder = phase.path.relative_to(project.root).as_posix()
    report = validate(project, [folder])
    if report.errors:
        console.stream.write(render.listed_errors(report))  # what it refuses on, first
        raise GsdError(
            f"{folder} has {plural(report.errors, 'validation error')}; nothing was run",
            hint=f"fix them and run again; `gsd validate --phase {phase.number}` lists them all",
        )
    graph = project.phase_graph(phase)
    if options.only_plan is not None:
        _check_plan_ready(project, phase, graph, options.only_plan, alone=True)
    if options.only_wave is not None:
        if not 1 <= options.only_wave <= len(graph.waves):
            raise InputError(f"{phase.name} has {plural(len(graph.waves), 'wave')}; no wave "
                             f"{options.only_wave}")  # fmt: skip
        for plan_id in graph.waves[options.only_wave - 1]:
            _check_plan_ready(project, phase, graph, plan_id, alone=False)
    return graph


def _preflight(run: _Run, environ: Mapping[str, str]) -> None:
    """What must hold before the first spawn: one line and exit 2, no agent started;
    a run without a sandbox is warned about."""
    git, options, say = run.git, run.options, run.console.say
    preflight.check_tree(git, in_place=run.in_place, allow_dirty=options.allow_dirty)
    preflight.check_index_lock(git)
    preflight.check_runners(run.to_spawn(), run.project.root, environ)
    if not run.sandbox.enabled:
        say("warning: sandbox disabled in config.json: agents are held by gsd's git checks only")
    elif sandbox.landlock_abi() == 0:
        say(f"warning: no sandbox: {sandbox.unavailable_reason()}; agents are held by gsd's "
            "git checks only")  # fmt: skip


def _run_wave(run: _Run, number: int, wave: list[str]) -> RunResult | None:
    """One wave's plans not done yet (3. a SUMMARY.md says done); the run's result when
    the wave stopped it (a failure or a pause), else None."""
    say, phase, graph = run.console.say, run.phase, run.graph
    pending = []
    for plan_id in run.pending(wave):
        if summaryread.exists(phase.path, plan_id):  # 3. what is already done
            say(f"plan {plan_id}: done (SUMMARY.md exists), skipped")
            run.ended[plan_id] = "done before"
            continue
        pending.append(graph.plans[plan_id])
    stopped = run.wave(number, pending) if pending else None
    if run.stop.requested:
        run.interrupted(f"in wave {number}")
    if stopped is None:
        return None
    code, message, end = stopped
    run.journal.event("run-end", status="stopped")
    run.books.derive()  # the failure or pause is in the logs now: a blocker
    run.books.commit(f"docs({end.plan.id}): run stopped")
    return RunResult(exit_code=code, outcomes=run.sorted_outcomes(), message=message,
                     plans=run.ended)  # fmt: skip


def _finish(run: _Run) -> RunResult:
    """The run's end once every wave is through: the books derived and committed, or,
    when nothing happened at all, the journal discarded."""
    options, phase = run.options, run.phase
    # `execute-plan` ran one plan: what it says and records is about that plan
    what = f"plan {options.only_plan}" if options.only_plan else f"phase {phase.name}"
    if not run.outcomes and set(run.ended.values()) <= {"done before"}:  # nothing happened
        run.journal.discard()
        return RunResult(exit_code=EXIT_OK, outcomes=run.outcomes,
                         message=f"{what}: already complete", plans=run.ended)  # fmt: skip
    run.journal.event("run-end", status="complete")
    run.books.derive()
    scope = options.only_plan or phase.number
    run.books.commit(f"docs({scope}): {what.split()[0]} run complete")
    return RunResult(exit_code=EXIT_OK, outcomes=run.sorted_outcomes(),
                     message=f"{what} complete", plans=run.ended)  # fmt: skip


class _Run:
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
        self.options, self.environ, self.console = options, environ, console
        self.worktrees = worktrees
        self.say = console.say
        self.waves = len(graph.waves)
        self.dispatcher, warnings = project.dispatcher(cli_timeout=options.timeout,
                                                       environ=environ)  # fmt: skip
        for warning in warnings:
            self.say(f"warning: {warning}")
        self.agents = self.dispatcher.agents
        self.templates = prompt.Templates.load(project.root)
        planning_rel = project.planning.relative_to(project.root).as_posix()
        side = bookkeeping.side_log(planning_rel, phase.number, worktrees.here, options.only_plan)
        in_place = not project.config.workflow.use_worktrees
        self.journal = bookkeeping.Journal(git, side, in_place=in_place,
                                           planning_rel=planning_rel)  # fmt: skip
        self.books = bookkeeping.Books(project, git, self.journal,
                                       lambda line: self.say(f"warning: {line}"))  # fmt: skip
        # a CI job's `execute-plan` on the plan's own branch: STATE.md and ROADMAP.md are
        # derived on the branch it is merged into, never on this one (they would conflict)
        self.books.on_plan_branch = worktrees.here in {branch_of(p) for p in graph.plans}
        self.committed = git.committed_tasks()  # Gsd-Task trailer -> commit
        settings = project.config
        self.scope = settings.specialists.scope
        self.retries = settings.specialists.max_retries
        self.fallback = settings.voltagent.fallback_on_error
        self.auto = options.auto or settings.mode == "yolo"  # SPEC 7 step 6
        # with `git.commit_docs` false, gsd's own edits stay uncommitted in .planning/:
        # checkpoints snapshot them (as --allow-dirty does) so a rollback keeps them
        self.commit_docs = settings.git.commit_docs
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
        committed = self.git.committed_tasks(plan_branches=True)
        found = []
        for number, wave in enumerate(self.graph.waves, 1):
            if self.options.only_wave not in (None, number):
                continue
            for plan_id in self.pending(wave):
                if summaryread.exists(self.phase.path, plan_id):
                    continue
                plan = self.graph.plans[plan_id]
                found += [self.dispatcher.task(number, plan, task) for task in plan.tasks
                          if f"{plan_id}-{task.index}" not in committed]  # fmt: skip
        return found

    def interrupted(self, where: str) -> None:
        """A signal stopped the run: every attempt is rolled back by now. Say where it
        stopped in STATE.md, commit the logs, and stop (exit 128 + the signal)."""
        name = Interrupted(self.stop.signum or 2).name
        self.journal.event("run-end", status="interrupted", signal=name)
        self.books.derive()  # Session Continuity: where it stopped, what resumes it
        self.books.commit(f"docs({self.phase.number}): run interrupted")
        self.stop.check(where)

    # -- waves -------------------------------------------------------------------------

    def wave(self, number: int, plans: list[Plan]) -> tuple[int, str, PlanEnd] | None:
        """Run one wave's pending plans; (exit code, message, plan) when the run stops."""
        where = f"phase {self.phase.number} wave {number}/{self.waves}"
        side_by_side = not self.in_place and self.parallel > 1 and len(plans) > 1
        at_once = min(self.parallel, len(plans)) if side_by_side else 1
        self.journal.event("wave-start", wave=number, plans=[p.id for p in plans],
                           parallel=at_once)  # fmt: skip
        if side_by_side:
            groups = self.graph.sequential_groups([p.id for p in plans])
            groups_said = plural(len(groups), "group")
            self.say(f"{where}: {len(plans)} plans in parallel worktrees ({groups_said}, at "
                     f"most {self.parallel} at once)")  # fmt: skip
            ends = self.in_parallel(number, groups)
        else:
            if len(plans) > 1:
                how = "in place" if self.in_place else "each in its worktree"
                self.say(f"{where}: {len(plans)} plans one after another, {how}")
            ends = []
            for plan in plans:
                if self.cancel.is_set():
                    break
                if self.in_place:
                    end = self.in_place_plan(plan, number)
                else:
                    end = self.in_worktree(plan, number, self.git.head() or "HEAD")
                    end = self.merge(end) if end.status == "complete" else end
                ends.append(end)
                if end.status != "complete":
                    break
        for end in ends:
            self.ended[end.plan.id] = end.status + (f": {end.error_type}" if
                                                    end.status == "failed" else "")  # fmt: skip
        done = [e.plan.id for e in ends if e.status == "complete"]
        self.journal.event("wave-end", wave=number, complete=done)
        return self.settle(ends)

    def in_parallel(self, number: int, groups: list[list[str]]) -> list[PlanEnd]:
        """Groups of plans side by side, each plan in its worktree (plans of one group,
        which share files, one after another); then every complete plan is merged back
        in plan order. A plan built on one that could not be merged is not merged; after
        an interruption nothing is merged (the branches keep the work for the next run)."""
        start = self.git.head() or "HEAD"
        pool = ThreadPoolExecutor(max_workers=min(self.parallel, len(groups)),
                                  thread_name_prefix="gsd-plan")  # fmt: skip
        try:
            futures = [pool.submit(self.group, group, number, start) for group in groups]
            results = [future.result() for future in futures]
        except BaseException:
            self.cancel.set()  # agents are ended, their attempts rolled back
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
        order = {pid: i for i, pid in enumerate(self.graph.plans)}
        group_of = {pid: i for i, group in enumerate(groups) for pid in group}
        ends: list[PlanEnd] = []
        blocked: set[int] = set()  # groups whose earlier plan could not be merged
        for end in sorted((e for r in results for e in r), key=lambda e: order[e.plan.id]):
            group = group_of[end.plan.id]
            if self.cancel.is_set():
                pass  # complete plans wait on their branches; the run stops after this
            elif end.status == "complete" and group in blocked:
                end = end._replace(status="failed", error_type="merge-conflict",
                                   message=f"plan {end.plan.id}: not merged, it builds on a "
                                           "plan that could not be merged",
                                   details="builds on a plan whose merge conflicted")  # fmt: skip
            elif end.status == "complete":
                end = self.merge(end)
            if end.status != "complete":
                blocked.add(group)
            ends.append(end)
        return ends

    def group(self, plan_ids: list[str], number: int, start: str) -> list[PlanEnd]:
        """Plans that share files, one after another, each on the one before (a thread)."""
        ends = []
        for plan_id in plan_ids:
            if self.cancel.is_set():
                break
            end = self.in_worktree(self.graph.plans[plan_id], number, start)
            ends.append(end)
            if end.status != "complete":
                break
            start = self.worktrees.tip(plan_id) or start
        return ends

    def settle(self, ends: list[PlanEnd]) -> tuple[int, str, PlanEnd] | None:
        """8. failures and pauses: a Blockers line each; the run stops (exit 1, or 4).
        An interruption is nobody's failure: no Blockers line (`interrupted` says it)."""
        stopped = [e for e in ends if e.status not in ("complete", "interrupted")]
        failed = [e for e in stopped if e.status == "failed"]
        if failed:
            others = len(failed) - 1
            more = f" (and {plural(others, 'more failed plan')})" if others else ""
            return EXIT_FINDINGS, failed[0].message + more, failed[0]
        if stopped:
            return EXIT_PAUSED, stopped[0].message, stopped[0]
        return None

    # -- plans -------------------------------------------------------------------------

    def in_place_plan(self, plan: Plan, wave: int) -> PlanEnd:
        """A plan run in the user's checkout itself (`workflow.use_worktrees: false`, the
        opt-in), its bookkeeping committed when it ends."""
        end = self.tasks(plan, wave, self.git, self.committed)
        if end.status == "complete":
            # 7. SUMMARY.md, then STATE.md and ROADMAP.md derived from it (a plan is done
            # when its SUMMARY is there), all in one docs commit
            text = self._summary(end, self.git)
            summary.write(self.phase.path / f"{plan.id}-SUMMARY.md", text)
            written = self.phase.path / f"{plan.id}-SUMMARY.md"
            self.books.written.add(written.relative_to(self.project.root).as_posix())
            self.journal.plan_event(plan.id, "plan-complete")
            self.books.derive()
            self.books.commit(f"docs({plan.id}): complete plan")
            self.say(f"plan {plan.id}: complete")
        return end

    def in_worktree(self, plan: Plan, wave: int, start: str) -> PlanEnd:
        """A plan run in its own worktree; when complete, its SUMMARY.md is committed on
        its branch, and STATE.md and ROADMAP.md wait for the merge (`merge`)."""
        try:
            place, recovered = self.worktrees.open(plan.id, start)
        except GsdError as exc:  # logged: STATE.md's blocker is derived from the log
            self.journal.error(plan.phase, plan.id, "unknown", str(exc), "worktree")
            return PlanEnd(plan=plan, status="failed", message=f"plan {plan.id}: {exc}",
                           error_type="unknown", details=str(exc))  # fmt: skip
        for tag in recovered:
            self.say(f"rolled back {tag}, left open by an interrupted run")
        end = self.tasks(plan, wave, place, place.committed_tasks())
        if end.status == "complete":
            end = end._replace(summary=self._summary(end, place))
            if self.commit_docs:  # else it is written after the merge (`merge`)
                self._commit_plan_docs(end, place)
        else:  # its lines are the run's to commit: its branch carries none of them
            self.journal.hand_over(plan.id)
        # the branch keeps the work; the folder goes now, while other plans still run
        self.worktrees.close(plan.id)
        if end.status != "complete" and self.worktrees.tip(plan.id) == start:
            self.worktrees.delete_branch(plan.id)  # nothing on it yet: leave nothing
        elif end.status != "complete" and self.worktrees.on_checkout(plan.id):
            self._keep_on_checkout(plan)
        return end

    def _keep_on_checkout(self, plan: Plan) -> None:
        """A plan paused or failed in a checkout of its own branch gsd/{plan} (a CI job):
        its committed tasks go onto that branch (a fast-forward), which the job pushes and
        the next run there continues. gsd/{plan}-run keeps them when that cannot be."""
        run_branch = self.worktrees.branch(plan.id)
        if self.git.fast_forward(run_branch):
            self.worktrees.delete_branch(plan.id)
        else:
            self.say(
                f"warning: plan {plan.id}: its committed tasks stay on {run_branch}: "
                f"{self.worktrees.here} could not be fast-forwarded to it"
            )

    def merge(self, end: PlanEnd) -> PlanEnd:
        """Merge a complete plan's branch back `--no-ff`, STATE.md and ROADMAP.md updated
        in the merge commit itself: a run killed before it commits merges again. The
        user's uncommitted files are never overwritten: such a merge does not start."""
        try:
            return self._merge(end)
        finally:
            self.books.seen(None)  # the look the merge took is for the merge alone

    def _merge(self, end: PlanEnd) -> PlanEnd:
        plan = end.plan
        branch = self.worktrees.branch(plan.id)
        message = f"Merge branch '{branch}': plan {plan.id} complete\n"
        # one look at the files the bookkeeping may write; the user's other uncommitted
        # files git itself keeps: a merge that would overwrite one never starts
        self.books.seen(self.git.dirty_among(self.books.candidates()))
        present = [p for p in self.git.added_by(branch) if os.path.lexists(self.project.root / p)]
        ignored = sorted(set(present) - self.git.tracked_among(present)) if present else []
        if ignored:  # git would overwrite them (and an undone merge delete them)
            return self._unmerged(end, branch, (
                f"it adds {', '.join(ignored[:5])}, which your checkout has as files git "
                "ignores: move them away"))  # fmt: skip
        try:
            conflicts = self.git.start_merge(branch, message)
        except MergeRefused as refused:
            return self._unmerged(end, branch, self._refusal(refused.paths))
        if conflicts:
            details = (
                f"merging {branch} conflicts in {', '.join(conflicts[:5])}; the branch is "
                f"kept: merge it by hand (git merge {branch}), then run again"
            )
            return self._unmerged(end, branch, details, conflicts)
        try:
            sha = self._commit_merge(end, branch, message)
        except GsdError as exc:  # a failing pre-commit hook, no identity, ...
            self.journal.event("merge", plan=plan.id, branch=branch, status="failed")
            self.journal.error(plan.phase, plan.id, "unknown", logged(exc), branch)
            return end._replace(status="failed", error_type="unknown", details=logged(exc),
                                message=f"plan {plan.id}: merge failed: {exc}")  # fmt: skip
        self.worktrees.delete_branch(plan.id)  # merged: nothing left on it
        self.say(f"plan {plan.id}: complete, merged {branch} ({sha[:7]})")
        return end

    def _commit_merge(self, end: PlanEnd, branch: str, message: str) -> str:
        """STATE.md and ROADMAP.md, the log lines, then the merge commit that carries them.
        Whatever fails on the way (a hook, an unwritable .planning/, a full disk, a signal
        that is not gsd's to handle), the merge is undone first: the user's checkout is
        never left half merged, and the plan's branch still holds its work."""
        plan = end.plan
        unmerged = self.phase.path / f"{plan.id}-SUMMARY.md"
        try:
            self.journal.event("merge", plan=plan.id, branch=branch, status="merged")
            # what changed is known: no `git status` over the tree for it
            self.books.pending()  # the log lines, flushed once (`unflush` takes them back)
            if not self.commit_docs:  # the SUMMARY.md no commit on the branch carried
                summary.write(unmerged, end.summary)
            self.books.derive(flush=False)  # from the merged tree: its SUMMARY.md counts
            pending = sorted(self.books.written)
            paths = pending if self.commit_docs else []
            sha = self.git.finish_merge(message, paths)
        except BaseException:
            if not self.commit_docs:
                unmerged.unlink(missing_ok=True)  # not merged: the plan is not done here
            self.git.abort_merge()  # which also undoes the log lines flushed for it
            self.journal.unflush()
            self.books.undo(self.git)
            raise
        if paths:
            self.books.committed()
        return sha

    def _refusal(self, paths: list[str]) -> str:
        """Why git would not merge: the user's staged changes (a merge commit would take
        them in), or uncommitted or untracked files where the plan's branch writes."""
        staged = [p for p in self.git.staged_paths() if p in paths]
        if staged:
            return (f"you have staged changes ({', '.join(staged[:5])}) that its merge "
                    "commit would take in: commit or unstage them")  # fmt: skip
        more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
        return (f"it would overwrite your uncommitted changes to {', '.join(paths[:5])}{more}: "
                "commit or stash them")  # fmt: skip

    def _unmerged(
        self, end: PlanEnd, branch: str, why: str, conflicts: list[str] | None = None
    ) -> PlanEnd:
        """The plan is complete on its branch and stays there: one line says why and what
        to do; logged as gsd's merge failure, never against a specialist."""
        plan = end.plan
        details = why if conflicts else (
            f"plan {plan.id} is complete on branch {branch} but not merged: {why}, then run "
            f"`gsd execute-phase {self.phase.number}` again (or `git merge --no-ff {branch}`)"
        )  # fmt: skip
        self.journal.event("merge", plan=plan.id, branch=branch,
                           status="conflict" if conflicts else "blocked",
                           files=conflicts or [])  # fmt: skip
        self.journal.error(plan.phase, plan.id, "merge-conflict", details, branch)
        self.say(f"plan {plan.id}: merge-conflict: {details}")
        return end._replace(status="failed", error_type="merge-conflict", details=details,
                            message=f"plan {plan.id}: merge-conflict: {details}")  # fmt: skip

    def tasks(self, plan: Plan, wave: int, place: Git, committed: Mapping[str, str]) -> PlanEnd:
        """Tasks of one plan in order (SPEC 7 step 5), in `place` (the repository or the
        plan's worktree); stops at the first failure or unanswered human checkpoint."""
        project, phase = self.project, self.phase
        started = datetime.now(timezone.utc)
        plan_text = (project.root / plan.path).read_text(encoding="utf-8")
        summaries = _summaries(project, plan)
        earlier: list[tuple[int, str | None]] = []
        resumed: set[int] = set()  # tasks an earlier run committed: their reports are gone
        attempts: list[TaskOutcome] = []
        for task in plan.tasks:
            label = (
                f"phase {phase.number} wave {wave}/{self.waves} plan {plan.id} task {task.index}"
            )
            if self.cancel.is_set():  # a signal: no new attempt starts
                return _interrupted(plan, label, attempts, started)
            if f"{plan.id}-{task.index}" in committed:
                self.say(f"{label}: already committed, skipped")
                earlier.append((task.index, None))
                resumed.add(task.index)
                continue
            if task.is_checkpoint:
                # 6. a human checkpoint pauses the run until `gsd approve` answers it
                answer = approvals.answer(project, plan.id, task, auto=self.auto)
                if answer is None:
                    message = (
                        f"{label}: {task.type} waits for a person: {approvals.what_to_check(task)} "
                        f"(then `gsd approve {plan.id}`)"
                    )
                    self.journal.plan_event(plan.id, "checkpoint-paused", task=task.index)
                    self.say(message)
                    return PlanEnd(plan=plan, status="paused", message=message,
                                   error_type="checkpoint-paused", details=message,
                                   attempts=tuple(attempts), started=started)  # fmt: skip
                self.say(f"{label}: {task.type} approved ({answer})")
                earlier.append((task.index, f"- Human checkpoint answered: {answer}"))
                continue
            context = prompt.PromptContext(
                earlier=list(earlier), summaries=summaries, repo=str(place.root),
                plan_text=plan_text, resumed=frozenset(resumed),
            )  # fmt: skip
            outcome = self.attempts(wave, plan, task, context, label, attempts, place)
            self.outcomes.append(outcome)
            if not outcome.success and self.cancel.is_set():  # rolled back; nobody's failure
                return _interrupted(plan, label, attempts, started)
            if not outcome.success:
                message = f"{label}: {outcome.error_type}: {_first_line(outcome.details)}"
                return PlanEnd(plan=plan, status="failed", message=message,
                               error_type=outcome.error_type or "unknown",
                               details=outcome.details, attempts=tuple(attempts),
                               started=started)  # fmt: skip
            report = outcome.report
            earlier.append((task.index, report.downstream if report else None))
        return PlanEnd(plan=plan, status="complete", message=f"plan {plan.id}: complete",
                       attempts=tuple(attempts), started=started,
                       finished=datetime.now(timezone.utc))  # fmt: skip

    def attempts(
        self,
        wave: int,
        plan: Plan,
        task: Task,
        context: prompt.PromptContext,
        label: str,
        tried: list[TaskOutcome],
        place: Git,
    ) -> TaskOutcome:
        """The retry ladder: transient failures retried up to `specialists.max_retries`,
        then one fallback to gsd-executor when `voltagent.fallback_on_error`; validation
        failures and policy violations are final."""
        dispatch = self.dispatcher.task(wave, plan, task)
        if dispatch.fallback_reason:  # SPEC 3: every fallback to gsd-executor is a warning
            self.say(f"warning: {label}: {dispatch.agent} instead of {dispatch.specialist!r}: "
                     f"{dispatch.fallback_reason}")  # fmt: skip
        retries = self.retries
        attempt = 0
        while True:
            attempt += 1
            agent, outcome = self._attempt(plan, task, context, label, dispatch, attempt, place)
            tried.append(outcome)
            self._report(plan, task, label, agent.name, outcome)
            if outcome.success or self.cancel.is_set():
                return outcome
            transient = outcome.error_type in TRANSIENT or outcome.rate_limited
            if transient and attempt <= retries:
                self.journal.plan_event(plan.id, "retry", task=task.index)
                continue
            final = outcome.error_type in ("validation-failed", "policy-violation")
            if self.fallback and not final and agent.name != EXECUTOR:  # (always installed)
                self.journal.plan_event(plan.id, "fallback", task=task.index, agent=EXECUTOR)
                dispatch = self.dispatcher.task(
                    wave, plan, task, fallback=f"{agent.name} failed: {outcome.error_type}"
                )
                self.say(f"warning: {label}: {EXECUTOR} takes over: {dispatch.fallback_reason}")
                retries = attempt  # the fallback gets exactly one attempt
                continue
            return outcome

    def _attempt(
        self,
        plan: Plan,
        task: Task,
        context: prompt.PromptContext,
        label: str,
        dispatch: TaskDispatch,
        attempt: int,
        place: Git,
    ) -> tuple[Agent, TaskOutcome]:
        """One rung of the ladder: the prompt built for the agent `dispatch` names, the
        spawn journalled, the task run in `place`; the agent and what became of it."""
        agent = self.dispatcher.agent_for(dispatch)  # on the task's runner=, if set
        text = prompt.build_prompt(agent, plan, task, context, self.templates)
        self.say(f"{label}: {agent.name} (attempt {attempt}, timeout {dispatch.timeout_s:g} s)")
        self.journal.plan_event(plan.id, "spawn", task=task.index, agent=agent.name,
                                attempt=attempt)  # fmt: skip
        with self.console.running(f"plan {plan.id} task {task.index} {agent.name}"):
            outcome = run_task(
                git=place, plan=plan, task=task, agent=agent, dispatch=dispatch,
                prompt=text, attempt=attempt, allow_dirty=self.allow_dirty,
                scope=self.scope, environ=self.environ,
                error_log=self.journal.plan_errors(plan.id), cancel=self.cancel,
                sandbox=self.sandbox,
            )  # fmt: skip
        return agent, outcome

    def _report(self, plan: Plan, task: Task, label: str, agent: str, outcome: TaskOutcome) -> None:
        """An attempt's output kept (SPEC 1's RESULT file), its result journalled and
        said: the commit of a success, the error and the rollback of a failure."""
        journal, say = self.journal, self.say
        if outcome.output:  # SPEC 1: NN-MM-RESULT.txt, the last agent run's output
            result_file = self.phase.path / f"{plan.id}-RESULT.txt"
            journal.keep_output(result_file.relative_to(self.project.root).as_posix(),
                                Path(outcome.output))  # fmt: skip
        journal.plan_event(
            plan.id, "result", task=task.index, agent=agent, attempt=outcome.attempt,
            success=outcome.success, soft_success=outcome.soft_success,
            error_type=outcome.error_type, duration_s=outcome.duration_s,
            input_tokens=outcome.input_tokens, output_tokens=outcome.output_tokens,
            cost_usd=outcome.cost_usd,
        )  # fmt: skip
        if outcome.success:
            journal.plan_event(plan.id, "commit", task=task.index, commit=outcome.commit)
            commit = outcome.commit
            say(f"{label}: " + (f"committed {commit[:7]}" if commit else
                                "done, nothing to commit"))  # fmt: skip
            return
        if self.cancel.is_set():
            say(f"{label}: interrupted; the attempt is rolled back")
        else:
            say(f"{label}: {outcome.error_type}: {_first_line(outcome.details)}")
        if outcome.checkpoint:  # run_task put the tree back to it
            journal.plan_event(plan.id, "rollback", task=task.index,
                               checkpoint=outcome.checkpoint)  # fmt: skip

    # -- bookkeeping -------------------------------------------------------------------

    def _summary_folder(self, root: Path) -> Path:
        """The phase folder in a checkout at `root` (the repository or a worktree)."""
        return root / self.phase.path.relative_to(self.project.root)

    def _commit_plan_docs(self, end: PlanEnd, place: Git) -> None:
        """The plan's docs commit on its branch: its SUMMARY.md, its RESULT file and its
        own log lines, nothing else (a file the user's branch changed since the plan's
        branch left it stays for the merge: both changing it would conflict)."""
        plan = end.plan
        self.journal.plan_event(plan.id, "plan-complete")
        tip = place.head() or "HEAD"
        changed = self.git.changed_since_fork(tip, [
            self.journal.plan_log(plan.id),
            *(t for t in self.journal.kept_targets() if t.endswith(f"/{plan.id}-RESULT.txt")),
        ])  # fmt: skip
        paths = self.journal.flush_plan(plan.id, place.root, lambda t: t not in changed)
        written = self._summary_folder(place.root) / f"{plan.id}-SUMMARY.md"
        summary.write(written, end.summary)
        place.commit_docs(f"docs({plan.id}): plan summary",
                          [written.relative_to(place.root).as_posix(), *paths])  # fmt: skip

    def _summary(self, end: PlanEnd, place: Git) -> str:
        """The SUMMARY.md of a complete plan, from its whole history: the attempts of
        earlier runs in the logs, this run's, and its task commits on `place`'s branch."""
        plan = end.plan
        planning_rel = self.project.planning.relative_to(self.project.root)
        earlier = attempts.logged_attempts(plan.id, dict.fromkeys(
            [self.project.planning, place.root / planning_rel]))  # fmt: skip
        outcomes, created = attempts.with_commits(
            plan.id, [*earlier, *end.attempts], place.plan_task_commits(plan.id)
        )
        now = datetime.now(timezone.utc)
        started, finished = end.started or now, end.finished or now
        before = sum(o.duration_s for o in earlier)  # agent time of earlier runs
        return summary.render(
            phase_dir=self.phase.name, plan_id=plan.id, plan_frontmatter=plan.frontmatter,
            outcomes=outcomes, task_names={t.index: t.name for t in plan.tasks},
            started=started, finished=finished, created=created,
            seconds=(finished - started).total_seconds() + before,
        )  # fmt: skip

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


def _interrupted(plan: Plan, label: str, attempts: list[TaskOutcome], started: datetime) -> PlanEnd:
    """A plan a signal stopped at `label`: its attempt rolled back, nobody's failure."""
    return PlanEnd(plan=plan, status="interrupted", message=f"{label}: interrupted",
                   attempts=tuple(attempts), started=started)  # fmt: skip


def _first_line(details: str) -> str:
    """What a progress line shows of a failure's details (the log keeps them whole)."""
    return details.splitlines()[0] if details else details


def _check_plan_ready(
    project: Project, phase: Phase, graph: PhaseGraph, plan_id: str, *, alone: bool
) -> None:
    """A plan runs once what it waits for is done (its SUMMARY.md is there): every plan
    it depends on, in whichever phase, and, when it runs `alone` (`execute-plan`), the
    plans before it in its overlap group, which modify the same files and run first."""
    plan = graph.plans.get(plan_id)
    if plan is None:
        known = ", ".join(graph.plans) or "none"
        raise GsdError(f"no plan {plan_id} in {phase.name} (plans: {known})")
    folders = [p.path for p in project.phases()]
    waiting = [d for d in dict.fromkeys(plan.depends_on)
               if not any(summaryread.exists(folder, d) for folder in folders)]  # fmt: skip
    if waiting:
        raise GsdError(
            f"plan {plan_id} depends on {', '.join(waiting)}, not done yet",
            hint=f"run those first, or `gsd execute-phase {phase.number}`",
        )
    if not alone:
        return
    before = _group_before(graph, plan_id)
    first = next((p for p in before if not summaryread.exists(phase.path, p)), None)
    if first is not None:
        shared = sorted(set(graph.plans[first].files_modified) & set(plan.files_modified))
        raise GsdError(
            f"plan {plan_id} waits for {first}, not done yet: it runs after {first} in "
            f"their overlap group (both modify {', '.join(shared[:3]) or 'the same files'})",
            hint=f"run {first} first: `gsd execute-plan {first}`",
        )


def _group_before(graph: PhaseGraph, plan_id: str) -> list[str]:
    """The plans before `plan_id` in its wave's overlap group (GSD044), in order."""
    wave = graph.wave_of.get(plan_id)
    if wave is None:
        return []
    for group in graph.sequential_groups(graph.waves[wave - 1]):
        if plan_id in group:
            return group[: group.index(plan_id)]
    return []


def _summaries(project: Project, plan: Plan) -> list[tuple[str, str | None]]:
    """The SUMMARY.md of each plan this one depends on (None: not done), found as
    `summaryread.exists` finds them, in whichever phase they are."""
    folders = [phase.path for phase in project.phases()]
    found: list[tuple[str, str | None]] = []
    for dep in plan.depends_on:
        path = next((p for f in folders if (p := summaryread.find(f, dep))), None)
        text = path.read_text(encoding="utf-8", errors="replace") if path else None
        found.append((dep, text))
    return found
