"""execute-phase's derive cache (issue 23, gsd.run.derivecache): the same facts and the
same STATE.md and ROADMAP.md bytes as reading every file, a changed file read again, a
forged or another gsd's cache dropped, a file changed just now never kept; and the one
`git log` that spares each phase folder its own (gsd.io.plans.summaries.TaskSummaries)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gsd.formats.planning import summaryread
from gsd.io.git import command as gitexec
from gsd.io.plans import summaries
from gsd.io.plans.project import Project
from gsd.run import derive, derivecache
from gsd.run.derivecache import DeriveCache
from gsd.run.statetext import roadmap_text, state_text
from tests.conftest import git
from tests.test_sync import ROADMAP, STATE

PLAN = """\
---
phase: {phase}
plan: {n:02d}
type: execute
wave: 1
depends_on: []
files_modified: [src/f{n}.py]
autonomous: true
must_haves:
  truths: ["it works"]
---

<objective>Do it.</objective>

<tasks>
{tasks}
</tasks>
"""
TASK = """<task type="auto">
  <name>Task {k}: change src/f{n}.py</name>
  <files>src/f{n}.py</files>
  <action>Change it.</action>
  <done>Changed.</done>
</task>"""
SUMMARY = "---\nphase: {phase}\nplan: {n:02d}\nduration: {seconds}s\ncompleted: 2026-0{n}-0{n}\n"
SUMMARY += "key-files:\n  created: [a, b]\n  modified: [c]\n---\n# Summary\n"


def write_plan(folder: Path, n: int, tasks: int) -> None:
    body = "\n".join(TASK.format(k=k, n=n) for k in range(1, tasks + 1))
    text = PLAN.format(phase=folder.name, n=n, tasks=body)
    (folder / f"{folder.name[:2]}-{n:02d}-PLAN.md").write_text(text)


def write_summary(folder: Path, n: int, seconds: int) -> Path:
    path = folder / f"{folder.name[:2]}-{n:02d}-SUMMARY.md"
    path.write_text(SUMMARY.format(phase=folder.name, n=n, seconds=seconds))
    return path


@pytest.fixture
def books(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Phase 1 done (three plans), phase 2 with one plan done and one failed: a blocker."""
    monkeypatch.setattr(derivecache, "RACY_NS", 0)  # files just written may be kept
    root = tmp_path / "repo"
    planning = root / ".planning"
    alpha, beta = planning / "phases/01-alpha", planning / "phases/02-beta"
    for folder in (alpha, beta):
        folder.mkdir(parents=True)
    for n in (1, 2, 3):
        write_plan(alpha, n, n)
        write_summary(alpha, n, 60 * n + 5)
    write_plan(beta, 1, 2)
    write_summary(beta, 1, 30)
    write_plan(beta, 2, 1)
    (planning / "logs").mkdir()
    failed = {"ts": "2026-04-01T10:00:00.000Z", "event": "result", "plan": "02-02", "task": 1}
    failed |= {"agent": "worker", "attempt": 1, "success": False, "error_type": "timeout-kill"}
    error = {"timestamp": "2026-04-01T10:00:00Z", "phase": "02", "plan": "02", "task": "1"}
    error |= {"specialist": "worker", "error_type": "timeout-kill", "details": "timed out"}
    error |= {"git_state": "checkpoint/02-02/1", "exit_code": 137, "attempt": 1}
    error |= {"runner": "command", "duration_s": 20.5}
    lines = [json.dumps(error), json.dumps(failed)]
    (planning / "logs/02-02.jsonl").write_text("\n".join(lines) + "\n")
    (planning / "STATE.md").write_text(STATE)
    (planning / "ROADMAP.md").write_text(ROADMAP)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "project")
    return root


def derived(root: Path, cache: DeriveCache | None) -> tuple[derive.Facts, str, str]:
    """The facts of a fresh Project (a new process's), and the two files derived from them."""
    if cache is not None:
        cache.begin()
    facts = derive.gather(Project(root), cache)
    if cache is not None:
        cache.save()
    planning = root / ".planning"
    state = state_text((planning / "STATE.md").read_text(), facts)
    return facts, state, roadmap_text((planning / "ROADMAP.md").read_text(), facts)


def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The SUMMARY files read from now on."""
    seen: list[Path] = []
    load = summaryread.load

    def counted(path: Path, **kwargs: object) -> dict[str, object]:
        seen.append(path)
        return load(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(summaryread, "load", counted)
    return seen


def test_a_derive_from_the_cache_is_the_derive_from_the_files(
    books: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = derived(books, None)
    assert full[0].phases[1].plans[1].blocker is not None  # 02-02 failed: not in the cache
    assert derived(books, DeriveCache.load(books / ".git")) == full  # cold: reads, keeps
    assert (books / ".git/gsd" / derivecache.CACHE_FILE).is_file()
    seen = reads(monkeypatch)
    graphs: list[str] = []
    graph = Project.phase_graph
    monkeypatch.setattr(
        Project, "phase_graph", lambda p, ph: graphs.append(ph.name) or graph(p, ph)
    )
    assert derived(books, DeriveCache.load(books / ".git")) == full  # warm: a new process
    assert seen == []  # every SUMMARY's facts came from the cache
    assert graphs == ["02-beta"]  # phase 1's plans too; 02-02 is not done: its plan is read


def test_a_file_changed_since_is_read_again(books: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    derived(books, DeriveCache.load(books / ".git"))
    alpha = books / ".planning/phases/01-alpha"
    summary = alpha / "01-02-SUMMARY.md"
    kept = os.stat(summary)
    summary.write_text(summary.read_text().replace("duration: 125s", "duration: 725s"))
    os.utime(summary, ns=(kept.st_atime_ns, kept.st_mtime_ns))  # same size, same mtime
    write_plan(alpha, 3, 5)  # five tasks now
    seen = reads(monkeypatch)
    facts, state, road = derived(books, DeriveCache.load(books / ".git"))
    assert (facts, state, road) == derived(books, None)
    plans = {p.id: p for p in facts.phases[0].plans}
    assert plans["01-02"].minutes == 12 and plans["01-03"].tasks == 5
    assert summary in seen


@pytest.mark.parametrize("how", ["other key", "edited body", "other code", "not signed"])
def test_a_cache_gsd_did_not_write_here_is_dropped(
    books: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    derived(books, DeriveCache.load(books / ".git"))
    path = books / ".git/gsd" / derivecache.CACHE_FILE
    mac, _, body = path.read_bytes().partition(b"\n")
    data = json.loads(body)
    for entry in data["folders"].values():
        entry[1] = [[*plan[:3], 99] for plan in entry[1]]  # every plan 99 tasks
    if how == "other code":
        data["code"][0][1] += 1
    forged = json.dumps(data, separators=(",", ":")).encode()
    if how == "other key":
        monkeypatch.setattr(derivecache.records, "record_key", lambda: b"k" * 32)
        mac = derivecache._mac(forged).encode()
        monkeypatch.undo()
        monkeypatch.setattr(derivecache, "RACY_NS", 0)
    elif how in ("other code",):
        mac = derivecache._mac(forged).encode()
    written = {"edited body": mac + b"\n" + forged, "not signed": forged}.get(how)
    path.write_bytes(written or mac + b"\n" + forged)
    assert DeriveCache.load(books / ".git")._folders == {}
    facts = derived(books, DeriveCache.load(books / ".git"))[0]
    assert {p.tasks for ph in facts.phases for p in ph.plans} <= {1, 2, 3}


def test_a_file_changed_just_before_the_derive_is_not_kept(books: Path) -> None:
    cache = DeriveCache.load(books / ".git")
    cache._since = 0  # as RACY_NS would: every file changed "just now"
    derive.gather(Project(books), cache)
    cache.save()
    assert DeriveCache.load(books / ".git")._summaries == {}


def test_sync_never_reads_the_cache(books: Path, gsd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(books)
    assert gsd("sync").code == 0
    assert not (books / ".git/gsd" / derivecache.CACHE_FILE).exists()


def logs_asked(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    asked: list[list[str]] = []
    call = gitexec.call

    def counted(args: list[str], **kwargs: object) -> gitexec.GitResult:
        asked.append(list(args))
        return call(args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gitexec, "call", counted)
    return asked


def test_one_git_log_when_no_task_commit_brought_a_summary(
    books: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summaries._seen.clear()
    asked = logs_asked(monkeypatch)
    derive.gather(Project(books))
    assert [a[0] for a in asked] == ["log"]  # the project's one, not one per phase


def test_a_summary_a_task_commit_brought_is_found_as_each_folder_finds_it(
    books: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    beta = books / ".planning/phases/02-beta"
    write_summary(beta, 2, 10)
    git(books, "add", "-A")
    git(books, "commit", "-q", "-m", "feat(02-02): task 1\n\nGsd-Task: 02-02-1")
    summaries._seen.clear()
    whole = summaries.TaskSummaries(books)
    assert not whole.none_in(beta)
    for folder in (books / ".planning/phases/01-alpha", beta):
        for plan in ("01-01", "02-01", "02-02"):
            summaries._seen.clear()
            alone = summaries.finder(folder)(plan)
            summaries._seen.clear()
            assert summaries.finder(folder, whole)(plan) == alone
    assert summaries.finder(beta, whole)("02-02") is None  # not done: a task commit's
    assert not summaries.TaskSummaries(books).none_in(books.parent / "elsewhere")


def test_no_commit_yet_asks_no_folder(books: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repository without a commit: every `git log HEAD` fails, none is forged."""
    fresh = books.parent / "fresh"
    (fresh / ".planning/phases/01-alpha").mkdir(parents=True)
    git(fresh, "init", "-q")
    summaries._seen.clear()
    whole = summaries.TaskSummaries(fresh)
    asked = logs_asked(monkeypatch)
    assert whole.none_in(fresh / ".planning/phases/01-alpha")
    assert [a[0] for a in asked] == ["log", "rev-parse"]
