"""Running the rules of `gsd validate` over plan files: a phase at a time, forked for big trees."""

from __future__ import annotations

import gc
import os
import posixpath
import stat
from collections.abc import Iterable
from functools import cached_property

from gsd.core import layout
from gsd.core.errors import InputError
from gsd.core.ids import parse_phase_name
from gsd.core.models import Diagnostic, Suppression
from gsd.core.rules import Report, escalate
from gsd.core.rules.filerules import misnamed_plan, unread_setting
from gsd.core.rules.phaserules import check_phase
from gsd.core.rules.planrules import check_plan
from gsd.core.rules.select import CODES_WORDS, Selection, parse_codes, suppressed
from gsd.formats.lines import suppressions
from gsd.io.plans.project import Project
from gsd.io.plans.sources import GitBlobs, Source, Unreadable, WorkingTree

# Below this many plans, starting worker processes costs more than it saves.
PARALLEL_MIN_PLANS = 400
# Paths whose symlink answer (and real path) is kept: a phase's plans name the same files;
# a cache that outgrows this starts again, so 10,000 plans cost no more memory than 100.
PATHS_KEPT = 8192


def validate(
    project: Project,
    targets: Iterable[str],
    *,
    strict: bool = False,
    jobs: int | None = None,
    selection: Selection | None = None,
) -> Report:
    """Check the plan files under `targets` (repo-relative paths).

    Rules that look across plans (dependencies, waves, ids) read every plan of
    the phase directory, but only the requested files are reported on. Large
    trees are checked by `jobs` processes (default: one per CPU), a phase
    directory each at a time. With a `selection` (`gsd validate`), only the rules
    it keeps are reported, and the files' `<!-- gsd: ignore -->` comments count.
    """
    targets = list(targets)
    requested: dict[str, None] = {}
    for target in targets:
        requested.update(dict.fromkeys(project.plans_under(target)))
    folders: dict[str, list[str]] = {}
    for path in requested:
        folders.setdefault(posixpath.dirname(path), []).append(path)
    _prefetch(project, folders, targets)
    facts = ProjectFacts(project)
    jobs = jobs or os.cpu_count() or 1
    suppress = selection is not None
    if jobs > 1 and len(requested) >= PARALLEL_MIN_PLANS and len(folders) > 1:
        found = _check_in_workers(facts, list(folders.values()), jobs, suppress)
    else:
        found = _check_folders(facts, list(folders.values()), suppress)
    misnamed = misnamed_plans(project, targets)
    found.extend(_unsuppressed(misnamed, _comments(project, misnamed)) if suppress else misnamed)
    found.extend(unread_settings(project, targets))
    if selection is not None:
        found = [d for d in found if selection.keeps(d.code)]
    diagnostics = sorted(set(escalate(found, strict)), key=Diagnostic.sort_key)
    return Report(len(requested), diagnostics, list(requested))


def _prefetch(project: Project, folders: dict[str, list[str]], targets: list[str]) -> None:
    """From git (the index or a commit), every blob the checks read, in one `git cat-file
    --batch`: the plans named, the others of their phases, the roster and, for all of
    `.planning/`, config.json. The pre-commit hook then starts two git processes, not four."""
    if not isinstance(project.source, GitBlobs):
        return
    planning = layout.PLANNING
    wanted = [
        p for folder, paths in folders.items() for p in (*paths, *project.source.plans_in(folder))
    ]
    wanted.append(f"{planning}/{layout.ROSTER_FILE}")
    if planning in targets:
        wanted.append(f"{planning}/{layout.CONFIG_FILE}")
    project.preload(list(dict.fromkeys(wanted)))


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
                misnamed = misnamed_plan(f"{rel}/{name}", phase.number)
                if misnamed is not None:
                    found.append(misnamed)
    return found


def unread_settings(project: Project, targets: Iterable[str]) -> list[Diagnostic]:
    """GSD060 for each key of config.json gsd does not read where it reads the section
    (gsd.formats.configkeys), when all of `.planning/` is validated."""
    if layout.PLANNING not in targets:
        return []
    from gsd.formats.configkeys import unread_keys

    path = f"{layout.PLANNING}/{layout.CONFIG_FILE}"
    try:
        text = project.source.read(path).decode("utf-8")
    except (Unreadable, UnicodeDecodeError):
        return []  # gsd doctor and a run say why
    return [unread_setting(path, k.line, k.message) for k in unread_keys(text)]


def configured_selection(source: Source) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """config.json's `validate.select` (None: not set) and `validate.ignore`, read without
    pydantic (the git hook's path; gsd.formats.settings checks them the same way) from
    where the plans are read: the index for `--staged`, the working tree otherwise."""
    path = f"{layout.PLANNING}/{layout.CONFIG_FILE}"
    try:
        text = source.read(path).decode("utf-8")
        import json  # not needed, nor imported, in a project without config.json

        data = json.loads(text)
    except (Unreadable, UnicodeDecodeError, ValueError, RecursionError):
        return None, ()  # none, or broken: a run and gsd doctor say why
    section = data.get("validate") if isinstance(data, dict) else None
    if section is None:
        return None, ()
    from gsd.formats.configkeys import key_lines  # not needed without a `validate` section

    lines = key_lines(text)
    if not isinstance(section, dict):
        where = f"{path}:{lines.get(('validate',), 1)}"
        raise InputError(f"{where}: `validate` must be an object, not {json.dumps(section)}")
    found: dict[str, tuple[str, ...]] = {}
    for key in ("select", "ignore"):
        if key not in section:
            continue
        value, where = section[key], f"{path}:{lines.get(('validate', key), 1)}"
        if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
            shown = json.dumps(value, ensure_ascii=False)
            raise InputError(f"{where}: `validate.{key}` must be {CODES_WORDS}, not {shown}")
        found[key] = parse_codes(value, f"{where}: `validate.{key}`")
    return found.get("select"), found.get("ignore", ())


class ProjectFacts:
    """What the rules know of a project (core.rules.Facts): its roster and plan ids, where
    its symlinks lead, and which model names a runner takes."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._root = str(project.root)
        self._real = RealPaths()
        self._leaves: dict[str, bool] = {}  # normal path -> leaves through a symlink

    @cached_property
    def roster(self) -> dict[str, str] | None:
        return self.project.roster

    @cached_property
    def all_plan_ids(self) -> set[str]:
        return self.project.all_plan_ids

    def leaves_through_symlink(self, normal: str) -> bool:
        """Does `normal` (repo-relative, no `..`) resolve outside the repository? Asked
        once per path: a plan names its files in `files_modified` and in its tasks."""
        leaves = self._leaves.get(normal)
        if leaves is None:
            if len(self._leaves) >= PATHS_KEPT:
                self._leaves.clear()
            real_root = self._real.path(self._root)
            real = self._real.path(os.path.join(real_root, normal))
            leaves = real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep)
            self._leaves[normal] = leaves
        return leaves

    def model_problem(self, model: str) -> str | None:
        from gsd.formats.runners.invocation import check_model  # no pydantic: fine on the hook path

        try:
            check_model(model)
        except ValueError as exc:
            return str(exc)
        return None


class RealPaths:
    """`os.path.realpath`, one lstat per new path: parents come from the cache, and
    nothing below a path that is not there is looked up (it cannot be a link)."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[str, bool]] = {}  # path -> (real path, there?)

    def path(self, path: str) -> str:
        return self._resolve(path)[0]

    def _resolve(self, path: str) -> tuple[str, bool]:
        known = self._known.get(path)
        if known is not None:
            return known
        if len(self._known) >= PATHS_KEPT:
            self._known.clear()
        parent, name = os.path.split(path)
        if not name or parent == path:
            found = (os.path.realpath(path), True)
        else:
            real_parent, there = self._resolve(parent)
            real = os.path.join(real_parent, name)
            found = (real, False)
            if there:
                try:
                    mode = os.lstat(real).st_mode
                except (OSError, ValueError):
                    mode = None
                if mode is not None:
                    found = (os.path.realpath(real) if stat.S_ISLNK(mode) else real, True)
        self._known[path] = found
        return found


def _unsuppressed(
    found: list[Diagnostic], comments: dict[str, tuple[Suppression, ...]]
) -> list[Diagnostic]:
    """`found` less what the `<!-- gsd: ignore -->` comments of each file hide, with
    GSD047 for each code they name that is no rule's."""
    by_path: dict[str, list[Diagnostic]] = {}
    for d in found:
        by_path.setdefault(d.path, []).append(d)
    kept: list[Diagnostic] = []
    for path, written in comments.items():
        kept.extend(suppressed(path, written, by_path.pop(path, [])))
    kept.extend(d for rest in by_path.values() for d in rest)
    return kept


def _comments(project: Project, misnamed: list[Diagnostic]) -> dict[str, tuple[Suppression, ...]]:
    """The `<!-- gsd: ignore -->` comments of misnamed plan files (they are read for
    nothing else)."""
    found: dict[str, tuple[Suppression, ...]] = {}
    for path in dict.fromkeys(d.path for d in misnamed):
        try:
            found[path] = tuple(suppressions(project.source.read(path).decode("utf-8", "replace")))
        except Unreadable:
            continue
    return found


def _check_folders(
    facts: ProjectFacts, folders: list[list[str]], suppress: bool = False
) -> list[Diagnostic]:
    """Every rule for the given plan files, grouped by phase directory; with `suppress`,
    less what the files' `<!-- gsd: ignore -->` comments hide."""
    project = facts.project
    found: list[Diagnostic] = []
    # Parsed plans hold no reference cycles: the collector would only walk them.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for paths in folders:
            project.preload(paths)
            wanted = set(paths)
            here = [d for path in paths for d in check_plan(project.plan(path), facts)]
            graph = project.graph_of(paths[0])
            plans = [p for p in project.siblings(paths[0]) if p.readable]
            here.extend(d for d in check_phase(plans, graph, facts) if d.path in wanted)
            if suppress:
                comments = {p: project.plan(p).suppressions for p in paths}
                here = _unsuppressed(here, {p: c for p, c in comments.items() if c})
            found.extend(here)
            project.release(posixpath.dirname(paths[0]))  # done with this phase
    finally:
        if collecting:
            gc.enable()
    return found


_WORK: tuple[ProjectFacts, list[list[list[str]]], bool] | None = None  # set before the fork


def _check_chunk(index: int) -> list[Diagnostic]:
    assert _WORK is not None
    facts, chunks, suppress = _WORK
    return _check_folders(facts, chunks[index], suppress)


def _check_in_workers(
    facts: ProjectFacts, folders: list[list[str]], jobs: int, suppress: bool = False
) -> list[Diagnostic]:
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
    _WORK = (facts, chunks, suppress)
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(_check_chunk, range(jobs))
    finally:
        _WORK = None
    return [d for result in results for d in result]
