"""`gsd hooks install --claude|--gemini --hook ...`: session end, before a tool, after a
delegated agent, before context compaction; fed the JSON each CLI sends.

The commands are run as the CLIs run them (tests/test_clihooks.py `fire`: the command
read back from the written settings.json, through `sh -c`, the JSON on stdin). The
inputs follow each CLI's own shapes, read from the pinned releases:

- Claude Code 2.1.330 (the claude-code-linux-x64 binary's hook input schemas): PreToolUse
  `tool_name`, `tool_input` (Bash: `command`, `description`; sdk-tools.d.ts BashInput),
  `tool_use_id`; SessionEnd `reason` (clear, resume, logout, prompt_input_exit, other);
  SubagentStop `stop_hook_active`, `agent_id`, `agent_type`, `agent_transcript_path`,
  `last_assistant_message`; PreCompact `trigger`, `custom_instructions`.
- Gemini CLI 0.61.0 (bundle/docs/hooks/reference.md; chunk-5FZXKDXH.js
  `fireAfterAgentEvent`, `fireSessionEndEvent`, `firePreCompressEvent`): BeforeTool
  `tool_name`, `tool_input` (run_shell_command: `command`, docs/tools/shell.md);
  SessionEnd `reason`; AfterAgent `prompt`, `prompt_response`, `stop_hook_active`;
  PreCompress `trigger`; every one with `timestamp`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gsd.formats.runners import clisettings
from tests.test_clihooks import CLAUDE_BEFORE, GEMINI_BEFORE, command_for, fire, settings_path
from tests.test_clihooks import program as program  # noqa: F401 (a fixture)
from tests.test_execute import REPORT
from tests.test_execute import phase as phase  # noqa: F401 (a fixture)
from tests.test_imports import HEAVY, loaded_after

PLAN = ".planning/phases/01-alpha/01-01-PLAN.md"
EVENTS = {
    "claude": (
        "PostToolUse",
        "SessionStart",
        "SessionEnd",
        "PreToolUse",
        "SubagentStop",
        "PreCompact",
    ),
    "gemini": (
        "AfterTool",
        "SessionStart",
        "SessionEnd",
        "BeforeTool",
        "AfterAgent",
        "PreCompress",
    ),
}
BASE: dict[str, Any] = {"session_id": "8f1c2d3e-0a1b", "transcript_path": "/t/session.jsonl"}
GEMINI_TIME = {"timestamp": "2026-11-29T06:00:00.000Z"}


def hook_input(cli: str, event: str, cwd: Path, **fields: Any) -> dict[str, Any]:
    extra = GEMINI_TIME if cli == "gemini" else {}
    return {**BASE, "cwd": str(cwd), "hook_event_name": event, **extra, **fields}


def pre_tool(cli: str, cwd: Path, command: str) -> dict[str, Any]:
    if cli == "claude":
        tool = {"tool_name": "Bash", "tool_input": {"command": command, "description": "x"}}
        return hook_input(cli, "PreToolUse", cwd, permission_mode="acceptEdits", **tool)
    tool = {"tool_name": "run_shell_command", "tool_input": {"command": command}}
    return hook_input(cli, "BeforeTool", cwd, **tool)


def install(gsd, program: Path, hook: str, *clis: str) -> None:
    """`gsd hooks install --CLI... --gsd PROGRAM --hook HOOK`, which must succeed."""
    flags = [f"--{cli}" for cli in clis or ("claude", "gemini")]
    result = gsd("hooks", "install", *flags, "--gsd", str(program), "--hook", hook)
    assert result.code == 0, result.err


def run_hook(root: Path, cli: str, event: str, payload: dict[str, Any]):
    """Fire the command gsd installed for `event` with `payload`, in `root`."""
    return fire(command_for(root, cli, event), payload, root)


@pytest.fixture
def all_hooks(project, gsd, program: Path):  # noqa: F811
    """Both CLIs' settings, holding the user's own, with every gsd hook installed."""
    for cli, before in (("claude", CLAUDE_BEFORE), ("gemini", GEMINI_BEFORE)):
        project.write(clisettings.SETTINGS[cli], json.dumps(before, indent=2) + "\n")
    install(gsd, program, "all")
    return project


# -- install / uninstall -----------------------------------------------------------------


@pytest.mark.parametrize(("cli", "before"), [("claude", CLAUDE_BEFORE), ("gemini", GEMINI_BEFORE)])
def test_every_hook_is_installed_kept_and_removed_exactly(
    all_hooks,
    gsd,
    program: Path,
    cli: str,
    before: dict[str, Any],  # noqa: F811
) -> None:
    path = settings_path(all_hooks.root, cli)
    data = json.loads(path.read_text())
    assert clisettings.without_hooks(data) == before
    names = ("post-edit", "session-start", "session-end", "pre-tool", "after-agent", "pre-compact")
    for event, name in zip(EVENTS[cli], names, strict=True):
        assert command_for(all_hooks.root, cli, event).endswith(f"hooks run {cli}-{name}")
    shell = [g for g in data["hooks"][EVENTS[cli][3]] if clisettings.is_ours(g["hooks"][0])]
    assert shell[0]["matcher"] == ("Bash" if cli == "claude" else "run_shell_command")
    assert "matcher" not in data["hooks"][EVENTS[cli][5]][0]  # every trigger: manual, auto
    written = path.read_bytes()
    again = gsd("hooks", "install", f"--{cli}", "--gsd", str(program))  # no --hook: kept
    assert again.code == 0 and "already" in again.out
    assert path.read_bytes() == written
    assert gsd("hooks", "uninstall", f"--{cli}").code == 0
    assert path.read_text() == json.dumps(before, indent=2) + "\n"  # byte for byte


def test_one_hook_joins_the_default_two_and_alone_goes_whole(project, gsd) -> None:
    assert gsd("hooks", "install", "--gemini", "--hook", "pre-compact").code == 0
    path = settings_path(project.root, "gemini")
    hooks = json.loads(path.read_text())["hooks"]
    assert set(hooks) == {"AfterTool", "SessionStart", "PreCompress"}
    assert hooks["PreCompress"][0]["hooks"][0]["name"] == "gsd-pre-compact"
    assert hooks["PreCompress"][0]["hooks"][0]["timeout"] == 60_000
    assert gsd("hooks", "install", "--gemini", "--hook", "pre-tool").code == 0
    hooks = json.loads(path.read_text())["hooks"]
    assert set(hooks) == {"AfterTool", "SessionStart", "BeforeTool", "PreCompress"}
    result = gsd("hooks", "uninstall", "--gemini")
    assert result.code == 0 and "held gsd's hooks only" in result.out
    assert not path.exists()


def test_hook_without_a_cli_and_an_unknown_hook_are_one_line(project, gsd) -> None:
    result = gsd("hooks", "install", "--hook", "pre-tool")
    assert result.code == 2 and "--hook is for the agent CLIs' hooks" in result.err
    assert "add --claude or --gemini" in result.err
    result = gsd("hooks", "install", "--claude", "--hook", "pre-tools")
    assert (
        result.code == 2 and "--hook pre-tools: no such hook (did you mean pre-tool?" in result.err
    )
    assert len(result.err.strip().splitlines()) == 1
    assert not (project.root / ".claude").exists()
    result = gsd("hooks", "run", "claude-pre-tols")
    assert result.code == 1 and "(did you mean claude-pre-tool?" in result.err


# -- before a tool -----------------------------------------------------------------------


HEREDOC = f"cat > {PLAN} <<'EOF'\n---\nphase: 01-alpha\nit's not validated\nEOF"


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(HEREDOC, id="heredoc"),
        pytest.param(f"echo 'wave: 2' >> {PLAN}", id="append"),
        pytest.param("cd .planning/phases/01-alpha && cat > 01-01-PLAN.md <<EOF\nx\nEOF", id="cd"),
        pytest.param(f"printf x | tee -a {PLAN} > /dev/null", id="tee"),
        pytest.param(f"sed -i 's/wave: 1/wave: 2/' {PLAN}", id="sed-i"),
        pytest.param(f"bash -c 'echo x > {PLAN}'", id="bash-c"),
        pytest.param(f"cp /tmp/draft.md {PLAN}", id="cp"),
    ],
)
@pytest.mark.parametrize("cli", ["claude", "gemini"])
def test_a_shell_write_into_a_plan_is_denied_in_the_clis_form(
    all_hooks, cli: str, command: str
) -> None:
    plan = all_hooks.plan("01-01")
    before = plan.read_bytes()
    done = run_hook(all_hooks.root, cli, EVENTS[cli][3], pre_tool(cli, all_hooks.root, command))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    answer = json.loads(done.stdout)  # stdout is that JSON and nothing else
    if cli == "claude":
        output = answer["hookSpecificOutput"]
        assert output["hookEventName"] == "PreToolUse"
        assert output["permissionDecision"] == "deny"
        reason = output["permissionDecisionReason"]
        assert "Write or Edit tool" in reason
    else:
        assert answer["decision"] == "deny"
        reason = answer["reason"]
        assert "write_file or replace tool" in reason
    assert "01-01-PLAN.md" in reason and "\n" not in reason  # one line
    assert plan.read_bytes() == before  # never run


@pytest.mark.parametrize(
    "command",
    [
        f"cat {PLAN}",
        f"grep -n wave {PLAN} > notes.txt",
        "echo hi > src/x.py",
        f"cp {PLAN} /tmp/copy.md",
        "echo '> 01-01-PLAN.md' # a plan named in quotes, not written",
        "npm test 2>&1 | tail -5",
    ],
)
@pytest.mark.parametrize("cli", ["claude", "gemini"])
def test_other_shell_commands_go_ahead_silently(all_hooks, cli: str, command: str) -> None:
    done = run_hook(all_hooks.root, cli, EVENTS[cli][3], pre_tool(cli, all_hooks.root, command))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


# -- session end -------------------------------------------------------------------------


def test_session_end_summarises_the_last_run_from_its_logs(phase, gsd, program: Path) -> None:  # noqa: F811
    root = phase.root
    assert gsd("execute-phase", "1").code == 0
    install(gsd, program, "session-end")
    for cli in ("claude", "gemini"):
        payload = hook_input(
            cli, "SessionEnd", root, reason="prompt_input_exit" if cli == "claude" else "exit"
        )
        done = run_hook(root, cli, "SessionEnd", payload)
        assert done.returncode == 0, done.stderr
        text = json.loads(done.stdout)["systemMessage"]
        assert "last run: started" in text and "phase 01-alpha" in text
        assert "plan 01-01: done; 2 attempts (2 ok, 0 failed)" in text
        assert "plan 01-02: done; 1 attempt (1 ok, 0 failed)" in text
        assert "phase 01-alpha: 2/2 plans done" in text
        assert len(text.splitlines()) <= 24  # one screen
        kept = root / ".git" / "gsd" / "sessions" / "8f1c2d3e-0a1b.md"
        assert text.endswith("\n(kept in .git/gsd/sessions/8f1c2d3e-0a1b.md)")
        assert kept.read_text() == text.rsplit("\n", 1)[0] + "\n"


def test_session_end_before_any_run_says_so(all_hooks) -> None:
    all_hooks.plan("01-01")
    payload = hook_input("claude", "SessionEnd", all_hooks.root, reason="other")
    done = run_hook(all_hooks.root, "claude", "SessionEnd", payload)
    text = json.loads(done.stdout)["systemMessage"]
    assert "no gsd run recorded" in text and "0/1 plans done; next: 01-01" in text


# -- after a delegated agent -------------------------------------------------------------


def transcript(tmp_path: Path, prompt: str, answer: str) -> Path:
    """A sub-agent's transcript as Claude Code writes it (one JSON object a line)."""
    path = tmp_path / "agent-a1b2.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": prompt}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def subagent_stop(root: Path, path: Path, answer: str | None) -> dict[str, Any]:
    """SubagentStop's input, as claude 2.1.330 sent it to a hook in
    tests/test_lifehooks_real.py (captured there; ids shortened)."""
    fields: dict[str, Any] = {
        "prompt_id": "c6addf8b",
        "permission_mode": "acceptEdits",
        "agent_id": "a28f599b16c96d9d6",
        "agent_type": "general-purpose",
        "effort": {"level": "medium"},
        "stop_hook_active": False,
        "agent_transcript_path": str(path),
        "background_tasks": [{"id": "a28f599b16c96d9d6", "type": "subagent", "status": "running"}],
        "session_crons": [],
    }
    if answer is not None:
        fields["last_assistant_message"] = answer
    return hook_input("claude", "SubagentStop", root, **fields)


DELEGATION = "## Task\n\nTask 1 of plan `01-01`, type `auto`.\n\nPrint a Task Report."
FULL = REPORT.replace("\\n", "\n")
NO_DOWNSTREAM = FULL.split("### Downstream Context")[0]


@pytest.mark.parametrize("from_transcript", [False, True], ids=["message", "transcript"])
def test_after_agent_advises_on_a_missing_report_or_downstream_context(
    phase,
    gsd,
    program: Path,
    tmp_path: Path,
    from_transcript: bool,  # noqa: F811
) -> None:
    root = phase.root
    install(gsd, program, "after-agent", "claude")
    command = command_for(root, "claude", "SubagentStop")
    cases = {
        "All done, the tests pass.": "has no Task Report and no Downstream Context",
        NO_DOWNSTREAM: "has no Downstream Context (1 later task of 01-01 and 1 plan "
        "depending on it (01-02) need it)",
        FULL: None,
    }
    for answer, said in cases.items():
        path = transcript(tmp_path, DELEGATION, answer)
        done = fire(command, subagent_stop(root, path, None if from_transcript else answer), root)
        assert done.returncode == 0 and done.stderr == "", done.stderr  # advisory: never 2
        if said is None:
            assert done.stdout == ""
            continue
        message = json.loads(done.stdout)["systemMessage"]
        assert message.startswith("gsd: the answer of task 1 of plan 01-01 " + said), message
    other = transcript(tmp_path, "Find where the config is read.", "In src/config.py.")
    done = fire(command, subagent_stop(root, other, "In src/config.py."), root)
    assert (done.returncode, done.stdout) == (0, "")  # not a gsd delegation: no contract


def test_gemini_after_agent_reads_the_prompt_it_is_sent(phase, gsd, program: Path) -> None:  # noqa: F811
    root = phase.root
    install(gsd, program, "after-agent", "gemini")
    prompt = "Task 1 of plan `01-02`, type `auto`. End with a Task Report."
    payload = hook_input(
        "gemini",
        "AfterAgent",
        root,
        prompt=prompt,
        prompt_response=NO_DOWNSTREAM,
        stop_hook_active=False,
    )
    done = run_hook(root, "gemini", "AfterAgent", payload)
    assert (done.returncode, done.stdout) == (0, "")  # the last plan: no one downstream
    payload["prompt_response"] = "done"
    done = run_hook(root, "gemini", "AfterAgent", payload)
    assert json.loads(done.stdout) == {"systemMessage": json.loads(done.stdout)["systemMessage"]}
    assert "has no Task Report" in done.stdout and "decision" not in done.stdout


# -- before context compaction -----------------------------------------------------------


def test_pre_compact_writes_a_snapshot_under_git_and_says_how_to_read_it(
    phase, gsd, program: Path
) -> None:  # noqa: F811
    root = phase.root
    assert gsd("execute-phase", "1").code == 0
    install(gsd, program, "pre-compact")
    phase.write(".planning/phases/01-alpha/01-03-PLAN.md", "draft\n")  # not committed
    payload = hook_input("claude", "PreCompact", root, trigger="auto", custom_instructions="")
    done = run_hook(root, "claude", "PreCompact", payload)
    assert done.returncode == 0, done.stderr
    snapshot = root / ".git" / "gsd" / "snapshots" / "8f1c2d3e-0a1b.md"
    # Claude Code appends this plain text to the compaction's instructions
    assert done.stdout.startswith("gsd saved this project's plan state before the compaction in")
    assert ".git/gsd/snapshots/8f1c2d3e-0a1b.md" in done.stdout
    assert "`snapshot` tool (mcp__gsd__snapshot)" in done.stdout
    assert "`status` tool (mcp__gsd__status)" in done.stdout
    text = snapshot.read_text()
    assert "trigger: auto" in text and "phase 01-alpha: 2/3 plans done; next: 01-03" in text
    assert "plan 01-01: done; 2 attempts" in text
    assert "?? .planning/phases/01-alpha/01-03-PLAN.md" in text
    payload = hook_input("gemini", "PreCompress", root, trigger="manual", session_id="../../x")
    done = run_hook(root, "gemini", "PreCompress", payload)
    message = json.loads(done.stdout)["systemMessage"]  # gemini: shown to the user
    assert "snapshots/.._.._x.md" not in message and "snapshots/_.._x.md" in message
    assert (root / ".git" / "gsd" / "snapshots" / "_.._x.md").is_file()
    # gemini fires PreCompress "auto" before every turn, compressing or not: kept quiet
    payload = hook_input("gemini", "PreCompress", root, trigger="auto", session_id="g-2")
    done = run_hook(root, "gemini", "PreCompress", payload)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    fresh = root / ".git" / "gsd" / "snapshots" / "g-2.md"
    assert "trigger: auto" in fresh.read_text()
    fresh.write_text("kept\n")  # renewed at most once a minute on these calls
    assert run_hook(root, "gemini", "PreCompress", payload).stdout == ""
    assert fresh.read_text() == "kept\n"


def test_pre_compact_never_writes_through_a_link(
    git_project, gsd, program: Path, tmp_path: Path
) -> None:  # noqa: F811
    root = git_project.root
    git_project.plan("01-01")
    install(gsd, program, "pre-compact", "claude")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".git" / "gsd").mkdir(exist_ok=True)
    os.symlink(elsewhere, root / ".git" / "gsd" / "snapshots")
    payload = hook_input("claude", "PreCompact", root, trigger="manual", custom_instructions="")
    done = run_hook(root, "claude", "PreCompact", payload)
    assert done.returncode == 1 and done.stdout == ""  # not 2: compaction goes on
    assert "symbolic link" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert list(elsewhere.iterdir()) == []


def test_hooks_outside_a_project_say_nothing(tmp_path: Path, program: Path) -> None:  # noqa: F811
    empty = tmp_path / "empty"
    empty.mkdir()
    for name, payload in (
        ("claude-session-end", hook_input("claude", "SessionEnd", empty, reason="other")),
        ("claude-pre-compact", hook_input("claude", "PreCompact", empty, trigger="auto")),
        (
            "gemini-after-agent",
            hook_input("gemini", "AfterAgent", empty, prompt="Task Report", prompt_response="x"),
        ),
    ):
        done = fire(f"{program} hooks run {name}", payload, empty)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), name


def test_the_pre_tool_hook_on_every_shell_call_loads_little(tmp_path: Path) -> None:
    """It answers each Bash call: no Click, pydantic, GitPython, pathlib or subprocess
    (tests/test_imports.py's probe, as the post-edit hook's path is kept light)."""
    payload = json.dumps(pre_tool("claude", tmp_path, f"cat > {PLAN} <<'EOF'\nx\nEOF"))
    code = (
        f"import io\nsys.stdin = io.StringIO({payload!r})\n"
        "from gsd.cli.entry import main\nassert main(['hooks', 'run', 'claude-pre-tool']) == 0"
    )
    heavy = (*HEAVY, "click", "yaml", "pathlib", "subprocess", "gsd.io.plans.project")
    assert loaded_after(code, str(tmp_path), heavy) == []


def test_a_transcript_that_is_a_fifo_is_never_waited_on(all_hooks, tmp_path: Path) -> None:
    fifo = tmp_path / "agent.jsonl"
    os.mkfifo(fifo)
    payload = subagent_stop(all_hooks.root, fifo, None)
    done = run_hook(all_hooks.root, "claude", "SubagentStop", payload)  # `fire` times out
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
