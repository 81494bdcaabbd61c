"""gsd's own records of a run (SPEC 7 steps 7 to 9): the journal of log lines, STATE.md
and ROADMAP.md derived when a plan is merged or a run stops, and the `docs(...)` commits."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from gsd import derive, errorlog, execlog, state
from gsd.approvals import APPROVALS
from gsd.files import append_line, write_atomic
from gsd.git import Git
from gsd.models import split_plan_id
from gsd.project import Project
from gsd.records import ANY_SIZE, read_private

# Logs written during a run go to a journal inside .git first and reach .planning/ just
# before each docs commit: the tracked tree stays clean between tasks (so checkpoints
# see only the agent's work) and a rollback can never take log lines back.
JOURNALED = (".planning/execution-log.jsonl", ".planning/specialist-errors.jsonl")
OWNED = derive.OWNED  # STATE.md and ROADMAP.md: derived, never counted up
# the only whole files the journal keeps: a phase's NN-MM-RESULT.txt (SPEC 1)
_RESULT_FILE = re.compile(r"\.planning/phases/[^/]+/[^/]+-RESULT\.txt")
RESULT_BYTES = 1 << 20  # NN-MM-RESULT.txt keeps the last MiB of an agent's output


class Journal:
    """The run's log lines, kept in .git/gsd/journal until the next docs commit."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.folder = git.git_dir / "gsd" / "journal"
        self.flushed: dict[str, bytes] = {}  # what the last flush appended, by target
        self.replaced: list[str] = []  # the whole files it put in place

    def path(self, target: str) -> Path:
        return self._own(self.folder / Path(target).name)

    def _own(self, path: Path) -> Path:
        """`path`, safe to write: every folder from .git/gsd down to it a real folder and
        the file a regular one or nothing. Without a sandbox an agent can plant a link
        here; it is removed, never followed (gsd would append its log lines to, or commit,
        whatever the link points at)."""
        base = self.git.git_dir
        for depth in range(1, len(path.relative_to(base).parts)):
            folder = base.joinpath(*path.relative_to(base).parts[:depth])
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                folder.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or (path.exists() and not path.is_file()):
            path.unlink()
        return path

    @property
    def errors(self) -> Path:
        """Where failures are appended (taskrun's `error_log`)."""
        return self.path(JOURNALED[1])

    def event(self, kind: str, **fields: object) -> None:
        execlog.append(self.path(JOURNALED[0]), execlog.event(kind, **fields))

    def error(self, phase: str, plan_id: str, kind: str, details: str, where: str) -> None:
        """A failure that is no task's attempt (a merge) in the error log."""
        errorlog.append(
            self.errors,
            errorlog.ErrorRecord(phase=phase, plan=split_plan_id(plan_id)[1], task="-",
                                 specialist="gsd", error_type=kind, details=details,
                                 git_state=where),  # fmt: skip
        )

    def keep_output(self, target: str, output: Path) -> None:
        """The raw output of an agent run, for `target` (a phase's `NN-MM-RESULT.txt`,
        SPEC 1): its last RESULT_BYTES, replacing what an earlier attempt left."""
        try:
            with open(output, "rb") as handle:
                handle.seek(max(0, handle.seek(0, os.SEEK_END) - RESULT_BYTES))
                data = handle.read()
        except OSError:
            return  # the agent never started: nothing was printed
        write_atomic(self._own(self.folder / "files" / target), data.decode("utf-8", "replace"))

    def kept_targets(self) -> list[str]:
        """The whole files (RESULT.txt) the journal holds for the next flush."""
        kept = self.folder / "files"
        if not kept.is_dir() or kept.is_symlink():
            return []
        return sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*") if p.is_file())

    def discard(self) -> None:
        for target in JOURNALED:
            self.path(target).unlink(missing_ok=True)
        shutil.rmtree(self.folder / "files", ignore_errors=True)

    def flush(self, may_write: Callable[[str], bool] = lambda _: True) -> list[str]:
        """Append what the journal holds to the files in .planning/, and put the whole
        files it keeps in place; return the paths written. A target `may_write` refuses
        (the user changed it and has not committed) keeps its lines here for later."""
        self.flushed, self.replaced = {}, []
        for target in JOURNALED:
            source = self.path(target)
            if not may_write(target):
                continue
            data = _read_own(source)
            if data:
                if not data.endswith(b"\n"):
                    data = data[: data.rfind(b"\n") + 1]  # a torn line from a crash
                if data:  # the same locked append as every log line (files.append_line)
                    append_line(self.git.root / target, data)
                    self.flushed[target] = data
            source.unlink(missing_ok=True)
        kept = self.folder / "files"
        ours = kept.is_dir() and not (kept.is_symlink() or self.folder.is_symlink())
        for source in sorted(kept.rglob("*")) if ours else []:
            target = source.relative_to(kept).as_posix()
            if not _RESULT_FILE.fullmatch(target):
                continue  # not a file gsd keeps here: never written anywhere
            data = _read_own(source) if may_write(target) else None
            if data is not None:  # whole files (RESULT.txt): replaced, not appended
                write_atomic(self.git.root / target, data.decode("utf-8", "replace"))
                source.unlink()
                self.replaced.append(target)
        return [*self.flushed, *self.replaced]

    def unflush(self) -> None:
        """Take back the last flush into the journal (its commit failed and was undone)."""
        for target, data in self.flushed.items():
            append_line(self.path(target), data)
        self.flushed = {}


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
        self.commit_docs = project.config.flag("git.commit_docs")
        self.written: set[str] = set()  # repo-relative paths gsd changed since its last commit
        self._left: set[str] = set()  # files left alone (warned about once)
        self._dirty: set[str] | None = None  # `seen`: one look at the checkout for a step
        self.on_plan_branch = False  # the checkout is a plan's branch: STATE.md is not its
        # `gsd approve` appends answers between runs; the file is gsd's, never the user's
        if self.commit_docs and git.dirty_among([APPROVALS]):
            self.written.add(APPROVALS)

    def _editable(self, rel: str) -> bool:
        if not self.commit_docs or rel in self.written:
            return True
        dirty = self._dirty if self._dirty is not None else self.git.dirty_among([rel])
        if rel in self._left or rel in dirty:
            if rel not in self._left:
                self._left.add(rel)
                self.warn(f"{rel} has uncommitted changes of yours: gsd leaves it alone "
                          "(commit them, and gsd updates it on the next run)")  # fmt: skip
            return False
        return True

    def candidates(self) -> list[str]:
        """Every file of the checkout the next bookkeeping step may write."""
        planning = self._rel(self.project.planning)
        return [f"{planning}/STATE.md", f"{planning}/ROADMAP.md", *JOURNALED,
                *self.journal.kept_targets()]  # fmt: skip

    def seen(self, dirty: set[str] | None) -> None:
        """Which of `candidates` the user has changed, from a look the caller took anyway
        (the merge's own); None: look again for each file."""
        self._dirty = dirty

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.project.root).as_posix()

    def derive(self, *, flush: bool = True) -> None:
        """STATE.md and ROADMAP.md derived from the files in the checkout, by the code of
        `gsd sync` (SPEC 0): never counted up, the same bytes a sync after merging the
        plans' branches writes. `flush` first puts the journal's log lines in place (the
        failures the blockers come from). Nothing on a plan's own branch (`on_plan_branch`,
        a CI job's `execute-plan`): those files are the user's branch's, derived there."""
        if flush:
            self.written.update(self.journal.flush(self._editable))
        if self.on_plan_branch:
            return
        planning = self.project.planning
        state_path = planning / state.STATE_FILE
        facts = derive.gather(self.project)
        if not state_path.exists() and any(p.blocker for ph in facts.phases for p in ph.plans):
            if self._editable(self._rel(state_path)):  # where a person looks first
                state.save(state_path, "# Project State\n")
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

    def commit(self, message: str) -> None:
        """gsd's own bookkeeping, committed when `git.commit_docs` is true (SPEC 7 step 9);
        only the files gsd wrote, whatever else is changed or new in the checkout."""
        paths = self.pending()
        if self.commit_docs and paths:
            self.git.commit_docs(message, paths)
            self.committed()


def _read_own(path: Path) -> bytes | None:
    """A journal file's bytes, if it is a regular file gsd could have written: never
    through a symlink (an agent that plants one must not make gsd commit what it points
    at, outside the repository or not); a folder on the way that is a link is refused too."""
    if any(p.is_symlink() for p in (path.parent, path.parent.parent)):
        return None
    return read_private(path, limit=ANY_SIZE)
