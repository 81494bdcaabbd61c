"""The review gate (issue 24) end to end: `runner: command` authors and reviewers (real
programs) in real repositories; judged by git (the task's commit kept or rolled back),
the logs and the prompts gsd wrote."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from gsd.formats import errorlog, execlog
from tests.conftest import git, slack
from tests.hostile import LANDLOCK

REPORT = (
    "### Task Report\n- Status: success\n- Files Created: src/t.py\n- Files Modified: none\n"
    "- Files Deleted: none\n- Validation: pass\n- Errors: none\n### Downstream Context\n"
    "- Key Interfaces Introduced: none\n- Patterns Established: none\n- Warnings: none\n"
)

# The author writes src/t.py: "draft", or "fixed" once its prompt carries the findings.
AUTHOR = f"""\
import os, sys
prompt = sys.stdin.read()
fixed = "## Review Findings" in prompt and "src/t.py:1: say fixed" in prompt
plan = os.environ["GSD_PLAN"]
name = "src/t.py" if plan == "01-01" else f"src/t{{plan}}.py"
os.makedirs("src", exist_ok=True)
open(name, "w").write("fixed\\n" if fixed else "draft\\n")
print({REPORT!r}.replace("src/t.py", name))
"""

# The reviewer does what the file `review-mode` beside it says; it keeps its prompt.
REVIEWER = """\
import os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
prompt = sys.stdin.read()
mode = open(os.path.join(here, "review-mode")).read().strip()
def report(verdict, findings="none"):
    print("Looked at it.\\n### Review Report")
    print("- Verdict: " + verdict + "\\n- Findings: " + findings)
if mode == "adaptive":  # changes until the author says fixed
    if open("src/t.py").read().strip() == "fixed":
        report("approve")
    else:
        report("changes", "\\n  - src/t.py:1: say fixed")
elif mode == "crash":
    print("about to fail", file=sys.stderr)
    sys.exit(3)
elif mode == "hang":
    time.sleep(120)
elif mode == "garbage":
    print("LGTM!")
elif mode == "commit":  # a reviewer that commits the work itself, as it read it
    import subprocess
    subprocess.run(["git", "add", "-A"], capture_output=True)
    subprocess.run(["git", "commit", "-qm", "reviewer's commit"], capture_output=True)
    report("approve")
elif mode == "write":
    try:
        open("src/t.py", "w").write("the reviewer's\\n")
    except OSError:
        pass
    report("approve")
else:
    report(mode, "\\n  - src/t.py:1: not good" if mode != "approve" else "none")
"""

AGENT_FILE = """\
---
name: {name}
description: "test agent"
tools: [{tools}]
timeout_mins: 1
runner: command
command: ["{python}", "{script}"]
---
Test persona of {name}.
"""

TASK = """\
<task type="auto" specialist="worker"{attrs}>
<name>Task {n}</name>
<files>src/t.py</files>
<action>Write it.</action>
<verify><automated>test -f src/t.py</automated></verify>
<done>src/t.py says fixed.</done>
</task>"""


@pytest.fixture
def reviewed(git_project, tmp_path):
    """Plan 01-01: one task by `worker`, reviewed by `reviewer` (task attribute)."""
    (tmp_path / "author.py").write_text(AUTHOR)
    (tmp_path / "reviewer.py").write_text(REVIEWER)
    (tmp_path / "review-mode").write_text("approve")
    git_project.write("src/.keep", "")  # in place, Landlock grants existing top-level folders
    write = "read_file, write_file, replace, run_shell_command"
    for name, script, tools in (
        ("worker", "author.py", write),
        ("gsd-executor", "author.py", write),
        ("reviewer", "reviewer.py", "read_file, glob, write_file"),  # read-only all the same
    ):
        git_project.write(
            f"agents/{name}.md",
            AGENT_FILE.format(
                name=name, tools=tools, python=sys.executable, script=tmp_path / script
            ),
        )
    git_project.write(
        ".planning/available_agents.md", "- **worker**: test\n- **reviewer**: reviews\n"
    )
    config = {"specialists": {"kill_grace_seconds": 1, "max_retries": 0}}
    git_project.write(".planning/config.json", json.dumps(config))
    write_plan(git_project, ' review="reviewer"')
    return git_project


def write_plan(project, attrs: str = "", commit: bool = True) -> None:
    project.plan("01-01", tasks=TASK.format(attrs=attrs, n=1), files_modified="[src/t.py]")
    if commit:
        git(project.root, "add", "-A")
        git(project.root, "commit", "-q", "-m", "plans")


def mode(tmp_path: Path, what: str) -> None:
    (tmp_path / "review-mode").write_text(what)


def configure(project, in_place: bool = False, sandbox: bool = True, **review: object) -> None:
    """config.json with this `review` section; `in_place`: plans run in the checkout (the
    run folders under .git, which the prompts are read from, outlive the run)."""
    config: dict[str, object] = {"specialists": {"kill_grace_seconds": 1, "max_retries": 0}}
    if review:
        config["review"] = review
    if in_place:
        config["workflow"] = {"use_worktrees": False}
    if not sandbox:
        config["sandbox"] = {"enabled": False}
    project.write(".planning/config.json", json.dumps(config))
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "--allow-empty", "-m", "config")


def committed(root: Path) -> list[str]:
    """The Gsd-Task trailers of the commits on every branch."""
    out = git(root, "log", "--branches", "--format=%(trailers:key=Gsd-Task,valueonly)")
    return [line.strip() for line in out.splitlines() if line.strip()]


def events(root: Path, kind: str) -> list[dict]:
    found, warnings = execlog.read_all(root / ".planning")
    assert warnings == []
    return [e for e in found if e["event"] == kind]


def errors(root: Path) -> list[errorlog.ErrorRecord]:
    records, warnings = errorlog.read_all(root / ".planning")
    assert warnings == []
    return records


def run_dir(root: Path, *parts: str) -> Path:
    return root / ".git" / "gsd" / "runs" / "01-01-1" / Path(*parts)


def test_an_approved_task_is_committed_and_its_reviewer_saw_the_work(reviewed, gsd) -> None:
    root = reviewed.root
    configure(reviewed, in_place=True)
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert committed(root) == ["01-01-1"]
    assert (root / "src/t.py").read_text() == "draft\n"
    (review,) = events(root, "review")
    assert (review["verdict"], review["reviewer"], review["runner"]) == (
        "approve",
        "reviewer",
        "command",
    )
    assert (review["round"], review["findings"]) == (1, [])
    assert "review by reviewer (command, round 1): approve" in result.err
    prompt = run_dir(root, "review", "prompt.md").read_text()
    assert "Test persona of reviewer." in prompt
    assert "+draft" in prompt and "src/t.py" in prompt  # the diff, the new file in full
    assert "- Status: success" in prompt  # the author's Task Report
    assert "src/t.py says fixed." in prompt  # the task's done criteria
    assert "### Review Report\n- Verdict: approve | changes | reject" in prompt
    assert "You change nothing" in prompt
    assert "Use ONLY tools that read: read_file, glob.\n" in prompt  # not its write_file
    # the author's own output stays the task's RESULT, not the reviewer's
    result_file = root / ".planning/phases/01-alpha/01-01-RESULT.txt"
    assert "### Task Report" in result_file.read_text()


def test_a_rejected_task_is_rolled_back_and_fails(reviewed, gsd, tmp_path) -> None:
    root = reviewed.root
    mode(tmp_path, "reject")
    result = gsd("execute-phase", "1")
    assert result.code == 1
    assert committed(root) == []
    assert not (root / "src/t.py").exists()
    assert git(root, "status", "--porcelain", "--", "src") == ""
    (record,) = errors(root)
    assert record.error_type == "review-rejected"
    assert "rejected the work: src/t.py:1: not good" in record.details
    (review,) = events(root, "review")
    assert (review["verdict"], review["findings"]) == ("reject", ["src/t.py:1: not good"])
    assert len(events(root, "spawn")) == 1  # never retried, never handed to the fallback


def test_changes_then_approve_retries_with_the_findings(reviewed, gsd, tmp_path) -> None:
    root = reviewed.root
    configure(reviewed, in_place=True)
    mode(tmp_path, "adaptive")
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert committed(root) == ["01-01-1"]  # one commit: the approved attempt's
    assert (root / "src/t.py").read_text() == "fixed\n"
    verdicts = [(e["verdict"], e["round"], e["attempt"]) for e in events(root, "review")]
    assert verdicts == [("changes", 1, 1), ("approve", 2, 2)]
    assert [e.get("reason") for e in events(root, "retry")] == ["review-changes"]
    prompt = run_dir(root, "prompt.md").read_text()  # the author's second prompt
    assert "## Review Findings (round 1)" in prompt and "- src/t.py:1: say fixed" in prompt
    assert [r.error_type for r in errors(root)] == ["review-changes"]


def test_changes_past_max_rounds_fail_the_task(reviewed, gsd, tmp_path) -> None:
    root = reviewed.root
    configure(reviewed, max_rounds=2)
    mode(tmp_path, "changes")
    result = gsd("execute-phase", "1")
    assert result.code == 1
    assert committed(root) == [] and not (root / "src/t.py").exists()
    assert [e["verdict"] for e in events(root, "review")] == ["changes", "changes"]
    assert [r.error_type for r in errors(root)] == ["review-changes", "review-changes"]
    assert "review-changes" in result.err


@pytest.mark.parametrize(
    ("what", "problem"),
    [
        pytest.param("crash", "it exited 3: about to fail", id="crash"),
        pytest.param("garbage", "no `### Review Report` heading", id="garbage"),
        pytest.param("bogus", "`- Verdict: bogus` is not one of approve", id="bad-verdict"),
    ],
)
def test_a_reviewer_without_a_usable_answer_fails_the_review(
    reviewed, gsd, tmp_path, what: str, problem: str
) -> None:
    root = reviewed.root
    mode(tmp_path, what)
    result = gsd("execute-phase", "1")
    assert result.code == 1
    assert committed(root) == [] and not (root / "src/t.py").exists()
    (record,) = errors(root)
    assert record.error_type == "review-failed"
    assert problem in record.details
    (review,) = events(root, "review")
    assert review["verdict"] == "error" and problem in review["problem"]


def test_a_hanging_reviewer_times_out_and_fails_the_review(reviewed, gsd, tmp_path) -> None:
    root = reviewed.root
    mode(tmp_path, "hang")
    result = gsd("execute-phase", "1", "--timeout", str(slack(2)))
    assert result.code == 1
    assert committed(root) == [] and not (root / "src/t.py").exists()
    (record,) = errors(root)
    assert record.error_type == "review-failed" and "timed out" in record.details


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "no-sandbox"])
def test_a_reviewer_never_gets_its_own_change_committed(
    reviewed, gsd, tmp_path, sandbox: bool
) -> None:
    """Read-only: the sandbox refuses its write, or gsd sees it and fails the review."""
    root = reviewed.root
    configure(reviewed, sandbox=sandbox)
    mode(tmp_path, "write")
    result = gsd("execute-phase", "1")
    if sandbox and LANDLOCK:  # Landlock kept the reviewer out: the author's work went in
        assert result.code == 0, result.err
        assert (root / "src/t.py").read_text() == "draft\n"
        assert committed(root) == ["01-01-1"]
    else:  # it wrote: gsd saw it, failed the review and rolled the attempt back
        assert result.code == 1
        assert committed(root) == [] and not (root / "src/t.py").exists()
        (record,) = errors(root)
        assert record.error_type == "review-failed"
        assert "it changed src/t.py (read-only)" in record.details
    assert "the reviewer's" not in git(root, "log", "--branches", "-p")


def test_a_reviewer_that_commits_fails_the_review_without_a_sandbox(
    reviewed, gsd, tmp_path
) -> None:
    root = reviewed.root
    configure(reviewed, sandbox=False)
    mode(tmp_path, "commit")
    result = gsd("execute-phase", "1")
    assert result.code == 1, result.err
    assert committed(root) == [] and not (root / "src/t.py").exists()
    assert "reviewer's commit" not in git(root, "log", "--all", "--format=%s")
    (record,) = errors(root)
    assert record.error_type == "review-failed" and "(read-only)" in record.details


def test_config_review_when_paths_picks_tasks(reviewed, gsd, tmp_path) -> None:
    root = reviewed.root
    write_plan(reviewed, commit=False)  # no review= on the task
    configure(reviewed, agent="reviewer", when={"paths": ["lib/*"]})
    mode(tmp_path, "reject")
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err  # src/t.py is not under lib/: not reviewed
    assert committed(root) == ["01-01-1"] and events(root, "review") == []


def test_config_review_every_task_by_default(reviewed, gsd, tmp_path) -> None:
    root = reviewed.root
    write_plan(reviewed, commit=False)
    configure(reviewed, agent="reviewer")
    mode(tmp_path, "reject")
    assert gsd("execute-phase", "1").code == 1
    assert committed(root) == [] and [e["verdict"] for e in events(root, "review")] == ["reject"]


def test_review_none_opts_a_task_out(reviewed, gsd, tmp_path) -> None:
    root = reviewed.root
    write_plan(reviewed, ' review="none"', commit=False)
    configure(reviewed, agent="reviewer")
    mode(tmp_path, "reject")
    assert gsd("execute-phase", "1").code == 0
    assert committed(root) == ["01-01-1"] and events(root, "review") == []


def test_an_unknown_reviewer_refuses_the_run_before_anything_runs(reviewed, gsd) -> None:
    root = reviewed.root
    write_plan(reviewed, commit=False)
    configure(reviewed, agent="reviewr")
    head = git(root, "rev-parse", "HEAD")
    result = gsd("execute-phase", "1")
    assert result.code == 2
    assert (
        "config.json: review.agent: reviewer 'reviewr' is no agent gsd found "
        "(did you mean reviewer?); add its agent file or name another; nothing was run"
    ) in result.err
    assert git(root, "rev-parse", "HEAD") == head and committed(root) == []
    assert events(root, "spawn") == []


def test_a_reviewer_whose_program_is_missing_refuses_the_run(reviewed, gsd, tmp_path) -> None:
    root = reviewed.root
    reviewed.write(
        "agents/reviewer.md",
        AGENT_FILE.format(
            name="reviewer", tools="read_file", python=tmp_path / "nopython", script="x"
        ),
    )
    git(root, "commit", "-qam", "a reviewer that cannot start")
    result = gsd("execute-phase", "1")
    assert result.code == 2
    assert "agent reviewer" in result.err and "nothing was run" in result.err
    assert committed(root) == [] and events(root, "spawn") == []


def test_validate_names_an_unknown_reviewer_with_a_suggestion(reviewed, gsd) -> None:
    path = reviewed.plan(
        "01-01", tasks=TASK.format(attrs=' review="reviewr"', n=1), files_modified="[src/t.py]"
    )
    result = gsd("validate", "--format", "json")
    (found,) = [d for d in json.loads(result.out)["diagnostics"] if d["code"] == "GSD023"]
    assert found["severity"] == "error" and result.code == 1
    assert "review='reviewr', which is not in .planning/available_agents.md" in found["message"]
    assert "(did you mean reviewer?)" in found["message"]
    assert (
        found["line"]
        == path.read_text()
        .splitlines()
        .index('<task type="auto" specialist="worker" review="reviewr">')
        + 1
    )
    assert "GSD023" in gsd("rules").out


def test_config_review_errors_are_one_line(reviewed, gsd) -> None:
    reviewed.write(
        ".planning/config.json",
        textwrap.dedent("""\
        {
          "review": {"agent": "reviewer", "runner": "gpt"}
        }
        """),
    )
    result = gsd("execute-phase", "1", "--dry-run")
    assert result.code == 2
    assert "config.json:2: `review.runner` must be one of claude, gemini, codex, command" in (
        result.err
    )


CLAUDE_AGENT = "---\nname: {name}\ndescription: t\ntools: [Read, Write]\nmodel: sonnet\n---\nP.\n"


@pytest.mark.parametrize(
    ("runner", "shown"),
    [
        pytest.param(None, "critic on codex, read-only", id="off-the-authors-runner"),
        pytest.param("gemini", "critic on gemini, read-only", id="config-runner"),
    ],
)
def test_the_dry_run_shows_the_reviewer_on_another_runner(
    git_project, gsd, runner: str | None, shown: str
) -> None:
    for name in ("writer", "critic"):
        git_project.write(f"agents/{name}.md", CLAUDE_AGENT.format(name=name))
    git_project.write(".planning/available_agents.md", "- **writer**: w\n- **critic**: c\n")
    git_project.plan(
        "01-01",
        tasks=TASK.format(attrs=' review="critic"', n=1).replace("worker", "writer"),
        files_modified="[src/t.py]",
    )
    if runner:
        git_project.write(".planning/config.json", json.dumps({"review": {"runner": runner}}))
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    assert result.code == 0, result.err
    (task,) = json.loads(result.out)["tasks"]
    assert (task["runner"], task["review"]) == ("claude", shown)
    text = gsd("execute-phase", "1", "--dry-run")
    assert f"  reviewed by: {shown}\n" in text.out


def test_plans_of_one_wave_are_reviewed_side_by_side(reviewed, gsd, tmp_path) -> None:
    """Two plans run at once, each in its worktree, each task reviewed there."""
    root = reviewed.root
    reviewed.plan(
        "01-02",
        tasks=TASK.format(attrs=' review="reviewer"', n=1).replace("src/t.py", "src/t01-02.py"),
        files_modified="[src/t01-02.py]",
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a second plan")
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert sorted(committed(root)) == ["01-01-1", "01-02-1"]
    assert (root / "src/t.py").read_text() == (root / "src/t01-02.py").read_text() == "draft\n"
    reviews = sorted((e["plan"], e["verdict"]) for e in events(root, "review"))
    assert reviews == [("01-01", "approve"), ("01-02", "approve")]
