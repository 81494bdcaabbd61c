"""run_task with agents that misbehave through git itself: caught, undone, or squashed."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.test_taskrun import REPORT, agent_program, make_plan, repo, run, state

READ_ONLY = ["read_file"]
__all__ = ["repo"]  # the fixture, shared with test_taskrun


def test_a_read_only_agent_hiding_a_config_edit_behind_skip_worktree(repo, tmp_path: Path) -> None:
    before = state(repo)
    agent, token = agent_program(
        tmp_path,
        f"""
        open(".planning/config.json", "w").write('{{"mode": "agent"}}')
        subprocess.run(["git", "update-index", "--skip-worktree", ".planning/config.json"],
                       check=True)
        print({REPORT!r})
        """,
        tools=READ_ONLY,
    )
    outcome = run(repo, agent, token)
    assert outcome.error_type == "policy-violation"
    assert "skip-worktree on .planning/config.json" in outcome.details
    assert "protected .planning/config.json" in outcome.details
    assert (repo.root / ".planning/config.json").read_text() == '{"mode": "yolo"}\n'
    assert state(repo) == before
    assert "S " not in git(repo.root, "ls-files", "-v")


def test_a_planted_hook_and_fsmonitor_fail_the_task_and_never_run(repo, tmp_path: Path) -> None:
    mark = tmp_path / "ran"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\necho ran >> {mark}\n")
    evil.chmod(0o755)
    hooks = sorted(p.name for p in (repo.root / ".git/hooks").iterdir())
    agent, token = agent_program(
        tmp_path,
        f"""
        open("src/new.py", "w").write("x = 1\\n")
        os.symlink({str(evil)!r}, ".git/hooks/pre-commit")
        subprocess.run(["git", "config", "core.fsmonitor", {str(evil)!r}], check=True)
        print({REPORT!r})
        """,
    )
    outcome = run(repo, agent, token)
    assert outcome.error_type == "policy-violation"
    assert "changed .git/ (config, hooks/pre-commit); put back" in outcome.details
    assert not mark.exists()
    assert sorted(p.name for p in (repo.root / ".git/hooks").iterdir()) == hooks
    assert "fsmonitor" not in (repo.root / ".git/config").read_text()


def test_stash_clear_fails_the_task_and_the_stashes_come_back(repo, tmp_path: Path) -> None:
    root = repo.root
    (root / "src/old.py").write_text("the user's stashed work\n")
    git(root, "stash", "-q")
    stashes = git(root, "stash", "list")
    agent, token = agent_program(
        tmp_path,
        f"""
        open("src/new.py", "w").write("x = 1\\n")
        subprocess.run(["git", "stash", "clear"], check=True)
        print({REPORT!r})
        """,
    )
    outcome = run(repo, agent, token)
    assert outcome.error_type == "policy-violation" and "stash list changed" in outcome.details
    assert git(root, "stash", "list") == stashes


def test_an_agents_own_commits_and_git_mv_become_one_task_commit(repo, tmp_path: Path) -> None:
    root = repo.root
    base = git(root, "rev-parse", "HEAD").strip()
    agent, token = agent_program(
        tmp_path,
        f"""
        subprocess.run(["git", "mv", "src/old.py", "src/new.py"], check=True)
        subprocess.run(["git", "commit", "-qm", "agent: move"], check=True)
        subprocess.run(["git", "rm", "-q", "src/gone.py"], check=True)
        print({REPORT!r})
        """,
    )
    plan = make_plan(files="src/new.py, src/old.py, src/gone.py")
    outcome = run(repo, agent, token, plan=plan)
    assert outcome.success, outcome.details
    assert git(root, "rev-list", "--count", f"{base}..HEAD").strip() == "1"
    shown = git(root, "show", "--name-status", "--no-renames", "--format=%B", "HEAD")
    assert "Gsd-Task: 01-01-1" in shown and "agent: move" not in shown
    assert shown.split("\n\n")[-1].split() == [
        "D",
        "src/gone.py",
        "A",
        "src/new.py",
        "D",
        "src/old.py",
    ]
