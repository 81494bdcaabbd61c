"""gsd's own records of a run (SPEC 7 steps 7 to 9): STATE.md and ROADMAP.md derived
when a plan is merged or a run stops, and the `docs(...)` commits that carry them and
the journal's lines (`gsd.run.journal`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from gsd.core import layout
from gsd.formats.files import save_text
from gsd.io.git.commits import Commits
from gsd.io.git.repo import Git
from gsd.io.plans.approvalsign import new_lines_signed
from gsd.io.plans.project import Project
from gsd.run import derive
from gsd.run.derivecache import DeriveCache
from gsd.run.journal import Journal

OWNED = derive.OWNED  # STATE.md and ROADMAP.md: derived, never counted up


class Books:
    """gsd's own files in the user's checkout (STATE.md, ROADMAP.md, the logs) and the
    `docs(...)` commits that carry them (SPEC 7 steps 7 to 9).

    The checkout is the user's: with `git.commit_docs` true, a file gsd would edit or
    append to that the user has changed and not committed is left alone (one warning),
    and a docs commit holds exactly the files gsd wrote, never anything else under
    `.planning/` (a draft plan, a notes file). With `git.commit_docs` false gsd edits its
    files in place and commits nothing, as that setting asks."""

    def __init__(self, project: Project, git: Git, journal: Journal, warn: Callable[[str], None]):
        self.project, self.git, self.journal, self.warn = project, git, journal, warn
        self.commit_docs = project.config.git.commit_docs
        self.written: set[str] = set()  # repo-relative paths gsd changed since its last commit
        self._left: set[str] = set()  # files left alone (warned about once)
        self._dirty: set[str] | None = None  # `looking`: one look at the checkout for a step
        self._looked: list[str] = []  # the files that look was at
        self.on_plan_branch = False  # the checkout is a plan's branch: STATE.md is not its
        self._cache: DeriveCache | None = None  # what `derive` read, kept between runs
        # `gsd approve` appends answers between runs; the file is gsd's, never the user's,
        # and taken in only when every new line is one `gsd approve` signed here
        approved = self.commit_docs and git.dirty_among([layout.APPROVALS])
        if approved and new_lines_signed(project.root):
            self.written.add(layout.APPROVALS)
        if self.commit_docs:  # a killed run's appends, made but never committed
            ours, warnings = journal.appends.left(git.dirty_among)
            for line in warnings:
                warn(line)
            if ours:
                Commits(git).commit_docs("docs: log lines of an interrupted run", ours)
        else:
            journal.settled()

    def _editable(self, rel: str) -> bool:
        if not self.commit_docs or rel in self.written:
            return True
        seen = self._dirty is not None and rel in self._looked
        dirty = self._dirty if seen and self._dirty is not None else self.git.dirty_among([rel])
        if rel in self._left or rel in dirty:
            if rel not in self._left:
                self._left.add(rel)
                self.warn(
                    f"{rel} has uncommitted changes of yours: gsd leaves it alone "
                    "(commit them, and gsd updates it on the next run)"
                )
            return False
        return True

    def candidates(self) -> list[str]:
        """Every file of the checkout the next bookkeeping step may write."""
        planning = self._rel(self.project.planning)
        return [
            f"{planning}/STATE.md",
            f"{planning}/ROADMAP.md",
            *self.journal.targets(),
            *self.journal.kept_targets(),
        ]

    @contextlib.contextmanager
    def looking(self) -> Iterator[None]:
        """One look (`git status` of `candidates`) at which of the files the books may
        write you have changed, for a whole step (a merge; a derive and its commit), not
        one per file. Within a step already looking, that look holds."""
        if not self.commit_docs or self._dirty is not None:
            yield
            return
        self._looked = self.candidates()
        self._dirty = self.git.dirty_among(self._looked)
        try:
            yield
        finally:
            self._dirty, self._looked = None, []

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.project.root).as_posix()

    def derive(self, *, flush: bool = True) -> None:
        """STATE.md and ROADMAP.md derived from the files in the checkout, by the code of
        `gsd sync` (SPEC 0): never counted up, the same bytes a sync after merging the
        plans' branches writes. `flush` first puts the journal's log lines in place (the
        failures the blockers come from). Nothing on a plan's own branch (`on_plan_branch`,
        a CI job's `execute-plan`): those files are the user's branch's, derived there."""
        with self.looking():
            self._derive(flush)

    def _derive(self, flush: bool) -> None:
        if flush:
            self.written.update(self.journal.flush(self._editable))
        if self.on_plan_branch:
            return
        planning = self.project.planning
        state_path = planning / layout.STATE_FILE
        if self._cache is None:
            self._cache = DeriveCache.load(self.git.git_dir)
        self._cache.begin()
        facts = derive.gather(self.project, self._cache)
        self._cache.save()
        if not state_path.exists() and any(p.blocker for ph in facts.phases for p in ph.plans):
            if self._editable(self._rel(state_path)):  # where a person looks first
                save_text(state_path, "# Project State\n")
                self.written.add(self._rel(state_path))
        present = [planning / name for name in OWNED if (planning / name).is_file()]
        names = tuple(path.name for path in present if self._editable(self._rel(path)))
        for change in derive.sync(self.project, files=names, facts=facts):
            self.written.add(self._rel(change.path))

    def pending(self) -> list[str]:
        """Flush the journal into the files it may append to, and return every path gsd
        wrote since its last commit (what the next docs or merge commit carries)."""
        self.written.update(self.journal.flush(self._editable))
        # an aborted merge takes back the new files it staged (a RESULT.txt): gone
        self.written = {p for p in self.written if (self.project.root / p).exists()}
        return sorted(self.written)

    def undo(self, git: Git) -> None:
        """Take back gsd's uncommitted edits of tracked files (their commit failed): they
        were the user's files as committed before gsd touched them (`_editable`)."""
        tracked = [p for p in self.written if p not in git.untracked_files()]
        if tracked and self.commit_docs:
            git.restore_paths("HEAD", tracked, staged=False)
        self.written.clear()

    def committed(self) -> None:
        """The paths `pending` returned are in a commit now."""
        self.written.clear()
        self.journal.settled()

    def commit(self, message: str) -> None:
        """gsd's own bookkeeping, committed when `git.commit_docs` is true (SPEC 7 step 9);
        only the files gsd wrote, whatever else is changed or new in the checkout."""
        paths = self.pending()
        if self.commit_docs and paths:
            Commits(self.git).commit_docs(message, paths)
            self.committed()
        elif not self.commit_docs:
            self.journal.settled()  # nothing is ever committed: the appends are final
