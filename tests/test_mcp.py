"""`gsd mcp`: the real server in a subprocess, spoken to with the MCP SDK's own stdio client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, git

pytest.importorskip("mcp.server.mcpserver", reason="the MCP SDK 2.x is not installed (make venv)")

import anyio  # noqa: E402 - the SDK brings anyio; only once it is known to be there
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import CallToolResult  # noqa: E402

TOOLS = {
    "validate",
    "show",
    "waves",
    "status",
    "context_chain",
    "errors",
    "report",
    "snapshot",
    "dry_run",
}
ERROR_RECORD = {
    "timestamp": "2026-02-23T14:32:15Z",
    "phase": "01",
    "plan": "01",
    "task": "1",
    "specialist": "python-pro",
    "error_type": "timeout",
    "details": "SIGTERM after 300s",
    "git_state": "checkpoint/01-01/20260223T143215-1",
    "exit_code": 124,
    "attempt": 1,
    "runner": "claude",
    "duration_s": 300.2,
}


def gsd_argv(*args: str) -> list[str]:
    """This venv's `gsd` console script (as an agent CLI starts it), else `python -m gsd`."""
    script = Path(sys.executable).with_name("gsd")
    return [str(script), *args] if script.is_file() else [sys.executable, "-m", "gsd", *args]


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """examples/demo as a git repository of its own, with a failed attempt in its log."""
    root = tmp_path / "demo"
    shutil.copytree(REPO / "examples" / "demo", root)
    records = [ERROR_RECORD, {**ERROR_RECORD, "plan": "02", "error_type": "validation-failed"}]
    log = root / ".planning" / "specialist-errors.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "demo")
    monkeypatch.chdir(root)
    return root


def call_tools(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    """Start `gsd mcp` in `root`, list its tools, make `calls` in order in one session."""

    async def session() -> tuple[set[str], list[CallToolResult]]:
        argv = gsd_argv("mcp")
        params = StdioServerParameters(
            command=argv[0], args=argv[1:], cwd=root, env=dict(os.environ)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            listed = await client.list_tools()
            results = [await client.call_tool(name, args) for name, args in calls]
            return {tool.name for tool in listed.tools}, results

    return anyio.run(session)


def cli_json(root: Path, *args: str) -> Any:
    done = subprocess.run(
        gsd_argv(*args, "--format", "json"), cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_every_tool_answers_what_the_cli_prints_as_json(demo: Path) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("validate", {}),
        ("validate", {"phase": "1"}),
        ("validate", {"path": ".planning/phases/01-greeting-service/01-02-PLAN.md"}),
        ("show", {"target": "01-02"}),
        ("show", {"target": "1"}),
        ("waves", {"phase": "1"}),
        ("status", {}),
        ("errors", {}),
        ("errors", {"type": "timeout"}),
        ("report", {}),
        ("dry_run", {"phase": "1"}),
        ("dry_run", {"phase": "1", "wave": 2}),
    ]
    expected = [
        cli_json(demo, "validate"),
        cli_json(demo, "validate", "--phase", "1"),
        cli_json(demo, "validate", ".planning/phases/01-greeting-service/01-02-PLAN.md"),
        cli_json(demo, "show", "01-02"),
        cli_json(demo, "show", "1"),
        cli_json(demo, "waves", "1"),
        cli_json(demo, "status"),
        cli_json(demo, "errors"),
        cli_json(demo, "errors", "--type", "timeout"),
        cli_json(demo, "report"),
        cli_json(demo, "execute-phase", "1", "--dry-run"),
        cli_json(demo, "execute-phase", "1", "--dry-run", "--wave", "2"),
    ]
    tools, results = call_tools(demo, calls)
    assert tools == TOOLS
    for (name, args), result, cli in zip(calls, results, expected, strict=True):
        assert not result.is_error, (name, args, result.content)
        assert result.structured_content == cli, (name, args)
        assert result.content[0].text.strip(), (name, args)  # and a text for the model
    assert len(expected[8]["errors"]) == 1 and len(expected[7]["errors"]) == 2
    assert [t["plan"] for t in expected[11]["tasks"]] == ["01-03", "01-03"]


def test_snapshot_gives_back_what_the_pre_compact_hook_saved(demo: Path) -> None:
    """The pre-compact hook's snapshot (`gsd hooks run claude-pre-compact`, fed the JSON
    Claude Code sends) read back through the `snapshot` tool: the session's, else the
    newest; a link planted among them is never the one read; none is one error line."""
    folder = demo / ".git" / "gsd" / "snapshots"
    none = call_tools(demo, [("snapshot", {})])[1][0]
    assert none.is_error and "gsd: error: no snapshot saved yet (" in none.content[0].text
    for session in ("s-old", "s-new"):
        payload = {
            "session_id": session,
            "transcript_path": str(demo / "t.jsonl"),
            "cwd": str(demo),
            "hook_event_name": "PreCompact",
            "trigger": "manual",
            "custom_instructions": "",
        }
        argv = gsd_argv("hooks", "run", "claude-pre-compact")
        done = subprocess.run(
            argv, cwd=demo, input=json.dumps(payload).encode(), capture_output=True
        )
        assert done.returncode == 0, done.stderr
    os.utime(folder / "s-old.md", (1, 1))
    (demo / "secret.txt").write_text("not a snapshot\n")
    (folder / "z-link.md").symlink_to(demo / "secret.txt")  # the newest entry: a link
    _, (newest, old, missing, linked) = call_tools(
        demo,
        [
            ("snapshot", {}),
            ("snapshot", {"session": "s-old"}),
            ("snapshot", {"session": "s-none"}),
            ("snapshot", {"session": "z-link"}),
        ],
    )
    assert newest.structured_content == {
        "path": ".git/gsd/snapshots/s-new.md",
        "session": "s-new",
        "snapshot": (folder / "s-new.md").read_text(),
    }
    assert "# gsd state before a context compaction" in newest.content[0].text
    assert old.structured_content["snapshot"] == (folder / "s-old.md").read_text()
    assert missing.is_error and "no snapshot saved for session 's-none'" in missing.content[0].text
    assert linked.is_error and "not a snapshot" not in linked.content[0].text


def test_nothing_the_server_does_changes_the_repository(demo: Path) -> None:
    before = git(demo, "status", "--porcelain", "--ignored", "--untracked-files=all")
    refs = git(demo, "for-each-ref")
    call_tools(demo, [(name, {"phase": "1"}) for name in ("validate", "waves", "dry_run")])
    assert git(demo, "status", "--porcelain", "--ignored", "--untracked-files=all") == before
    assert git(demo, "for-each-ref") == refs


def test_context_chain_is_what_the_prompt_would_carry(demo: Path) -> None:
    """01-03 depends on 01-01 (done: its SUMMARY.md) and 01-02 (not yet); its task 1 was
    committed by an earlier run, whose Downstream Context is not kept."""
    summary = "# 01-01 summary\n\nSUMMARY-MARKER: greet() takes a language\n"
    (demo / ".planning/phases/01-greeting-service/01-01-SUMMARY.md").write_text(summary)
    git(demo, "add", "-A")
    git(demo, "commit", "-q", "-m", "docs(01-01): plan summary")  # gsd's, not a task's
    git(demo, "commit", "-q", "--allow-empty", "-m", "task 1", "-m", "Gsd-Task: 01-03-1")
    _, (result, first) = call_tools(
        demo,
        [
            ("context_chain", {"plan": "01-03", "task": 2}),
            ("context_chain", {"plan": "01-01", "task": 1}),
        ],
    )
    assert not result.is_error, result.content
    data = result.structured_content
    assert data["earlier_tasks"][0]["task"] == 1
    assert data["earlier_tasks"][0]["state"] == "committed"
    assert data["dependencies"] == [
        {"plan": "01-01", "summary": summary},
        {"plan": "01-02", "summary": None},
    ]
    chain = data["context_chain"]
    assert chain.startswith("## Context Chain\n")
    assert "### Downstream Context of task 1" in chain
    assert "committed by an earlier run, whose report was not kept" in chain
    assert "SUMMARY-MARKER: greet() takes a language" in chain
    assert "### SUMMARY of plan 01-02" in chain and "that plan has no SUMMARY.md yet" in chain
    assert chain in result.content[0].text
    assert (
        "first task of the plan and the plan has no dependencies"
        in first.structured_content["context_chain"]
    )


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        pytest.param("waves", {"phase": "9"}, "no phase '9'", id="unknown-phase"),
        pytest.param("dry_run", {"phase": "7"}, "no phase '7'", id="dry-run-unknown-phase"),
        pytest.param("validate", {"path": "nope/x.md"}, "nope/x.md: no such file", id="bad-path"),
        pytest.param("show", {"target": "01-09"}, "01-09", id="unknown-plan"),
        pytest.param("context_chain", {"plan": "01-01", "task": 9}, "has no task 9", id="no-task"),
        pytest.param("errors", {"since": "yesterday"}, "yesterday", id="bad-since"),
        pytest.param("waves", {}, "phase", id="missing-argument"),
    ],
)
def test_bad_input_is_an_error_result_and_the_server_goes_on(
    demo: Path, name: str, args: dict[str, Any], message: str
) -> None:
    _, (bad, after) = call_tools(demo, [(name, args), ("status", {})])
    assert bad.is_error
    assert message in bad.content[0].text
    assert "Traceback" not in bad.content[0].text
    assert not after.is_error and after.structured_content == cli_json(demo, "status")


def test_outside_a_project_the_tools_say_so(tmp_path: Path) -> None:
    _, (result,) = call_tools(tmp_path, [("status", {})])
    assert result.is_error and "gsd: error:" in result.content[0].text


def test_without_the_sdk_gsd_mcp_says_how_to_install_it(tmp_path: Path) -> None:
    """An `mcp` without `mcp.server.mcpserver` first on the path (as mcp 1.x is, or none)."""
    (tmp_path / "shadow" / "mcp").mkdir(parents=True)
    (tmp_path / "shadow" / "mcp" / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "shadow")}
    done = subprocess.run(
        [sys.executable, "-m", "gsd", "mcp"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert "pip install 'gsd-plans[mcp]'" in done.stderr and done.stdout == ""


def test_claude_is_granted_every_tool_the_server_lists_and_no_other(demo: Path) -> None:
    """claude pre-approves gsd's MCP tools by name (outside bypassPermissions print mode
    refuses an MCP tool it was not granted): the names are the server's own."""
    from gsd.formats.runners.claude import GSD_MCP_TOOLS

    listed, _ = call_tools(demo, [])
    assert set(GSD_MCP_TOOLS) == listed


# --- the first answers, sent before the SDK is imported (gsd.cli.mcp_start) ------------------

SDK_SERVER = [sys.executable, "-c", "from gsd.cli.mcp_server import serve; serve()"]


def test_recorded_answers_are_the_installed_sdks() -> None:
    """mcp_answers.json is what this SDK answers; if not, record it again (see record)."""
    from gsd.cli import mcp_start

    recorded = json.loads(mcp_start.ANSWERS.read_text(encoding="utf-8"))
    assert recorded == mcp_start.record(), (
        "python -c 'from gsd.cli import mcp_start; mcp_start.write()'"
    )
    assert mcp_start.recorded() == recorded["answers"]


def _lines(*messages: Any) -> bytes:
    return b"".join(
        (m if isinstance(m, bytes) else json.dumps(m).encode()) + b"\n" for m in messages
    )


def _initialize(version: str = "2025-11-25", ident: Any = 0, **extra: Any) -> dict[str, Any]:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": ident, "method": "initialize", "params": {**params, **extra}}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
STATUS_CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "status", "arguments": {}},
}


def converse(argv: list[str], root: Path, script: bytes, answers: int) -> tuple[list[bytes], bytes]:
    """Send `script`, read `answers` lines, then close stdin (at its end the SDK stops
    answering what is still pending): the lines, and stderr."""
    with subprocess.Popen(
        argv, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as server:
        assert server.stdin and server.stdout and server.stderr
        timer = threading.Timer(60, server.kill)
        timer.start()
        try:
            server.stdin.write(script)
            server.stdin.flush()
            lines = [server.stdout.readline() for _ in range(answers)]
            server.stdin.close()
            rest = server.stdout.read()
            err = server.stderr.read()
        finally:
            timer.cancel()
    assert server.returncode == 0, err
    return sorted([*lines, *rest.splitlines(keepends=True)]), err


@pytest.mark.parametrize(
    ("script", "answers"),
    [
        pytest.param(
            _lines(_initialize(), INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            2,
            id="initialize-list",
        ),
        pytest.param(
            _lines(
                _initialize("2024-11-05", "a-1"),
                INITIALIZED,
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
                STATUS_CALL,
            ),
            3,
            id="list-then-call",
        ),
        pytest.param(_lines(_initialize(), INITIALIZED, STATUS_CALL), 2, id="call-first"),
        pytest.param(
            _lines(_initialize("1999-01-01"), INITIALIZED, STATUS_CALL), 2, id="old-version"
        ),
        pytest.param(_lines(_initialize(extra=1), STATUS_CALL), 2, id="unknown-param"),
        pytest.param(_lines(b"not json", _initialize()), 1, id="garbage-first"),
        pytest.param(_lines(_initialize(), b"", INITIALIZED), 1, id="blank-line"),
        # read at the end of input only: 0 answers before it, 1 after
        pytest.param(_lines(_initialize())[:-1], 0, id="no-newline"),
        pytest.param(
            _lines(_initialize(), {"jsonrpc": "2.0", "id": 3, "method": "ping"}), 2, id="ping"
        ),
        pytest.param(_lines({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), 1, id="no-init"),
    ],
)
def test_gsd_mcp_answers_as_the_sdk_alone_does(demo: Path, script: bytes, answers: int) -> None:
    """Whatever gsd answers itself and whatever it hands to the SDK, the client reads what
    the SDK's server alone writes for the same input (order aside: the SDK answers
    requests concurrently), and nothing on stderr says the two disagreed."""
    ours, err = converse(gsd_argv("mcp"), demo, script, answers)
    sdk, _ = converse(SDK_SERVER, demo, script, answers)
    assert ours == sdk
    assert len(ours) == max(answers, 1) and b"gsd mcp:" not in err


def test_in_a_linked_worktree_the_snapshot_follows_no_link(demo: Path, tmp_path: Path) -> None:
    """A linked worktree's git directory is under the main repository's, where no
    checkout of its own trusts it: a link planted at its `gsd` folder is refused, and
    nothing is written where it points."""
    tree = tmp_path / "linked"
    git(demo, "worktree", "add", "-q", str(tree))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (demo / ".git" / "worktrees" / "linked" / "gsd").symlink_to(elsewhere)
    payload = {
        "session_id": "s-1",
        "transcript_path": str(tree / "t.jsonl"),
        "cwd": str(tree),
        "hook_event_name": "PreCompact",
        "trigger": "manual",
        "custom_instructions": "",
    }
    argv = gsd_argv("hooks", "run", "claude-pre-compact")
    done = subprocess.run(argv, cwd=tree, input=json.dumps(payload).encode(), capture_output=True)
    assert done.returncode == 1 and b"symbolic link" in done.stderr, done.stderr
    assert list(elsewhere.iterdir()) == []


def test_what_a_hook_tells_the_user_shows_control_characters_as_text() -> None:
    from gsd.formats.runners.agenthooks import tell_user

    said = json.loads(tell_user("plan \x1b[31m01-02\x1b[0m done\n").stdout)["systemMessage"]
    assert "\x1b" not in said and "^[[31m01-02" in said
