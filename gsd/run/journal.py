"""The journal of a run's log lines (SPEC 7 steps 7 and 8): written inside .git while
tasks run, brought to .planning/ just before each docs commit."""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from gsd.core import layout
from gsd.core.ids import split_plan_id
from gsd.formats import errorlog, execlog
from gsd.formats.files import append_line, write_atomic
from gsd.io.appends import Appends
from gsd.io.git.repo import Git
from gsd.io.git.worktree import branch_of
from gsd.io.records import ANY_SIZE, read_private

# Logs written during a run go to a journal inside .git first and reach .planning/ just
# before each docs commit: the tracked tree stays clean between tasks (so checkpoints
# see only the agent's work) and a rollback can never take log lines back. A plan's own
# lines reach its log `.planning/logs/{plan}.jsonl` where its task commits are (its
# branch); the lines of the branch the run merges into reach `side` (gsd.formats.execlog).
# the only whole files the journal keeps: a phase's NN-MM-RESULT.txt (SPEC 1)
_RESULT_FILE = re.compile(r"\.planning/phases/[^/]+/[^/]+-RESULT\.txt")
RESULT_BYTES = 1 << 20  # NN-MM-RESULT.txt keeps the last MiB of an agent's output
_PLANS = layout.JOURNAL_PLANS  # journal/plans/{plan}.jsonl: until its docs commit
_SIDE = "side.jsonl"  # journal/side.jsonl: the lines of the branch merged into
_APPENDED = "appended.json"  # journal/appended.json: gsd.io.appends, until the docs commit


def side_log(planning_rel: str, phase_number: str, branch: str | None, plan_id: str | None) -> str:
    """Where a run's own lines go (run and wave events, merges, plans that stopped in
    their worktree): the phase log on the user's branch; the plan's log when the branch
    is the plan's own (`gsd/{plan}`, a CI job's), which no other plan ever writes."""
    if plan_id is not None and branch == branch_of(plan_id):
        return layout.plan_log(Path(planning_rel), plan_id).as_posix()
    return layout.phase_log(Path(planning_rel), phase_number).as_posix()


class Journal:
    """The run's log lines, kept in .git/gsd/journal until the next docs commit.

    `side` is the repository path the lines of the branch the run merges into go to
    (`side_log`); `in_place`: plans run in the user's checkout, so their own logs are
    written there too. Phase events (run-start, waves, run-end) are not written when
    `side` is a plan's log: no plan's branch carries them."""

    def __init__(
        self,
        git: Git,
        side: str = "",
        *,
        in_place: bool = False,
        planning_rel: str = layout.PLANNING,
    ) -> None:
        self.git = git
        self.folder = layout.journal_dir(git.git_dir)
        self.side = side or layout.phase_log(Path(planning_rel), "run").as_posix()
        self.planning_rel = planning_rel
        self.in_place = in_place
        self.phase_events = Path(self.side).name.startswith(layout.PHASE_LOG_PREFIX)
        self.flushed: dict[str, bytes] = {}  # what the last flush appended, by target
        self.replaced: list[str] = []  # the whole files it put in place
        self.lock = threading.RLock()  # a wave's threads append while a merge flushes
        self.running: set[str] = set()  # plans under way in a worktree: `running`

    def path(self, name: str) -> Path:
        return self._own(self.folder / name)

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

    def run_plan(self, plan_id: str, *, now: bool) -> None:
        """A plan under way in its worktree (`now`), or over: until then its own lines and
        RESULT file are its thread's, left alone by a merge's flush of another plan."""
        with self.lock:
            (self.running.add if now else self.running.discard)(plan_id)

    def plan_log(self, plan_id: str) -> str:
        """The repository path of a plan's log."""
        return layout.plan_log(Path(self.planning_rel), plan_id).as_posix()

    def plan_errors(self, plan_id: str) -> Path:
        """Where a plan's failures are appended (taskrun's `error_log`)."""
        return self._own(layout.journal_plan_log(self.git.git_dir, plan_id))

    @property
    def errors(self) -> Path:
        """Where failures of the run itself are appended."""
        return self.path(_SIDE)

    def event(self, kind: str, **fields: object) -> None:
        """An event of the run (not of one plan's tasks): to `side`."""
        if kind in execlog.PHASE_EVENTS and not self.phase_events:
            return  # a plan's branch: no plan owns these
        with self.lock:
            execlog.append(self.path(_SIDE), execlog.event(kind, **fields))

    def plan_event(self, plan_id: str, kind: str, **fields: object) -> None:
        """An event of one plan's run: to its log, with its task commits."""
        execlog.append(self.plan_errors(plan_id), execlog.event(kind, plan=plan_id, **fields))

    def error(self, phase: str, plan_id: str, kind: str, details: str, where: str) -> None:
        """A failure that is no task's attempt (a merge), in the run's side log."""
        record = errorlog.ErrorRecord(
            phase=phase,
            plan=split_plan_id(plan_id)[1],
            task="-",
            specialist="gsd",
            error_type=kind,
            details=details,
            git_state=where,
        )
        with self.lock:
            errorlog.append(self.errors, record)

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

    def _plans(self) -> list[str]:
        """The plans whose own lines the journal holds (those `running`: theirs still)."""
        folder = self.folder / _PLANS
        if not folder.is_dir() or folder.is_symlink():
            return []
        return sorted(p.stem for p in folder.glob("*.jsonl") if p.stem not in self.running)

    def targets(self) -> list[str]:
        """Every log the next `flush` may append to."""
        plans = [self.plan_log(p) for p in self._plans()] if self.in_place else []
        return [self.side, *plans]

    def discard(self) -> None:
        self.path(_SIDE).unlink(missing_ok=True)
        shutil.rmtree(self.folder / _PLANS, ignore_errors=True)
        shutil.rmtree(self.folder / "files", ignore_errors=True)

    def hand_over(self, plan_id: str) -> None:
        """A plan stopped in its worktree: its lines go to `side` with the run's own (its
        branch carries none of them; a later run that completes it carries its own)."""
        source = self.plan_errors(plan_id)
        data = _whole_lines(_read_own(source))
        if data and self.side != self.plan_log(plan_id):
            with self.lock:
                append_line(self.path(_SIDE), data)
        elif data:
            return  # the side is this plan's own log: flushed from here
        source.unlink(missing_ok=True)

    def flush_plan(self, plan_id: str, root: Path, carry: Callable[[str], bool]) -> list[str]:
        """Append a plan's own lines to its log in the checkout at `root` (its worktree,
        or the user's checkout in place), and put its RESULT file there; return the paths
        written. A target `carry` refuses (its branch would conflict on it) stays for the
        run's side: the lines handed over, the RESULT file kept for the next flush."""
        written = []
        target = self.plan_log(plan_id)
        source = self.plan_errors(plan_id)
        data = _whole_lines(_read_own(source))
        if data and carry(target):
            append_line(root / target, data)
            source.unlink(missing_ok=True)
            written.append(target)
        elif data:
            self.hand_over(plan_id)
        for kept in self.kept_targets():
            if kept.endswith(f"/{plan_id}-RESULT.txt") and carry(kept):
                written += self._replace(kept, root)
        return written

    def _replace(self, target: str, root: Path) -> list[str]:
        source = self.folder / "files" / target
        if not _RESULT_FILE.fullmatch(target) or self.folder.is_symlink():
            return []  # not a file gsd keeps here: never written anywhere
        data = _read_own(source)
        if data is None:
            return []
        write_atomic(root / target, data.decode("utf-8", "replace"))
        source.unlink()
        return [target]

    def flush(self, may_write: Callable[[str], bool] = lambda _: True) -> list[str]:
        """Append what the journal holds for the user's checkout (the side log; the plans'
        own logs when they run in place) to the files in .planning/, and put the whole
        files it keeps in place; return the paths written. A target `may_write` refuses
        (the user changed it and has not committed) keeps its lines here for later."""
        with self.lock:
            self.flushed, self.replaced = {}, []
            if not self.in_place:
                for plan_id in self._plans():  # a killed run's leftovers: not on any branch
                    self.hand_over(plan_id)
            sources = [(self.side, self.path(_SIDE))]
            for plan_id in self._plans():  # in place (or the side is the plan's own log)
                sources.append((self.plan_log(plan_id), self.plan_errors(plan_id)))
            for target, source in sources:
                if not may_write(target):
                    continue
                data = _whole_lines(_read_own(source))
                if data:  # the same locked append as every log line (files.append_line)
                    self.appends.note(target, data)
                    append_line(self.git.root / target, data)
                    self.flushed[target] = self.flushed.get(target, b"") + data
                source.unlink(missing_ok=True)
            kept = self.folder / "files"
            ours = kept.is_dir() and not (kept.is_symlink() or self.folder.is_symlink())
            theirs = {f"{plan_id}-RESULT.txt" for plan_id in self.running}
            for source in sorted(kept.rglob("*")) if ours else []:
                target = source.relative_to(kept).as_posix()
                # only a RESULT.txt is ever written (`_replace`): its folders are not asked about
                if (
                    _RESULT_FILE.fullmatch(target)
                    and source.name not in theirs
                    and may_write(target)
                ):
                    self.replaced += self._replace(target, self.git.root)
            return [*self.flushed, *self.replaced]

    @property
    def appends(self) -> Appends:
        """The record of what flushes appended since the last docs commit."""
        return Appends(self.path(_APPENDED), self.git.root)

    def settled(self) -> None:
        """The appends since the last docs commit are in a commit now (or never will be:
        `git.commit_docs` is false)."""
        self.appends.forget()

    def unflush(self) -> None:
        """Take back the last flush into the journal (its commit failed and was undone)."""
        for target, data in self.flushed.items():
            plan_id = Path(target).stem
            own = target == self.plan_log(plan_id) and target != self.side
            with self.lock:
                append_line(self.plan_errors(plan_id) if own else self.path(_SIDE), data)
        self.flushed = {}
        self.settled()  # the undone commit took the files back to what git has


def _read_own(path: Path) -> bytes | None:
    """A journal file's bytes, if it is a regular file gsd could have written: never
    through a symlink (an agent that plants one must not make gsd commit what it points
    at, outside the repository or not); a folder on the way that is a link is refused too."""
    if any(p.is_symlink() for p in (path.parent, path.parent.parent)):
        return None
    return read_private(path, limit=ANY_SIZE)


def _whole_lines(data: bytes | None) -> bytes:
    """Journal bytes up to the last newline: a torn line from a crash is dropped."""
    if not data:
        return b""
    return data if data.endswith(b"\n") else data[: data.rfind(b"\n") + 1]
