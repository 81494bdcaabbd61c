"""`gsd challenge PHASE` (issue 24) with `runner: command` agents, real programs, in real
repositories: judged by what is on disk and in git afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gsd.formats.challengereport import parse_challenge, render_report
from tests.conftest import git, slack
from tests.hostile import LANDLOCK
from tests.test_lock import hold

ANSWER = """\
I read the plans.
### Challenge Report
- Assumptions:
  - 01-01: src/x.py is assumed to exist; nothing creates it
- Missing dependencies: 01-02 needs what 01-01 builds, without depends_on
- Too large:
  - 01-01 task 1: it does the whole module at once
- Alternatives: none
"""

# The challenger does what the file `mode` beside it says; it says where it ran.
CHALLENGER = f"""\
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
prompt = sys.stdin.read()
print("cwd=" + os.getcwd(), file=sys.stderr)
mode = open(os.path.join(here, "mode")).read().strip()
if mode == "report":
    print({ANSWER!r})
elif mode == "write":
    try:
        open("src/new.py", "w").write("the challenger's\\n")
    except OSError:
        pass
    print({ANSWER!r})
elif mode == "commit":
    import subprocess
    open("README.md", "w").write("the challenger's\\n")
    subprocess.run(["git", "commit", "-qam", "challenger's commit"], capture_output=True)
    print({ANSWER!r})
elif mode == "write-user":  # into the user's checkout, beside the worktree it runs in
    user = open(os.path.join(here, "user-root")).read()
    try:
        open(os.path.join(user, "src", "stray.py"), "w").write("the challenger's\\n")
    except OSError:
        pass
    print({ANSWER!r})
elif mode == "garbage":
    print("Looks fine to me!")
elif mode == "hang":
    time.sleep(120)
elif mode == "crash":
    print("the model is gone", file=sys.stderr)
    sys.exit(3)
"""

AGENT_FILE = """\
---
name: challenger
description: "test agent"
tools: [read_file, glob, write_file]
timeout_mins: 1
runner: command
command: ["{python}", "{script}"]
---
Test persona of challenger.
"""


@pytest.fixture
def challenged(git_project, tmp_path):
    """Phase 01: plans 01-01 and 01-02, an agent `challenger` (a command), committed."""
    (tmp_path / "challenger.py").write_text(CHALLENGER)
    mode(tmp_path, "report")
    git_project.write("src/.keep", "")
    git_project.write(
        "agents/challenger.md",
        AGENT_FILE.format(python=sys.executable, script=tmp_path / "challenger.py"),
    )
    git_project.plan("01-01")
    git_project.plan("01-02", wave=2, depends_on="[]")
    configure(git_project)
    return git_project


def configure(project, **config: object) -> None:
    config = {"specialists": {"kill_grace_seconds": 1}, **config}
    project.write(".planning/config.json", json.dumps(config))
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", "plans")


def mode(tmp_path: Path, what: str) -> None:
    (tmp_path / "mode").write_text(what)


def status(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all")


def left_behind(root: Path) -> str:
    """gsd's refs and worktrees a challenge must not leave: its branch, its checkpoint."""
    refs = git(root, "for-each-ref", "--format=%(refname)", "refs/heads/gsd", "refs/tags")
    return refs + git(root, "worktree", "list", "--porcelain").count("worktree ") * "w"


CHALLENGE_FILE = ".planning/phases/01-alpha/01-CHALLENGE.md"


def test_the_report_is_written_next_to_the_plans_and_not_committed(
    challenged, gsd, tmp_path
) -> None:
    root = challenged.root
    head = git(root, "rev-parse", "HEAD")
    result = gsd("challenge", "1", "--agent", "challenger")
    assert result.code == 0, result.err
    assert status(root) == f"?? {CHALLENGE_FILE}\n"  # nothing else changed, nothing staged
    assert git(root, "rev-parse", "HEAD") == head  # nothing committed
    assert left_behind(root) == "w"  # the user's checkout alone; no gsd branch or tag
    text = (root / CHALLENGE_FILE).read_text()
    report = parse_challenge(text)
    assert not isinstance(report, str)
    assert report.assumptions == ("01-01: src/x.py is assumed to exist; nothing creates it",)
    assert report.missing == ("01-02 needs what 01-01 builds, without depends_on",)
    assert report.too_large == ("01-01 task 1: it does the whole module at once",)
    assert report.alternatives == ()
    assert "```markdown\n" + render_report(report) + "\n```" in text  # fenced
    assert "`.planning/phases/01-alpha/01-01-PLAN.md`" in text
    assert "not committed" in result.err and "git add" in result.err
    assert "Assumptions: 1\n  - 01-01: src/x.py" in result.out
    run = root / ".git/gsd/runs/01-challenge-0"  # the spawn's prompt and output, kept
    prompt = (run / "prompt.md").read_text()
    assert "Test persona of challenger." in prompt
    assert "### `.planning/phases/01-alpha/01-02-PLAN.md`" in prompt  # each plan by path
    assert "Use ONLY tools that read: read_file, glob." in prompt  # not its write_file
    assert "### Challenge Report\n- Assumptions:" in prompt
    cwd = Path((run / "stderr").read_text().strip().removeprefix("cwd="))
    assert cwd != root and not cwd.exists()  # a throwaway worktree, removed after


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "no-sandbox"])
def test_a_challenger_that_writes_is_an_error_put_back(
    challenged, gsd, tmp_path, sandbox: bool
) -> None:
    root = challenged.root
    if not sandbox:
        configure(challenged, sandbox={"enabled": False})
    mode(tmp_path, "write")
    result = gsd("challenge", "1", "--agent", "challenger")
    if sandbox and LANDLOCK:  # Landlock refused the write: nothing changed, a report
        assert result.code == 0, result.err
        assert status(root) == f"?? {CHALLENGE_FILE}\n"
    else:
        assert result.code == 1, result.err
        assert "changed src/new.py" in result.err and "no report written" in result.err
        assert status(root) == ""
    assert left_behind(root) == "w"
    assert "the challenger's" not in git(root, "log", "--all", "-p")


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place-config", "worktrees"])
def test_a_challenger_that_writes_in_the_users_checkout_is_an_error_put_back(
    challenged, gsd, tmp_path, in_place: bool
) -> None:
    """No sandbox: the user's checkout is watched and put back, whatever use_worktrees says."""
    root = challenged.root
    workflow = {"use_worktrees": not in_place}
    configure(challenged, sandbox={"enabled": False}, workflow=workflow)
    (tmp_path / "user-root").write_text(str(root))
    mode(tmp_path, "write-user")
    result = gsd("challenge", "1", "--agent", "challenger")
    assert result.code == 1, result.err
    assert "no report written" in result.err
    assert status(root) == "" and not (root / "src/stray.py").exists()
    assert left_behind(root) == "w"


def test_a_challenger_that_commits_is_an_error_put_back(challenged, gsd, tmp_path) -> None:
    root = challenged.root
    configure(challenged, sandbox={"enabled": False})
    head = git(root, "rev-parse", "HEAD")
    mode(tmp_path, "commit")
    result = gsd("challenge", "1", "--agent", "challenger")
    assert result.code == 1, result.err
    assert "no report written" in result.err
    assert status(root) == "" and git(root, "rev-parse", "HEAD") == head
    assert "challenger's commit" not in git(root, "log", "--all", "--format=%s")
    assert left_behind(root) == "w"


def test_an_unparsable_answer_is_one_error_line_and_nothing_written(
    challenged, gsd, tmp_path
) -> None:
    root = challenged.root
    mode(tmp_path, "garbage")
    result = gsd("challenge", "1", "--agent", "challenger")
    assert result.code == 1
    lines = [line for line in result.err.splitlines() if not line.startswith("[gsd]")]
    assert len(lines) == 1, result.err
    assert "no `### Challenge Report` heading" in lines[0] and "nothing written" in lines[0]
    assert status(root) == "" and left_behind(root) == "w"


def test_a_crashed_challenger_is_one_error_line(challenged, gsd, tmp_path) -> None:
    mode(tmp_path, "crash")
    result = gsd("challenge", "1", "--agent", "challenger")
    assert result.code == 1
    assert "gave no Challenge Report: it exited 3: the model is gone" in result.err
    assert status(challenged.root) == "" and left_behind(challenged.root) == "w"


def test_a_hanging_challenger_times_out(challenged, gsd, tmp_path) -> None:
    root = challenged.root
    mode(tmp_path, "hang")
    result = gsd("challenge", "1", "--agent", "challenger", "--timeout", str(slack(2)))
    assert result.code == 1
    assert "timed out after" in result.err
    assert status(root) == "" and left_behind(root) == "w"


def test_the_configured_reviewer_challenges_by_default(challenged, gsd) -> None:
    configure(challenged, review={"agent": "challenger"})
    result = gsd("challenge", "01-alpha")
    assert result.code == 0, result.err
    assert "challenger on command, read-only" in result.err


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["challenge", "7"], "no phase '7'"),
        (["challenge", "01-alhpa"], "did you mean 01-alpha?"),
        (["challenge", "1", "--runner", "codx"], "did you mean codex?"),
        (["challenge", "1", "--agent", "challengr"], "did you mean challenger?"),
    ],
)
def test_a_user_error_is_one_line(challenged, gsd, args: list[str], words: str) -> None:
    result = gsd(*args)
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert words in result.err
    assert status(challenged.root) == ""


def test_a_phase_without_plans_is_one_line(challenged, gsd) -> None:
    challenged.write(".planning/phases/02-beta/.keep", "")
    result = gsd("challenge", "2")
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert "no plans to challenge" in result.err


def test_uncommitted_plans_are_refused(challenged, gsd) -> None:
    challenged.plan("01-03")
    result = gsd("challenge", "1", "--agent", "challenger")
    assert result.code == 2
    assert "01-03-PLAN.md" in result.err
    assert status(challenged.root) == "?? .planning/phases/01-alpha/01-03-PLAN.md\n"


def test_gsd_diff_and_the_pr_view_show_the_report_by_heading(challenged, gsd) -> None:
    root = challenged.root
    assert gsd("challenge", "1", "--agent", "challenger").code == 0
    shown = gsd("diff")  # HEAD against the working tree: the new, uncommitted report
    assert shown.code == 0, shown.err
    assert f"challenge added  {CHALLENGE_FILE}" in shown.out
    assert "  Assumptions: 1\n    - 01-01: src/x.py is assumed to exist" in shown.out
    assert "  Alternatives: none" in shown.out
    assert gsd("diff", "--exit-code").code == 1  # a challenge is a change
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the challenge")
    pr = gsd("diff", "HEAD~1", "HEAD", "--format", "markdown")  # the pull-request comment
    assert f"### Challenge report `{CHALLENGE_FILE}` (added)" in pr.out
    assert "```markdown\n### Challenge Report\n- Assumptions:\n  - 01-01: src/x.py" in pr.out
    data = json.loads(gsd("diff", "HEAD~1", "HEAD", "--format", "json").out)
    (entry,) = data["challenges"]
    assert (entry["status"], entry["path"]) == ("added", CHALLENGE_FILE)
    assert entry["items"]["Too large"] == ["01-01 task 1: it does the whole module at once"]
    (root / CHALLENGE_FILE).write_text("edited by hand\n")
    changed = gsd("diff")
    assert f"challenge changed  {CHALLENGE_FILE}" in changed.out
    assert "no Challenge Report gsd can read in it" in changed.out
    assert "challenge" not in gsd("diff", "HEAD", "HEAD").out  # the same on both sides


def test_a_challenge_is_refused_while_a_run_holds_the_lock(challenged, gsd) -> None:
    holder = hold(f"repo_lock(Path({str(challenged.root)!r}))")
    try:
        busy = gsd("challenge", "1", "--agent", "challenger")
    finally:
        holder.kill()
        holder.wait()
    assert busy.code == 2 and len(busy.err.splitlines()) == 1, busy.err
    assert busy.err.startswith("gsd: error: another gsd run holds ")
    assert status(challenged.root) == "" and left_behind(challenged.root) == "w"
    assert gsd("challenge", "1", "--agent", "challenger").code == 0  # the holder is gone


def test_a_killed_challenge_is_cleaned_up_by_the_next(challenged, gsd, tmp_path) -> None:
    """gsd killed (SIGKILL) while its challenger runs: the next challenge takes the lock
    over (ending the agent left running), puts its worktree straight, and leaves nothing."""
    root = challenged.root
    mode(tmp_path, "hang")
    argv = [sys.executable, "-m", "gsd", "challenge", "1", "--agent", "challenger"]
    killed = subprocess.Popen(argv, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    said = root / ".git/gsd/runs/01-challenge-0/stderr"
    deadline = time.monotonic() + slack(30)
    while not (said.exists() and "cwd=" in said.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    assert "cwd=" in said.read_text()
    mode(tmp_path, "report")
    result = gsd("challenge", "1", "--agent", "challenger")
    assert result.code == 0, result.err
    assert status(root) == f"?? {CHALLENGE_FILE}\n" and left_behind(root) == "w"


def test_an_uncommitted_report_is_never_written_over(challenged, gsd) -> None:
    root = challenged.root
    assert gsd("challenge", "1", "--agent", "challenger").code == 0
    (root / CHALLENGE_FILE).write_text("my notes\n")
    again = gsd("challenge", "1", "--agent", "challenger")
    assert again.code == 2 and len(again.err.splitlines()) == 1, again.err
    assert f"{CHALLENGE_FILE} has changes that are not committed" in again.err
    assert (root / CHALLENGE_FILE).read_text() == "my notes\n"
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "notes")
    assert gsd("challenge", "1", "--agent", "challenger").code == 0  # git keeps the notes
    assert git(root, "status", "--porcelain") == f" M {CHALLENGE_FILE}\n"
