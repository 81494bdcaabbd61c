"""What an agent leaves that git would take wrongly or silently (issue 20): a nested git
repository (a gitlink with no .gitmodules would lose its files), a huge file outside the
task's files, and token or cost figures a result file makes up.

Each agent is a small real Python program (`runner: command`) in a real repository.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import git, plan_worktree

AGENT_FILE = """\
---
name: {name}
description: "test agent"
tools: [read_file, write_file, replace, run_shell_command]
timeout_mins: 0.5
runner: command
command: ["{python}", "{script}"]
---
Test persona.
"""
PRELUDE = """\
import json, os, subprocess, sys


def write(path, text="hello\\n"):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


REPORT = (
    "### Task Report\\n- Status: success\\n- Files Created: none\\n- Files Modified: none\\n"
    "- Files Deleted: none\\n- Validation: pass\\n- Errors: none\\n### Downstream Context\\n"
    "- Key Interfaces Introduced: none\\n- Patterns Established: none\\n- Warnings: none\\n"
)
"""
TASK = """\
<task type="auto" specialist="worker">
<name>Task 1: do it</name>
<files>{files}</files>
<action>Do it.</action>
<verify><automated>true</automated></verify>
<done>Done.</done>
</task>"""


def setup(git_project, tmp_path: Path, body: str, files: str, config: dict | None = None) -> Path:
    root = git_project.root
    script = tmp_path / "agent.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    for name in ("worker", "gsd-executor"):
        git_project.write(
            f"agents/{name}.md",
            AGENT_FILE.format(name=name, python=sys.executable, script=script),
        )
    git_project.write(".planning/available_agents.md", "- **worker**: test\n")
    settings = {
        "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
        "voltagent": {"fallback_on_error": False},
        **(config or {}),
    }
    git_project.write(".planning/config.json", json.dumps(settings))
    git_project.plan("01-01", tasks=TASK.format(files=files), files_modified=f"[{files}]")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")
    return root


def committed_paths(root: Path) -> dict[str, str]:
    """path -> mode of every entry in every commit reachable from any ref."""
    found: dict[str, str] = {}
    for sha in git(root, "rev-list", "--all").split():
        for line in git(root, "ls-tree", "-r", sha).splitlines():
            meta, path = line.split("\t", 1)
            found[path] = meta.split()[0]
    return found


def test_a_nested_repository_is_never_committed_as_a_bare_gitlink(
    git_project, tmp_path: Path, gsd
) -> None:
    root = setup(
        git_project,
        tmp_path,
        """\
        write("src/x.txt")
        write("vendor/lib/code.py", "print('mine')\\n")
        subprocess.run(["git", "init", "-q", "vendor/lib"], check=True)
        subprocess.run(["git", "-C", "vendor/lib", "add", "-A"], check=True)
        subprocess.run(["git", "-C", "vendor/lib", "-c", "user.name=a", "-c",
                        "user.email=a@b", "commit", "-qm", "x"], check=True)
        print(REPORT)
        """,
        files="src/x.txt, vendor/lib/code.py",
    )
    result = gsd("execute-phase", "1")
    paths = committed_paths(root)
    assert "160000" not in paths.values(), paths  # no gitlink anywhere
    assert result.code == 1, result.err
    assert "vendor/lib" in result.err and "git repository" in result.err
    assert not (root / "vendor").exists()
    assert not (plan_worktree(root, "01-01") / "vendor/lib").exists()  # rolled back too


def test_a_large_file_outside_the_tasks_files_is_a_warning_on_the_terminal(
    git_project, tmp_path: Path, gsd
) -> None:
    root = setup(
        git_project,
        tmp_path,
        """\
        write("src/x.txt", "x" * (3 * 1024 * 1024))  # over the limit, but the task's
        write("data/dump.bin", "y" * (2 * 1024 * 1024))
        write("data/small.bin", "z")
        print(REPORT)
        """,
        files="src/x.txt",
        config={"specialists": {"large_file_mb": 1, "max_retries": 0}},
    )
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    warnings = [line for line in result.err.splitlines() if "large_file_mb" in line]
    assert len(warnings) == 1, result.err
    assert warnings[0].startswith("gsd: warning: 01-01 task 1: data/dump.bin is 2.0 MB")
    summary = (root / ".planning/phases/01-alpha/01-01-SUMMARY.md").read_text()
    assert "data/dump.bin is 2.0 MB" in summary


def test_the_large_file_limit_defaults_to_10_mb_and_0_turns_it_off() -> None:
    from gsd.formats.settings import Settings

    assert Settings().specialists.large_file_mb == 10
    assert Settings.model_validate({"specialists": {"large_file_mb": 0}}).specialists
    with pytest.raises(ValueError):
        Settings.model_validate({"specialists": {"large_file_mb": -1}})


def test_made_up_token_and_cost_figures_are_refused_with_a_note(
    git_project, tmp_path: Path, gsd
) -> None:
    setup(
        git_project,
        tmp_path,
        """\
        write("src/x.txt")
        with open(os.environ["GSD_RESULT_FILE"], "w") as handle:
            handle.write('{"input_tokens": -5, "output_tokens": Infinity, "cost_usd": NaN}')
        print(REPORT)
        """,
        files="src/x.txt",
    )
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    notes = [line for line in result.err.splitlines() if "refused" in line]
    assert len(notes) == 3, result.err
    assert "input_tokens -5 refused" in notes[0] and "cost_usd nan refused" in notes[2]
    report = gsd("report", "--format", "json")
    assert report.code == 0, report.err
    assert "-5" not in report.out and "NaN" not in report.out and "Infinity" not in report.out
    text = gsd("report").out
    assert "-5" not in text and "nan" not in text.lower() and "infinity" not in text.lower()
