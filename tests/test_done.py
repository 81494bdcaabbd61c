"""Done means done (issue 19): `gsd execute-phase` in real repositories, with agents that lie.

Each agent is a small Python program (`runner: command`) that prints a Task Report and
writes, or does not write, files. What counts is what git, the logs, STATE.md and
SUMMARY.md say afterwards.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from gsd.core.verdict import done
from gsd.formats import errorlog
from gsd.formats.runners import claude
from gsd.formats.runners import invocation as runners
from gsd.formats.taskreport import parse_task_report
from tests.conftest import git

FULL_TOOLS = "[read_file, write_file, replace, run_shell_command]"
READ_ONLY_TOOLS = "[read_file, glob, search_file_content]"
FOLDER = ".planning/phases/01-alpha"
FILES = "src/hello.txt, src/shell_out.txt, README.md, docs/notes-PLAN.md, " + (
    f"{FOLDER}/01-02-PLAN.md"
)

AGENT_FILE = """\
---
name: {name}
description: "test agent"
tools: {tools}
timeout_mins: 1
runner: command
command: ["{python}", "{script}"]
---
Test persona.
"""

# every agent program starts with this: `report(...)` is its Task Report
PRELUDE = """\
import json, os, sys


def report(status="success", created="none", modified="none"):
    return (
        f"### Task Report\\n- Status: {status}\\n- Files Created: {created}\\n"
        f"- Files Modified: {modified}\\n- Files Deleted: none\\n- Validation: pass\\n"
        "- Errors: none\\n### Downstream Context\\n- Key Interfaces Introduced: none\\n"
        "- Patterns Established: none\\n- Warnings: none\\n"
    )


def write(path, text="hello\\n"):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)

"""

STATE = """\
# Project State

## Current Position

Phase: 1 of 1 (Alpha)
Status: Ready to execute

### Blockers/Concerns

None yet.
"""

TASK = """\
<task type="auto" specialist="worker">
<name>Task 1: say hello</name>
<files>{files}</files>
<action>Write src/hello.txt.</action>
<verify><automated>true</automated></verify>
<done>Done.</done>
</task>"""


def project_with(git_project, tmp_path: Path, body: str, tools: str = FULL_TOOLS) -> Path:
    """A committed phase of one plan (01-01, one task) whose agents `worker` and
    `gsd-executor` both run `body`; returns the repository's root."""
    root = git_project.root
    script = tmp_path / "agent.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    for name in ("worker", "gsd-executor"):
        git_project.write(
            f"agents/{name}.md",
            AGENT_FILE.format(name=name, tools=tools, python=sys.executable, script=script),
        )
    git_project.write(".planning/available_agents.md", "- **worker**: test\n")
    git_project.write(
        ".planning/config.json",
        json.dumps({"specialists": {"kill_grace_seconds": 1, "max_retries": 1}}),
    )
    git_project.write(".planning/STATE.md", STATE)
    git_project.plan("01-01", tasks=TASK.format(files=FILES), files_modified="[src/hello.txt]")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")
    return root


def task_commits(root: Path) -> list[str]:
    out = git(root, "log", "--all", "--format=%(trailers:key=Gsd-Task,valueonly)")
    return [line.strip() for line in out.splitlines() if line.strip()]


def errors_of(root: Path) -> list[errorlog.ErrorRecord]:
    records, warnings = errorlog.read_all(root / ".planning")
    assert warnings == []
    return records


def summary(root: Path) -> Path:
    return root / FOLDER / "01-01-SUMMARY.md"


def test_a_report_claiming_files_over_an_empty_diff_fails_the_task(
    git_project, tmp_path: Path, gsd
) -> None:
    root = project_with(
        git_project,
        tmp_path,
        """\
        print(report(created="src/hello.txt, src/shell_out.txt"))
        print("## TASK COMPLETE")
        """,
    )
    result = gsd("execute-phase", "1")
    assert result.code == 1, result.err
    assert task_commits(root) == []
    assert not summary(root).exists()
    assert "report-mismatch" in result.err and "src/hello.txt, src/shell_out.txt" in result.err
    # rolled back and retried like any failure: the fallback agent had its go too
    records = errors_of(root)
    assert [(r.specialist, r.error_type) for r in records] == [
        ("worker", "report-mismatch"),
        ("gsd-executor", "report-mismatch"),
    ]
    assert "src/hello.txt" in records[0].details and "src/shell_out.txt" in records[0].details
    shown = gsd("errors", "--type", "report-mismatch", "--format", "json")
    assert shown.code == 0 and len(json.loads(shown.out)["errors"]) == 2
    assert "- [01-01] report-mismatch:" in (root / ".planning/STATE.md").read_text()
    status = json.loads(gsd("status", "--format", "json").out)
    assert status["phases"][0]["plans"][0]["status"] == "failed"
    junit = gsd("report", "--format", "junit").out
    assert 'type="report-mismatch"' in junit


def test_half_a_lie_names_only_the_missing_file_and_undoes_the_other(
    git_project, tmp_path: Path, gsd
) -> None:
    root = project_with(
        git_project,
        tmp_path,
        """\
        write("src/hello.txt")
        print(report(created="src/hello.txt, src/shell_out.txt"))
        """,
    )
    assert gsd("execute-phase", "1").code == 1
    details = errors_of(root)[0].details
    assert "1 file" in details and "src/shell_out.txt" in details
    assert "src/hello.txt" not in details.split(":", 1)[1]
    assert task_commits(root) == [] and not (root / "src/hello.txt").exists()


def test_claims_git_agrees_with_pass_however_they_are_spelled(
    git_project, tmp_path: Path, gsd
) -> None:
    """`./` and absolute paths, a note after the path, and a file listed as created that
    existed and was modified are all claims git bears out."""
    root = project_with(
        git_project,
        tmp_path,
        """\
        write("src/hello.txt")
        write("README.md", "changed\\n")
        here = os.getcwd()
        print(report(created=f"./src/hello.txt (new), {here}/README.md",
                     modified="`README.md`"))
        """,
    )
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert task_commits(root) == ["01-01-1"]
    sha = git(root, "log", "--all", "--format=%H", "--grep=Gsd-Task: 01-01-1").split()[0]
    assert git(root, "show", "--name-only", "--format=", sha).split() == [
        "README.md",
        "src/hello.txt",
    ]
    assert summary(root).exists()


def test_a_claimed_file_git_ignores_is_a_deviation_not_a_failure(
    git_project, tmp_path: Path, gsd
) -> None:
    git_project.write(".gitignore", "build/\n")
    root = project_with(
        git_project,
        tmp_path,
        """\
        write("src/hello.txt")
        write("build/out.js")
        print(report(created="src/hello.txt, build/out.js"))
        """,
    )
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    text = summary(root).read_text()
    assert "the Task Report names build/out.js, which git ignores: not committed" in text


@pytest.mark.parametrize("status", ["failure", "partial"])
def test_a_failure_or_partial_report_has_its_own_error_type(
    git_project, tmp_path: Path, gsd, status: str
) -> None:
    root = project_with(
        git_project,
        tmp_path,
        f"""\
        write("src/hello.txt")
        print(report(status="{status}", created="src/hello.txt"))
        """,
    )
    result = gsd("execute-phase", "1")
    assert result.code == 1
    assert {r.error_type for r in errors_of(root)} == {f"report-{status}"}
    assert f"- [01-01] report-{status}:" in (root / ".planning/STATE.md").read_text()
    shown = gsd("errors", "--type", f"report-{status}")
    assert shown.code == 0 and f"report-{status}" in shown.out
    assert task_commits(root) == [] and not (root / "src/hello.txt").exists()


DENIED = """\
denials = [
    {{"tool_name": "Write", "tool_use_id": "t1", "tool_input": {{"file_path": "src/hello.txt"}}}},
    {{"tool_name": "Bash", "tool_use_id": "t2", "tool_input": {{"command": "echo hi > b.txt"}}}},
    {{"tool_name": "Read", "tool_use_id": "t3", "tool_input": {{"file_path": "x"}}}},
]
{write}
with open(os.environ["GSD_RESULT_FILE"], "w") as handle:
    json.dump({{"result": report(created="{claim}"), "permission_denials": denials}}, handle)
"""


def test_a_task_whose_writes_were_all_denied_is_not_done(git_project, tmp_path: Path, gsd) -> None:
    root = project_with(git_project, tmp_path, DENIED.format(write="", claim="none"))
    result = gsd("execute-phase", "1")
    assert result.code == 1
    records = errors_of(root)
    assert {r.error_type for r in records} == {"permission-denied"} and len(records) == 2
    assert "Write src/hello.txt, Bash echo hi > b.txt" in records[0].details
    assert "Read" not in records[0].details
    assert task_commits(root) == [] and not summary(root).exists()
    assert "- [01-01] permission-denied:" in (root / ".planning/STATE.md").read_text()


def test_some_writes_denied_beside_real_changes_is_a_deviation(
    git_project, tmp_path: Path, gsd
) -> None:
    body = DENIED.format(write='write("src/hello.txt")', claim="src/hello.txt")
    root = project_with(git_project, tmp_path, body)
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert task_commits(root) == ["01-01-1"]
    text = summary(root).read_text()
    assert "the runner denied 2 writes: Write src/hello.txt, Bash echo hi > b.txt" in text


def test_a_read_only_task_denied_a_write_is_done(git_project, tmp_path: Path, gsd) -> None:
    root = project_with(
        git_project, tmp_path, DENIED.format(write="", claim="none"), tools=READ_ONLY_TOOLS
    )
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert "made no change" not in result.err and "made no change" not in summary(root).read_text()


BAD_PLAN = "---\\nphase: 01-alpha\\nplan: 02\\n---\\n<tasks><task>\\n</tasks>\\n"


@pytest.mark.parametrize("where", [f"{FOLDER}/01-02-PLAN.md", "docs/notes-PLAN.md"])
def test_a_plan_the_task_wrote_that_fails_validation_is_not_done(
    git_project, tmp_path: Path, gsd, where: str
) -> None:
    root = project_with(
        git_project,
        tmp_path,
        f"""\
        write("src/hello.txt")
        write("{where}", "{BAD_PLAN}")
        print(report(created="src/hello.txt, {where}"))
        """,
    )
    result = gsd("execute-phase", "1")
    assert result.code == 1
    records = errors_of(root)
    assert {r.error_type for r in records} == {"plan-invalid"}
    assert f"in a plan it wrote: {where}:1: GSD0" in records[0].details
    assert task_commits(root) == [] and not (root / where).exists()
    assert not (root / "src/hello.txt").exists()


def test_a_plan_the_task_wrote_that_validates_is_done(git_project, tmp_path: Path, gsd) -> None:
    from tests.conftest import plan_text

    good = plan_text(
        plan="02", wave=2, depends_on='["01-01"]', files_modified="[src/two.py]", tasks=None
    ).replace("src/x.py", "src/two.py")
    root = project_with(
        git_project,
        tmp_path,
        f"""\
        write("{FOLDER}/01-02-PLAN.md", {good!r})
        print(report(created="{FOLDER}/01-02-PLAN.md"))
        """,
    )
    result = gsd("execute-phase", "1", "--plan", "01-01")
    assert result.code == 0, result.err
    assert task_commits(root) == ["01-01-1"]
    assert gsd("validate", f"{FOLDER}/01-02-PLAN.md").code == 0


def test_a_writing_task_that_changed_and_claimed_nothing_made_no_change(
    git_project, tmp_path: Path, gsd
) -> None:
    root = project_with(git_project, tmp_path, "print(report())\n")
    result = gsd("execute-phase", "1", "--format", "json")
    assert result.code == 0, result.err
    assert "task 1: made no change: worker changed no file" in result.err
    assert [t["outcome"] for t in json.loads(result.out)["tasks"]] == ["made no change"]
    text = summary(root).read_text()
    assert "1. **Task 1: say hello** - made no change (worker)" in text
    assert "- **Task 1 (worker):** made no change" in text
    assert "None - plan executed exactly as written." not in text
    timeline = json.loads(gsd("report", "--format", "json").out)["timeline"]
    assert "made no change" in [row["outcome"] for row in timeline]


def test_a_read_only_task_that_changed_nothing_is_not_flagged(
    git_project, tmp_path: Path, gsd
) -> None:
    root = project_with(git_project, tmp_path, "print(report())\n", tools=READ_ONLY_TOOLS)
    result = gsd("execute-phase", "1", "--format", "json")
    assert result.code == 0, result.err
    assert "made no change" not in result.err
    assert [t["outcome"] for t in json.loads(result.out)["tasks"]] == ["nothing to commit"]
    text = summary(root).read_text()
    assert "made no change" not in text and "None - plan executed exactly as written." in text


# --- the pure rules and the parsers, beside the runs above ------------------------------


def test_claude_result_permission_denials_are_read() -> None:
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "done",
        "permission_denials": [
            {"tool_name": "Write", "tool_use_id": "a", "tool_input": {"file_path": "/w/a.txt"}},
            {
                "tool_name": "NotebookEdit",
                "tool_use_id": "b",
                "tool_input": {"notebook_path": "n.ipynb"},
            },
            {"tool_name": "Bash", "tool_use_id": "c", "tool_input": {"command": "git push"}},
            {"tool_name": "mcp__gsd__progress", "tool_use_id": "d", "tool_input": {}},
            {"tool_use_id": "e"},
            "junk",
        ],
    }
    stream = '{"type": "system"}\n' + json.dumps(result) + "\n"
    output = claude.parse_output(stream)
    assert output is not None
    assert output.denied == (
        ("Write", "/w/a.txt"),
        ("NotebookEdit", "n.ipynb"),
        ("Bash", "git push"),
        ("mcp__gsd__progress", ""),
    )
    assert done.denied_writes(output.denied) == list(output.denied[:3])
    assert runners.parse_output("claude", '{"type": "result", "result": "x"}').denied == ()


REPORT_TEXT = """### Task Report
- Status: success
- Files Created: {created}
- Files Modified: {modified}
- Files Deleted: src/gone.py
- Validation: pass
- Errors: none
"""


@pytest.mark.parametrize(
    ("created", "modified", "changed", "missing"),
    [
        pytest.param("none", "-", [], [], id="no-claim"),
        pytest.param("src/a.py, src/b.py", "none", ["src/a.py"], ["src/b.py"], id="one-missing"),
        pytest.param(
            "./src/a.py",
            "/repo/src/b.py (typed)",
            ["src/a.py", "src/b.py"],
            [],
            id="spelled-otherwise",
        ),
        pytest.param("src/", "src/*.py", ["src/x/y.py", "src/a.py"], [], id="folder-and-glob"),
        pytest.param("src/*.rs", "none", ["src/a.py"], ["src/*.rs"], id="glob-matching-nothing"),
        pytest.param("README.md", "none", ["README.md"], [], id="created-but-existed"),
        pytest.param("src/a.py new module", "none", ["src/a.py"], [], id="words-after"),
        pytest.param("src/gone.py", "none", [], ["src/gone.py"], id="deleted-is-no-claim-here"),
    ],
)
def test_which_claims_git_bears_out(
    created: str, modified: str, changed: list[str], missing: list[str]
) -> None:
    report = parse_task_report(REPORT_TEXT.format(created=created, modified=modified))
    assert done.missing(done.claimed(report), changed, ["/repo"]) == missing


def test_permission_denied_and_made_no_change_hold_only_for_writing_tiers() -> None:
    denied = [("Write", "a.txt")]
    assert done.permission_denied("full", denied, changed=False).endswith("Write a.txt")
    assert done.permission_denied("read+write", denied, changed=True) == ""
    assert done.permission_denied("read+shell", denied, changed=False) == ""
    assert done.permission_denied("full", [], changed=False) == ""
    silent = parse_task_report(REPORT_TEXT.format(created="none", modified="none"))
    claims = parse_task_report(REPORT_TEXT.format(created="a.txt", modified="none"))
    assert done.made_no_change("full", False, silent) and done.made_no_change("full", False, None)
    assert not done.made_no_change("read-only", False, silent)
    assert not done.made_no_change("full", True, silent)
    assert not done.made_no_change("full", False, claims)
    assert done.plan_files(["a/01-02-PLAN.md", "PLAN.md", "x-PLAN.md.bak"]) == ["a/01-02-PLAN.md"]


FAKE_CLAUDE = """#!{python}
import json, sys
if sys.argv[1:] == ["--version"]:
    print("2.1.330 (Claude Code)")
    sys.exit(0)
sys.stdin.read()
report = ("### Task Report\\n- Status: success\\n- Files Created: src/hello.txt\\n"
          "- Files Modified: none\\n- Files Deleted: none\\n- Validation: pass\\n- Errors: none\\n")
print(json.dumps({{"type": "system", "subtype": "init"}}))
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": report,
                  "usage": {{"input_tokens": 10, "output_tokens": 5}},
                  "permission_denials": [{{"tool_name": "Write", "tool_use_id": "toolu_1",
                                          "tool_input": {{"file_path": "src/hello.txt"}}}}]}}))
"""


def test_claude_denying_every_write_fails_the_task_as_permission_denied(
    git_project, tmp_path: Path, gsd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What claude-code 2.1.330 does as root under `.git/`: every Write refused, the model
    still reports the file created. The denial, not the claim, is the error."""
    import os
    import stat

    root = project_with(git_project, tmp_path, "print(report())\n")
    bin_dir = tmp_path / "claude-bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text(FAKE_CLAUDE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for name in ("worker", "gsd-executor"):
        git_project.write(
            f"agents/{name}.md",
            f"---\nname: {name}\ndescription: x\n"
            "runner: claude\ntimeout_mins: 1\n---\nTest persona.\n",
        )
    git(root, "commit", "-qam", "claude agents")
    result = gsd("execute-phase", "1")
    assert result.code == 1, result.err
    records = errors_of(root)
    assert [(r.runner, r.error_type) for r in records] == [("claude", "permission-denied")] * 2
    assert "Write src/hello.txt" in records[0].details
    assert task_commits(root) == []
