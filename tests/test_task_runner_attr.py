"""`<task ... runner="gemini" model="...">`: validated, shown, dispatched and run (SPEC 0)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import get_args

import pytest

from gsd.core.models import RUNNERS
from gsd.formats.agents import Runner
from tests.conftest import auto_task, fake_runner_programs, git

PYTHON_PRO = (
    "---\nname: python-pro\ntools: [read_file, write_file, replace, run_shell_command]\n"
    "model: sonnet\nmax_turns: 7\ntimeout_mins: 1\n---\nA Python specialist.\n"
)


@pytest.fixture
def planned(git_project, runners_on_path: Path):
    """python-pro (claude, model sonnet); task 1 runs it on gemini with a gemini model."""
    git_project.write("agents/python-pro.md", PYTHON_PRO)
    git_project.write(".planning/available_agents.md", "- **python-pro**: Python\n")
    tasks = "\n".join(
        [
            auto_task(
                "Task 1: on gemini",
                attrs=' specialist="python-pro" runner="gemini" model="gemini-2.5-pro"',
            ),
            auto_task("Task 2: as the agent says", attrs=' specialist="python-pro"'),
        ]
    )
    git_project.plan("01-01", tasks=tasks)
    return git_project


def dry_run(gsd, *args: str) -> list[dict]:
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json", *args)
    assert result.code == 0, result.err
    return json.loads(result.out)["tasks"]


def test_the_runner_list_is_the_agent_schemas() -> None:
    assert RUNNERS == get_args(Runner)


# --- validate ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [
        pytest.param(' runner="gemini" model="gemini-2.5-pro"', [], id="gemini-and-model"),
        pytest.param(' runner="codex"', [], id="codex-alone"),
        pytest.param(' model="opus"', [], id="model-alone"),
        pytest.param(' runner="command"', [], id="command-is-checked-at-dispatch"),
        pytest.param(
            ' runner="gpt"',
            ["task 1 has runner='gpt'; allowed: claude, gemini, codex, command"],
            id="unknown",
        ),
        pytest.param(' runner="Gemini"', ["runner='Gemini'"], id="case-matters"),
        pytest.param(' runner=""', ["runner=''"], id="empty-runner"),
        pytest.param(
            ' model="--dangerously-skip-permissions"',
            ["starts with '-'"],
            id="model-like-an-option",
        ),
        pytest.param(' model="a b"', ["unusable model name 'a b'"], id="model-with-space"),
        pytest.param(' model=""', ["unusable model name ''"], id="empty-model"),
    ],
)
def test_validate_reports_a_bad_runner_or_model_at_its_task(
    git_project, gsd, attrs: str, expected: list[str]
) -> None:
    path = git_project.plan("01-01", tasks="\n" + auto_task(attrs=attrs))
    result = gsd("validate", "--format", "json")
    found = [d for d in json.loads(result.out)["diagnostics"] if d["code"] == "GSD022"]
    assert len(found) == len(expected)
    for diagnostic, words in zip(found, expected, strict=True):
        assert words in diagnostic["message"]
        assert diagnostic["severity"] == "error"
        assert (
            diagnostic["line"]
            == path.read_text().splitlines().index(f'<task type="auto"{attrs}>') + 1
        )
    assert result.code == (1 if expected else 0)
    text = gsd("validate")
    if expected:  # path:line:col: severity CODE message, as every rule
        assert f"{found[0]['path']}:{found[0]['line']}:1: error GSD022 " in text.out


# --- show and the dry run ---------------------------------------------------------------------


def test_show_gives_the_runner_and_model_as_written(planned, gsd) -> None:
    (plan,) = json.loads(gsd("show", "01-01", "--format", "json").out)["plans"]
    first, second = plan["tasks"]
    assert (first["runner"], first["model"]) == ("gemini", "gemini-2.5-pro")
    assert (second["runner"], second["model"]) == (None, None)
    header, rule, row1, row2 = gsd("show", "01-01").out.splitlines()[2:6]
    assert header.split()[7:9] == ["runner", "model"]
    assert row1.split()[-4:-2] == ["gemini", "gemini-2.5-pro"]
    assert row2.split()[-4:-2] == ["-", "-"]
    planned.plan("01-01")  # no task sets either: no such columns
    assert "runner" not in gsd("show", "01-01").out


def test_the_dry_run_builds_the_argv_for_the_plans_runner(planned, gsd) -> None:
    first, second = dry_run(gsd)
    assert (first["agent"], first["tier"], first["runner"], first["model"]) == (
        "python-pro",
        "full",
        "gemini",
        "gemini-2.5-pro",
    )
    assert (first["runner_source"], first["model_source"]) == ("plan", "plan")
    assert first["argv"][0] == "gemini"
    assert first["argv"][first["argv"].index("-m") + 1] == "gemini-2.5-pro"
    assert first["argv"][first["argv"].index("--approval-mode") + 1] == "yolo"  # full tier
    assert (second["runner"], second["model"], second["model_source"]) == (
        "claude",
        "sonnet",
        "agent",
    )
    assert second["argv"][:2] == ["claude", "-p"] and "--max-turns" in second["argv"]
    out = gsd("execute-phase", "1", "--dry-run").out
    assert (
        "  tier full, runner gemini (runner= in the plan), model gemini-2.5-pro "
        "(model= in the plan)\n" in out
    )
    assert "  tier full, runner claude, model sonnet\n" in out


@pytest.mark.parametrize(
    ("attrs", "env", "expected"),
    [
        pytest.param(' model="opus"', "haiku", ("opus", "plan"), id="plan-beats-env"),
        pytest.param("", "haiku", ("haiku", "GSD_DEFAULT_MODEL"), id="env-beats-agent"),
        pytest.param("", "", ("sonnet", "agent"), id="agent"),
        pytest.param(' runner="codex"', "", (None, ""), id="agent-model-not-for-other-runner"),
        pytest.param(
            ' runner="codex"', "o3", ("o3", "GSD_DEFAULT_MODEL"), id="env-on-other-runner"
        ),
        pytest.param(' runner="claude"', "", ("sonnet", "agent"), id="own-runner-named"),
    ],
)
def test_model_precedence(
    planned, gsd, monkeypatch: pytest.MonkeyPatch, attrs: str, env: str, expected: tuple
) -> None:
    planned.plan("01-01", tasks=auto_task(attrs=f' specialist="python-pro"{attrs}'))
    monkeypatch.setenv("GSD_DEFAULT_MODEL", env)
    (task,) = dry_run(gsd)
    assert (task["model"], task["model_source"]) == expected
    flag = "--model" if task["runner"] == "claude" else "-m"
    assert (task["argv"][task["argv"].index(flag) + 1] if flag in task["argv"] else None) == (
        expected[0]
    )


def test_runner_command_needs_a_command_agent(planned, gsd) -> None:
    planned.plan("01-01", tasks=auto_task(attrs=' specialist="python-pro" runner="command"'))
    refused = gsd("execute-phase", "1", "--dry-run")
    assert refused.code == 2 and refused.out == ""
    (line,) = refused.err.splitlines()
    assert line.startswith("gsd: error: .planning/phases/01-alpha/01-01-PLAN.md:")
    assert 'task 1 has runner="command" but agent python-pro runs on claude' in line
    planned.write(
        "agents/python-pro.md",
        PYTHON_PRO.replace(
            "model: sonnet\n", 'runner: command\ncommand: ["python3", "agent.py"]\n'
        ),
    )
    (task,) = dry_run(gsd)
    assert (task["runner"], task["argv"]) == ("command", ["python3", "agent.py"])


def test_a_command_agent_can_run_on_a_cli_runner(planned, gsd) -> None:
    planned.write(
        "agents/python-pro.md",
        PYTHON_PRO.replace(
            "model: sonnet\n", 'runner: command\ncommand: ["python3", "agent.py"]\n'
        ),
    )
    first, _ = dry_run(gsd)
    assert first["argv"][0] == "gemini" and "agent.py" not in first["argv"]


def test_the_live_run_refuses_when_the_plans_runner_is_missing(
    planned, gsd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    only_claude = fake_runner_programs(tmp_path / "only-claude", ("claude",))
    monkeypatch.setenv("PATH", f"{only_claude}{os.pathsep}/usr/bin{os.pathsep}/bin")
    git(planned.root, "add", "-A")
    git(planned.root, "commit", "-q", "-m", "plans")
    result = gsd("execute-phase", "1")
    assert result.code == 2 and result.out == ""
    assert result.err.splitlines() == [
        "gsd: error: the gemini runner program `gemini` (plan 01-01 task 1, agent python-pro) "
        "is not installed or not on PATH; nothing was run (install it (npm install -g "
        "@google/gemini-cli) or put it on PATH)"
    ]
    dry = gsd("execute-phase", "1", "--dry-run", "--plan", "01-01")
    assert dry.code == 0 and "npm install -g @google/gemini-cli" in dry.err


def test_every_missing_program_is_named_on_one_line(
    planned, gsd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned.plan(
        "01-02",
        tasks=auto_task(attrs=' specialist="python-pro"')
        + "\n"
        + auto_task("Task 2", attrs=' specialist="python-pro"'),
        files_modified="[src/y.py]",
    )
    git(planned.root, "add", "-A")  # committed: the dry run warns about nothing else
    git(planned.root, "commit", "-q", "-m", "plans")
    only_git = tmp_path / "only-git"  # the dry run reads the repository: git is there
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    monkeypatch.setenv("PATH", str(only_git))
    (line,) = gsd("execute-phase", "1", "--dry-run").err.splitlines()
    assert line.startswith("gsd: warning: ")
    assert "`gemini` (plan 01-01 task 1, agent python-pro)" in line
    assert "`claude` (plan 01-01 task 2, agent python-pro, and 2 more tasks)" in line
    assert "are not installed" in line
    assert "npm install -g @google/gemini-cli" in line
    assert "npm install -g @anthropic-ai/claude-code" in line


# --- a live run -------------------------------------------------------------------------------

FAKE_GEMINI = """#!{python}
import json, os, sys
prompt = sys.stdin.read()
os.makedirs("src", exist_ok=True)
with open("src/x.py", "w") as out:  # the task's file, and the record of the call
    json.dump({{"argv": sys.argv[1:], "specialist": os.environ.get("GSD_SPECIALIST"),
               "prompt_names_task": "Task 1: on gemini" in prompt}}, out)
report = ("Done.\\n\\n### Task Report\\n- Status: success\\n- Files Created: src/x.py\\n"
          "- Files Modified: none\\n- Files Deleted: none\\n- Validation: pass\\n"
          "- Errors: none\\n### Downstream Context\\n- Key Interfaces Introduced: none\\n"
          "- Patterns Established: none\\n- Warnings: none\\n")
print(json.dumps({{"response": report, "stats": {{"models": {{"gemini-2.5-pro": {{
    "tokens": {{"prompt": 10, "candidates": 5}}}}}}}}}}))
"""


def test_a_live_run_calls_the_plans_runner_with_its_model(
    planned, gsd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned.plan(
        "01-01",
        tasks=auto_task(
            "Task 1: on gemini",
            attrs=' specialist="python-pro" runner="gemini" model="gemini-2.5-pro"',
        ),
    )
    bin_dir = tmp_path / "gemini-bin"
    bin_dir.mkdir()
    gemini = bin_dir / "gemini"
    gemini.write_text(FAKE_GEMINI.format(python=sys.executable))
    gemini.chmod(gemini.stat().st_mode | stat.S_IEXEC)
    # no claude anywhere: the run must not need it
    monkeypatch.setenv(
        "PATH",
        f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
    )
    git(planned.root, "add", "-A")
    git(planned.root, "commit", "-q", "-m", "plans")
    result = gsd("execute-phase", "1", "--format", "json")
    assert result.code == 0, result.err
    assert [t["outcome"] for t in json.loads(result.out)["tasks"]] == ["committed"]
    seen = json.loads((planned.root / "src" / "x.py").read_text())
    argv = seen["argv"]
    assert argv[argv.index("-m") + 1] == "gemini-2.5-pro"
    assert argv[argv.index("--approval-mode") + 1] == "yolo"
    assert "--output-format" in argv and "sonnet" not in argv
    assert seen["specialist"] == "python-pro" and seen["prompt_names_task"]
    log = (planned.root / ".planning/phases/01-alpha/01-01-RESULT.txt").read_text()
    assert "### Task Report" in log


# --- the fallback -----------------------------------------------------------------------------


def test_the_fallback_runs_on_the_plans_runner_unless_it_has_no_command(git_project) -> None:
    """gsd-executor takes a failed task over on the task's runner= (a user with only
    gemini has no claude for it); `runner="command"` names a command only its agent has."""
    from gsd.formats.agents import parse_agent
    from gsd.formats.planning.plan import parse
    from gsd.formats.settings import Settings
    from gsd.io.dispatch import Dispatcher

    agents = {
        "gsd-executor": parse_agent("---\nname: gsd-executor\n---\nX\n", "executor.md"),
        "local": parse_agent(
            '---\nname: local\nrunner: command\ncommand: ["python3", "a.py"]\n---\nX\n', "local.md"
        ),
    }
    plan = parse(
        git_project.plan(
            "01-01",
            tasks="\n".join(
                [
                    auto_task("Task 1", attrs=' specialist="local" runner="gemini"'),
                    auto_task("Task 2", attrs=' specialist="local" runner="command"'),
                ]
            ),
        ).read_text(),
        "01-01-PLAN.md",
    )
    dispatcher = Dispatcher(agents, {"local": ""}, Settings(), environ={})
    on_gemini, on_command = plan.tasks
    assert dispatcher.task(1, plan, on_gemini).argv[0] == "gemini"
    assert dispatcher.task(1, plan, on_command).argv == ["python3", "a.py"]
    taken_over = dispatcher.task(1, plan, on_gemini, fallback="local failed: timeout")
    assert (taken_over.agent, taken_over.runner, taken_over.runner_source) == (
        "gsd-executor",
        "gemini",
        "plan",
    )
    assert dispatcher.agent_for(taken_over).runner == "gemini"
    taken_over = dispatcher.task(1, plan, on_command, fallback="local failed: timeout")
    assert (taken_over.agent, taken_over.runner, taken_over.runner_source) == (
        "gsd-executor",
        "claude",
        "agent",
    )
