"""The review gate (issue 24): after an attempt's agent succeeded and its checks
passed, before gsd commits its work, a reviewer reads it in the task's checkout.

The reviewer is spawned as any read-only agent is (`gsd.run.taskspawn`: the same
supervisor, sandbox and tier), with its own run folder. Its Review Report decides:
`approve` lets the commit go on; `changes` and `reject` fail the attempt (rolled back;
the first is retried with the findings, `gsd.run.tasks`). A reviewer that crashed,
timed out, changed a file or printed no readable report fails the review
(`review-failed`): never an approval.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple, TypeVar

from gsd.core import layout
from gsd.core.errors import InputError
from gsd.core.graph import PhaseGraph
from gsd.core.models import Plan, Task
from gsd.core.verdict.outcomes import TaskOutcome
from gsd.core.verdict.review import FAILED, Review
from gsd.core.words import some
from gsd.formats import errorlog
from gsd.formats.agents import Agent
from gsd.formats.prompt import Templates
from gsd.formats.reviewreport import parse_review, review_prompt
from gsd.formats.runners import invocation as runners
from gsd.io.dispatch import Dispatcher, TaskDispatch
from gsd.io.git import salvage
from gsd.io.git.checkpointrecord import Checkpoint
from gsd.io.git.observe import Observer
from gsd.io.git.repo import Git
from gsd.io.process import proc
from gsd.run.taskassess import OUTPUT_TAIL, STDERR_TAIL, Assessed, over_limit, tail
from gsd.run.taskspawn import Guards, Job, spawn_agent

_Report = TypeVar("_Report")


class Reviewer(NamedTuple):
    """Who reviews an attempt (`Dispatcher.reviewer`), and which review of the task it is."""

    agent: Agent  # read-only, on the runner it reviews on
    dispatch: TaskDispatch
    templates: Templates
    round: int


def reviewers(
    dispatcher: Dispatcher, graph: PhaseGraph, dispatches: Iterable[TaskDispatch]
) -> list[TaskDispatch]:
    """How each task the run may start is reviewed, for the checks before the first spawn
    (its program installed, its agent file committed); a reviewer that cannot run is an
    InputError there, before any author's work could be lost to it."""
    found = []
    for dispatch in dispatches:
        if not dispatch.argv:
            continue  # a person answers a checkpoint: nothing to review
        plan = graph.plans[dispatch.plan]
        task = next(t for t in plan.tasks if t.index == dispatch.task)
        reviewer = dispatcher.reviewer(dispatch.wave, plan, task, dispatch)
        if isinstance(reviewer, str):
            raise InputError(f"{reviewer}; nothing was run")
        if reviewer is not None:
            found.append(reviewer[1])
    return found


def next_reviewer(
    found: tuple[Agent, TaskDispatch] | None, templates: Templates, earlier: list[TaskOutcome]
) -> Reviewer | None:
    """The task's reviewer (`Dispatcher.reviewer`) for its next attempt, after the task's
    `earlier` attempts, and which review of the task it is."""
    if found is None:
        return None
    rounds = 1 + sum(1 for outcome in earlier if outcome.review is not None)
    return Reviewer(agent=found[0], dispatch=found[1], templates=templates, round=rounds)


def record_unreviewable(
    error_log: Path, plan: Plan, task: Task, dispatch: TaskDispatch, why: str
) -> None:
    """A task whose reviewer cannot run, in the plan's error log (`gsd errors`)."""
    record = errorlog.ErrorRecord(
        phase=plan.phase,
        plan=plan.number,
        task=str(task.index),
        specialist=dispatch.agent,
        error_type=FAILED,
        details=why,
        runner=dispatch.runner or "",
    )
    errorlog.append(error_log, record)


def review(job: Job, guards: Guards, done: Assessed, reviewer: Reviewer) -> Assessed:
    """The attempt `done` (a success so far) as its reviewer judged it: unchanged but for
    `review` on `approve`, else failed with the review's error type and why."""
    git, checkpoint = job.git, guards.checkpoint
    before = fingerprint(git, checkpoint)
    text = review_prompt(
        reviewer.agent,
        job.plan,
        job.task,
        repo=str(git.root),
        diff=diff_since(git, checkpoint, done.changed),
        report=done.report,
        templates=reviewer.templates,
    )
    run_dir = layout.run_dir(git.git_dir, job.plan.id, job.task.index) / "review"
    spawn = spawn_agent(
        job._replace(
            agent=reviewer.agent, dispatch=reviewer.dispatch, prompt=text, run_dir=run_dir
        ),
        guards,
    )
    said = _verdict(reviewer, spawn.run, spawn.result_text)
    changed = changed_between(before, fingerprint(git, checkpoint))
    changed += spawn.gitfile_changed + spawn.in_user_checkout
    if changed and said.verdict is not None:  # what it changed is rolled back with the attempt
        said = said._replace(verdict=None, problem=f"it changed {some(changed)} (read-only)")
    if said.error_type is None:
        return done._replace(review=said)
    return done._replace(review=said, error_type=said.error_type, details=said.details())


def _verdict(reviewer: Reviewer, spawned: proc.Spawned, result_text: str | None) -> Review:
    """What the reviewer's run came to: its Review Report, or why there is none."""
    agent = reviewer.agent
    said = Review(reviewer=agent.name, runner=agent.runner, round=reviewer.round, verdict=None)
    report = answer(agent, spawned, result_text, reviewer.dispatch.timeout_s, parse_review)
    if isinstance(report, str):
        return said._replace(problem=report)
    return said._replace(verdict=report.verdict, findings=report.findings)


def answer(
    agent: Agent,
    spawned: proc.Spawned,
    result_text: str | None,
    timeout_s: float,
    parse: Callable[[str], _Report | str],
) -> _Report | str:
    """The report a read-only agent's run printed (a reviewer's, a challenger's), as
    `parse` reads it from the agent's text, or one line saying why there is none: it
    could not start, timed out, went over a limit, exited non-zero, answered unreadably."""
    stderr = tail(spawned.stderr_path, STDERR_TAIL)
    last = next((line.strip() for line in reversed(stderr.splitlines()) if line.strip()), "")
    if spawned.error:
        return f"it could not start: {spawned.error}"
    if spawned.timed_out:
        return f"it timed out after {timeout_s:g} s"
    if spawned.limit:
        return over_limit(spawned, "it")
    if spawned.exit_code != 0:
        return f"it exited {spawned.exit_code}" + (f": {last[:200]}" if last else "")
    stdout = tail(spawned.stdout_path, OUTPUT_TAIL)
    output = runners.parse_output(agent.runner, stdout, result_text, stderr)
    report = parse(output.text)
    if isinstance(report, str) and output.text != stdout:
        raw = parse(stdout)  # a runner whose text gsd could not pick out
        report = report if isinstance(raw, str) and output.text else raw
    return report  # a string: the problem with the answer gsd read, when it read one


def diff_since(git: Git, checkpoint: Checkpoint, changed: list[str]) -> str:
    """What the attempt changed against the commit it started from, as one diff (new
    files in full): its files as its commit would hold them (`salvage.attempt_tree`),
    against that commit."""
    if not changed:
        return ""
    tree = salvage.attempt_tree(git, checkpoint.head, changed)
    return git.out("diff", "--no-color", "--no-ext-diff", checkpoint.head, tree).rstrip("\n")


def fingerprint(git: Git, checkpoint: Checkpoint) -> dict[str, str]:
    """Each path changed since the checkpoint and what it holds now, HEAD, and the refs,
    index flags and .git files changed since (the last two put back as they are seen):
    what a reviewer must leave as it found it."""
    seen = Observer(git).observe(checkpoint)
    found = {path: _digest(git.root / path) for path in seen.changed}
    for what, lines in (("refs", seen.changed_refs), ("flags", seen.flags)):
        found[f"git {what}"] = "\n".join(sorted(lines))
    found["git internals"] = "\n".join(sorted(seen.internals))
    found["HEAD"] = git.head() or ""
    return found


def _digest(path: Path) -> str:
    try:
        if path.is_symlink():
            return "link:" + os.readlink(path)
        if not path.is_file():
            return "gone" if not path.exists() else "other"
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


def changed_between(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The paths (and git's parts) whose `fingerprint` differs between the two."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
