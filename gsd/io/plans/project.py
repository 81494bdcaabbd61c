"""A project on disk (or in the git index, or a commit): its root, plans, phases and roster."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from gsd.core import layout
from gsd.core.errors import UsageError
from gsd.core.graph import PhaseGraph, build
from gsd.core.ids import is_plan_id, plan_id_from_filename, split_plan_id
from gsd.core.models import Plan
from gsd.core.words import did_you_mean
from gsd.formats import nofollow
from gsd.formats.planning import plan as plan_format
from gsd.formats.planning import roster
from gsd.io.plans.phases import Phase, list_archived_phases, list_phases, resolve_phase
from gsd.io.plans.sources import PLAN_SUFFIX, GitBlobs, GitIndex, Source, Unreadable, WorkingTree

if TYPE_CHECKING:  # heavy (pydantic): imported where they are used, never on the hook path
    from gsd.formats.settings import Settings
    from gsd.io.confine.sandbox import Settings as SandboxSettings
    from gsd.io.dispatch import Dispatcher
    from gsd.io.plans.agentscan import AgentSet, Scan


NO_PLANNING_HINT = (
    f"run gsd init to create one, or run gsd in a project that has {layout.PLANNING}/"
)


def find_root(start: Path, *, hint: str = NO_PLANNING_HINT) -> Path:
    """The nearest directory at or above `start` that holds `.planning/` (or `.git`).

    `hint` says what to do when there is neither: only a command that takes plan files
    (`gsd validate`) may offer passing them."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / layout.PLANNING).is_dir():
            return candidate
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    raise UsageError(
        f"no {layout.PLANNING}/ directory in {start} or above",
        hint=hint,
    )


class Project:
    """Plans read once and shared by every rule and command of one run."""

    def __init__(
        self,
        root: Path,
        *,
        staged: bool = False,
        paths: Sequence[str] = (),
        source: Source | None = None,
    ) -> None:
        """`staged` reads the git index; of it, only `.planning/` and `paths` are listed."""
        self.root = root
        nofollow.trust(root)  # gsd's writes in the project follow no link an agent made
        if source is None:
            source = GitIndex(root, [layout.PLANNING, *paths]) if staged else WorkingTree(root)
        self.source: Source = source
        self._plans: dict[str, Plan] = {}
        self._graphs: dict[str, PhaseGraph] = {}
        self._listings: dict[str, list[str]] = {}  # plan files directly in a folder

    @property
    def planning(self) -> Path:
        return self.root / layout.PLANNING

    def plan(self, path: str) -> Plan:
        """The plan at a repo-relative path, parsed once; unreadable files become GSD050."""
        found = self._plans.get(path)
        if found is None:
            try:
                found = plan_format.parse_bytes(self.source.read(path), path)
            except Unreadable as exc:
                found = plan_format.unreadable(path, 1, str(exc))
            self._plans[path] = found
        return found

    def plans_under(self, target: str) -> list[str]:
        """The plan files a command line names: a plan file, or those below a directory.

        The one place that decides, for the working tree and the index alike: a file
        is a plan when its name ends in -PLAN.md (as a pre-commit `files:` pattern
        would pick it); naming any other file is a usage error, not a lint finding.
        """
        if not self.source.exists(target):
            raise UsageError(f"{target}: no such file or directory")
        if target.endswith(PLAN_SUFFIX):
            return [target]  # read as a plan; one that is not a regular file is GSD050
        if not self.source.is_dir(target):
            hint = f"plan files are named like 01-02-name{PLAN_SUFFIX}"
            raise UsageError(f"{target}: not a plan file", hint=hint)
        return self.source.plan_paths(target)

    def folder_plans(self, folder: str) -> list[Plan]:
        """The plans directly in one directory (a phase), in file-name order."""
        paths = self.plan_files(folder)
        self.preload(paths)
        return [self.plan(p) for p in paths]

    def plan_files(self, folder: str) -> list[str]:
        """The plan files directly in one directory, in file-name order, listed once."""
        paths = self._listings.get(folder)
        if paths is None:
            paths = self._listings[folder] = self.source.plans_in(folder)
        return paths

    def siblings(self, path: str) -> list[Plan]:
        """Every plan of the phase directory holding `path` (the phase graph's input)."""
        plans = self.folder_plans(posixpath.dirname(path))
        return plans if any(p.path == path for p in plans) else [*plans, self.plan(path)]

    def graph_of(self, path: str) -> PhaseGraph:
        """The phase graph of the directory holding `path`, built once per directory.

        Readable plans only: an unreadable one is GSD050 and has nothing to schedule.
        """
        folder = posixpath.dirname(path)
        if folder not in self._graphs:
            self._graphs[folder] = build([p for p in self.siblings(path) if p.readable])
        return self._graphs[folder]

    def release(self, folder: str) -> None:
        """Forget the plans and graph of one directory (a big tree need not fit in memory)."""
        self._graphs.pop(folder, None)
        for path in self._listings.pop(folder, []):
            self._plans.pop(path, None)

    def preload(self, paths: list[str]) -> None:
        if isinstance(self.source, GitBlobs):
            self.source.preload(p for p in paths if p not in self._plans)

    @cached_property
    def all_plan_ids(self) -> set[str]:
        """Ids of every plan in `.planning/`, from file names alone (nothing is read)."""
        if not self.source.exists(layout.PLANNING):
            return set()
        ids = (plan_id_from_filename(p) for p in self.source.plan_paths(layout.PLANNING))
        return {i for i in ids if i}

    @cached_property
    def roster(self) -> dict[str, str] | None:
        """Specialists named in available_agents.md; None when there is no roster."""
        try:
            data = self.source.read(f"{layout.PLANNING}/{layout.ROSTER_FILE}")
        except Unreadable:
            return None
        return roster.parse(data.decode("utf-8", "replace"))

    @cached_property
    def config(self) -> Settings:
        """config.json's settings, validated once, here (an InputError names key and line)."""
        from gsd.formats.settings import load

        return load(self.planning)

    def agents(self, *, bodies: bool = True) -> tuple[AgentSet, list[str]]:
        """Every agent gsd can run here (by name or `ns:name` alias) and the warnings:
        one summary line per folder with trouble, one per missing agent_paths folder.
        Without `bodies`, the agents leave out their persona text (a listing)."""
        found = self.agent_scan(bodies=bodies)
        return found.agents, [*self.missing_agent_paths(), *found.warnings()]

    def agent_scan(self, *, bodies: bool = True) -> Scan:
        """Every agent folder searched and every file in it (`gsd agents check`)."""
        from gsd.io.plans.agentscan import scan, search_folders

        return scan(search_folders(self.root, self._agent_paths()), bodies=bodies)

    def _agent_paths(self) -> list[str]:
        return self.config.specialists.agent_paths

    def missing_agent_paths(self) -> list[str]:
        from gsd.io.plans.agentscan import extra_folder

        return [
            f"config.json: specialists.agent_paths: {entry} is not a folder ({folder})"
            for entry in self._agent_paths()
            if not (folder := extra_folder(self.root, entry)).is_dir()
        ]

    def sandbox(self) -> SandboxSettings:
        """config.json's `sandbox` (SPEC 0): on unless `enabled` is false; `writable` adds
        paths every agent may write, `connect` ports they may connect to, `pass_env` the
        credential variables and `readable` the credential files they get after all;
        `memory` and `processes` are each agent's limits (gsd.io.confine.limits). Agents work in
        the user's checkout only with `workflow.use_worktrees: false`."""
        from gsd.formats.settings import size_bytes
        from gsd.io.confine.limits import Limits
        from gsd.io.confine.sandbox import Settings

        settings = self.config
        connect = settings.sandbox.connect
        return Settings(
            enabled=settings.sandbox.enabled,
            writable=tuple(settings.sandbox.writable),
            root=self.root,
            in_place=not settings.workflow.use_worktrees,
            connect=None if isinstance(connect, str) else tuple(connect),  # "any": no rule
            pass_env=tuple(settings.sandbox.pass_env),
            readable=tuple(settings.sandbox.readable),
            limits=Limits(size_bytes(settings.sandbox.memory), settings.sandbox.processes),
        )

    def worktrees_folder(
        self, git_root: Path, common_dir: Path, environ: Mapping[str, str]
    ) -> Path:
        """Where the repository's plan worktrees live: `gsd.io.statedir.worktrees_folder`
        with config.json's `workflow.worktree_dir`."""
        from gsd.io.statedir import worktrees_folder

        configured = self.config.workflow.worktree_dir
        config_file = self.planning / layout.CONFIG_FILE
        return worktrees_folder(git_root, common_dir, configured, environ, config_file)

    def dispatcher(
        self, *, cli_timeout: float | None = None, environ: Mapping[str, str] = os.environ
    ) -> tuple[Dispatcher, list[str]]:
        """The agents found here, laid out for this project's plans; and the warnings
        of broken agent files (the caller prints them)."""
        from gsd.io.dispatch import Dispatcher

        found, warnings = self.agents()
        dispatcher = Dispatcher(
            found, self.roster, self.config, cli_timeout=cli_timeout, environ=environ
        )
        return dispatcher, warnings

    def phase(self, spec: str) -> Phase:
        return resolve_phase(self.planning, spec)

    def find_plan(self, plan_id: str) -> Plan:
        """The plan with this id, read from its own phase (`01-02` is in phase 1) alone.

        A duplicate id (GSD045) finds the plan the phase graph runs.
        """
        if not is_plan_id(plan_id):
            raise UsageError(f"{plan_id!r} is not a plan id", hint="plan ids look like 01-02")
        try:
            phase = self.phase(split_plan_id(plan_id)[0])
        except UsageError:
            phase = None
        found = None if phase is None else self.phase_graph(phase).plans.get(plan_id)
        if found is None:
            close = did_you_mean(plan_id, sorted(self.all_plan_ids))
            where = self.planning / layout.PHASES
            raise UsageError(f"no plan {plan_id} under {where}", hint=close) from None
        return found

    def phase_plans(self, phase: Phase) -> list[Plan]:
        return self.folder_plans(phase.path.relative_to(self.root).as_posix())

    def phase_graph(self, phase: Phase) -> PhaseGraph:
        """The schedule of a phase: `graph_of` its directory (the same cached graph)."""
        plans = self.phase_plans(phase)
        return self.graph_of(plans[0].path) if plans else build([])

    def phases(self) -> list[Phase]:
        """The current phases, in order: what a run executes."""
        return list_phases(self.planning)

    def summary_of(self, plan_id: str) -> Path | None:
        """A plan's SUMMARY.md in whichever phase it is, current or archived (None: the
        plan is not done); what a dependency waits for."""
        from gsd.io.plans import summaries  # not needed on the validate hook path

        for phase in [*self.phases(), *self.archived_phases()]:
            found = summaries.find(phase.path, plan_id)
            if found is not None:
                return found
        return None

    def dependency_summaries(self, plan: Plan) -> list[tuple[str, str | None]]:
        """The SUMMARY.md text of each plan `plan` depends on (None: not done), found as
        `summary_of` finds them, archived ones included (`gsd mcp` shows them too)."""
        found: list[tuple[str, str | None]] = []
        for dep in plan.depends_on:
            path = self.summary_of(dep)
            found.append(
                (dep, path.read_text(encoding="utf-8", errors="replace") if path else None)
            )
        return found

    def archived_phases(self) -> list[Phase]:
        """Shipped milestones' phases, newest milestone first: shown, never run unless named."""
        return list_archived_phases(self.planning)
