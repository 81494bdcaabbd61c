"""The real Claude Code runs gsd's lifecycle hooks, its model scripted (tests/modelserver).

The pinned claude (tests/clis/pins.txt, `make clis`) talks to the scripted model server.
The model asks Bash to write a plan file with a heredoc, then to write a note: the
pre-tool hook `gsd hooks install --claude --hook pre-tool` put in .claude/settings.json
denies the first before it runs, so the plan on disk is as committed, and lets the second
through. The session's end runs the session-end hook. A session resumed with `/compact`
runs the pre-compact hook: the snapshot is on disk under .git/gsd/snapshots/, and the
compaction request claude sends the model carries gsd's note. A sub-agent given gsd's
delegation prompt that answers without a Task Report draws the after-agent hook's advice,
and the session goes on. Judged on disk, in git and in what claude sent the model.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, Project, git
from tests.modelserver import anthropic, gemini
from tests.modelserver.routes import Script, route
from tests.modelserver.scenario import Scenario, delegate, shell
from tests.modelserver.server import ModelServer
from tests.test_clis import cli_bin, cli_env, run_cli  # noqa: F401 (cli_bin is a fixture)

PLAN = ".planning/phases/01-alpha/01-01-PLAN.md"
HEREDOC = f"cat > {PLAN} <<'EOF'\n---\nphase: 01-alpha\nnot: a plan gsd checked\nEOF"
NOTE = "echo checked > notes.txt"


@pytest.fixture
def calls(tmp_path: Path) -> Path:
    return tmp_path / "calls.log"


@pytest.fixture
def hooked(git_project: Project, gsd, tmp_path: Path, calls: Path) -> Project:
    """A committed plan, and claude's hooks (pre-tool, session-end among them) run by a
    gsd that logs each call."""
    return logged_install(git_project, gsd, tmp_path, calls, "claude")


def logged_install(git_project: Project, gsd, tmp_path: Path, calls: Path, cli: str) -> Project:
    """Commit a plan; install every gsd hook for `cli`, run by a gsd that logs each call."""
    program = tmp_path / "bin" / "gsd"
    program.parent.mkdir()
    program.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {shlex.quote(str(calls))}\n'
        f'PYTHONPATH={shlex.quote(str(REPO))} exec {shlex.quote(sys.executable)} -m gsd "$@"\n'
    )
    program.chmod(0o755)
    git_project.plan("01-01")
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-q", "-m", "a plan")
    assert gsd("hooks", "install", f"--{cli}", "--gsd", str(program), "--hook", "all").code == 0
    return git_project


def test_claude_runs_the_pre_tool_hook_and_the_heredoc_never_writes_the_plan(
    cli_bin: Path,  # noqa: F811
    hooked: Project,
    calls: Path,
    tmp_path: Path,
) -> None:
    plan = hooked.root / PLAN
    committed = plan.read_bytes()
    scenario = Scenario(steps=(shell(HEREDOC), shell(NOTE)), final="Done.")
    home = tmp_path / "claude-home"
    home.mkdir()
    argv = ["claude", "-p", "--output-format", "json", "--permission-mode", "acceptEdits"]
    argv += ["--allowedTools", "Bash", "--debug", "hooks"]
    with ModelServer(scenario) as server:
        ran = run_cli(
            cli_bin, argv, hooked.root, home, timeout=180, **anthropic.configure(home, server.url)
        )
        bodies = [entry.body for entry in server.log]
    assert ran.code == 0, ran.stderr[-2000:] + ran.stdout[-2000:]
    assert plan.read_bytes() == committed  # denied before it ran
    assert git(hooked.root, "status", "--porcelain", "--", ".planning") == ""
    assert (hooked.root / "notes.txt").read_text() == "checked\n"  # the other one ran
    results = anthropic.command_results(bodies)
    assert "write plan files with the Write or Edit tool" in results[HEREDOC], results
    assert "01-01-PLAN.md" in results[HEREDOC]
    assert "gsd:" not in results.get(NOTE, "")
    logged = calls.read_text().splitlines()
    assert logged.count("hooks run claude-pre-tool") == 2, logged
    assert "hooks run claude-session-end" in logged  # the session's end ran it too
    answer = json.loads(ran.stdout)
    assert answer["result"] == "Done."
    summary = hooked.root / ".git" / "gsd" / "sessions" / f"{answer['session_id']}.md"
    assert "phase 01-alpha: 0/1 plans done; next: 01-01" in summary.read_text()


def test_claude_runs_the_pre_compact_hook_and_its_note_reaches_the_compaction(
    cli_bin: Path,  # noqa: F811
    hooked: Project,
    calls: Path,
    tmp_path: Path,
) -> None:
    home = tmp_path / "claude-home"
    home.mkdir()
    with ModelServer(Scenario(steps=(), final="Done.")) as server:
        env = cli_env(cli_bin, home, **anthropic.configure(home, server.url))

        def claude(*args: str) -> dict[str, object]:
            argv = [str(cli_bin / "claude"), "-p", *args, "--output-format", "json"]
            done = subprocess.run(
                argv, cwd=hooked.root, env=env, capture_output=True, text=True, timeout=180
            )
            assert done.returncode == 0, done.stderr[-2000:]
            return dict(json.loads(done.stdout))

        session = str(claude("hello")["session_id"])
        assert claude("/compact", "--resume", session).get("local_command") == "compact"
        bodies = [json.dumps(entry.body) for entry in server.log if entry.body]
    assert "hooks run claude-pre-compact" in calls.read_text().splitlines()
    snapshot = hooked.root / ".git" / "gsd" / "snapshots" / f"{session}.md"
    text = snapshot.read_text()
    assert "# gsd state before a context compaction" in text and "trigger: manual" in text
    assert "phase 01-alpha: 0/1 plans done; next: 01-01" in text
    # stdout of a PreCompact hook is appended to the compaction's instructions
    compaction = [b for b in bodies if "gsd saved this project" in b]
    assert compaction, "no request to the model carried gsd's note"
    assert f".git/gsd/snapshots/{session}.md" in compaction[0]
    assert "mcp__gsd__snapshot" in compaction[0] and "mcp__gsd__status" in compaction[0]


def test_claude_runs_the_after_agent_hook_on_a_sub_agent_without_a_task_report(
    cli_bin: Path,  # noqa: F811
    hooked: Project,
    calls: Path,
    tmp_path: Path,
) -> None:
    prompt = "## Task\n\nTask 1 of plan `01-01`, type `auto`.\n\nPrint a Task Report at the end."
    sub = Scenario(steps=(), final="All done, the tests pass.")
    script = Script(
        route("sub-agent", r"Task 1 of plan", sub, cli="claude"),
        default=Scenario(steps=(delegate(prompt),), final="Done."),
    )
    home = tmp_path / "claude-home"
    home.mkdir()
    argv = ["claude", "-p", "--output-format", "json", "--permission-mode", "acceptEdits"]
    argv += ["--allowedTools", "Agent", "--debug", "hooks"]
    with ModelServer(script) as server:
        ran = run_cli(
            cli_bin, argv, hooked.root, home, timeout=180, **anthropic.configure(home, server.url)
        )
        assert server.misses == []
        routes = {entry.route for entry in server.log if entry.turn is not None}
    assert ran.code == 0, ran.stderr[-2000:]
    assert routes == {"", "sub-agent"}  # the sub-agent had its own conversation
    assert json.loads(ran.stdout)["result"] == "Done."  # advice blocks nothing
    assert "hooks run claude-after-agent" in calls.read_text().splitlines()
    debug = "".join(p.read_text() for p in (home / ".claude" / "debug").glob("*.txt"))
    advice = "gsd: the answer of task 1 of plan 01-01 has no Task Report"
    assert "Hook SubagentStop (SubagentStop) success" in debug and advice in debug


def test_gemini_runs_the_pre_tool_hook_and_the_heredoc_never_writes_the_plan(
    cli_bin: Path,  # noqa: F811
    git_project: Project,
    gsd,
    calls: Path,
    tmp_path: Path,
) -> None:
    """The same with Gemini CLI 0.61.0 (`--yolo`, the workspace trusted so it reads the
    project's hooks); its PreCompress fires "auto" each turn and gsd stays quiet then."""
    hooked = logged_install(git_project, gsd, tmp_path, calls, "gemini")
    plan = hooked.root / PLAN
    committed = plan.read_bytes()
    home = tmp_path / "gemini-home"
    home.mkdir()
    scenario = Scenario(steps=(shell(HEREDOC), shell(NOTE)), final="Done.")
    argv = ["gemini", "-p", "go", "--output-format", "json", "--yolo"]
    with ModelServer(scenario) as server:
        extra = {"GEMINI_CLI_TRUST_WORKSPACE": "true", **gemini.configure(home, server.url)}
        ran = run_cli(cli_bin, argv, hooked.root, home, timeout=180, **extra)
        bodies = [json.dumps(entry.body) for entry in server.log if entry.body]
    assert ran.code == 0, ran.stderr[-2000:]
    assert plan.read_bytes() == committed
    assert git(hooked.root, "status", "--porcelain", "--", ".planning") == ""
    assert (hooked.root / "notes.txt").read_text() == "checked\n"
    denied = [b for b in bodies if "write plan files with the write_file or replace tool" in b]
    assert denied, "the model never got gsd's reason"
    logged = calls.read_text().splitlines()
    assert logged.count("hooks run gemini-pre-tool") == 2, logged
    assert "hooks run gemini-pre-compact" in logged and "hooks run gemini-session-end" in logged
    assert "gsd saved this project" not in ran.stderr  # "auto" each turn: no word
    assert "Hook system message: gsd: what ran" in ran.stderr  # the session end's summary
    assert list((hooked.root / ".git" / "gsd" / "snapshots").glob("*.md"))
