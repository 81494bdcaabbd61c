"""Salvage of a killed run's attempt (issue 24): gsd is killed (SIGKILL) while an agent
is half-way; the next run's recovery keeps the attempt's changes under its salvage ref
before rolling it back, so a crash never loses an agent's work. Real git, a real
command agent, a real `gsd` process killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, git, plan_text
from tests.test_execute import AGENT_FILE
from tests.test_proc import alive_with

# attempt 1 fails, attempt 2 (the fallback) writes and hangs until gsd is killed, the
# next run's attempt succeeds
AGENT = """\
import os, sys, time
control = {control!r}
count = os.path.join(control, "count")
n = int(open(count).read()) + 1 if os.path.exists(count) else 1
open(count, "w").write(str(n))
os.makedirs("src", exist_ok=True)
if n == 1:
    open("src/a.py", "w").write("first\\n")
    sys.exit(3)
if n == 2:
    open("src/a.py", "w").write("second, half done\\n")
    open(os.path.join(control, "started"), "w").close()
    time.sleep(120)
open("src/a.py", "w").write("third\\n")
print("### Task Report\\n- Status: success\\n- Files Created: src/a.py\\n"
      "- Files Modified: none\\n- Files Deleted: none\\n- Validation: pass\\n- Errors: none")
"""

TASK = (
    '<task type="auto" specialist="worker">\n<name>Task 1</name>\n'
    "<files>src/a.py</files>\n<action>Write it.</action>\n"
    "<verify><automated>test -f src/a.py</automated></verify>\n<done>Done.</done>\n</task>"
)


def salvage_refs(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", "refs/gsd/salvage/").split()


def gsd_run(root: Path, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gsd", *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )


@pytest.fixture
def killed(git_project, tmp_path):
    """A phase whose task's second attempt gsd was SIGKILLed in; returns HEAD before."""
    root = git_project.root
    control = tmp_path / "control"
    control.mkdir()
    script = tmp_path / "agent.py"
    script.write_text(AGENT.format(control=str(control)))
    for name in ("worker", "gsd-executor"):
        git_project.write(
            f"agents/{name}.md", AGENT_FILE.format(name=name, python=sys.executable, script=script)
        )
    git_project.write(".planning/available_agents.md", "- **worker**: test\n")
    config = {
        "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
        "sandbox": {"writable": [str(control)]},
    }
    git_project.write(".planning/config.json", json.dumps(config))
    git_project.plan("01-01", text=plan_text(tasks=TASK, files_modified="[src/a.py]"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")
    head = git(root, "rev-parse", "HEAD").strip()
    process = gsd_run(root, "execute-phase", "1")
    deadline = time.monotonic() + 120
    while not (control / "started").exists():
        assert time.monotonic() < deadline and process.poll() is None, "the agent never started"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert git(root, "tag", "--list").startswith("checkpoint/")  # left open by the kill
    assert salvage_refs(root) == ["refs/gsd/salvage/01-01/1/1"]  # attempt 1's, as usual
    # the user's checkout: as before the attempt (the agents work in the plan's worktree)
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    return head


def recovered(root: Path, tmp_path: Path) -> str:
    again = gsd_run(root, "execute-phase", "1")
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert alive_with(str(tmp_path / "agent.py")) == []
    return err


def test_the_next_run_keeps_a_killed_attempt_under_its_salvage_ref(
    git_project, tmp_path, killed
) -> None:
    root = git_project.root
    err = recovered(root, tmp_path)
    ref = "refs/gsd/salvage/01-01/1/2"  # the killed attempt's number, from the journal
    assert f"are kept under {ref}" in err
    assert salvage_refs(root) == ["refs/gsd/salvage/01-01/1/1", ref]
    assert git(root, "show", f"{ref}:src/a.py") == "second, half done\n"
    assert git(root, "diff-tree", "-r", "--name-only", f"{ref}^", ref).split() == ["src/a.py"]
    assert "Gsd-Error-Type: killed-run" in git(root, "log", "-1", "--format=%B", ref)
    assert git(root, "branch", "--contains", ref) == ""  # on no branch
    # rolled back all the same: the task's one commit holds the next run's work only
    assert (root / "src/a.py").read_text() == "third\n"
    assert git(root, "tag", "--list") == ""
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    listed = subprocess.run(
        [sys.executable, "-m", "gsd", "salvage", "list", "--format", "json"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    rows = json.loads(listed.stdout)["salvage"]
    assert [(r["attempt"], r["error_type"]) for r in rows][-1] == ("2", "killed-run")


def test_without_its_journal_a_killed_attempt_takes_the_next_free_number(
    git_project, tmp_path, killed
) -> None:
    root = git_project.root
    journal = root / ".git" / "gsd" / "journal" / "plans" / "01-01.jsonl"
    assert journal.is_file()
    journal.unlink()  # the killed run's lines lost: its attempt number unknown
    older = git(root, "rev-parse", "refs/gsd/salvage/01-01/1/1").strip()
    git(root, "update-ref", "refs/gsd/salvage/01-01/1/4", older)  # an earlier run's
    recovered(root, tmp_path)
    assert git(root, "show", "refs/gsd/salvage/01-01/1/5:src/a.py") == "second, half done\n"
    assert git(root, "rev-parse", "refs/gsd/salvage/01-01/1/4").strip() == older


def test_checkpoints_prune_keeps_what_it_rolls_back(git_project, tmp_path, killed) -> None:
    """`gsd checkpoints prune` deletes the salvage refs there were, then rolls the killed
    attempt back: its changes stay under a new salvage ref."""
    root = git_project.root
    pruned = subprocess.run(
        [sys.executable, "-m", "gsd", "checkpoints", "prune"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert pruned.returncode == 0, pruned.stderr
    assert salvage_refs(root) == ["refs/gsd/salvage/01-01/1/2"]
    assert git(root, "show", "refs/gsd/salvage/01-01/1/2:src/a.py") == "second, half done\n"
    assert git(root, "tag", "--list") == ""
