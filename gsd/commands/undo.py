"""`gsd undo PLAN|PHASE`: a finished plan (or a phase's finished plans) taken back with
revert commits, so that it is not done any more, then STATE.md and ROADMAP.md derived
again (issue 25). Refused, with nothing changed, while a run is live, when the tree is
dirty, when the plan is not done, or when later work depends on it: a plan that is done
and `depends_on` it, or a commit after its merge that changed one of its files."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from gsd.core import layout
from gsd.core.errors import GsdError
from gsd.core.ids import is_plan_id, split_plan_id, split_task_key
from gsd.core.visible import visible
from gsd.io.git import reverts
from gsd.io.git.repo import Git
from gsd.io.plans import summaries
from gsd.io.plans.project import Project
from gsd.run import derive


@dataclass(frozen=True)
class Step:
    """One commit `gsd undo` reverts (or would): a merge against its first parent."""

    sha: str
    subject: str
    merge: bool
    files: tuple[str, ...]


@dataclass(frozen=True)
class Undone:
    """What `gsd undo` did (or, in a dry run, would do): its reverts, newest first,
    the commits it made (a step's revert, "" for a step that had nothing left to take
    back; then the docs commit) and the files it derived."""

    scope: str  # "plan 01-02" or "phase 01"
    plans: tuple[str, ...]
    steps: tuple[Step, ...]
    tasks: tuple[str, ...] = ()  # the task keys whose commits it reverts
    made: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Scope:
    name: str  # "plan 01-02", "phase 01"
    label: str  # what its docs commits name: `docs(01-02): ...`, `docs(01): ...`
    plans: list[str]
    phases: list[str]  # the phase numbers a phase's own docs commits name


class _Files:
    """gsd's own files of a project, as git names them from the repository's top."""

    def __init__(self, project: Project, git: Git, plans: list[str]) -> None:
        planning = PurePosixPath(project.planning.relative_to(git.root).as_posix())
        self.derived = {str(planning / n) for n in derive.OWNED}
        self.logs = f"{planning / layout.LOGS}/"
        self.appends = {
            layout.APPROVALS,
            str(planning / layout.LEGACY_EXECUTION_LOG),
            str(planning / layout.LEGACY_ERROR_LOG),
        }
        self.phases = f"{planning / layout.PHASES}/"
        self.plans = plans

    def log(self, path: str) -> bool:
        """A run log: what ran and what it cost stays on record after an undo."""
        return path.startswith(self.logs) or path in self.appends - {layout.APPROVALS}

    def appended(self, path: str) -> bool:
        """A file gsd only ever appends lines to (the logs, the approvals)."""
        return path.startswith(self.logs) or path in self.appends

    def books(self, path: str) -> bool:
        """Derived or appended: no later work depends on these."""
        return path in self.derived or self.appended(path)

    def gsds(self, path: str) -> bool:
        """What a docs commit of gsd's changes: its books, the plans' SUMMARY and RESULT."""
        name = PurePosixPath(path).name
        return self.books(path) or (
            path.startswith(self.phases)
            and any(name in (f"{p}-SUMMARY.md", f"{p}-RESULT.txt") for p in self.plans)
        )


def undo(project: Project, target: str, *, dry_run: bool = False) -> Undone:
    """Undo a plan or a phase (see the module); with `dry_run`, only say what it would
    revert (checked as a real undo is, but for a dirty tree or a live run)."""
    git = Git(project.root)
    scope = _scope(project, target)
    if dry_run:
        return _planned(project, git, scope)
    from gsd.io.lock import repo_lock
    from gsd.run.execute import confined_hooks

    # a live run: refused, naming it; your git hooks run in the agents' sandbox, as in a
    # run (the trees its commits and checkouts hold are what agents wrote)
    with repo_lock(project.root), confined_hooks(project, git, os.environ):
        books = _Files(project, git, scope.plans).books
        _clean(git, books if not project.config.git.commit_docs else lambda _: False)
        found = _planned(project, git, scope)
        return _apply(project, git, scope, found)


def _scope(project: Project, target: str) -> _Scope:
    """The done plans `target` (a plan id or a phase) names; refused when none is done."""
    if is_plan_id(target):
        plan = project.find_plan(target)  # "did you mean" for an unknown id
        phase = project.phase(split_plan_id(plan.id)[0])
        if summaries.find(phase.path, plan.id) is None:
            where = (phase.path / f"{plan.id}-SUMMARY.md").relative_to(project.root)
            raise GsdError(
                f"plan {plan.id} is not done ({where} is not there): nothing to undo",
                hint="gsd status shows which plans are done",
            )
        return _Scope(f"plan {plan.id}", plan.id, [plan.id], [])
    phase = project.phase(target)  # "did you mean" for an unknown phase
    done = [p.id for p in project.phase_plans(phase) if summaries.find(phase.path, p.id)]
    if not done:
        raise GsdError(
            f"phase {phase.name} has no done plan: nothing to undo",
            hint="gsd status shows which plans are done",
        )
    return _Scope(f"phase {phase.number}", phase.number, done, [phase.number])


def _clean(git: Git, gsds: Callable[[str], bool]) -> None:
    """Refused on a tree with changes to tracked files (but those `gsds` calls gsd's:
    with `git.commit_docs` false, gsd's books are never committed), or a git operation
    half done."""
    busy = git.operation_in_progress()
    if busy:
        raise GsdError(
            f"a {busy} is in progress in {git.root}: gsd undo changed nothing",
            hint="finish or abort it first",
        )
    changed = sorted(p for p in git.status().changed if not gsds(p))
    if changed:
        first = visible(changed[0])
        raise GsdError(
            f"{first} has uncommitted changes: gsd undo changed nothing",
            hint="commit or stash them first (git stash), then run gsd undo again",
        )


def _planned(project: Project, git: Git, scope: _Scope) -> Undone:
    """The reverts that take the scope's plans back, newest first; refused when a plan
    that is done depends on one, or a later commit changed one of their files."""
    _dependents(project, scope)
    files = _Files(project, git, scope.plans)
    gone = reverts.reverted(git)
    own = reverts.own_commits(git, scope.plans, scope.phases, files.gsds, gone)
    for plan_id in scope.plans:
        if not any(_belongs(c, plan_id) for c in own.values()):
            raise GsdError(
                f"plan {plan_id} is done, but no commit of gsd's for it is in HEAD's history "
                "(its SUMMARY.md came another way): nothing gsd can undo",
                hint="revert its commits yourself (git revert)",
            )
    items, covered = reverts.reverts_of(git, own)
    # a docs commit of STATE.md and ROADMAP.md alone: derived again, nothing to revert
    items = [i for i in items if i.merge or not set(i.commit.files) <= files.derived]
    for item in items:
        paths = [p for p in item.commit.files if not files.books(p)]
        _later_work(git, scope, item, paths, covered | gone)
    steps = tuple(
        Step(sha=i.commit.sha, subject=i.commit.subject, merge=i.merge, files=i.commit.files)
        for i in items
    )
    tasks = sorted({t for c in own.values() for t in c.tasks if _task_of(t, scope.plans)})
    return Undone(scope=scope.name, plans=tuple(scope.plans), steps=steps, tasks=tuple(tasks))


def _task_of(key: str, plans: list[str]) -> bool:
    split = split_task_key(key)
    return split is not None and split[0] in plans


def _belongs(commit: reverts.Commit, plan_id: str) -> bool:
    keys = [split_task_key(t) for t in commit.tasks]
    return any(k is not None and k[0] == plan_id for k in keys) or commit.subject.startswith(
        f"docs({plan_id}): "
    )


def _dependents(project: Project, scope: _Scope) -> None:
    """Refused when a plan outside the scope that is done names one of its plans in
    `depends_on`."""
    for phase in project.phases():
        for plan in project.phase_plans(phase):
            if plan.id in scope.plans:
                continue
            needs = [d for d in plan.depends_on if d in scope.plans]
            if needs and summaries.find(phase.path, plan.id) is not None:
                line = plan.key_lines.get("depends_on", 1)
                raise GsdError(
                    f"plan {plan.id} depends on {needs[0]} and is done "
                    f"({plan.path}:{line}): "
                    f"gsd undo changed nothing",
                    hint=f"undo it first: gsd undo {plan.id}",
                )


def _later_work(
    git: Git, scope: _Scope, item: reverts.Revert, paths: list[str], covered: set[str]
) -> None:
    """Refused when a commit after `item` (none the undo reverts) changed one of `paths`."""
    later = reverts.changed_later(git, item.commit.sha, paths, covered)
    if not later:
        return
    commit = later[0]  # the newest: the first to take back
    path = visible(next((p for p in commit.files if p in paths), paths[0]))
    keys = [k for k in (split_task_key(t) for t in commit.tasks) if k is not None]
    if keys:
        raise GsdError(
            f"plan {keys[0][0]} changed {path} after {scope.name} was merged "
            f"({commit.sha[:12]}): gsd undo changed nothing",
            hint=f"undo it first: gsd undo {keys[0][0]}",
        )
    raise GsdError(
        f"commit {commit.sha[:12]} ({visible(commit.subject)}) changed {path} after "
        f"{scope.name} was merged: gsd undo changed nothing",
        hint=f"revert it first (git revert {commit.sha[:12]}), then run gsd undo again",
    )


def _apply(project: Project, git: Git, scope: _Scope, found: Undone) -> Undone:
    """The reverts made in a scratch checkout of HEAD, STATE.md and ROADMAP.md derived
    and committed there, then this checkout fast-forwarded to them: a conflict on the
    way leaves this checkout and its branch as they were."""
    files = _Files(project, git, scope.plans)
    items = [
        reverts.Revert(commit=reverts.Commit(s.sha, s.subject, (), s.files), merge=s.merge)
        for s in found.steps
    ]
    commit_docs = project.config.git.commit_docs
    made: list[str] = []
    derived: list[str] = []
    start = git.head()
    with reverts.scratch(git) as place:
        for item in items:
            made.append(reverts.revert(place, item, files.derived, files.appended) or "")
        if start is not None:  # the runs' logs are kept: they ran, and cost what they cost
            reverts.restore(place, start, files.log)
        if commit_docs:
            there = Project(place.root / project.root.relative_to(git.root))
            changes = derive.sync(there)
            derived = [c.path.relative_to(place.root).as_posix() for c in changes]
        made.append(
            reverts.mark_undone(
                place, f"docs({scope.label}): undo {scope.name}", found.tasks, derived
            )
        )
        _fast_forward(git, made[-1])
    if not commit_docs:  # nothing of gsd's is committed: derived in place, as a run does
        derived = [c.path.relative_to(git.root).as_posix() for c in derive.sync(project)]
    return Undone(
        scope=found.scope,
        plans=found.plans,
        steps=found.steps,
        tasks=found.tasks,
        made=tuple(made),
        derived=tuple(derived),
        warnings=tuple(_still_done(project, scope)),
    )


def _still_done(project: Project, scope: _Scope) -> list[str]:
    """A SUMMARY.md no commit carried (`git.commit_docs: false`) is still there after
    the reverts, and gsd deletes none of your uncommitted files: one warning a plan."""
    warnings = []
    for plan_id in scope.plans:
        left = project.summary_of(plan_id)
        if left is not None:
            where = visible(left.relative_to(project.root).as_posix())
            warnings.append(
                f"plan {plan_id} still counts as done: {where} is not committed "
                "(git.commit_docs is false) and gsd leaves uncommitted files alone; "
                "delete it to run the plan again"
            )
    return warnings


def _fast_forward(git: Git, tip: str) -> None:
    """This checkout moved up to `tip` (`git merge --ff-only`); refused, nothing changed,
    when git would overwrite a file (an untracked one where a revert puts a file back)."""
    done = git.git("merge", "--ff-only", "-q", tip, ok=(0, 1, 128))
    if done.status != 0:
        from gsd.io.git.command import first_reason

        raise GsdError(
            f"gsd undo could not move {git.root} to its reverts: "
            f"{first_reason(done.stderr) or 'git merge --ff-only failed'}; nothing was changed",
            hint="move the files git names away, then run gsd undo again",
        )
    git.noted_head()
