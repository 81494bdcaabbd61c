"""gsd's own records of a run (SPEC 7 steps 7 to 9): the journal of log lines, STATE.md
and ROADMAP.md when a plan completes or stops, and the `docs(...)` commits."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from gsd import errorlog, execlog, roadmap, state, summary
from gsd.files import append_line, write_atomic
from gsd.git import Git
from gsd.models import split_plan_id
from gsd.phases import Phase
from gsd.project import Project

# Logs written during a run go to a journal inside .git first and reach .planning/ just
# before each docs commit: the tracked tree stays clean between tasks (so checkpoints
# see only the agent's work) and a rollback can never take log lines back.
JOURNALED = (".planning/execution-log.jsonl", ".planning/specialist-errors.jsonl")
OWNED = ("STATE.md", "ROADMAP.md")  # the files gsd edits when a plan completes
RESULT_BYTES = 1 << 20  # NN-MM-RESULT.txt keeps the last MiB of an agent's output


class Journal:
    """The run's log lines, kept in .git/gsd/journal until the next docs commit."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.folder = git.git_dir / "gsd" / "journal"
        self.flushed: dict[str, bytes] = {}  # what the last flush appended, by target
        self.replaced: list[str] = []  # the whole files it put in place

    def path(self, target: str) -> Path:
        return self.folder / Path(target).name

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
        write_atomic(self.folder / "files" / target, data.decode("utf-8", "replace"))

    def discard(self) -> None:
        for target in JOURNALED:
            self.path(target).unlink(missing_ok=True)
        shutil.rmtree(self.folder / "files", ignore_errors=True)

    def flush(self) -> list[str]:
        """Append what the journal holds to the files in .planning/, and put the whole
        files it keeps in place; return the paths written."""
        self.flushed, self.replaced = {}, []
        for target in JOURNALED:
            source = self.path(target)
            if source.exists() and source.stat().st_size:
                data = source.read_bytes()
                if not data.endswith(b"\n"):
                    data = data[: data.rfind(b"\n") + 1]  # a torn line from a crash
                if data:  # the same locked append as every log line (files.append_line)
                    append_line(self.git.root / target, data)
                    self.flushed[target] = data
            source.unlink(missing_ok=True)
        kept = self.folder / "files"
        for source in sorted(kept.rglob("*")) if kept.is_dir() else []:
            if source.is_file():  # whole files (RESULT.txt): replaced, not appended
                target = source.relative_to(kept).as_posix()
                write_atomic(self.git.root / target, source.read_text(encoding="utf-8"))
                source.unlink()
                self.replaced.append(target)
        return [*self.flushed, *self.replaced]

    def unflush(self) -> None:
        """Take back the last flush into the journal (its commit failed and was undone)."""
        for target, data in self.flushed.items():
            append_line(self.path(target), data)
        self.flushed = {}


def block(project: Project, plan_id: str, kind: str, details: str) -> None:
    """A `- [plan] error_type: ...` line under STATE.md's Blockers (the file is created
    when the project has none: it is where a person looks first)."""
    path = project.planning / "STATE.md"
    before = state.load(path) if path.exists() else None
    line = state.blocker_line(plan_id, kind, details, 300)
    state.save(path, state.add_blocker(before or "# Project State\n", line), old=before)


def plan_done(
    project: Project,
    phase: Phase,
    plan_ids: list[str],
    plan_id: str,
    *,
    seconds: float,
    tasks: int,
    files: int,
) -> None:
    """STATE.md's Current Position, Performance Metrics and Blockers; ROADMAP.md's
    checkbox and progress row (SPEC 7). The plan counts as done, SUMMARY.md or not."""
    total = len(plan_ids)
    done = sum(pid == plan_id or summary.exists(phase.path, pid) for pid in plan_ids)
    complete = done >= total
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    path = project.planning / "STATE.md"
    if path.exists():
        before = state.load(path)
        text = state.remove_blockers(before, plan_id)
        text = state.set_position(
            text,
            plan=f"{done} of {total} in current phase",
            status="Phase complete" if complete else "In progress",
            last_activity=f"{today} - Completed {plan_id}-PLAN.md",
            progress=done / total if total else 1.0,
        )
        minutes = max(1, round(seconds / 60))
        text = state.record_metric(text, plan_id=plan_id, duration=f"{minutes}min",
                                   tasks=tasks, files=files)  # fmt: skip
        state.save(path, text, old=before)
    road = project.planning / "ROADMAP.md"
    if road.exists():
        before = roadmap.load(road)
        text = roadmap.check_plan(before, plan_id, True)
        status = "Complete" if complete else "In Progress"
        text = roadmap.set_progress(text, phase.number, done, total, status,
                                    today if complete else None)  # fmt: skip
        roadmap.save(road, text, old=before)


def session(project: Project, stopped_at: str, resume_file: str) -> None:
    """STATE.md's Session Continuity: when this run ended, where, what to resume."""
    path = project.planning / "STATE.md"
    if path.exists():
        now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        before = state.load(path)
        text = state.set_session(before, last_session=now,
                                 stopped_at=_one_line(stopped_at)[:160],
                                 resume_file=resume_file)  # fmt: skip
        state.save(path, text, old=before)


def owned_paths(project: Project) -> list[str]:
    """The files gsd edits when a plan completes, those that exist, repo-relative."""
    return [f".planning/{n}" for n in OWNED if (project.planning / n).exists()]


def commit_docs(project: Project, git: Git, journal: Journal, message: str) -> None:
    """gsd's own bookkeeping, committed when `git.commit_docs` is true (SPEC 7 step 9)."""
    journal.flush()
    if not project.config.flag("git.commit_docs"):
        return  # they stay in the working tree for a person
    status = git.status()  # one pass over the tree: tracked changes and untracked files
    paths = [p for p in sorted(status.changed | status.untracked)
             if p.startswith(".planning/") and not p.endswith(".gsd.lock")]  # fmt: skip
    if paths:
        git.commit_docs(message, paths)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
