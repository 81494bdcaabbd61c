"""Plan-first gates (issue 24) end to end: `runner: command` specialists and approvers
(real programs) in real repositories; judged by git (the proposal's commit, the task's
commit or its rollback and salvage), approvals.jsonl, the logs and the prompts gsd wrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gsd.formats import errorlog, execlog
from gsd.formats.proposal import parse_proposal
from tests.conftest import git

PROPOSAL = ".planning/phases/01-alpha/01-01-T1-PROPOSAL.md"

# One program for every role, told apart by its prompt; what it does is in the files
# `propose-mode`, `work-mode` and `approve-mode` beside it.
AGENT = """\
import os, sys
here = os.path.dirname(os.path.abspath(__file__))
prompt = sys.stdin.read()
def mode(name):
    return open(os.path.join(here, name + "-mode")).read().strip()
def proposal(plan):
    print("### Proposal\\n- Files:\\n  - `src/t.py`: the new module\\n- Plan: " + plan)
    print("- Risks: none")
if "## Your Proposal (read-only)" in prompt:
    m = mode("propose")
    again = "## Findings on Your Last Proposal" in prompt
    if m == "garbage":
        print("I would rather just do it.")
    elif m == "no-files":
        print("### Proposal\\n- Files:\\n- Plan: write it\\n- Risks: none")
    elif m == "write":
        open("src/t.py", "w").write("sneaky\\n")
        proposal("write src/t.py")
    else:
        proposal("write src/t.py, v2" if again else "write src/t.py")
elif "## Your Approval (read-only)" in prompt:
    m = mode("approve")
    if m == "adaptive":
        m = "approve" if "v2" in prompt else "changes"
    findings = "none" if m == "approve" else "\\n  - src/t.py:1: say v2"
    print("### Review Report\\n- Verdict: " + m + "\\n- Findings: " + findings)
else:
    os.makedirs("src", exist_ok=True)
    open("src/t.py", "w").write("done\\n")
    made = "src/t.py"
    if mode("work") == "outside":
        open("src/x.py", "w").write("not proposed\\n")
        made += ", src/x.py"
    print("### Task Report\\n- Status: success\\n- Files Created: " + made)
    print("- Files Modified: none\\n- Files Deleted: none\\n- Validation: pass\\n- Errors: none")
"""

AGENT_FILE = """\
---
name: {name}
description: "test agent"
tools: [read_file, write_file, replace, run_shell_command]
timeout_mins: 1
runner: command
command: ["{python}", "{script}"]
---
Test persona of {name}.
"""

TASK = """\
<task type="auto" specialist="{specialist}"{attrs}>
<name>Task 1</name>
<files>src/t.py</files>
<action>Write it.</action>
<verify><automated>test -f src/t.py</automated></verify>
<done>src/t.py exists.</done>
</task>"""


@pytest.fixture
def gated(git_project, tmp_path):
    """Agents `worker`, `security-worker` and `approver`; every mode at its good value."""
    (tmp_path / "agent.py").write_text(AGENT)
    for name, value in (("propose", "good"), ("work", "inside"), ("approve", "approve")):
        (tmp_path / f"{name}-mode").write_text(value)
    git_project.write("src/.keep", "")  # in place, Landlock grants existing top-level folders
    for name in ("worker", "security-worker", "approver", "gsd-executor"):
        git_project.write(
            f"agents/{name}.md",
            AGENT_FILE.format(name=name, python=sys.executable, script=tmp_path / "agent.py"),
        )
    git_project.write(
        ".planning/available_agents.md",
        "- **worker**: test\n- **security-worker**: test\n- **approver**: approves\n",
    )
    return git_project


def setup(project, attrs: str = "", specialist: str = "worker", in_place: bool = False, **gates):
    config: dict[str, object] = {
        "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
        "voltagent": {"fallback_on_error": False},
    }
    if gates:
        config["gates"] = gates
    if in_place:
        config["workflow"] = {"use_worktrees": False}
    project.write(".planning/config.json", json.dumps(config))
    project.plan(
        "01-01", tasks=TASK.format(attrs=attrs, specialist=specialist), files_modified="[src/t.py]"
    )
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", "plans")


def mode(tmp_path: Path, name: str, value: str) -> None:
    (tmp_path / f"{name}-mode").write_text(value)


def committed(root: Path) -> list[str]:
    out = git(root, "log", "--branches", "--format=%(trailers:key=Gsd-Task,valueonly)")
    return [line.strip() for line in out.splitlines() if line.strip()]


def events(root: Path, kind: str) -> list[dict]:
    found, warnings = execlog.read_all(root / ".planning")
    assert warnings == []
    return [e for e in found if e["event"] == kind]


def errors(root: Path) -> list[errorlog.ErrorRecord]:
    return errorlog.read_all(root / ".planning")[0]


def approvals(root: Path) -> list[dict]:
    path = root / ".planning/approvals.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_without_gates_config_nothing_is_gated(gated, gsd) -> None:
    setup(gated)
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert committed(gated.root) == ["01-01-1"]
    assert git(gated.root, "log", "--all", "--format=%s", "--", PROPOSAL) == ""
    assert events(gated.root, "proposal") == []


def test_human_approval_pauses_then_the_next_run_does_the_work(gated, gsd) -> None:
    """Worktree flow: the proposal is committed on the plan's branch, the run pauses
    (exit 4), `gsd approve` binds the approval to the proposal's blob, the next run goes
    straight to the work (no second proposal)."""
    root = gated.root
    setup(gated, ' plan-first="true"')
    first = gsd("execute-phase", "1")
    assert first.code == 4, first.err
    assert "gsd approve 01-01 --task 1" in first.err and PROPOSAL in first.err
    assert committed(root) == [] and not (root / "src/t.py").exists()
    text = git(root, "show", f"gsd/01-01:{PROPOSAL}")
    said = parse_proposal(text)
    assert not isinstance(said, str) and said.paths == ("src/t.py",)
    assert "- Proposed by: worker (command), read-only" in text
    blob = git(root, "rev-parse", f"gsd/01-01:{PROPOSAL}").strip()
    (event,) = events(root, "proposal")
    assert (event["file"], event["blob"], event["agent"]) == (PROPOSAL, blob, "worker")
    status = gsd("status")
    assert "waits for approval of its proposal" in status.out + status.err

    again = gsd("execute-phase", "1")  # not approved yet: still paused, not proposed again
    assert again.code == 4 and len(events(root, "proposal")) == 1

    approved = gsd("approve", "01-01", "--task", "1")
    assert approved.code == 0, approved.err
    assert PROPOSAL in approved.out
    (line,) = approvals(root)
    assert (line["plan"], line["task"], line["proposal"]) == ("01-01", 1, blob)

    done = gsd("execute-phase", "1")
    assert done.code == 0, done.err
    assert committed(root) == ["01-01-1"]
    assert (root / "src/t.py").read_text() == "done\n"
    made = [e for e in events(root, "proposal") if not e.get("approved")]
    assert len(made) == 1  # step 1 did not run again
    (approval,) = [e for e in events(root, "proposal") if e.get("approved")]
    assert (approval["blob"], approval["approved"]) == (blob, "a person")
    assert git(root, "show", f"HEAD:{PROPOSAL}") == text  # merged with the plan
    summary = (root / ".planning/phases/01-alpha/01-01-SUMMARY.md").read_text()
    assert f"## Proposals\n\n- Task 1: `{PROPOSAL}` approved by a person" in summary
    assert f"{PROPOSAL} approved by a person" in gsd("report").out  # the last run
    assert f"{PROPOSAL} committed" in gsd("report", "--all").out


def test_config_defaults_gate_a_security_specialist_and_its_prompt_has_the_proposal(
    gated, gsd
) -> None:
    root = gated.root
    setup(gated, specialist="security-worker", in_place=True, plan_first=True)
    dry = gsd("execute-phase", "1", "--dry-run")
    assert "plan-first: proposes read-only; a person approves (gsd approve 01-01 --task 1)" in (
        dry.out
    )
    assert gsd("execute-phase", "1").code == 4
    prompt = (root / ".git/gsd/runs/01-01-1/proposal/prompt.md").read_text()
    assert "Propose, do not change files" in prompt and "### Proposal\n- Files:" in prompt
    assert "The plan's objective, as written:" in prompt and "Do the thing." in prompt
    assert gsd("approve", "01-01", "--task", "1").code == 0
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    work = (root / ".git/gsd/runs/01-01-1/prompt.md").read_text()
    assert "## Approved Proposal" in work and "`src/t.py`: the new module" in work
    assert committed(root) == ["01-01-1"]


def test_plan_first_false_opts_out_of_config(gated, gsd) -> None:
    setup(gated, ' plan-first="false"', specialist="security-worker", plan_first=True)
    assert "plan-first" not in gsd("execute-phase", "1", "--dry-run").out
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert events(gated.root, "proposal") == []


@pytest.mark.parametrize(
    ("what", "said"),
    [("garbage", "no `### Proposal` heading"), ("no-files", "lists no file")],
)
def test_an_unreadable_proposal_fails_the_task(gated, gsd, tmp_path, what, said) -> None:
    root = gated.root
    setup(gated, ' plan-first="true"')
    mode(tmp_path, "propose", what)
    result = gsd("execute-phase", "1")
    assert result.code == 1, result.err
    (record,) = errors(root)
    assert record.error_type == "proposal-failed" and said in record.details
    assert git(root, "log", "--all", "--format=%s", "--", PROPOSAL) == ""
    assert committed(root) == []


def test_a_proposal_step_that_writes_fails_and_is_rolled_back(gated, gsd, tmp_path) -> None:
    root = gated.root
    setup(gated, ' plan-first="true"', in_place=True)
    mode(tmp_path, "propose", "write")
    result = gsd("execute-phase", "1")
    assert result.code == 1, result.err
    (record,) = errors(root)
    assert record.error_type == "proposal-failed"
    assert not (root / "src/t.py").exists()  # refused by the sandbox, or rolled back
    assert git(root, "status", "--porcelain", "--", "src") == ""
    assert git(root, "log", "--all", "--format=%s", "--", PROPOSAL) == ""


def test_an_approval_holds_for_the_content_approved(gated, gsd) -> None:
    root = gated.root
    setup(gated, ' plan-first="true"', in_place=True)
    assert gsd("execute-phase", "1").code == 4
    assert gsd("approve", "01-01", "--task", "1").code == 0
    # a person (or anyone) changes the proposal after its approval, and commits it
    path = root / PROPOSAL
    path.write_text(path.read_text().replace("src/t.py", "src/*"))
    git(root, "commit", "-qam", "widen the proposal")
    result = gsd("execute-phase", "1")
    assert result.code == 4, result.err
    assert committed(root) == [] and not (root / "src/t.py").exists()
    assert gsd("approve", "01-01", "--task", "1").code == 0  # the new content, approved
    git(root, "commit", "-qam", "approved")  # in place, the run wants a clean checkout
    assert gsd("execute-phase", "1").code == 0
    assert committed(root) == ["01-01-1"]


def test_an_agent_approver_approves(gated, gsd) -> None:
    root = gated.root
    setup(gated, ' plan-first="true"', approver="approver")
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert committed(root) == ["01-01-1"]
    (review,) = events(root, "review")
    assert (review["verdict"], review["reviewer"], review["proposal"]) == (
        "approve",
        "approver",
        True,
    )
    assert approvals(root) == []  # an agent's approval is no person's
    assert "proposal approve by approver (command, round 1)" in gsd("report").out


def test_an_agent_approver_asks_for_a_new_proposal(gated, gsd, tmp_path) -> None:
    root = gated.root
    setup(gated, ' plan-first="true"', approver="approver")
    mode(tmp_path, "approve", "adaptive")
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert [e["verdict"] for e in events(root, "review")] == ["changes", "approve"]
    assert len(events(root, "proposal")) == 2
    assert "v2" in git(root, "show", f"HEAD:{PROPOSAL}")
    assert committed(root) == ["01-01-1"]


def test_an_agent_approver_rejects(gated, gsd, tmp_path) -> None:
    root = gated.root
    setup(gated, ' plan-first="true"', approver="approver")
    mode(tmp_path, "approve", "reject")
    result = gsd("execute-phase", "1")
    assert result.code == 1
    (record,) = errors(root)
    assert record.error_type == "review-rejected"
    assert committed(root) == [] and not (root / "src/t.py").exists()


def test_a_change_outside_the_proposal_is_rolled_back_and_salvaged(gated, gsd, tmp_path) -> None:
    root = gated.root
    setup(gated, ' plan-first="true"', approver="approver")
    mode(tmp_path, "work", "outside")
    result = gsd("execute-phase", "1")
    assert result.code == 1
    (record,) = errors(root)
    assert record.error_type == "scope-violation"
    assert "src/x.py" in record.details and "01-01-T1-PROPOSAL.md" in record.details
    assert committed(root) == [] and not (root / "src/x.py").exists()
    refs = git(root, "for-each-ref", "--format=%(refname)", "refs/gsd/salvage/")
    (ref,) = refs.split()
    assert ref == "refs/gsd/salvage/01-01/1/1"
    kept = git(root, "ls-tree", "-r", "--name-only", ref).split()
    assert "src/t.py" in kept and "src/x.py" in kept


def test_approve_refuses_a_task_with_no_proposal(gated, gsd) -> None:
    setup(gated, ' plan-first="true"')
    result = gsd("approve", "01-01", "--task", "1")
    assert result.code == 2
    assert "has no proposal" in result.err and "gsd execute-phase 01` first" in result.err


def test_an_approver_that_is_no_agent_refuses_the_run_before_anything_runs(gated, gsd) -> None:
    setup(gated, ' plan-first="true"', approver="aprover")
    result = gsd("execute-phase", "1")
    assert result.code == 2
    assert "gates.approver: reviewer 'aprover' is no agent gsd found" in result.err
    assert "did you mean approver" in result.err
    assert events(gated.root, "proposal") == [] and committed(gated.root) == []


def test_a_task_gated_by_the_agent_it_resolves_to_is_approved_by_its_proposal(gated, gsd) -> None:
    """The task names no specialist: gsd-executor runs it, and config gates that agent.
    `gsd approve --task 1` finds its proposal, though the task's attributes name no
    gated agent."""
    root = gated.root
    config = {
        "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
        "voltagent": {"fallback_on_error": False},
        "gates": {"plan_first": {"specialists": ["gsd-executor"]}},
        "workflow": {"use_worktrees": False},
    }
    gated.write(".planning/config.json", json.dumps(config))
    task = TASK.format(specialist="x", attrs="").replace(' specialist="x"', "")
    gated.plan("01-01", tasks=task, files_modified="[src/t.py]")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")
    assert gsd("execute-phase", "1").code == 4
    approved = gsd("approve", "01-01", "--task", "1")
    assert approved.code == 0, approved.err
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert committed(root) == ["01-01-1"]
