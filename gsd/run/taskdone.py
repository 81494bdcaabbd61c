"""Is an attempt the judge passed done? Its claims and its runner's refusals against git,
and the plan files it wrote through `gsd validate` (SPEC 0, "Done means done"), then its
`<automated>` checks; a timeout those checks may accept (`salvage.accept_timeout_when_verified`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from gsd.core.errors import GsdError
from gsd.core.models import RunnerOutput, TaskReport
from gsd.core.verdict import done, judge
from gsd.core.words import plural
from gsd.formats.prompt import automated_commands
from gsd.io.git.repo import Git
from gsd.io.plans.project import Project
from gsd.io.plans.validate import validate
from gsd.run.taskspawn import Job

# the error types these checks give: a policy violation found later still wins
TYPES = frozenset({"report-mismatch", "permission-denied", "plan-invalid"})
SHOWN = 3  # diagnostics a plan-invalid failure's details quote


class Done(NamedTuple):
    """Why the attempt is not done (error_type None: it is), and what to note beside it."""

    error_type: str | None
    details: str
    deviations: list[str]


class Checks(NamedTuple):
    """What the `<automated>` checks came to."""

    error_type: str | None
    details: str
    ran: bool = False  # whether any check ran (it may have changed files)
    output: str | None = None  # the failed check's output file (under .git)


class Checked(NamedTuple):
    """Whether an attempt the agent called a success is done: its error (None: done),
    why, the notes for SUMMARY.md, what its checks came to."""

    error_type: str | None
    details: str
    notes: list[str]
    checks: Checks


def verifiable(job: Job, verdict: judge.Verdict) -> bool:
    """A timeout that config `salvage.accept_timeout_when_verified` lets its checks accept:
    only a task with `<automated>` checks, never an interrupted one."""
    cancelled = job.cancel is not None and job.cancel.is_set()
    return (
        job.accept_timeout
        and verdict.error_type in judge.TIMEOUTS
        and not cancelled
        and bool(automated_commands(job.task))
    )


def checked(
    job: Job,
    verdict: judge.Verdict,
    output: RunnerOutput,
    report: TaskReport | None,
    changed: list[str],
    verify: Callable[[Job], Checks],
) -> tuple[judge.Verdict, Checked]:
    """Whether git agrees with what the agent said (`check`), then the `<automated>`
    checks (`verify`), as for every success. A `verifiable` timeout goes through the
    same: it becomes a soft success when it changed files and every check ran and
    passed; else it stays the timeout it was, the checks' failure in its details."""
    if not verdict.success and not changed:  # a timeout that left nothing to accept
        return verdict, Checked(verdict.error_type, verdict.reason, [], Checks(None, ""))
    error_type, details, notes = check(job.git, job.agent.tier, output, report, changed)
    checks = Checks(None, "")
    if error_type is None:
        checks = verify(job)
        error_type, details = checks.error_type, checks.details
    if verdict.success:
        return verdict, Checked(error_type, details, notes, checks)
    if error_type is None and checks.ran:
        return judge.verified(verdict), Checked(None, details, notes, checks)
    why = f"{verdict.reason}; not accepted on its checks: {details or error_type}"
    return verdict, Checked(verdict.error_type, why, notes, checks)


def check(
    git: Git, tier: str, output: RunnerOutput, report: TaskReport | None, changed: list[str]
) -> Done:
    """The first reason the attempt is not done: a writing tier's writes all denied
    (`permission-denied`), files its Task Report claims that git did not see change
    (`report-mismatch`), a `*-PLAN.md` it wrote that fails validation (`plan-invalid`).
    Denied writes beside real changes, and claimed files git ignores, are deviations."""
    writes = done.denied_writes(output.denied)
    why = done.permission_denied(tier, writes, bool(changed))
    if why:
        return Done("permission-denied", why, [])
    notes = []
    if writes:
        notes.append(
            f"the runner denied {plural(len(writes), 'write')}: {done.denial_text(writes)}"
        )
    roots = list(dict.fromkeys([str(git.root), str(git.root.resolve())]))
    lacking, ignored = _split_ignored(git, done.missing(done.claimed(report), changed, roots))
    if ignored:
        notes.append(
            f"the Task Report names {', '.join(ignored)}, which git ignores: not committed"
        )
    if lacking:
        return Done(
            "report-mismatch",
            (
                f"the Task Report names {plural(len(lacking), 'file')} the task's commit would "
                f"not hold (not changed, as git sees it): {', '.join(lacking)}"
            ),
            notes,
        )
    invalid = invalid_plans(git, changed)
    if invalid:
        return Done("plan-invalid", invalid, notes)
    return Done(None, "", notes)


def _split_ignored(git: Git, claims: list[str]) -> tuple[list[str], list[str]]:
    """The claims git ignores and that are on disk (written, never committed), apart."""
    on_disk = {c: p for c in claims if (p := done.normal(c)) and (git.root / p).exists()}
    if not on_disk:
        return claims, []
    asked = "\0".join(on_disk.values()) + "\0"
    found = git.out("check-ignore", "-z", "--stdin", input=asked, ok=(0, 1))
    ignored = set(found.split("\0"))
    apart = [c for c in claims if on_disk.get(c) in ignored]
    return [c for c in claims if c not in apart], apart


def invalid_plans(git: Git, changed: list[str]) -> str:
    """Why the plan files among `changed` fail `gsd validate` in the attempt's worktree
    ("" when they pass): the error count and the first errors as `path:line: CODE
    message`. Warnings do not count."""
    plans = [p for p in done.plan_files(changed) if (git.root / p).is_file()]
    if not plans:
        return ""
    try:
        report = validate(Project(git.root), plans)
    except GsdError as exc:
        return f"{', '.join(plans)}: {exc}"
    errors = [d for d in report.diagnostics if d.severity == "error"]
    if not errors:
        return ""
    shown = "; ".join(f"{d.path}:{d.line}: {d.code} {d.message}" for d in errors[:SHOWN])
    more = f" (and {len(errors) - SHOWN} more)" if len(errors) > SHOWN else ""
    return f"{plural(len(errors), 'validation error')} in a plan it wrote: {shown}{more}"
