"""Runners: argv per runner and tier, the files they read, output parsing, fake and real CLIs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gsd.core.errors import UsageError
from gsd.core.models import RunnerOutput
from gsd.core.safety.policy import BASELINE
from gsd.core.specialists import EXECUTOR
from gsd.core.verdict.judge import Verdict, judge, rate_limited
from gsd.formats.agents import Agent
from gsd.formats.planning.plan import parse
from gsd.formats.runners import claude, gemini
from gsd.formats.runners.gemini import INSTRUCTION
from gsd.formats.runners.invocation import (
    RunnerFiles,
    build_argv,
    parse_output,
    run_env,
    runner_files,
)
from gsd.formats.runners.output import raw_output
from gsd.formats.settings import Settings
from gsd.formats.taskreport import markers, parse_task_report
from gsd.io.dispatch import Dispatcher, TaskDispatch
from tests.conftest import REPO, auto_task, plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these

FIXTURES = Path(__file__).parent / "fixtures" / "runners"
FAKE_AGENT = Path(__file__).parent / "fakebin" / "fake_agent.py"

READ = ["read_file", "glob", "search_file_content"]
TOOLS = {
    "read-only": READ,
    "read+shell": [*READ, "run_shell_command"],
    "read+write": [*READ, "write_file", "replace"],
    "full": [*READ, "run_shell_command", "write_file", "replace"],
}
CONTEXT = {
    "repo": "/work/repo",
    "prompt_file": "/work/repo/.planning/.gsd/prompt-01-02-3.md",
    "result_file": "/work/repo/.planning/.gsd/result-01-02-3.json",
    "phase": "01-foundation",
    "plan": "01-02",
    "task": 3,
}


def agent(tier: str, runner: str = "claude", **fields: object) -> Agent:
    if runner == "command":
        fields.setdefault("command", ["python3", "bin/my-agent.py", "--flag"])
    return Agent(name="python-pro", tools=TOOLS[tier], runner=runner, **fields)  # type: ignore[arg-type]


def environment(a: Agent, **kw: Any) -> dict[str, str]:
    args: dict[str, Any] = {**CONTEXT, **kw}
    return run_env(a.name, **args)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


# --- argv per runner and tier -----------------------------------------------------

CLAUDE = ["claude", "-p", "--output-format", "stream-json", "--verbose"]
# claude-code 2.1.330 knows these; "MultiEdit" in a deny rule draws a warning
DENY_WRITE = "Write,Edit,NotebookEdit"
# gsd's own MCP tools (read-only) are pre-approved on every tier
MCP = ",".join(f"mcp__gsd__{name}" for name in claude.GSD_MCP_TOOLS)
FULL_AS_ROOT = (
    "Read,Glob,Grep,Bash,Write,Edit,NotebookEdit,WebSearch,WebFetch,TodoWrite,BashOutput,"
    f"KillShell,{MCP}"
)
SUBAGENTS = "Agent,Workflow"  # claude-code 2.1.330's sub-agent tools (`Task` is Agent's alias)


# --allowedTools is --tools and gsd's MCP tools; `full` bypasses permissions and lists none.
@pytest.mark.parametrize(
    ("tier", "web", "mode", "tools", "denied"),
    [
        pytest.param(
            "read-only",
            False,
            "plan",
            "Read,Glob,Grep",
            f"Bash,{DENY_WRITE},WebSearch,WebFetch",
            id="read-only",
        ),
        pytest.param(
            "read-only",
            True,
            "plan",
            "Read,Glob,Grep,WebSearch,WebFetch",
            f"Bash,{DENY_WRITE}",
            id="read-only-web",
        ),
        pytest.param(
            "read+shell",
            False,
            "dontAsk",
            "Read,Glob,Grep,Bash",
            f"{DENY_WRITE},WebSearch,WebFetch",
            id="read+shell",
        ),
        pytest.param(
            "read+write",
            False,
            "acceptEdits",
            "Read,Glob,Grep,Write,Edit,NotebookEdit",
            "Bash,WebSearch,WebFetch",
            id="read+write",
        ),
        pytest.param("full", False, "bypassPermissions", None, None, id="full"),
        pytest.param("full", True, "bypassPermissions", None, None, id="full-web"),
    ],
)
def test_claude_argv(
    tier: str, web: bool, mode: str, tools: str | None, denied: str | None
) -> None:
    flags = ["--permission-mode", mode]
    policy = ",".join(claude.policy_rules(BASELINE, tier))  # tests/test_policy.py: the rules
    if tools is not None:
        denied = ",".join(filter(None, [str(denied), policy, SUBAGENTS]))
        allowed = f"{tools},{MCP}"
        flags += ["--tools", tools, "--allowedTools", allowed, "--disallowedTools", denied]
    else:
        flags += ["--disallowedTools", ",".join(filter(None, [policy, SUBAGENTS]))]
    tools_of_agent = TOOLS[tier] + (["google_web_search", "web_fetch"] if web else [])
    a = Agent(name="python-pro", tools=tools_of_agent, runner="claude")
    assert a.tier == tier
    assert build_argv(a, None, as_root=False) == CLAUDE + flags
    if tier != "full":  # as root only the full tier differs
        assert build_argv(a, None, as_root=True) == CLAUDE + flags


def test_claude_full_tier_as_root_pre_approves_every_builtin_tool() -> None:
    """claude-code 2.1.330 exits 1 on bypassPermissions as uid 0 (tests/test_clis.py
    runs it): as root the full tier is acceptEdits with every built-in tool approved."""
    argv = build_argv(agent("full", "claude"), None, as_root=True)
    policy = ",".join(claude.policy_rules(BASELINE, "full"))
    flags = ["--permission-mode", "acceptEdits", "--allowedTools", FULL_AS_ROOT]
    assert argv == [*CLAUDE, *flags, "--disallowedTools", f"{policy},{SUBAGENTS}"]


@pytest.mark.parametrize(
    ("tier", "tail"),
    [
        pytest.param("read-only", ["--approval-mode", "plan"], id="read-only"),
        pytest.param("read+shell", ["--approval-mode", "default"], id="read+shell"),
        pytest.param("read+write", ["--approval-mode", "auto_edit"], id="read+write"),
        pytest.param("full", ["--approval-mode", "yolo"], id="full"),
    ],
)
def test_gemini_argv(tier: str, tail: list[str]) -> None:
    argv = build_argv(agent(tier, "gemini"), None)
    assert argv == [
        "gemini",
        "-p",
        INSTRUCTION,
        "--output-format",
        "stream-json",
        "--skip-trust",
        *tail,
    ]


@pytest.mark.parametrize(
    ("tier", "sandbox"),
    [
        pytest.param("read-only", "read-only", id="read-only"),
        pytest.param("read+shell", "read-only", id="read+shell"),
        pytest.param("read+write", "workspace-write", id="read+write"),
        pytest.param("full", "danger-full-access", id="full"),
    ],
)
def test_codex_argv(tier: str, sandbox: str) -> None:
    assert build_argv(agent(tier, "codex"), None) == [
        "codex",
        "exec",
        "-",
        "--json",
        "--sandbox",
        sandbox,
        # pinned against a user's config.toml: no network, no /tmp (tests/test_clis.py)
        *(
            [
                "-c",
                "sandbox_workspace_write.network_access=false",
                "-c",
                "sandbox_workspace_write.exclude_slash_tmp=true",
            ]
            if tier == "read+write"
            else []
        ),
        # no sub-agents: codex 0.169.0's multi_agent is on by default
        *["--disable", "multi_agent", "--disable", "multi_agent_v2"],
        "--skip-git-repo-check",
    ]


@pytest.mark.parametrize("tier", list(TOOLS))
def test_command_argv_is_the_agents_command(tier: str) -> None:
    argv = build_argv(agent(tier, "command", max_turns=4), "sonnet")
    assert argv == ["python3", "bin/my-agent.py", "--flag"]


@pytest.mark.parametrize("runner", ["claude", "gemini", "codex", "command"])
def test_every_runner_gets_the_gsd_environment(runner: str) -> None:
    assert environment(agent("read+write", runner)) == {
        "GSD_PHASE": "01-foundation",
        "GSD_PLAN": "01-02",
        "GSD_TASK": "3",
        "GSD_SPECIALIST": "python-pro",
        "GSD_PROMPT_FILE": CONTEXT["prompt_file"],
        "GSD_RESULT_FILE": CONTEXT["result_file"],
        "GSD_REPO": "/work/repo",
    }


@pytest.mark.parametrize(
    ("runner", "model", "agent_fields", "expected"),
    [
        pytest.param(
            "claude",
            "opus",
            {"max_turns": 12},
            ["--model", "opus", "--max-turns", "12"],
            id="claude-args",
        ),
        pytest.param(
            "claude",
            "sonnet",
            {"model": "sonnet", "max_turns": 25},
            ["--model", "sonnet", "--max-turns", "25"],
            id="claude-agent-defaults",
        ),
        pytest.param(
            "claude",
            "claude-opus-4-1",
            {"model": "sonnet"},
            ["--model", "claude-opus-4-1"],
            id="claude-argument-wins",
        ),
        pytest.param(
            "gemini",
            "gemini-2.5-flash",
            {"max_turns": 5},
            ["-m", "gemini-2.5-flash"],
            id="gemini-no-turn-flag",
        ),
        pytest.param(
            "codex", "gpt-5-codex", {"max_turns": 5}, ["-m", "gpt-5-codex"], id="codex-no-turn-flag"
        ),
    ],
)
def test_model_and_max_turns_flags(
    runner: str, model: str, agent_fields: dict[str, Any], expected: list[str]
) -> None:
    argv = build_argv(agent("read+write", runner, **agent_fields), model)
    start = {"claude": 5, "gemini": 6, "codex": 4}[runner]
    assert argv[start : start + len(expected)] == expected
    if runner != "claude":
        assert "--max-turns" not in argv


@pytest.mark.parametrize("runner", ["claude", "gemini", "codex", "command"])
def test_no_model_no_flag(runner: str) -> None:
    argv = build_argv(agent("full", runner), None)
    assert not {"--model", "-m", "--max-turns"} & set(argv)


def dispatched(a: Agent, environ: dict[str, str]) -> TaskDispatch:
    """How the dispatcher lays out a one-task plan whose task names agent `a`."""
    plan = parse(plan_text(tasks=auto_task(attrs=f' specialist="{a.name}"')), "01-01-PLAN.md")
    executor = Agent(name=EXECUTOR, tools=TOOLS["full"])
    dispatcher = Dispatcher(
        {EXECUTOR: executor, a.name: a},
        {a.name: ""},
        Settings(),
        environ=environ,
    )
    return dispatcher.task(1, plan, plan.tasks[0])


@pytest.mark.parametrize(
    ("environ", "model"),
    [
        pytest.param({}, "sonnet", id="the-agents-own"),
        pytest.param({"GSD_DEFAULT_MODEL": " opus "}, "opus", id="GSD_DEFAULT_MODEL-wins"),
    ],
)
def test_the_dispatcher_chooses_the_model(environ: dict[str, str], model: str) -> None:
    laid_out = dispatched(agent("full", model="sonnet", max_turns=25), environ)
    assert laid_out.model == model
    assert laid_out.argv[5:9] == ["--model", model, "--max-turns", "25"]


@pytest.mark.parametrize(
    "model",
    [
        pytest.param("", id="empty"),
        pytest.param("-x", id="dash"),
        pytest.param("--dangerously-skip-permissions", id="option"),
        pytest.param("sonnet --permission-mode bypassPermissions", id="space"),
        pytest.param("sonnet\n--yolo", id="newline"),
        pytest.param("sonnet\t", id="tab"),
        pytest.param("son\x00net", id="nul"),
        pytest.param("son\x1b[2Jnet", id="escape"),
        pytest.param("son\u2028net", id="line-separator"),
        pytest.param("son\u00a0net", id="nbsp"),
    ],
)
@pytest.mark.parametrize("runner", ["claude", "gemini", "codex"])
def test_malicious_model_rejected(runner: str, model: str) -> None:
    with pytest.raises(ValueError, match="model"):
        build_argv(agent("full", runner), model)
    hostile = agent("full", runner, model=model, source="agents/python-pro.md")
    with pytest.raises(UsageError, match="agents/python-pro.md: model"):
        dispatched(hostile, {})


@pytest.mark.parametrize("model", ["--yolo", "sonnet --yolo", "son\x1bnet"])
def test_malicious_default_model_rejected(model: str) -> None:
    with pytest.raises(UsageError, match="GSD_DEFAULT_MODEL: unusable model name"):
        dispatched(agent("full"), {"GSD_DEFAULT_MODEL": model})


@pytest.mark.parametrize("turns", [0, -1])
def test_bad_max_turns_rejected(turns: object) -> None:
    with pytest.raises(ValueError, match="max_turns"):
        agent("full", max_turns=turns)


def test_import_stays_light() -> None:
    code = "import sys, gsd.formats.runners.invocation; print('pydantic' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


# --- runner output ----------------------------------------------------------------

REPORT_TAIL = "## TASK COMPLETE"


# What parse_output reads from each fixture: (is_error, input_tokens, output_tokens,
# cost_usd, structured) and the text; None where the text is a whole Task Report (see
# test_success_fixtures_carry_a_complete_report).
@pytest.mark.parametrize(
    ("runner", "stdout_file", "result_file", "expected", "text"),
    [
        pytest.param(
            "claude",
            "claude_success.json",
            None,
            (False, 24200, 950, 0.1834, True),
            None,
            id="claude-success",
        ),
        pytest.param(
            "claude",
            "claude_error_max_turns.json",
            None,
            (True, 2300, 300, 0.0421, True),
            "",
            id="claude-error-max-turns",
        ),
        pytest.param(
            "claude",
            "claude_log_noise.txt",
            None,
            (False, 10, 5, 0.02, True),
            "Done.\n\n## TASK COMPLETE",
            id="claude-log-noise",
        ),
        pytest.param(
            "gemini",
            "gemini_success.json",
            None,
            (False, 26439, 1234, None, True),
            None,
            id="gemini-two-models",
        ),  # output: candidates + thoughts
        pytest.param(
            "gemini",
            "gemini_error.json",
            None,
            (True, None, None, None, True),
            "Please set an Auth method in your settings.json",
            id="gemini-error",
        ),
        pytest.param(
            "codex",
            "codex_success.jsonl",
            None,
            (False, 54763, 1022, None, True),
            None,
            id="codex-two-turns",
        ),
        pytest.param(
            "codex",
            "codex_turn_failed.jsonl",
            None,
            (True, None, None, None, True),
            "stream disconnected before completion: rate limit reached",
            id="codex-turn-failed",
        ),
        pytest.param(
            "codex",
            "codex_reconnect.txt",
            None,
            (False, 12632, 81, None, True),
            "OK",
            id="codex-reconnect-recovered",
        ),
        pytest.param(
            "command",
            "command_stdout.txt",
            "command_result.json",
            (False, 5000, 700, 0.05, True),
            None,
            id="command-result-file",
        ),
        pytest.param(
            "command",
            "command_stdout.txt",
            None,
            (False, None, None, None, False),
            "my-agent: starting\nmy-agent: wrote src/parser.py\n",
            id="command-no-result-file",
        ),
    ],
)
def test_parse_output_fixtures(
    runner: str,
    stdout_file: str,
    result_file: str | None,
    expected: tuple[bool, int | None, int | None, float | None, bool],
    text: str | None,
) -> None:
    out = parse_output(runner, fixture(stdout_file), fixture(result_file) if result_file else None)
    found = (out.is_error, out.input_tokens, out.output_tokens, out.cost_usd, out.structured)
    assert found == expected
    if text is not None:
        assert out.text == text


@pytest.mark.parametrize(
    ("runner", "stdout_file", "result_file"),
    [
        pytest.param("claude", "claude_success.json", None, id="claude"),
        pytest.param("gemini", "gemini_success.json", None, id="gemini"),
        pytest.param("codex", "codex_success.jsonl", None, id="codex"),
        pytest.param("command", "command_stdout.txt", "command_result.json", id="command"),
    ],
)
def test_success_fixtures_carry_a_complete_report(
    runner: str, stdout_file: str, result_file: str | None
) -> None:
    out = parse_output(runner, fixture(stdout_file), fixture(result_file) if result_file else None)
    report = parse_task_report(out.text)
    assert report is not None and report.complete and report.status == "success"
    assert report.files_created == ["src/parser.py", "tests/test_parser.py"]
    assert markers(out.text) == ["## TASK COMPLETE"]
    verdict = judge(
        exit_code=0,
        timed_out=False,
        output=out,
        report=report,
        markers=markers(out.text),
        changed_files=True,
    )
    assert verdict.success and not verdict.soft_success


@pytest.mark.parametrize("runner", ["claude", "gemini", "codex", "command"])
@pytest.mark.parametrize(
    "stdout",
    [
        pytest.param(fixture("garbage.txt"), id="garbage"),
        pytest.param("", id="empty"),
        pytest.param("[" * 100_000, id="deep-nesting"),
        pytest.param(
            '{"type": "result", "usage": 5, "result": 7, "subtype": null}', id="odd-types"
        ),
        pytest.param('{"item": "x"}\n{"type": 3}\n[1, 2]\n', id="json-not-events"),
    ],
)
def test_unparsable_output_is_raw_text(runner: str, stdout: str) -> None:
    out = parse_output(runner, stdout, "not json {" if runner == "command" else None)
    if out.structured:  # only odd-types, for claude: a result object with junk fields
        assert (runner, out.text, out.input_tokens) == ("claude", "", None)
        return
    assert out == RunnerOutput(
        text=stdout,
        is_error=False,
        input_tokens=None,
        output_tokens=None,
        cost_usd=None,
        structured=False,
    )


def test_unknown_runner_output_is_raw_text() -> None:
    assert parse_output("aider", "hello").text == "hello"


@pytest.mark.parametrize(
    ("stdout", "is_error", "text"),
    [
        pytest.param(
            json.dumps(
                [
                    {"type": "system", "subtype": "init"},
                    {"type": "assistant", "message": {}},
                    {"type": "result", "subtype": "success", "is_error": False, "result": "hi"},
                ]
            ),
            False,
            "hi",
            id="verbose-array",
        ),
        pytest.param(
            '{"type":"result","subtype":"error_during_execution","is_error":false}',
            True,
            "",
            id="error-subtype-without-is-error",
        ),
        pytest.param(
            '{"type":"result","subtype":"success","is_error":true,"result":"API Error"}',
            True,
            "API Error",
            id="is-error",
        ),
        pytest.param(
            '{\n  "type": "result",\n  "subtype": "success",\n  "is_error": false,\n'
            '  "result": "pretty"\n}',
            False,
            "pretty",
            id="pretty-printed",
        ),
        pytest.param(
            '{"type":"result","subtype":"success","is_error":false,"result":"old","cost_usd":0.5}',
            False,
            "old",
            id="old-cost-field",
        ),
    ],
)
def test_claude_shapes(stdout: str, is_error: bool, text: str) -> None:
    out = parse_output("claude", stdout)
    assert (out.structured, out.is_error, out.text) == (True, is_error, text)


def test_gemini_object_after_log_lines() -> None:
    stdout = "Loaded cached credentials.\n[WARN] slow disk\n" + fixture("gemini_success.json")
    out = parse_output("gemini", stdout)
    assert (out.structured, out.input_tokens, out.output_tokens) == (True, 26439, 1234)


def test_command_result_file_without_result_keeps_stdout() -> None:
    out = parse_output("command", "printed", '{"is_error": true, "cost_usd": 1}')
    assert out == RunnerOutput(
        text="printed",
        is_error=True,
        input_tokens=None,
        output_tokens=None,
        cost_usd=1.0,
        structured=True,
    )


# --- end to end: fake programs on PATH --------------------------------------------


@pytest.fixture
def fakebin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`claude`, `gemini` and `codex` first on PATH; returns the record file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("claude", "gemini", "codex"):
        target = bin_dir / name
        shutil.copyfile(FAKE_AGENT, target)
        target.chmod(0o755)
    record = tmp_path / "record.json"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_AGENT_RECORD", str(record))
    return record


@pytest.mark.skipif(shutil.which("python3") is None, reason="fake agents need python3")
@pytest.mark.parametrize(
    ("runner", "tier", "tokens"),
    [
        pytest.param("claude", "read+shell", (150, 20), id="claude"),
        pytest.param("gemini", "read+write", (100, 20), id="gemini"),
        pytest.param("codex", "full", (100, 20), id="codex"),
    ],
)
def test_end_to_end_with_fake_programs(
    runner: str,
    tier: str,
    tokens: tuple[int, int],
    fakebin: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prompt = "Implement fake().\n" + "context line\n" * 5000
    argv = build_argv(agent(tier, runner), "m-1")
    env = environment(agent(tier, runner), repo=str(tmp_path))
    monkeypatch.delenv("GSD_SKIP_CLIS", raising=False)  # `make test-fast` sets it; not gsd's
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    done = subprocess.run(argv, cwd=tmp_path, input=prompt, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr

    seen = json.loads(fakebin.read_text(encoding="utf-8"))
    assert seen["name"] == runner
    assert seen["argv"] == argv[1:]
    assert seen["stdin"] == prompt
    assert seen["env"] == env

    out = parse_output(runner, done.stdout)
    assert out.structured and not out.is_error
    assert (out.input_tokens, out.output_tokens) == tokens
    report = parse_task_report(out.text)
    assert report is not None and report.complete
    assert report.files_created == ["src/fake.py"]
    verdict = judge(
        exit_code=done.returncode,
        timed_out=False,
        output=out,
        report=report,
        markers=markers(out.text),
        changed_files=False,
    )
    assert verdict == Verdict(
        success=True, soft_success=False, error_type=None, reason="Task Report: success"
    )


# --- real CLI output (tests/fixtures/runners/README.md says how each was captured) -----


def test_claude_not_logged_in_as_the_real_cli_prints_it() -> None:
    out = parse_output("claude", fixture("claude-2.1.330_not_logged_in.json"))
    assert (out.structured, out.is_error, out.rate_limited) == (True, True, False)
    assert out.text == "Not logged in \u00b7 Please run /login"
    assert (out.input_tokens, out.output_tokens, out.cost_usd) == (0, 0, 0.0)


def test_claude_api_error_result_reads_errors_and_api_error_status() -> None:
    """An error result without `result`: the text is its `errors`; 429 is a rate limit."""
    out = parse_output("claude", fixture("claude-2.1.330_api_error_429.json"))
    assert out.is_error and out.rate_limited
    assert out.text.startswith("API Error: Request rejected (429)")


def test_gemini_error_json_on_stderr_is_read() -> None:
    """gemini-cli 0.61.0 prints nothing on stdout and its error object on stderr."""
    stdout = fixture("gemini-0.61.0_no_auth.stdout")
    assert stdout == ""
    out = parse_output("gemini", stdout, None, fixture("gemini-0.61.0_no_auth.stderr"))
    assert (out.structured, out.is_error, out.rate_limited) == (True, True, False)
    assert out.text.startswith("Please set an Auth method in your ")
    assert parse_output("gemini", stdout).structured is False  # stdout alone says nothing


def test_gemini_quota_error_on_stderr_is_a_rate_limit() -> None:
    out = parse_output("gemini", "", None, fixture("gemini-0.61.0_quota.stderr"))
    assert out.is_error and out.rate_limited and "daily quota" in out.text
    verdict = judge(
        exit_code=1, timed_out=False, output=out, report=None, markers=[], changed_files=False
    )
    assert rate_limited(verdict, out)


def test_codex_offline_stream_as_the_real_cli_prints_it() -> None:
    """codex 0.169.0 without network: reconnect `error` events and no turn.completed."""
    out = parse_output("codex", fixture("codex-0.169.0_offline.jsonl"))
    assert out.structured and out.is_error
    assert out.text.startswith("Reconnecting... 5/5 (stream disconnected before completion")


def test_rate_limit_words_on_stderr_count() -> None:
    out = raw_output("")
    verdict = judge(
        exit_code=1, timed_out=False, output=out, report=None, markers=[], changed_files=False
    )
    assert not rate_limited(verdict, out)
    assert rate_limited(verdict, out, "ERROR: You've hit your usage limit. Try again later.")


# --- files a runner reads ---------------------------------------------------------


def test_only_gemini_needs_files() -> None:
    for runner in ("claude", "codex", "command"):
        files = runner_files(agent("read+shell", runner, max_turns=3), Path("/r"))
        assert files == RunnerFiles(files={}, env={}, argv=[])


@pytest.mark.parametrize(
    ("tier", "allowed", "denied"),
    [
        (
            "read-only",
            None,
            '["run_shell_command", "write_file", "replace", "web_fetch", "google_web_search"]',
        ),
        (
            "read+shell",
            '["run_shell_command"]',
            '["write_file", "replace", "web_fetch", "google_web_search"]',
        ),
        ("read+write", None, '["run_shell_command", "web_fetch", "google_web_search"]'),
    ],
)
def test_gemini_policy_per_tier(tier: str, allowed: str | None, denied: str) -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    files = runner_files(agent(tier, "gemini"), Path("/r/run"))
    assert files.argv == ["--policy", "/r/run/gemini-policy.toml"] and files.env == {}
    rules = tomllib.loads(files.files["gemini-policy.toml"])["rule"]
    # the rest: tests/test_policy.py, and gsd mcp's tools (every tier)
    tier_rules = [r for r in rules if "denyMessage" not in r and not gsd_mcp(r)]
    found = {r["decision"]: json.dumps(r["toolName"]) for r in tier_rules}
    assert found == {"deny": denied, **({"allow": allowed} if allowed else {})}
    # the tier's allow is below gsd's deny rules: a denied command stays denied
    assert {r["priority"] for r in tier_rules} == {999, 998} if allowed else {999}


def test_gemini_full_tier_has_only_the_safety_policy() -> None:
    tomllib = pytest.importorskip("tomllib")

    files = runner_files(agent("full", "gemini"), Path("/r"))
    assert files.argv == ["--policy", "/r/gemini-policy.toml"]
    rules = tomllib.loads(files.files["gemini-policy.toml"])["rule"]
    [allowed] = [r for r in rules if gsd_mcp(r)]
    assert allowed["decision"] == "allow" and "mcp_gsd_status" in allowed["toolName"]
    others = [r for r in rules if r is not allowed]
    assert others and all(r["decision"] == "deny" and r["denyMessage"] for r in others)


def gsd_mcp(rule: dict[str, object]) -> bool:
    """The rule that lets every tier call gsd mcp's read-only tools (mcp_gsd_*)."""
    names = rule["toolName"]
    return isinstance(names, list) and all(str(n).startswith("mcp_gsd_") for n in names)


def test_gemini_user_settings_get_gsds_hooks_after_the_users_own() -> None:
    """gemini ignores the project's settings in a folder untrusted at start: gsd's hooks
    go into the user settings of the spawn's private home, after the user's own hooks;
    the auth type the user chose stays."""
    from gsd.formats.runners.agenthooks import hook_groups

    kept = {
        "hooks": {"AfterTool": [{"matcher": "x", "hooks": []}]},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    settings = json.loads(
        gemini.user_settings(json.dumps(kept), None, hook_groups("gemini", "gsd")) or ""
    )
    assert [g["matcher"] for g in settings["hooks"]["AfterTool"]] == ["x", "write_file|replace"]
    assert settings["hooks"]["SessionStart"][0]["hooks"][0]["command"] == (
        "gsd hooks run gemini-session-start"
    )
    assert settings["security"] == kept["security"] and "model" not in settings


def test_gemini_turn_limit_keeps_the_users_settings() -> None:
    """model.maxSessionTurns beside the user's model settings; the rest kept as it was."""
    kept = '{"model": {"name": "gemini-2.5-pro"}, "security": {"auth": {"selectedType": "x"}}}'
    settings = json.loads(gemini.user_settings(kept, 7) or "")
    assert settings == {
        "model": {"name": "gemini-2.5-pro", "maxSessionTurns": 7},
        "security": {"auth": {"selectedType": "x"}},
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {"model": {"maxSessionTurns": 2}}),
        ('{"model": "odd"}', {"model": {"maxSessionTurns": 2}}),
        (
            '// mine\n{"a": "http://x//y", /* b */ "c": "/*not*/"}',
            {"a": "http://x//y", "c": "/*not*/", "model": {"maxSessionTurns": 2}},
        ),
        ('{"a": "\\"//"}', {"a": '"//', "model": {"maxSessionTurns": 2}}),
    ],
)
def test_gemini_user_settings_read_as_gemini_reads_them(text: str, expected: object) -> None:
    """An empty file is no settings; comments go (gemini's reader strips them), not what
    looks like one inside a string."""
    assert json.loads(gemini.user_settings(text, 2) or "") == expected


@pytest.mark.parametrize("text", ["[1]", "{not json", '"text"'])
def test_gemini_user_settings_that_are_no_object_give_none(text: str) -> None:
    """gsd makes no private home then: gemini reads the user's file and says what is wrong."""
    assert gemini.user_settings(text, 2) is None


def test_claude_passes_on_the_agent_files_own_deny_rules() -> None:
    """Claude Code's `disallowedTools` reach claude's deny list on every tier, less the
    tools claude-code 2.1.330 no longer has; a rule claude cannot parse is left out."""
    from gsd.formats.agents import parse_agent

    text = (
        "---\nname: shipper\ntools: Read, Grep, Bash, Edit, Write\n"
        "disallowedTools: Bash(git push:*), MultiEdit, WebFetch, Read(a,b), Bash(\x01)\n---\nX\n"
    )
    agent = parse_agent(text, "shipper.md")
    assert agent.tier == "full"
    for root in (False, True):
        argv = build_argv(agent, None, as_root=root)
        deny = argv[argv.index("--disallowedTools") + 1]
        # gsd's policy first, then the agent's own rules it did not already hold
        assert deny == ",".join([*claude.policy_rules(BASELINE, "full"), "WebFetch", SUBAGENTS])
    narrowed = parse_agent(
        text.replace("Edit, Write", "Edit, Write\npermissionMode: plan"), "shipper.md"
    )
    argv = build_argv(narrowed, None)
    deny = argv[argv.index("--disallowedTools") + 1].split(",")
    assert {"Bash", "Write", "Edit", "Bash(git push:*)", "WebFetch"} <= set(deny)
    assert "MultiEdit" not in deny


# --- sub-agents: one level of delegation unless config.json allows them -------------------


@pytest.mark.parametrize("tier", list(TOOLS))
@pytest.mark.parametrize("root", [False, True])
def test_claude_denies_subagent_tools_unless_allowed(tier: str, root: bool) -> None:
    a = agent(tier, "claude")
    denied = build_argv(a, None, as_root=root)
    deny = denied[denied.index("--disallowedTools") + 1].split(",")
    assert {"Agent", "Workflow"} <= set(deny)
    assert all("Agent" not in flag.split(",") for flag in denied if flag != ",".join(deny))
    allowed = build_argv(a, None, as_root=root, subagents=True)
    deny = allowed[allowed.index("--disallowedTools") + 1].split(",")
    assert not {"Agent", "Workflow", "Task"} & set(deny)
    granted = [allowed[i + 1] for i, flag in enumerate(allowed) if flag == "--allowedTools"]
    if tier == "full" and not root:
        assert granted == []  # bypassPermissions: every tool not denied
    else:
        assert "Agent" in granted[0].split(",")
        assert "Task" not in granted[0].split(",")


@pytest.mark.parametrize("tier", list(TOOLS))
def test_codex_turns_subagents_off_unless_allowed(tier: str) -> None:
    off = build_argv(agent(tier, "codex"), None)
    disabled = ["--disable", "multi_agent", "--disable", "multi_agent_v2"]
    assert off[-5:] == [*disabled, "--skip-git-repo-check"]
    on = build_argv(agent(tier, "codex"), None, subagents=True)
    assert "--disable" not in on and "--enable" not in on
    assert on[-3:] == ["-c", "agents.max_depth=1", "--skip-git-repo-check"]


@pytest.mark.parametrize("tier", list(TOOLS))
def test_gemini_policy_denies_invoke_agent_unless_allowed(tier: str) -> None:
    tomllib = pytest.importorskip("tomllib")

    def subagent_rules(**kw: bool) -> list[dict[str, Any]]:
        files = runner_files(agent(tier, "gemini"), Path("/r"), **kw)
        rules = tomllib.loads(files.files["gemini-policy.toml"])["rule"]
        return [r for r in rules if "invoke_agent" in json.dumps(r["toolName"])]

    (rule,) = subagent_rules()
    assert (rule["toolName"], rule["decision"], rule["priority"]) == ("invoke_agent", "deny", 999)
    assert "specialists.allow_subagents" in rule["denyMessage"]
    assert subagent_rules(subagents=True) == []
    assert build_argv(agent(tier, "gemini"), None) == build_argv(
        agent(tier, "gemini"), None, subagents=True
    )


def test_the_setting_reaches_the_argv_through_the_dispatcher(tmp_path: Path) -> None:
    """config.json `specialists.allow_subagents` (default false) reaches build_argv and
    the gemini policy the way the safety policy does: through the task's dispatch."""
    plan = parse(plan_text(tasks=auto_task()), "01-01-PLAN.md")
    executor = Agent(name=EXECUTOR, tools=TOOLS["full"], runner="claude", source="x.md")
    for allowed in (False, True):
        settings = Settings.model_validate({"specialists": {"allow_subagents": allowed}})
        dispatcher = Dispatcher({EXECUTOR: executor}, {}, settings, environ={})
        dispatch = dispatcher.task(1, plan, plan.tasks[0])
        assert dispatch.subagents is allowed
        deny = dispatch.argv[dispatch.argv.index("--disallowedTools") + 1].split(",")
        assert ("Agent" in deny) is not allowed
    assert Settings().specialists.allow_subagents is False
