"""One wave of a run (SPEC 7 step 4): its plans, side by side in worktrees or in turn.

Plans that share files, or all with `--max-parallel 1`, run one after another; each
complete one is merged back as it ends, while the others run; the wave's end says
whether the run stops.

The threads of a wave only wait on agents; git and the files are written by one thread
at a time or in a plan's own worktree, and the merges are the main thread's alone.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from gsd.core.errors import EXIT_FINDINGS, EXIT_PAUSED
from gsd.core.models import Plan
from gsd.core.words import plural
from gsd.io.confine.sandbox import landlock_abi
from gsd.run.merge import merge_plan
from gsd.run.phaserun import PhaseRun, PlanEnd
from gsd.run.plans import run_in_place, run_in_worktree

# what a wave's thread posts: a plan's end, its group's number when it is through, or
# the exception that stopped it
Posted = PlanEnd | int | BaseException
Post = Callable[[Posted], None]
AHEAD = 2  # threads per agent slot of a wave side by side


def run_wave(run: PhaseRun, number: int, plans: list[Plan]) -> tuple[int, str, PlanEnd] | None:
    """Run one wave's pending plans; (exit code, message, plan) when the run stops."""
    where = f"phase {run.read.phase.number} wave {number}/{run.read.waves}"
    side_by_side = not run.policy.in_place and run.policy.parallel > 1 and len(plans) > 1
    at_once = min(run.policy.parallel, len(plans)) if side_by_side else 1
    run.effects.journal.event(
        "wave-start", wave=number, plans=[p.id for p in plans], parallel=at_once
    )
    if side_by_side:
        groups = run.read.graph.sequential_groups([p.id for p in plans])
        groups_said = plural(len(groups), "group")
        run.effects.say(
            f"{where}: {len(plans)} plans in parallel worktrees ({groups_said}, at "
            f"most {run.policy.parallel} at once)"
        )
        ends = _side_by_side(run, number, groups)
    else:
        if len(plans) > 1:
            how = "in place" if run.policy.in_place else "each in its worktree"
            run.effects.say(f"{where}: {len(plans)} plans one after another, {how}")
        ends = []
        for plan in plans:
            if run.effects.cancel.is_set():
                break
            if run.policy.in_place:
                end = run_in_place(run, plan, number)
            else:
                end = run_in_worktree(run, plan, number, run.repo.git.head() or "HEAD")
                end = merge_plan(run, end) if end.status == "complete" else end
            ends.append(end)
            if end.status != "complete":
                break
    for end in ends:
        run.ended[end.plan.id] = end.status + (
            f": {end.error_type}" if end.status == "failed" else ""
        )
    done = [e.plan.id for e in ends if e.status == "complete"]
    run.effects.journal.event("wave-end", wave=number, complete=done)
    return _how_it_stopped(ends)


def _side_by_side(run: PhaseRun, number: int, groups: list[list[str]]) -> list[PlanEnd]:
    """Groups of plans side by side, each plan in its worktree (plans of one group,
    which share files, one after another); each complete plan is merged back in plan
    order as soon as it and the plans before it have ended, while the others run (at
    the wave's end when no sandbox keeps the agents out of the checkout the merges
    move: `gsd.io.confine.userguard`'s snapshot of it must hold still while they run).
    A plan built on one that could not be merged is not merged; after an interruption
    nothing more is merged (the branches keep the work for the next run)."""
    start = run.repo.git.head() or "HEAD"
    finished: queue.Queue[Posted] = queue.Queue()
    # a plan's tasks hold one of `parallel` slots; twice as many threads make the next
    # plans' worktrees and finish the last ones' SUMMARY.md while the agents run
    slots = threading.BoundedSemaphore(run.policy.parallel)
    pool = ThreadPoolExecutor(
        max_workers=min(AHEAD * run.policy.parallel, len(groups)), thread_name_prefix="gsd-plan"
    )
    try:
        for index, group in enumerate(groups):
            pool.submit(_group, run, (index, group), number, (start, slots), finished.put)
        ends = _as_they_end(run, groups, finished, eager=_kept_out(run))
    except BaseException:
        run.effects.cancel.set()  # agents are ended, their attempts rolled back
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()
    return ends


def _kept_out(run: PhaseRun) -> bool:
    """Whether Landlock keeps every agent out of the user's checkout."""
    return run.read.sandbox.enabled and bool(landlock_abi())


def _as_they_end(
    run: PhaseRun, groups: list[list[str]], finished: queue.Queue[Posted], *, eager: bool
) -> list[PlanEnd]:
    """The plans' ends as the threads post them (a group's number: it is through), in
    plan order, each complete one merged as soon as the plans before it have ended
    (`eager`), or once every group is through."""
    group_of = {pid: i for i, group in enumerate(groups) for pid in group}
    order = [pid for pid in run.read.graph.plans if pid in group_of]
    arrived: dict[str, PlanEnd] = {}
    through: set[int] = set()
    ends: list[PlanEnd] = []
    blocked: set[int] = set()  # groups whose earlier plan could not be merged
    while len(through) < len(groups):
        item = finished.get()
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, int):
            through.add(item)
        else:
            arrived[item.plan.id] = item
        while (eager or len(through) == len(groups)) and len(ends) < len(order):
            plan_id = order[len(ends)]
            if plan_id not in arrived and group_of[plan_id] not in through:
                break  # it runs yet: the plans after it wait for it
            if plan_id not in arrived:  # never ran (its group stopped before it)
                order.remove(plan_id)
                continue
            ends.append(_merged(run, arrived.pop(plan_id), group_of[plan_id], blocked))
    return ends


def _merged(run: PhaseRun, end: PlanEnd, group: int, blocked: set[int]) -> PlanEnd:
    """A plan's end once merged: complete, or failed when its merge could not be made
    or it builds on a plan of its group that was not merged."""
    if run.effects.cancel.is_set():
        pass  # complete plans wait on their branches; the run stops after this
    elif end.status == "complete" and group in blocked:
        end = end._replace(
            status="failed",
            error_type="merge-conflict",
            message=f"plan {end.plan.id}: not merged, it builds on a plan that could not be merged",
            details="builds on a plan whose merge conflicted",
        )
    elif end.status == "complete":
        end = merge_plan(run, end)
    if end.status != "complete":
        blocked.add(group)
    return end


def _group(
    run: PhaseRun,
    group: tuple[int, list[str]],
    number: int,
    begin: tuple[str, threading.BoundedSemaphore],
    post: Post,
) -> None:
    """Plans that share files, one after another, each on the one before (a thread);
    each one's end posted as it comes, then the group's number (or what stopped it)."""
    journal = run.effects.journal
    (index, plan_ids), (start, slots) = group, begin
    try:
        for plan_id in plan_ids:
            if run.effects.cancel.is_set():
                break
            slot = _Slot(slots, run.effects.cancel)
            journal.run_plan(plan_id, now=True)
            try:
                end = run_in_worktree(run, run.read.graph.plans[plan_id], number, start, slot)
            finally:
                journal.run_plan(plan_id, now=False)
            if slot.late:
                break  # a signal came first: it never began, as if not reached
            # its tip before it is posted: the merge deletes its branch
            tip = run.repo.worktrees.tip(plan_id) if end.status == "complete" else None
            post(end)
            if end.status != "complete":
                break
            start = tip or start
    except BaseException as exc:
        post(exc)
        raise
    post(index)


class _Slot(contextlib.AbstractContextManager[None]):
    """One of a wave's agent slots, held by a plan's tasks. `late`: a signal came while
    the plan waited for it (its worktree made ahead), so its tasks never began."""

    def __init__(self, slots: threading.BoundedSemaphore, cancel: threading.Event) -> None:
        self.slots, self.cancel, self.late = slots, cancel, False

    def __enter__(self) -> None:
        self.slots.acquire()
        self.late = self.cancel.is_set()

    def __exit__(self, *exc: object) -> None:
        self.slots.release()


def _how_it_stopped(ends: list[PlanEnd]) -> tuple[int, str, PlanEnd] | None:
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
