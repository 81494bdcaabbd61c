"""`salvage.accept_timeout_when_verified` (issue 24): a timed-out attempt whose
`<automated>` checks pass is committed as a soft success; one whose checks fail is
rolled back and salvaged; off by default. Whole `gsd execute-phase` runs of command
agents (real programs that write, then sleep past their timeout), judged by git, the
plan's log, SUMMARY.md and `gsd report`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gsd.formats import execlog
from tests.conftest import git, plan_text, slack
from tests.test_execute import AGENT_FILE

# writes its work, then hangs past the timeout; a reviewer (`review` in argv) answers
AGENT = """\
import os, sys, time
if sys.argv[1:] == ["review"]:
    print("### Review Report\\n- Verdict: reject\\n- Findings:\\n  - src/a.py:1: not done")
    sys.exit(0)
os.makedirs("src", exist_ok=True)
open("src/a.py", "w").write("work done before the timeout\\n")
time.sleep(60)
"""

VERIFIED = "timed out, but its checks pass: accepted (salvage.accept_timeout_when_verified)"


def task(verify: str, attrs: str = "") -> str:
    check = f"<verify><automated>{verify}</automated></verify>" if verify else ""
    return (
        f'<task type="auto" specialist="worker"{attrs}>\n<name>Task 1</name>\n'
        f"<files>src/a.py</files>\n<action>Write it.</action>\n{check}\n"
        "<done>Done.</done>\n</task>"
    )


def hanging_phase(project, tmp_path: Path, verify: str, accept: bool | None, attrs="") -> None:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    for name in ("worker", "gsd-executor"):
        project.write(
            f"agents/{name}.md", AGENT_FILE.format(name=name, python=sys.executable, script=script)
        )
    reviewer = AGENT_FILE.format(name="reviewer", python=sys.executable, script=script)
    reviewer = reviewer.replace(f'"{script}"]', f'"{script}", "review"]')
    project.write("agents/reviewer.md", reviewer.replace("write_file, replace, ", ""))
    project.write(".planning/available_agents.md", "- **worker**: test\n- **reviewer**: r\n")
    config: dict[str, object] = {
        "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
        "voltagent": {"fallback_on_error": False},
    }
    if accept is not None:
        config["salvage"] = {"accept_timeout_when_verified": accept}
    project.write(".planning/config.json", json.dumps(config))
    text = plan_text(tasks=task(verify, attrs), files_modified="[src/a.py]")
    project.plan("01-01", text=text)
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", "plans")


def results(root: Path) -> list[dict[str, object]]:
    events, _ = execlog.read_all(root / ".planning")
    return [e for e in events if e.get("event") == "result"]


def commit_of(root: Path) -> str:
    return git(root, "log", "-1", "--format=%H", "--grep=Gsd-Task: 01-01-1").strip()


def salvage_refs(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", "refs/gsd/salvage/").split()


def test_a_timeout_whose_checks_pass_is_committed_as_a_soft_success(
    git_project, gsd, tmp_path
) -> None:
    root = git_project.root
    hanging_phase(git_project, tmp_path, "grep -q 'work done' src/a.py", accept=True)
    result = gsd("execute-phase", "1", "--timeout", str(slack(2)))
    assert result.code == 0, result.err
    assert f"task 1: committed {commit_of(root)[:7]}; {VERIFIED}" in result.err
    # the work is on the user's branch, in the task's commit, and nothing was salvaged
    commit = git(root, "log", "--format=%H", "--grep=Gsd-Task: 01-01-1").split()
    assert len(commit) == 1
    assert git(root, "show", "--format=", "--name-only", commit[0]).split() == ["src/a.py"]
    assert (root / "src/a.py").read_text() == "work done before the timeout\n"
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert salvage_refs(root) == []
    (event,) = results(root)
    assert (event["success"], event["soft_success"]) == (True, True)
    assert event["soft_reason"] == VERIFIED
    summary = (root / ".planning/phases/01-alpha/01-01-SUMMARY.md").read_text()
    assert f"- **Task 1 attempt 1 (worker):** {VERIFIED}" in summary
    text = gsd("report").out
    assert f"soft success: {VERIFIED}" in text
    timeline = json.loads(gsd("report", "--format", "json").out)["timeline"]
    assert [r["outcome"] for r in timeline if r["event"] == "result"] == [
        f"soft success: {VERIFIED}"
    ]


def test_a_timeout_whose_checks_fail_is_rolled_back_and_salvaged(
    git_project, gsd, tmp_path
) -> None:
    root = git_project.root
    hanging_phase(git_project, tmp_path, "grep -q 'all of it' src/a.py", accept=True)
    head = git(root, "rev-parse", "HEAD")
    result = gsd("execute-phase", "1", "--timeout", str(slack(2)))
    assert result.code == 1, result.err
    assert VERIFIED not in result.err
    assert git(root, "diff", "--name-only", head.strip(), "HEAD", "--", "src") == ""
    assert not (root / "src/a.py").exists()
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert salvage_refs(root) == ["refs/gsd/salvage/01-01/1/1"]
    assert git(root, "show", "refs/gsd/salvage/01-01/1/1:src/a.py").startswith("work done")
    (event,) = results(root)
    assert (event["success"], event["error_type"]) == (False, "timeout")
    assert "soft_reason" not in event
    shown = gsd("errors", "--format", "json").out
    assert "not accepted on its checks: `grep -q 'all of it' src/a.py` exited 1" in shown
    page = gsd("report", "--format", "html").out
    assert 'data-ref="refs/gsd/salvage/01-01/1/1"' in page and 'class="salvage"' in page


@pytest.mark.parametrize(
    ("verify", "accept"),
    [
        pytest.param("grep -q 'work done' src/a.py", None, id="off-by-default"),
        pytest.param("grep -q 'work done' src/a.py", False, id="off"),
        pytest.param("", True, id="no-verify-command"),
    ],
)
def test_without_the_setting_or_a_check_a_timeout_stays_a_failure(
    git_project, gsd, tmp_path, verify: str, accept: bool | None
) -> None:
    root = git_project.root
    hanging_phase(git_project, tmp_path, verify, accept=accept)
    result = gsd("execute-phase", "1", "--timeout", str(slack(2)))
    assert result.code == 1, result.err
    assert "soft success" not in result.err and "accepted" not in result.err
    assert not (root / "src/a.py").exists()
    assert salvage_refs(root) == ["refs/gsd/salvage/01-01/1/1"]
    (event,) = results(root)
    assert (event["success"], event["soft_success"], event["error_type"]) == (
        False,
        False,
        "timeout",
    )


def test_a_reviewed_task_accepted_on_its_checks_still_goes_through_its_review(
    git_project, gsd, tmp_path
) -> None:
    root = git_project.root
    attrs = ' review="reviewer"'
    hanging_phase(git_project, tmp_path, "grep -q 'work done' src/a.py", True, attrs)
    result = gsd("execute-phase", "1", "--timeout", str(slack(2)))
    assert result.code == 1, result.err
    assert "review-rejected" in result.err
    assert VERIFIED not in result.err  # never said accepted before its review
    assert not (root / "src/a.py").exists()
    assert "Gsd-Task: 01-01-1" not in git(root, "log", "--format=%B")
    assert salvage_refs(root) == ["refs/gsd/salvage/01-01/1/1"]
    events, _ = execlog.read_all(root / ".planning")
    assert [e.get("verdict") for e in events if e.get("event") == "review"] == ["reject"]
    assert 'class="review verdict-reject"' in gsd("report", "--format", "html").out


def test_the_setting_is_validated_in_one_line() -> None:
    from gsd.formats.settings import InvalidSettings, parse

    with pytest.raises(InvalidSettings) as caught:
        parse('{\n  "salvage": {"accept_timeout_when_verified": "yes"}\n}', "c.json")
    assert str(caught.value).splitlines() == [
        'c.json:2: `salvage.accept_timeout_when_verified` must be true or false, not "yes"'
    ]
    assert parse("{}").salvage.accept_timeout_when_verified is False
