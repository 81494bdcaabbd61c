"""`gsd undo PLAN|PHASE` (issue 25) after real runs with command agents: a plan and a whole
phase taken back with revert commits (history only grows, the tree is the tree before
the run but for STATE.md and ROADMAP.md derived), the same phase run again afterwards;
after a CI fan-out's merges; refused, with nothing changed, when later work depends on
the plan, the tree is dirty, or a run is live; --dry-run changes nothing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests import test_sync, test_worktrees
from tests.conftest import git
from tests.hostile import LANDLOCK
from tests.test_sync import ci_job
from tests.test_worktrees import commit_all, leftovers, run_gsd, steer, task

repo = test_worktrees.repo
control = test_worktrees.control
books = test_sync.books

PHASE = ".planning/phases/01-alpha"
DERIVED = {".planning/STATE.md", ".planning/ROADMAP.md"}


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def changed(root: Path, since: str) -> set[str]:
    """What differs from `since` but the run logs (an undo keeps them: they ran)."""
    found = git(root, "diff", "--name-only", since, "HEAD").split()
    return {path for path in found if not path.startswith(".planning/logs/")}


def grew_from(root: Path, old: str) -> bool:
    """`old` is still in HEAD's history: nothing was reset or rewritten."""
    return (
        subprocess.run(["git", "merge-base", "--is-ancestor", old, "HEAD"], cwd=root).returncode
        == 0
    )


def ran(root: Path, *args: str) -> None:
    done = run_gsd(root, *args)
    assert done.returncode == 0, done.stderr


def refused(root: Path, *args: str) -> str:
    """gsd refused with one line, exit 2; that line."""
    done = run_gsd(root, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gsd: error: "), done.stderr
    return lines[0]


def test_a_plan_then_its_phase_undone_then_run_again(books: Path) -> None:
    start = head(books)
    ran(books, "execute-phase", "1")
    run_end = head(books)
    # one plan: its files and SUMMARY go, the others stay; the log only grew
    ran(books, "undo", "01-03")
    assert grew_from(books, run_end)
    assert not (books / "src/t01-03_1.py").exists()
    assert not (books / PHASE / "01-03-SUMMARY.md").exists()
    assert (books / "src/t01-01_1.py").exists() and (books / PHASE / "01-01-SUMMARY.md").exists()
    assert "Plan: 2 of 3 in current phase" in (books / ".planning/STATE.md").read_text()
    # the logs: what ran stays on record, byte for byte (the reverts took the plan's
    # lines out, the undo's commit puts them back)
    for log in ("phase-01.jsonl", "01-03.jsonl"):
        assert git(books, "show", f"HEAD:.planning/logs/{log}") == git(
            books, "show", f"{run_end}:.planning/logs/{log}"
        ), log
    assert run_gsd(books, "sync", "--check").returncode == 0
    # the whole phase: the tree before the run, STATE.md and ROADMAP.md derived from it
    ran(books, "undo", "1")
    assert grew_from(books, run_end)
    assert changed(books, start) <= DERIVED
    assert not list((books / PHASE).glob("*-SUMMARY.md"))
    assert run_gsd(books, "sync", "--check").returncode == 0
    assert leftovers(books) == {}
    # every commit it made is a revert or its docs commit, none rewrites the run's
    subjects = git(books, "log", "--format=%s", f"{run_end}..HEAD").splitlines()
    assert (
        subjects[0] == "docs(01): undo phase 01" and subjects[-2] == "docs(01-03): undo plan 01-03"
    )
    assert all(s.startswith('Revert "') for s in subjects if not s.startswith("docs("))
    # the same phase runs again, one plan at a time, every task done anew (no task
    # commit of the first run counts: the undo's Gsd-Undone trailers say so)
    undone = head(books)
    ran(books, "execute-phase", "1", "--max-parallel", "1")
    for name in ("src/t01-01_1.py", "src/t01-01_2.py", "src/t01-02_1.py", "src/t01-03_1.py"):
        assert (books / name).exists(), name
    trailers = git(books, "log", "--format=%(trailers:key=Gsd-Task,valueonly)", f"{undone}..HEAD")
    assert sorted(t for t in trailers.split() if t) == ["01-01-1", "01-01-2", "01-02-1", "01-03-1"]
    assert len(list((books / PHASE).glob("*-SUMMARY.md"))) == 3
    # and is undone again: the first run's commits are not reverted twice
    again = head(books)
    ran(books, "undo", "1")
    assert changed(books, start) <= DERIVED
    assert len(git(books, "log", "--format=%s", f"{again}..HEAD").splitlines()) == 5


def test_a_phase_run_in_place_is_undone_commit_by_commit(books: Path) -> None:
    """`workflow.use_worktrees: false`: task and docs commits on the branch itself, no
    merge; each is reverted alone, newest first."""
    config = json.loads((books / ".planning/config.json").read_text())
    config["workflow"] = {"use_worktrees": False}
    (books / ".planning/config.json").write_text(json.dumps(config))
    (books / "src").mkdir()  # in place, the sandbox lets agents write below what is there
    (books / "src/.keep").write_text("")
    commit_all(books, "in place")
    start = head(books)
    ran(books, "execute-phase", "1")
    assert git(books, "log", "--merges", "--format=%s", f"{start}..HEAD") == ""
    ran(books, "undo", "1")
    assert changed(books, start) <= DERIVED
    assert not list((books / PHASE).glob("*-SUMMARY.md"))
    assert run_gsd(books, "sync", "--check").returncode == 0
    assert leftovers(books) == {}
    ran(books, "execute-phase", "1")
    assert len(list((books / PHASE).glob("*-SUMMARY.md"))) == 3
    assert (books / "src/t01-03_1.py").exists()


def test_with_commit_docs_off_an_uncommitted_summary_is_left_and_named(books: Path) -> None:
    """`git.commit_docs: false`: the plan's SUMMARY.md was never committed, so no revert
    takes it, and gsd deletes none of your uncommitted files: a warning says so."""
    config = json.loads((books / ".planning/config.json").read_text())
    config["git"] = {"commit_docs": False}
    (books / ".planning/config.json").write_text(json.dumps(config))
    commit_all(books, "no docs commits")
    ran(books, "execute-phase", "1")
    run_end = head(books)
    done = run_gsd(books, "undo", "01-03")
    assert done.returncode == 0, done.stderr
    assert grew_from(books, run_end) and not (books / "src/t01-03_1.py").exists()
    assert (books / PHASE / "01-03-SUMMARY.md").exists()
    assert "gsd: warning: plan 01-03 still counts as done" in done.stderr
    assert "Gsd-Undone: 01-03-1" in git(books, "log", "-1", "--format=%B")


@pytest.mark.skipif(not LANDLOCK, reason="needs Landlock (Linux 5.13+, enabled)")
def test_your_git_hooks_run_in_the_sandbox(repo: Path, control: Path, tmp_path: Path) -> None:
    """The undo's commits and its fast-forward run your hooks as a run's do: inside the
    agents' sandbox (the trees they hold are what agents wrote)."""
    ran(repo, "execute-phase", "1")
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("pre-commit", "post-commit", "post-merge"):
        hook = repo / ".git/hooks" / name
        hook.write_text(
            f"#!/bin/sh\necho ran > '{control}/hook-{name}'\n"
            f"echo out > '{outside}/hook-{name}' 2>/dev/null\nexit 0\n"
        )
        hook.chmod(0o755)
    ran(repo, "undo", "01-03")
    assert not (repo / "src/t01-03_1.py").exists()
    assert {p.name for p in control.glob("hook-*")} == {
        "hook-pre-commit",
        "hook-post-commit",
        "hook-post-merge",
    }
    assert list(outside.iterdir()) == []


def test_refused_while_a_done_plan_depends_on_it(repo: Path) -> None:
    ran(repo, "execute-phase", "1")
    before = head(repo)
    line = refused(repo, "undo", "01-01")
    assert (
        "plan 01-03 depends on 01-01 and is done (.planning/phases/01-alpha/01-03-PLAN.md:" in line
    )
    assert "gsd undo 01-03" in line
    assert head(repo) == before and leftovers(repo) == {}


def test_a_later_plan_that_changed_its_file_is_named(
    repo: Path, control: Path, git_project
) -> None:
    """Phase 2's plan changes a file 01-02 made, and depends on nothing: undoing 01-02
    is refused naming that plan and the file; once it is undone, 01-02 can be."""
    git_project.plan(
        "02-01",
        tasks=task("02-01", 1, files="src/t01-02_1.py"),
        phase_dir="02-beta",
        files_modified="[src/t01-02_1.py]",
    )
    commit_all(repo, "phase 2")
    steer(control, "write", "02-01-1", "src/t01-02_1.py=# 02-01 was here")
    ran(repo, "execute-phase", "1")
    ran(repo, "execute-phase", "2")
    ran(repo, "undo", "01-03")  # 01-03 depends on 01-02
    before = head(repo)
    line = refused(repo, "undo", "01-02")
    assert "plan 02-01 changed src/t01-02_1.py after plan 01-02" in line
    assert "gsd undo 02-01" in line
    assert head(repo) == before and leftovers(repo) == {}
    ran(repo, "undo", "02-01")
    assert (repo / "src/t01-02_1.py").read_text() == "# 01-02 1\n"
    ran(repo, "undo", "01-02")
    assert not (repo / "src/t01-02_1.py").exists()


def test_a_later_commit_of_yours_that_changed_its_file_is_named(repo: Path) -> None:
    ran(repo, "execute-phase", "1")
    (repo / "src/t01-03_1.py").write_text("# mine now\n")
    commit_all(repo, "my change")
    mine = head(repo)
    line = refused(repo, "undo", "01-03")
    assert f"commit {mine[:12]} (my change) changed src/t01-03_1.py" in line
    assert f"git revert {mine[:12]}" in line
    assert head(repo) == mine


def test_a_dirty_tree_is_refused_naming_the_file(repo: Path) -> None:
    ran(repo, "execute-phase", "1")
    before = head(repo)
    (repo / "src/t01-01_2.py").write_text("# work in progress\n")
    line = refused(repo, "undo", "1")
    assert "src/t01-01_2.py has uncommitted changes" in line
    assert head(repo) == before
    assert (repo / "src/t01-01_2.py").read_text() == "# work in progress\n"


def test_not_done_and_unknown_are_refused(repo: Path) -> None:
    assert "plan 01-02 is not done" in refused(repo, "undo", "01-02")
    assert "no done plan" in refused(repo, "undo", "1")
    assert "did you mean" in refused(repo, "undo", "01-04").lower()


def test_a_live_run_is_refused(repo: Path) -> None:
    from gsd.io.lock import repo_lock

    ran(repo, "execute-phase", "1")
    before = head(repo)
    with repo_lock(repo):
        line = refused(repo, "undo", "01-03")
    assert "another gsd run holds" in line and head(repo) == before


def test_dry_run_lists_the_reverts_and_changes_nothing(repo: Path) -> None:
    ran(repo, "execute-phase", "1")
    before, status = head(repo), git(repo, "status", "--porcelain")
    done = run_gsd(repo, "undo", "1", "--dry-run", "--format", "json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    subjects = [s["subject"] for s in listed["steps"]]
    assert subjects == [
        "docs(01): phase run complete",
        "Merge branch 'gsd/01-03': plan 01-03 complete",
        "Merge branch 'gsd/01-02': plan 01-02 complete",
        "Merge branch 'gsd/01-01': plan 01-01 complete",
    ]
    assert "src/t01-01_2.py" in listed["steps"][3]["files"] and listed["steps"][3]["merge"]
    assert listed["made"] == []
    text = run_gsd(repo, "undo", "01-03", "--dry-run")
    assert "would revert" in text.stdout and "src/t01-03_1.py" in text.stdout
    assert head(repo) == before and git(repo, "status", "--porcelain") == status
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_later_change_to_its_summary_is_named(repo: Path) -> None:
    ran(repo, "execute-phase", "1")
    notes = repo / PHASE / "01-03-SUMMARY.md"
    notes.write_text(notes.read_text() + "\nmy note\n")
    commit_all(repo, "a note in the summary")
    before = head(repo)
    line = refused(repo, "undo", "01-03")
    assert "changed .planning/phases/01-alpha/01-03-SUMMARY.md" in line
    assert head(repo) == before and leftovers(repo) == {}


def test_a_conflicting_revert_is_aborted_and_nothing_changes(repo: Path) -> None:
    """A merge of yours changed the plan's file while merging (no commit of its own did,
    so nothing names it beforehand): the revert conflicts, is aborted, and one line names
    the file; the branch, the tree and git's state are as they were."""
    ran(repo, "execute-phase", "1")
    branch = git(repo, "branch", "--show-current").strip()
    git(repo, "switch", "-q", "-c", "side")
    (repo / "notes.txt").write_text("side\n")
    commit_all(repo, "side work")
    git(repo, "switch", "-q", branch)
    git(repo, "merge", "-q", "--no-ff", "--no-commit", "side")
    (repo / "src/t01-03_1.py").write_text("# changed while merging\n")
    commit_all(repo, "merge side, by hand")
    git(repo, "branch", "-q", "-D", "side")
    before = head(repo)
    line = refused(repo, "undo", "01-03")
    assert "conflicts in src/t01-03_1.py" in line and "nothing was changed" in line
    assert head(repo) == before and leftovers(repo) == {}
    assert (repo / "src/t01-03_1.py").read_text() == "# changed while merging\n"
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


# ------------------------------------------------------------------- after a CI fan-out


def collect(main: Path, wave: list[str], phase: str, number: int) -> None:
    """The workflow's collect job: the wave's branches merged into gsd/wave-PHASE-N with
    plain `git merge --no-ff`, `gsd sync`, a docs commit; then its pull request merged."""
    git(main, "fetch", "-q", "origin")
    branch = f"gsd/wave-{phase}-{number}"
    git(main, "switch", "-q", "-c", branch)
    for plan in wave:
        git(main, "merge", "-q", "--no-ff", "--no-edit", f"origin/gsd/{plan}")
    ran(main, "sync")
    git(main, "add", "-A", "--", ".planning")
    git(main, "commit", "-q", "-m", f"docs({phase}): state after wave {number}")
    git(main, "switch", "-q", "main")
    git(main, "merge", "-q", "--no-ff", "--no-edit", branch)  # the pull request
    git(main, "branch", "-q", "-d", branch)
    git(main, "push", "-q", "origin", "HEAD:refs/heads/main")


@pytest.fixture
def fanned(books: Path, tmp_path: Path) -> tuple[Path, str]:
    """Phase 1 run as the CI fan-out runs it: a job a plan, a wave branch a wave, each
    wave's pull request merged into main. The clone of main, and main before it."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(books), str(origin)], check=True)
    main = tmp_path / "main"
    subprocess.run(["git", "clone", "-q", str(origin), str(main)], check=True)
    git(main, "config", "commit.gpgsign", "false")
    start = head(main)
    for number, wave in enumerate((["01-01", "01-02"], ["01-03"]), start=1):
        for plan in wave:
            ci_job(origin, tmp_path / f"job-{plan}", plan)
        collect(main, wave, "01", number)
    return main, start


def test_a_plan_of_a_ci_wave_is_undone_inside_its_wave_merge(fanned: tuple[Path, str]) -> None:
    main, start = fanned
    before = head(main)
    ran(main, "undo", "01-03")
    ran(main, "undo", "01-02")  # one plan of a wave of two: the wave's merge is not reverted
    assert grew_from(main, before)
    assert (
        not (main / "src/t01-02_1.py").exists() and not (main / PHASE / "01-02-SUMMARY.md").exists()
    )
    assert (main / "src/t01-01_1.py").exists() and (main / PHASE / "01-01-SUMMARY.md").exists()
    reverted = git(main, "log", "--format=%s", f"{before}..HEAD").splitlines()
    assert (
        "Revert \"Merge remote-tracking branch 'origin/gsd/01-02' into gsd/wave-01-1\"" in reverted
    )
    assert run_gsd(main, "sync", "--check").returncode == 0
    ran(main, "undo", "1")
    assert changed(main, start) <= DERIVED
    assert not list((main / PHASE).glob("*-SUMMARY.md"))
    assert leftovers(main) == {}
