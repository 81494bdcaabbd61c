"""Refused before anything runs: a plan or agent program that is not committed (plans run
in worktrees made from the last commit), a detached HEAD, a fallback runner that is
missing; and a failed task's last line names its own failure before the fallback's."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import fake_runner_programs, git
from tests.test_execute import AGENT, REPORT, task

# the worker runs a program kept in the repository, named by a relative path
WORKER = """\
---
name: worker
description: "test agent"
tools: [read_file, write_file, replace, run_shell_command]
timeout_mins: 0.2
runner: command
command: ["{python}", "bin/agent.py"]
---
Test persona.
"""
FAILING = "import sys\nprint('no luck today')\nsys.exit(3)\n"
PLAN = ".planning/phases/01-alpha/01-01-PLAN.md"
NPM_CLAUDE = "npm install -g @anthropic-ai/claude-code"


@pytest.fixture
def repo(git_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A committed phase of one plan whose one task runs `worker` (bin/agent.py, in the
    repository); PATH holds git and a stand-in `claude` for the fallback agent."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "git")
    fake_runner_programs(bin_dir, ("claude",))
    monkeypatch.setenv("PATH", str(bin_dir))
    git_project.write("bin/agent.py", AGENT.format(report=REPORT))
    git_project.write("agents/worker.md", WORKER.format(python=sys.executable))
    git_project.write(".planning/available_agents.md", "- **worker**: test\n")
    git_project.write(".planning/config.json", json.dumps({"specialists": {"max_retries": 0}}))
    git_project.plan("01-01", tasks=task("01-01", 1), files_modified="[src/t01-01_1.py]")
    commit(git_project.root, "plans and agents")
    return git_project


def commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def untouched(root: Path, head: str) -> None:
    """Nothing was committed, tagged or branched, and no log reached a commit."""
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert git(root, "for-each-ref", "--format=%(refname:short)", "refs/heads").split() == ["main"]
    assert git(root, "tag") == ""
    assert git(root, "ls-tree", "-r", "--name-only", "HEAD", ".planning/logs") == ""
    assert not (root / ".planning" / "logs").exists()  # nor written


def refused(gsd, root: Path, line: tuple[str, str], plan: str = "01-01") -> None:
    """The live run refuses with `line` (exit 2, nothing run), `execute-plan PLAN` too,
    and the dry run warns with the same words."""
    head = git(root, "rev-parse", "HEAD").strip()
    what, hint = line
    live = gsd("execute-phase", "1")
    assert (live.code, live.out) == (2, "")
    assert live.err == f"gsd: error: {what}; nothing was run ({hint})\n"
    untouched(root, head)
    alone = gsd("execute-plan", plan)
    assert (alone.code, alone.err) == (2, live.err)
    dry = gsd("execute-phase", "1", "--dry-run")
    assert dry.code == 0 and "plan 01-01" in dry.out
    assert dry.err == f"gsd: warning: {what}; a live run would refuse to start ({hint})\n"
    untouched(root, head)


def not_committed(*paths: str, wrong: str = "is not committed", force: str = "") -> tuple:
    more = f" (and {len(paths) - 1} more file{'s' if len(paths) > 2 else ''})"
    return (
        f"{paths[0]} {wrong}{more if len(paths) > 1 else ''}: plans run in worktrees made "
        "from the last commit, which have only what is committed",
        f'commit first: git add{force} {" ".join(paths)} && git commit -m "plans and agents"',
    )


def test_a_plan_not_committed_is_refused_then_runs_once_committed(repo, gsd) -> None:
    root = repo.root
    repo.plan("01-02", tasks=task("01-02", 1), files_modified="[src/t01-02_1.py]")
    refused(gsd, root, not_committed(".planning/phases/01-alpha/01-02-PLAN.md"), plan="01-02")
    commit(root, "the second plan")
    done = gsd("execute-phase", "1")
    assert done.code == 0, done.err
    assert (root / "src" / "t01-02_1.py").is_file()


def test_a_changed_plan_is_refused(repo, gsd) -> None:
    (repo.root / PLAN).write_text((repo.root / PLAN).read_text() + "\n")
    refused(gsd, repo.root, not_committed(PLAN, wrong="has changes that are not committed"))


def test_an_agent_program_or_file_not_committed_is_refused(repo, gsd) -> None:
    root = repo.root
    (root / "bin" / "agent.py").write_text(FAILING)
    repo.write("agents/helper.md", "---\nname: helper\n---\nunused\n")  # runs no task
    repo.write("agents/worker.md", WORKER.format(python=sys.executable) + "More.\n")
    line = not_committed(
        "agents/worker.md", "bin/agent.py", wrong="has changes that are not committed"
    )
    refused(gsd, root, line)


def test_an_ignored_agent_program_is_named_with_git_add_f(repo, gsd) -> None:
    root = repo.root
    git(root, "rm", "-q", "--cached", "bin/agent.py")
    repo.write(".gitignore", "bin/\n")
    commit(root, "the program kept out")
    line = not_committed("bin/agent.py", wrong="is not committed (git ignores it)", force=" -f")
    refused(gsd, root, line)


def test_many_files_not_committed_are_named_by_folder(repo, gsd) -> None:
    for n in (2, 3, 4):
        repo.plan(f"01-0{n}", tasks=task(f"01-0{n}", 1), files_modified=f"[src/t01-0{n}_1.py]")
    (repo.root / "bin" / "agent.py").write_text(FAILING)
    repo.write("run.py", "")  # a file at the top is named as itself
    agent = WORKER.format(python=sys.executable).replace(
        '"bin/agent.py"', '"bin/agent.py", "run.py"'
    )
    repo.write("agents/worker.md", agent)
    live = gsd("execute-phase", "1")
    assert live.code == 2
    assert live.err == (
        "gsd: error: .planning/phases/01-alpha/01-02-PLAN.md is not committed (and 5 more "
        "files): plans run in worktrees made from the last commit, which have only what is "
        "committed; nothing was run (commit first: git add .planning/phases/01-alpha agents "
        'bin run.py && git commit -m "plans and agents")\n'
    )


def test_a_staged_plan_is_not_committed(repo, gsd) -> None:
    repo.plan("01-02", tasks=task("01-02", 1), files_modified="[src/t01-02_1.py]")
    git(repo.root, "add", ".planning")
    refused(gsd, repo.root, not_committed(".planning/phases/01-alpha/01-02-PLAN.md"), "01-02")


def test_an_agent_file_git_ignores_is_the_users_to_keep(repo, gsd) -> None:
    """gsd reads agent files from the checkout: one kept out of git on purpose runs."""
    root = repo.root
    git(root, "rm", "-q", "--cached", "agents/worker.md")
    repo.write(".gitignore", "agents/\n")
    commit(root, "the agent file kept local")
    done = gsd("execute-phase", "1")
    assert done.code == 0, done.err


def test_in_place_runs_read_the_checkout_and_are_not_refused(repo, gsd) -> None:
    root = repo.root
    repo.write(".planning/config.json", json.dumps({"workflow": {"use_worktrees": False}}))
    repo.write("src/.keep", "")  # in place, the sandbox lets agents write in src/ only
    commit(root, "in place")
    repo.plan("01-02", tasks=task("01-02", 1), files_modified="[src/t01-02_1.py]")
    dry = gsd("execute-phase", "1", "--dry-run")
    assert dry.code == 0 and dry.err == ""
    done = gsd("execute-phase", "1")
    assert done.code == 0, done.err
    assert (root / "src" / "t01-02_1.py").is_file()


def test_a_detached_head_is_refused(repo, gsd) -> None:
    root = repo.root
    git(root, "checkout", "-q", "--detach")
    short = git(root, "rev-parse", "--short=7", "HEAD").strip()
    what = (
        f"HEAD is detached at {short} in {root.resolve()}: gsd merges each plan's work into "
        "the branch you are on"
    )
    refused(gsd, root, (what, "switch to a branch first: git switch main"))
    git(root, "commit", "-q", "--allow-empty", "-m", "on no branch")
    live = gsd("execute-phase", "1")
    assert live.code == 2 and "(switch to a branch first: git switch -c <new-branch>)" in live.err


def test_a_missing_fallback_runner_is_named_before_the_run(repo, gsd, tmp_path: Path) -> None:
    root = repo.root
    (tmp_path / "bin" / "claude").unlink()
    head = git(root, "rev-parse", "HEAD").strip()
    live = gsd("execute-phase", "1")
    assert live.code == 2
    assert live.err == (
        "gsd: error: the claude runner program `claude` (plan 01-01 task 1, fallback agent "
        "gsd-executor) is not installed or not on PATH; nothing was run (install it "
        f"({NPM_CLAUDE}) or put it on PATH, or set `voltagent.fallback_on_error` to false)\n"
    )
    untouched(root, head)


def test_a_failed_task_names_its_own_failure_before_the_fallbacks(repo, gsd) -> None:
    root = repo.root
    (root / "bin" / "agent.py").write_text(FAILING)
    commit(root, "an agent that fails")
    failed = gsd("execute-phase", "1")
    assert failed.code == 1
    last = failed.err.splitlines()[-1]
    assert last.startswith(
        "gsd: phase 01 wave 1/1 plan 01-01 task 1: worker failed: nonzero-exit: "
    ), last
    assert "; gsd-executor took over and failed too: " in last
    assert last.index("worker failed") < last.index("gsd-executor took over")


def test_a_repository_git_cannot_commit_in_runs_no_agent(repo, gsd, monkeypatch) -> None:
    """No user.name or user.email (and git told not to guess them): every commit of the
    run would fail after its agent worked, so the run refuses before the first spawn."""
    for name in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{name}_NAME")
        monkeypatch.delenv(f"GIT_{name}_EMAIL")
    git(repo.root, "config", "user.useConfigOnly", "true")
    head = git(repo.root, "rev-parse", "HEAD").strip()
    live = gsd("execute-phase", "1")
    assert (live.code, live.out) == (2, "")
    assert live.err.startswith(
        f"gsd: error: git cannot name the author of gsd's commits in {repo.root} "
        "(no user.name or user.email); nothing was run (git config --global user.name"
    ), live.err
    assert len(live.err.splitlines()) == 1
    untouched(repo.root, head)
    assert not (repo.root / "src").exists()  # the agent never ran
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Back")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "back@example.invalid")
    refused = gsd("execute-phase", "1")  # the committer is still nobody
    assert refused.code == 2 and "name the committer" in refused.err, refused.err
