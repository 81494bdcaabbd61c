"""`gsd execute-phase N --dry-run`: every task resolved and laid out; nothing changes."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gsd.formats.agents import Agent
from gsd.formats.settings import Settings
from gsd.io.dispatch import task_timeout
from tests.conftest import auto_task, fake_runner_programs, git

HOSTILE = ["x; touch PWNED", "$(touch PWNED)", "`touch PWNED`", "a b", "../../bin/sh"]


@pytest.fixture(autouse=True)
def _runner_programs(runners_on_path: Path) -> None:
    """Every runner program on PATH (`git_only` below takes them away)."""


@pytest.fixture
def phase(git_project):
    tasks = "\n".join(
        [
            auto_task("Task 1: typed", attrs=' specialist="python-pro"'),
            auto_task("Task 2: review", attrs=' specialist="code-reviewer"'),
            auto_task("Task 3: nobody"),
            auto_task("Task 4: unknown", attrs=' specialist="rust-pro"'),
        ]
    )
    git_project.plan("01-01", tasks=tasks)
    git_project.plan("01-02", depends_on='["01-01"]', wave=2, files_modified="[src/y.py]")
    git_project.write(
        ".planning/available_agents.md", "- **python-pro**: Python\n- **code-reviewer**: Reviews\n"
    )
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    return git_project


def dry_run(gsd, *args: str) -> list[dict]:
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json", *args)
    assert result.code == 0, result.err
    return json.loads(result.out)["tasks"]


def snapshot(root: Path) -> tuple[str, str, list[str]]:
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts)
    return git(root, "status", "--porcelain", "--ignored"), git(root, "show-ref"), files


def test_every_task_with_its_resolution(phase, gsd) -> None:
    tasks = dry_run(gsd)
    assert [(t["wave"], t["plan"], t["task"]) for t in tasks] == [
        (1, "01-01", 1),
        (1, "01-01", 2),
        (1, "01-01", 3),
        (1, "01-01", 4),
        (2, "01-02", 1),
    ]
    first, review, nobody, unknown, _ = tasks
    assert (first["specialist"], first["specialist_form"], first["agent"]) == (
        "python-pro",
        "attribute",
        "python-pro",
    )
    assert (first["tier"], first["runner"], first["fallback_reason"]) == ("full", "claude", None)
    assert first["argv"][:5] == ["claude", "-p", "--output-format", "stream-json", "--verbose"]
    assert (first["timeout_s"], first["grace_s"]) == (600, 10)
    assert review["tier"] == "read-only" and "plan" in review["argv"]
    assert (nobody["agent"], nobody["fallback_reason"]) == ("gsd-executor", None)
    assert unknown["agent"] == "gsd-executor"
    assert "not in .planning/available_agents.md" in unknown["fallback_reason"]


def test_changes_nothing(phase, gsd) -> None:
    before = snapshot(phase.root)
    gsd("execute-phase", "1", "--dry-run")
    dry_run(gsd)
    assert snapshot(phase.root) == before
    assert not (phase.root / ".git" / "gsd").exists()


def test_text_output_shows_argv_and_fallbacks(phase, gsd) -> None:
    out = gsd("execute-phase", "1", "--dry-run").out
    assert "agent: gsd-executor  (fallback: not in .planning/available_agents.md)" in out
    assert "argv: claude -p --output-format stream-json --verbose" in out


def test_filters_and_errors(phase, gsd) -> None:
    assert {t["plan"] for t in dry_run(gsd, "--wave", "2")} == {"01-02"}
    assert [t["task"] for t in dry_run(gsd, "--plan", "01-01")] == [1, 2, 3, 4]
    missing = gsd("execute-phase", "1", "--dry-run", "--plan", "01-09")
    assert missing.code == 2 and missing.err.startswith("gsd: error: no plan 01-09")
    live = gsd("execute-phase", "1", "--wave", "2")  # a live run waits for wave 1
    assert live.code == 2 and "depends on 01-01, not done yet" in live.err


def test_config_and_environment(phase, gsd, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GSD_DISABLED_AGENTS", "python-pro")
    monkeypatch.setenv("SPECIALIST_TIMEOUT", "42")
    monkeypatch.setenv("GSD_DEFAULT_MODEL", "opus")
    first = dry_run(gsd)[0]
    assert (first["agent"], first["timeout_s"], first["model"]) == ("gsd-executor", 42, "opus")
    assert "GSD_DISABLED_AGENTS" in first["fallback_reason"]
    assert first["argv"][first["argv"].index("--model") + 1] == "opus"
    assert dry_run(gsd, "--timeout", "7")[0]["timeout_s"] == 7
    phase.write(".planning/config.json", '{"workflow": {"use_specialists": false}}')
    assert {t["agent"] for t in dry_run(gsd)} == {"gsd-executor"}


def test_command_runner_agent(phase, gsd) -> None:
    phase.write(
        "agents/python-pro.md",
        "---\nname: python-pro\ntools: [write_file, run_shell_command]\nrunner: command\n"
        'command: ["python3", "bin/agent.py", "--fast"]\n---\nA local agent.\n',
    )
    first = dry_run(gsd)[0]
    assert (first["runner"], first["argv"]) == ("command", ["python3", "bin/agent.py", "--fast"])


def test_checkpoint_task_pauses_for_a_person(git_project, gsd) -> None:
    checkpoint = (
        '<task type="checkpoint:human-verify" gate="blocking">\n<what-built>x</what-built>\n'
        "<how-to-verify>look</how-to-verify>\n<resume-signal>approved</resume-signal>\n</task>"
    )
    git_project.plan("01-01", autonomous="false", tasks=auto_task() + "\n" + checkpoint)
    second = dry_run(gsd)[1]
    assert (second["runner"], second["argv"], second["agent"]) == (None, [], "(human)")


def test_debug_resolves_only_the_tasks_an_agent_runs(
    git_project, gsd, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = (
        '<task type="checkpoint:human-verify" specialist="python-pro">\n<what-built>x'
        "</what-built>\n<how-to-verify>look</how-to-verify>\n<resume-signal>approved"
        "</resume-signal>\n</task>"
    )
    git_project.plan("01-01", autonomous="false", tasks=auto_task() + "\n" + checkpoint)
    monkeypatch.setenv("DEBUG", "true")
    result = gsd("execute-phase", "1", "--dry-run")
    assert result.code == 0, result.err
    assert "[gsd] resolve 01-01 task 1: " in result.err
    assert "01-01 task 2" not in result.err


@pytest.mark.parametrize(
    ("cli", "env", "agent_mins", "config", "expected"),
    [
        pytest.param(5.0, {"SPECIALIST_TIMEOUT": "9"}, 2, 30, (5.0, "--timeout"), id="cli"),
        pytest.param(
            None, {"SPECIALIST_TIMEOUT": "9"}, 2, 30, (9.0, "SPECIALIST_TIMEOUT"), id="env"
        ),
        pytest.param(None, {}, 2, 30, (120.0, "x timeout_mins"), id="agent"),
        pytest.param(None, {}, None, 30, (30.0, "specialists.timeout_seconds"), id="config"),
        pytest.param(None, {}, None, None, (300.0, "specialists.timeout_seconds"), id="default"),
    ],
)
def test_timeout_precedence(cli, env, agent_mins, config, expected) -> None:
    agent = Agent(name="x", timeout_mins=agent_mins)
    settings = Settings.model_validate(
        {} if config is None else {"specialists": {"timeout_seconds": config}}
    )
    assert task_timeout(agent, settings, cli_timeout=cli, environ=env) == expected


def test_null_timeout_in_config_is_a_one_line_error(phase, gsd) -> None:
    phase.write(".planning/config.json", '{"specialists": {"timeout_seconds": null}}')
    phase.write("agents/python-pro.md", "---\nname: python-pro\n---\nNo timeout_mins.\n")
    result = gsd("execute-phase", "1", "--dry-run")
    assert result.code == 2
    assert result.err.splitlines() == [  # the line, and the value as JSON spells it
        f"gsd: error: {phase.root / '.planning' / 'config.json'}:1: "
        "`specialists.timeout_seconds` must be a number >= 0, not null"
    ]


# --- security: plan text never reaches a shell or an argv ----------------------------------


FAKE_CLAUDE = """#!{python}
import json, os, sys
with open(os.environ["RECORD"], "a") as out:
    out.write(json.dumps({{"argv": sys.argv[1:], "stdin": sys.stdin.read()}}) + "\\n")
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "ok"}}))
"""


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_specialist_names_never_reach_a_program(
    git_project, gsd, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str
) -> None:
    quoted = name.replace('"', "&quot;")
    tasks = auto_task("Task 1: x", attrs=f' specialist="{quoted}"')
    git_project.plan("01-01", tasks=tasks, files_modified='["$(touch PWNED)"]')
    git_project.write(".planning/available_agents.md", f"- **{name}**: hostile\n")
    validated = gsd("validate", "--format", "json")
    assert "GSD020" in validated.out
    (task,) = dry_run(gsd)
    assert task["agent"] == "gsd-executor" and "malformed" in task["fallback_reason"]
    assert not any(name in arg or "PWNED" in arg for arg in task["argv"])
    # run the argv for real against a fake `claude` first on PATH
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text(FAKE_CLAUDE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("RECORD", str(record))
    done = subprocess.run(
        task["argv"],
        cwd=git_project.root,
        input=f"prompt naming {name}",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (seen,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert seen["argv"] == task["argv"][1:]
    assert seen["stdin"] == f"prompt naming {name}"  # plan text travels as data only
    assert not list(git_project.root.rglob("PWNED")) and not list(tmp_path.rglob("PWNED"))


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(" python-pro ", id="padded"),
        pytest.param("python-pro\t", id="trailing-tab"),
        pytest.param("python pro", id="inner-space"),
    ],
)
def test_validate_and_dry_run_agree_on_a_name_with_whitespace(git_project, gsd, name: str) -> None:
    """SPEC 3 step 2: a space is malformed, so GSD020 in validate and gsd-executor here."""
    git_project.write(".planning/available_agents.md", "- **python-pro**: Python\n")
    git_project.plan("01-01", tasks=auto_task(attrs=f' specialist="{name}"'))
    validated = gsd("validate", "--format", "json")
    assert [d["code"] for d in json.loads(validated.out)["diagnostics"]] == ["GSD020"]
    [task] = dry_run(gsd)
    assert task["agent"] == "gsd-executor"
    assert "malformed" in task["fallback_reason"]


def test_each_task_shows_its_sandbox(phase, gsd) -> None:
    """SPEC 0: the dry run says what each agent may write, as the live run confines it."""
    from gsd.io.confine.sandbox import ALWAYS, landlock_abi, unavailable_reason

    first, review, *_ = dry_run(gsd)
    if landlock_abi():
        assert first["sandbox"].startswith("landlock: writes only the worktree, private tmp")
        assert "~/.claude" in first["sandbox"]  # a claude agent keeps its state there
        assert "(not the worktree); reads all" in review["sandbox"]  # read-only tier
        assert (
            "; reads all but gsd's private folder, credentials and the terminals; connects "
            in first["sandbox"]
        )
    else:
        assert first["sandbox"] == f"none: {unavailable_reason()} (git checks only; {ALWAYS})"
    assert "  sandbox: " in gsd("execute-phase", "1", "--dry-run").out
    phase.write(".planning/config.json", '{"sandbox": {"enabled": false}}')
    off = dry_run(gsd)[0]["sandbox"]
    assert off == f"none: sandbox disabled in config.json (git checks only; {ALWAYS})"
    assert ALWAYS == "still: no terminal, no_new_privs, root's capabilities dropped"
    phase.write(".planning/config.json", '{"sandbox": {"writable": ".cache"}}')
    bad = gsd("execute-phase", "1", "--dry-run")
    assert bad.code == 2 and "sandbox.writable` must be a list" in bad.err


def test_model_inherit_passes_no_model(phase, gsd) -> None:
    """Claude Code's `model: inherit` (use the main conversation's model) is no flag."""
    phase.write(
        "agents/python-pro.md",
        "---\nname: python-pro\ntools: [write_file, run_shell_command]\nmodel: inherit\n---\nX\n",
    )
    first = dry_run(gsd)[0]
    assert first["model"] is None and "--model" not in first["argv"]
    assert "inherit" not in first["argv"]


def test_agent_paths_expand_home_and_variables_and_say_what_is_missing(
    phase, gsd, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = Path(os.environ["HOME"])
    (home / "my-agents").mkdir()
    (home / "my-agents" / "rust-pro.md").write_text(
        "---\nname: rust-pro\ntools: [write_file, run_shell_command]\n---\nRust.\n"
    )
    monkeypatch.setenv("TEAM_AGENTS", str(tmp_path / "team"))
    phase.write(
        ".planning/config.json",
        json.dumps({"specialists": {"agent_paths": ["~/my-agents", "$TEAM_AGENTS/agents"]}}),
    )
    roster = "- **python-pro**: Python\n- **code-reviewer**: Reviews\n- **rust-pro**: Rust\n"
    phase.write(".planning/available_agents.md", roster)
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    assert result.code == 0, result.err
    unknown = json.loads(result.out)["tasks"][3]  # Task 4 names rust-pro
    assert unknown["agent"] == "rust-pro"
    assert f"$TEAM_AGENTS/agents is not a folder ({tmp_path / 'team' / 'agents'})" in result.err


# --- a runner program that is not installed ---------------------------------------------------

CLAUDE_MISSING = (
    "the claude runner program `claude` (plan 01-01 task 1, agent python-pro, and 4 more "
    "tasks) is not installed or not on PATH"
)
NPM_CLAUDE = "install it (npm install -g @anthropic-ai/claude-code) or put it on PATH"


@pytest.fixture
def git_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH is one folder holding git (and what a test adds): no runner program."""
    folder = tmp_path / "git-only"
    folder.mkdir()
    found = shutil.which("git")
    assert found is not None
    (folder / "git").symlink_to(found)
    monkeypatch.setenv("PATH", str(folder))
    return folder


def test_a_missing_runner_shows_the_schedule_and_refuses_the_live_run(
    phase, gsd, git_only: Path
) -> None:
    before = snapshot(phase.root)
    head = git(phase.root, "rev-parse", "HEAD")
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    assert result.code == 0, result.err
    tasks = json.loads(result.out)["tasks"]
    shown = [(t["plan"], t["task"], t["agent"]) for t in tasks][:2]
    assert shown == [("01-01", 1, "python-pro"), ("01-01", 2, "code-reviewer")]
    assert len(tasks) == 5
    note = f"`claude` is not installed or not on PATH: {NPM_CLAUDE}"
    assert [t["missing"] for t in tasks] == [note] * 5
    assert result.err.splitlines() == [
        f"gsd: warning: {CLAUDE_MISSING}; a live run would refuse to start ({NPM_CLAUDE})"
    ]
    text = gsd("execute-phase", "1", "--dry-run")
    assert text.code == 0 and text.out.count(f"  missing: {note}\n") == 5
    assert "wave 2  plan 01-02  task 1" in text.out
    live = gsd("execute-phase", "1")
    assert live.code == 2 and live.out == ""
    assert live.err.splitlines() == [
        f"gsd: error: {CLAUDE_MISSING}; nothing was run ({NPM_CLAUDE})"
    ]
    assert git(phase.root, "rev-parse", "HEAD") == head and git(phase.root, "tag") == ""
    assert snapshot(phase.root)[0] == before[0]


GEMINI_PRO = (
    "---\nname: python-pro\ntools: [write_file, run_shell_command]\nrunner: gemini\n---\nX\n"
)


@pytest.mark.parametrize("fallback", [True, False])
def test_the_fallback_agents_runner_is_checked_too(
    git_project, gsd, git_only: Path, fallback: bool
) -> None:
    fake_runner_programs(git_only, ("gemini",))
    git_project.write("agents/python-pro.md", GEMINI_PRO)
    git_project.write(".planning/available_agents.md", "- **python-pro**: Python\n")
    config = {"voltagent": {"fallback_on_error": fallback}}
    git_project.write(".planning/config.json", json.dumps(config))
    git_project.plan("01-01", tasks=auto_task(attrs=' specialist="python-pro"'))
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    dry = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    (task,) = json.loads(dry.out)["tasks"]
    assert dry.code == 0 and (task["runner"], task["missing"]) == ("gemini", "")
    named = (
        "the claude runner program `claude` (plan 01-01 task 1, fallback agent gsd-executor) "
        "is not installed or not on PATH"
    )
    if not fallback:
        assert dry.err == ""
        return
    hint = f"{NPM_CLAUDE}, or set `voltagent.fallback_on_error` to false"
    assert dry.err == f"gsd: warning: {named}; a live run would refuse to start ({hint})\n"
    live = gsd("execute-phase", "1")
    assert live.code == 2
    assert live.err == f"gsd: error: {named}; nothing was run ({hint})\n"


@pytest.mark.parametrize(
    ("steps", "fallback", "checked"),
    [
        pytest.param(["with_context"], True, False, id="no-fallback-step"),
        pytest.param(["with_context", "fallback"], True, True, id="a-fallback-step"),
        pytest.param(["fallback"], False, False, id="fallback-turned-off"),
    ],
)
def test_the_fallback_agents_runner_is_checked_when_the_retry_ladder_has_a_fallback(
    git_project, gsd, git_only: Path, steps: list[str], fallback: bool, checked: bool
) -> None:
    fake_runner_programs(git_only, ("gemini",))
    git_project.write("agents/python-pro.md", GEMINI_PRO)
    git_project.write(".planning/available_agents.md", "- **python-pro**: Python\n")
    config = {"voltagent": {"fallback_on_error": fallback}, "retry": {"steps": steps}}
    git_project.write(".planning/config.json", json.dumps(config))
    git_project.plan("01-01", tasks=auto_task(attrs=' specialist="python-pro"'))
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "plans")
    dry = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    assert dry.code == 0
    assert ("fallback agent gsd-executor" in dry.err) == checked, dry.err


COMMAND_AGENT = (
    "---\nname: python-pro\ntools: [write_file, run_shell_command]\nrunner: command\n"
    'command: ["bin/agent.py", "--fast"]\n---\nA local agent.\n'
)


def test_a_missing_command_says_where_it_looked(phase, gsd, git_only: Path) -> None:
    fake_runner_programs(git_only, ("claude",))
    phase.write("agents/python-pro.md", COMMAND_AGENT)
    git(phase.root, "add", "-A")
    git(phase.root, "commit", "-q", "-m", "agent")
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    assert result.code == 0
    first = json.loads(result.out)["tasks"][0]
    path = phase.root / "bin" / "agent.py"
    looked = f"check `command:` in the python-pro agent file; looked for {path}"
    assert first["missing"] == f"`bin/agent.py` is not installed or not on PATH: {looked}"
    assert result.err == (
        "gsd: warning: the command runner program `bin/agent.py` (plan 01-01 task 1, agent "
        "python-pro) is not installed or not on PATH; a live run would refuse to start "
        f"({looked})\n"
    )
    program = phase.write("bin/agent.py", "#!/bin/sh\n")
    program.chmod(0o755)
    git(phase.root, "add", "-A")
    git(phase.root, "commit", "-q", "-m", "agent program")
    again = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    assert again.err == "" and json.loads(again.out)["tasks"][0]["missing"] == ""
