"""The real codex 0.169.0 doing real work under `gsd execute-phase`, against the scripted
model server (tests/modelserver/responses.py): its own shell tool writes and edits,
gsd's policy commands are refused before they run (read from the tool results codex
sent back), each tier changes only what it may, and a runaway is stopped.

The CLI comes from `make clis` (tests/test_clis.py's cli_bin fixture); without it these
tests skip and say why.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from gsd.formats import errorlog
from gsd.io.confine.sandbox import landlock_abi
from tests.conftest import git
from tests.modelserver import responses
from tests.modelserver.scenario import Scenario, Step, mcp, shell, task_report, write
from tests.modelserver.server import ModelServer
from tests.test_clis import cli_bin, cli_env  # noqa: F401  (cli_bin is a fixture)
from tests.test_runners import TOOLS

AGENT = """\
---
name: coder
description: "runs the real codex"
tools: [{tools}]
timeout_mins: 1
runner: codex
{extra}---
Test persona.
"""
TASK = (
    '<task type="auto" specialist="coder">\n<name>Task 1</name>\n'
    "<files>{files}</files>\n<action>Do it.</action>\n"
    "<verify><automated>true</automated></verify>\n<done>Done.</done>\n</task>"
)
POLICY = ("git push origin HEAD", "git reset --hard", "rm -rf ..")


def run_codex(
    project: Any,
    gsd: Any,
    monkeypatch: pytest.MonkeyPatch,
    bin_dir: Path,
    tier: str,
    scenario: Scenario,
    *,
    files: str = "src/hello.txt",
    config: dict[str, Any] | None = None,
    extra: str = "",
    codex_config: str = "",
) -> tuple[Any, ModelServer]:
    """`gsd execute-phase 1` with one plan whose one task runs codex on `tier`."""
    root = project.root
    tools = ", ".join(TOOLS[tier])
    project.write("agents/coder.md", AGENT.format(tools=tools, extra=extra))
    project.write(".planning/available_agents.md", "- **coder**: test\n")
    settings = {
        "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
        "voltagent": {"fallback_on_error": False},
        **(config or {}),
    }
    project.write(".planning/config.json", json.dumps(settings))
    project.plan("01-01", tasks=TASK.format(files=files), files_modified=f"[{files}]")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plan")
    server = ModelServer(scenario)
    with server:
        env = responses.configure(Path.home(), server.url)
        with open(Path(env["CODEX_HOME"]) / "config.toml", "a", encoding="utf-8") as handle:
            handle.write(codex_config)
        for name, value in {**cli_env(bin_dir, Path.home()), **env}.items():
            if name not in ("HOME", "TMPDIR"):
                monkeypatch.setenv(name, value)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        result = gsd("execute-phase", "1")
    return result, server


def results(server: ModelServer) -> dict[str, str]:
    return responses.tool_results([entry.body for entry in server.log])


def changed(root: Path) -> list[str]:
    """Files the task's commit (its `Gsd-Task` trailer) changed, as merged into main."""
    out = git(root, "log", "-1", "--grep=^Gsd-Task:", "--name-only", "--format=")
    return sorted(line for line in out.splitlines() if line)


def records(root: Path) -> list[dict[str, Any]]:
    return [r.model_dump() for r in errorlog.read_all(root / ".planning")[0]]


needs_landlock = pytest.mark.skipif(landlock_abi() == 0, reason="no Landlock on this kernel")


@needs_landlock
def test_full_tier_writes_edits_runs_and_is_refused_the_policy(
    cli_bin: Path,  # noqa: F811
    git_project,
    gsd,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    steps = (
        write("src/hello.txt", "hello\n"),
        Step("edit", path="src/hello.txt", old="hello", content="bye"),
        shell("echo hi > src/shell_out.txt"),
        *(shell(command) for command in POLICY),
    )
    made = ("src/hello.txt", "src/shell_out.txt")
    scenario = Scenario(steps, task_report(created=made))
    result, server = run_codex(
        git_project,
        gsd,
        monkeypatch,
        cli_bin,
        "full",
        scenario,
        files="src/hello.txt, src/shell_out.txt",
    )
    assert result.code == 0, (result.out, result.err, records(git_project.root))
    root = git_project.root
    assert (root / "src/hello.txt").read_text() == "bye\n"
    assert changed(root) == sorted(made)
    said = results(server)
    for number in range(3, 3 + len(POLICY)):
        assert "rejected: gsd policy" in said[f"call_{number:04d}"], said
    assert server.turns() == len(steps) + 1


@needs_landlock
@pytest.mark.parametrize("tier", ["read+write", "read+shell", "read-only"])
def test_each_tier_runs_its_commands_under_gsds_landlock(
    cli_bin: Path,  # noqa: F811
    git_project,
    gsd,
    monkeypatch: pytest.MonkeyPatch,
    tier: str,
) -> None:
    """codex's bubblewrap cannot start inside gsd's Landlock: gsd passes
    danger-full-access and its own confinement holds the tier. Commands run (no `bwrap`
    error); read+write writes the worktree; no tier writes .git or outside."""
    outside = Path.home() / "outside.txt"
    steps = (
        write("src/hello.txt", "hello\n"),
        shell("echo ran"),
        shell('touch "$(git rev-parse --git-common-dir)/hacked"'),
        shell(f"touch {outside}"),
        shell("git push origin HEAD"),
    )
    writes = tier == "read+write"
    created = ("src/hello.txt",) if writes else ()
    scenario = Scenario(steps, task_report(created=created))
    result, server = run_codex(git_project, gsd, monkeypatch, cli_bin, tier, scenario)
    root = git_project.root
    said = results(server)
    assert not any("bwrap" in text for text in said.values()), said
    assert "Process exited with code 0" in said["call_0001"] and "ran" in said["call_0001"]
    assert "Permission denied" in said["call_0002"] and not (root / ".git/hacked").exists()
    assert "Permission denied" in said["call_0003"] and not outside.exists()
    assert "rejected: gsd policy" in said["call_0004"], said
    if writes:
        assert result.code == 0, (result.out, result.err, records(root))
        assert changed(root) == ["src/hello.txt"]
    else:
        assert "Permission denied" in said["call_0000"], said
        assert not (root / "src").exists()
        assert git(root, "status", "--porcelain") == ""


def test_argv_pins_no_sandbox_of_codexs_own_only_when_gsd_confines() -> None:
    from gsd.formats.runners.codex import build_argv
    from tests.test_clis import contract_agent

    for tier in TOOLS:
        agent = contract_agent(tier, "codex", None)
        inside = build_argv(agent, None, confined=True)
        assert inside[inside.index("--sandbox") + 1] == "danger-full-access"
        alone = build_argv(agent, None, confined=False)
        assert (
            alone[alone.index("--sandbox") + 1]
            == {
                "read-only": "read-only",
                "read+shell": "read-only",
                "read+write": "workspace-write",
                "full": "danger-full-access",
            }[tier]
        )


@needs_landlock
def test_a_runaway_is_stopped_near_the_abort_threshold_by_an_estimate(
    cli_bin: Path,  # noqa: F811
    git_project,
    gsd,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """codex reports usage only when its turn ends (one `codex exec` is one turn): a
    task that loops through shell steps with large output is stopped mid-turn by the
    estimate from its `item.*` events, with the default codex budget (400,000), long
    before its timeout and its scripted end, and the record says it is an estimate."""
    big = "head -c 40000 /dev/zero | tr '\\0' x"
    scenario = Scenario(tuple(shell(big) for _ in range(40)), task_report(), usage=(100, 5))
    result, server = run_codex(
        git_project, gsd, monkeypatch, cli_bin, "read+shell", scenario, files="src/none.txt"
    )
    assert result.code != 0
    mine = [r for r in records(git_project.root) if r["specialist"] == "coder"]
    assert mine and mine[-1]["error_type"] == "budget-exceeded", mine
    assert "estimated" in mine[-1]["details"], mine[-1]
    # stopped after a few requests, not the 41 the scenario would run to
    assert 2 < server.turns() < 15, server.turns()
    # what the server reported is far below: the estimate, not the count, stopped it
    assert sum(server.tokens()) < 400_000


@needs_landlock
def test_the_model_calls_gsd_mcps_tools(
    cli_bin: Path,  # noqa: F811
    git_project,
    gsd,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With `gsd mcp` registered as docs/inside/mcp.md says (`[mcp_servers.gsd]`), the
    model is offered its tools (the `mcp__gsd` namespace) and its call is answered:
    gsd makes the server `required`, or codex 0.169.0 may start the turn before it."""
    program = Path(sys.executable).with_name("gsd")
    config = f'\n[mcp_servers.gsd]\ncommand = "{program}"\nargs = ["mcp"]\n'
    scenario = Scenario((mcp("status"),), task_report())
    result, server = run_codex(
        git_project,
        gsd,
        monkeypatch,
        cli_bin,
        "read-only",
        scenario,
        files="src/none.txt",
        codex_config=config,
    )
    offered = [t.get("name") for t in server.log[0].body["tools"]]
    assert "mcp__gsd" in offered, offered
    said = results(server)["call_0000"]
    assert '"phases"' in said and "unsupported call" not in said, said


# --- gsd doctor runs one codex command as a spawn would ------------------------------


def sandbox_lines(gsd: Any) -> list[dict[str, Any]]:
    from tests.test_doctor import run_doctor

    _, report = run_doctor(gsd)
    return [f for f in report["findings"] if f["topic"] == "sandbox"]


@needs_landlock
def test_doctor_runs_a_codex_command_inside_gsds_sandbox(
    cli_bin: Path,  # noqa: F811
    tmp_path: Path,
    gsd,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", f"{cli_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    assert sandbox_lines(gsd) == [
        {
            "status": "ok",
            "topic": "sandbox",
            "message": "codex runs its commands inside gsd's Landlock sandbox (codex --sandbox "
            "danger-full-access)",
        }
    ]
    # what fails, in one line: here codex's own complaint about its home
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "not-a-folder"))
    [line] = sandbox_lines(gsd)
    assert line["status"] == "warning", line
    assert line["message"].startswith("codex runs no command inside gsd's Landlock sandbox")
    assert "CODEX_HOME points to" in line["message"] and "\n" not in line["message"]


def test_doctor_says_when_codexs_own_sandbox_cannot_run(
    git_project, gsd, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With gsd's sandbox off, codex's own (bubblewrap) holds the tier: a codex whose
    sandbox fails (a stand-in printing what codex 0.169.0 prints under Landlock) is
    named, with its reason, on one line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "codex"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "codex-cli 0.169.0"; exit 0; fi\n'
        'echo "$*" > "$HOME/codex-args"\n'
        "echo 'bwrap: setting up uid map: Permission denied' >&2; exit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    git_project.write(".planning/config.json", json.dumps({"sandbox": {"enabled": False}}))
    [line] = sandbox_lines(gsd)
    assert line == {
        "status": "warning",
        "topic": "sandbox",
        "message": "codex runs no command in codex's own read-only sandbox (bubblewrap): "
        "bwrap: setting up uid map: Permission denied",
    }
    assert (
        Path.home() / "codex-args"
    ).read_text() == 'sandbox -c sandbox_mode="read-only" -- true\n'
