"""Running the rules of `gsd validate` over plan files: a phase at a time, forked for big trees."""

from __future__ import annotations

import gc
import os
import posixpath
from collections.abc import Iterable
from functools import cached_property, lru_cache

from gsd.core import layout
from gsd.core.ids import parse_phase_name
from gsd.core.models import Diagnostic
from gsd.core.phaserules import check_phase, expected_plan_name
from gsd.core.planrules import check_plan
from gsd.core.rules import RULES, Report, escalate
from gsd.io.plans.project import Project
from gsd.io.plans.sources import Unreadable, WorkingTree

# Below this many plans, starting worker processes costs more than it saves.
PARALLEL_MIN_PLANS = 400


def validate(
    project: Project, targets: Iterable[str], *, strict: bool = False, jobs: int | None = None
) -> Report:
    """Check the plan files under `targets` (repo-relative paths).

    Rules that look across plans (dependencies, waves, ids) read every plan of
    the phase directory, but only the requested files are reported on. Large
    trees are checked by `jobs` processes (default: one per CPU), a phase
    directory each at a time.
    """
    targets = list(targets)
    requested: dict[str, None] = {}
    for target in targets:
        requested.update(dict.fromkeys(project.plans_under(target)))
    folders: dict[str, list[str]] = {}
    for path in requested:
        folders.setdefault(posixpath.dirname(path), []).append(path)
    facts = ProjectFacts(project)
    jobs = jobs or os.cpu_count() or 1
    if jobs > 1 and len(requested) >= PARALLEL_MIN_PLANS and len(folders) > 1:
        found = _check_in_workers(facts, list(folders.values()), jobs)
    else:
        found = _check_folders(facts, list(folders.values()))
    found.extend(misnamed_plans(project, targets))
    found.extend(unread_settings(project, targets))
    diagnostics = sorted(set(escalate(found, strict)), key=Diagnostic.sort_key)
    return Report(len(requested), diagnostics, list(requested))


def misnamed_plans(project: Project, targets: Iterable[str]) -> list[Diagnostic]:
    """GSD046 for each file of a phase folder below a named directory that looks like a
    plan but will never be read as one. The working tree only: a hook names files."""
    if not isinstance(project.source, WorkingTree):
        return []
    found: list[Diagnostic] = []
    for target in targets:
        base = project.root / target
        if not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in (".git", "node_modules")]
            phase = parse_phase_name(os.path.basename(dirpath))
            if phase is None:
                continue
            rel = os.path.relpath(dirpath, project.root).replace(os.sep, "/")
            for name in sorted(filenames):
                expected = expected_plan_name(name, phase.number)
                if expected is not None:
                    found.append(_misnamed(f"{rel}/{name}", expected))
    return found


def _misnamed(path: str, expected: str) -> Diagnostic:
    message = (
        f"{posixpath.basename(path)} looks like a plan but gsd reads only *-PLAN.md "
        f"files: rename it {expected}"
    )
    return Diagnostic(
        path=path, line=1, col=1, severity=RULES["GSD046"].severity, code="GSD046", message=message
    )


def unread_settings(project: Project, targets: Iterable[str]) -> list[Diagnostic]:
    """GSD060 for each key of config.json gsd does not read where it reads the section
    (gsd.formats.configkeys), when all of `.planning/` is validated."""
    from gsd.formats.configkeys import unread_keys

    if layout.PLANNING not in targets:
        return []
    path = f"{layout.PLANNING}/{layout.CONFIG_FILE}"
    try:
        text = project.source.read(path).decode("utf-8")
    except (Unreadable, UnicodeDecodeError):
        return []  # gsd doctor and a run say why
    severity = RULES["GSD060"].severity
    return [
        Diagnostic(
            path=path, line=k.line or 1, col=1, severity=severity, code="GSD060", message=k.message
        )
        for k in unread_keys(text)
    ]


class ProjectFacts:
    """What the rules know of a project (core.rules.Facts): its roster and plan ids, where
    its symlinks lead, and which model names a runner takes."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._root = str(project.root)

    @cached_property
    def roster(self) -> dict[str, str] | None:
        return self.project.roster

    @cached_property
    def all_plan_ids(self) -> set[str]:
        return self.project.all_plan_ids

    def leaves_through_symlink(self, normal: str) -> bool:
        return _leaves_through_symlink(self._root, normal)

    def model_problem(self, model: str) -> str | None:
        from gsd.formats.runners.invocation import check_model  # no pydantic: fine on the hook path

        try:
            check_model(model)
        except ValueError as exc:
            return str(exc)
        return None


def _leaves_through_symlink(root: str, normal: str) -> bool:
    """Does `normal` (repo-relative, no `..`) resolve outside the repository?"""
    real_root = _realpath(root)
    real = _realpath(os.path.join(real_root, normal))
    return real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep)


@lru_cache(maxsize=8192)
def _realpath(path: str) -> str:
    """`os.path.realpath`, one lstat per new directory: parents come from the cache."""
    parent, name = os.path.split(path)
    if not name or parent == path:
        return os.path.realpath(path)
    real = os.path.join(_realpath(parent), name)
    return os.path.realpath(real) if os.path.islink(real) else real


def _check_folders(facts: ProjectFacts, folders: list[list[str]]) -> list[Diagnostic]:
    """Every rule for the given plan files, grouped by phase directory."""
    project = facts.project
    found: list[Diagnostic] = []
    # Parsed plans hold no reference cycles: the collector would only walk them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for paths in folders:
            project.preload(paths)
            wanted = set(paths)
            for path in paths:
                found.extend(check_plan(project.plan(path), facts))
            graph = project.graph_of(paths[0])
            plans = [p for p in project.siblings(paths[0]) if p.readable]
            found.extend(d for d in check_phase(plans, graph, facts) if d.path in wanted)
            project.release(posixpath.dirname(paths[0]))  # done with this phase
    finally:
        if collecting:
            gc.enable()
    return found


_WORK: tuple[ProjectFacts, list[list[list[str]]]] | None = None  # set before the fork


def _check_chunk(index: int) -> list[Diagnostic]:
    assert _WORK is not None
    facts, chunks = _WORK
    return _check_folders(facts, chunks[index])


def _check_in_workers(facts: ProjectFacts, folders: list[list[str]], jobs: int) -> list[Diagnostic]:
    """Fork `jobs` workers that share the parent's state; only diagnostics come back."""
    import multiprocessing

    global _WORK
    _ = (facts.all_plan_ids, facts.roster)  # computed once, before the fork
    total = sum(len(paths) for paths in folders)
    chunks: list[list[list[str]]] = [[] for _ in range(jobs)]
    done = 0
    for paths in folders:  # contiguous chunks of about equal plan counts
        chunks[min(jobs - 1, done * jobs // total)].append(paths)
        done += len(paths)
    _WORK = (facts, chunks)
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(_check_chunk, range(jobs))
    finally:
        _WORK = None
    return [d for result in results for d in result]
