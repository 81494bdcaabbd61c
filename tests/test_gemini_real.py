"""The real gemini-cli 0.61.0 doing real work under `gsd execute-phase`.

The pinned CLI (`make clis`) is pointed at the scripted model server
(tests/modelserver/gemini.py): its own write_file, replace and run_shell_command tools
change the plan's worktree, its own policy engine refuses gsd's safety policy (read from
the functionResponse it sent back), gsd's hooks fire, and a runaway is stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from gsd.formats import errorlog
from tests.conftest import Project, git
from tests.e2e import cells
from tests.modelserver import gemini
from tests.modelserver.scenario import Scenario, Step, edit, mcp, shell, task_report, write
from tests.modelserver.server import Logged, ModelServer
from tests.test_clis import cli_bin, cli_env  # noqa: F401 (cli_bin is a fixture)
from tests.test_matrix import user_ready  # noqa: F401 (a fixture)
from tests.test_runners import TOOLS

AGENT = """\
---
name: gem
description: "runs the real gemini CLI"
tools: [{tools}]
timeout_mins: {minutes}
runner: gemini{extra}
---
Gemini test persona.
"""
TASK = (
    '<task type="auto" specialist="gem">\n<name>Task 1</name>\n<files>src/hello.txt</files>\n'
    "<action>Write it.</action>\n<verify><automated>true</automated></verify>\n"
    "<done>Done.</done>\n</task>"
)


class Outcome(NamedTuple):
    code: int
    err: str
    log: list[Logged]
    root: Path

    def results(self) -> dict[str, str]:
        """functionResponse text by call id (`call_0000` is the scenario's first call)."""
        return gemini.tool_results([e.body for e in self.log])

    def records(self) -> list[dict[str, object]]:
        return [r.model_dump() for r in errorlog.read_all(self.root / ".planning")[0]]


def make_project(
    root: Path, tier: str, config: dict[str, object], minutes: float, extra: str = ""
) -> Project:
    project = Project(root)
    (root / ".planning" / "phases").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    project.write("README.md", "demo\n")
    tools = ", ".join(TOOLS[tier])
    project.write("agents/gem.md", AGENT.format(tools=tools, minutes=minutes, extra=extra))
    project.write(".planning/available_agents.md", "- **gem**: test\n")
    settings = {
        "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
        "voltagent": {"fallback_on_error": False},
        **config,
    }
    project.write(".planning/config.json", json.dumps(settings))
    project.plan("01-01", tasks=TASK)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plan")
    return project


def execute(
    gsd,
    bin_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    root: Path,
    tier: str,  # noqa: F811
    steps: tuple[Step, ...],
    *,
    config: dict[str, object] | None = None,
    minutes: float = 1,
    usage: tuple[int, int] = (1000, 50),
    created: tuple[str, ...] = (),
) -> Outcome:
    """`gsd execute-phase 1` in a new project at `root` whose one task runs gemini at
    `tier` against a model server that plays `steps`."""
    make_project(root, tier, config or {}, minutes)
    monkeypatch.chdir(root)
    home = Path(os.environ["HOME"])
    final = task_report(created=created)
    with ModelServer(Scenario(steps, final, usage)) as server:
        for name, value in {**cli_env(bin_dir, home), **gemini.configure(home, server.url)}.items():
            if name not in ("HOME", "TMPDIR"):
                monkeypatch.setenv(name, value)
        result = gsd("execute-phase", "1")
    return Outcome(result.code, result.err, list(server.log), root)


def committed(root: Path) -> list[list[str]]:
    """Each commit on main with a Gsd-Task trailer: the trailer, then the files."""
    log = git(root, "log", "main", "--name-only", "--format=%x00%(trailers:key=Gsd-Task,valueonly)")
    entries = [entry.split() for entry in log.split("\0") if entry.strip()]
    return [e for e in entries if e[0].startswith("01-")]


REFUSED = (shell("rm -rf .."), shell("git reset --hard"), shell("git push origin HEAD"))


def refused(outcome: Outcome, first: int) -> list[str]:
    """The safety commands gemini refused before running them (from the functionResponse
    it sent back), from call number `first` on."""
    results = outcome.results()
    said = [results.get(f"call_{n:04d}", "") for n in range(first, first + len(REFUSED))]
    return [s for s in said if "gsd's safety policy" in s or "denied by policy" in s.lower()]


@pytest.mark.parametrize("tier", ["full", "read+write"])
def test_gemini_writes_edits_and_commits(gsd, cli_bin, monkeypatch, tmp_path, tier) -> None:  # noqa: F811
    steps = (write("src/hello.txt", "hello\n"), edit("src/hello.txt", "hello", "bye"))
    shell_steps = (shell("echo hi > src/shell_out.txt"), *REFUSED) if tier == "full" else ()
    made = ("src/hello.txt", "src/shell_out.txt") if tier == "full" else ("src/hello.txt",)
    done = execute(
        gsd, cli_bin, monkeypatch, tmp_path / "repo", tier, (*steps, *shell_steps), created=made
    )
    assert done.code == 0, (done.err, done.records())
    assert (done.root / "src" / "hello.txt").read_text() == "bye\n"
    assert committed(done.root)[0] == ["01-01-1", *sorted(made)]
    if tier == "full":
        assert len(refused(done, 3)) == 3, done.results()
        assert (done.root.parent / "repo").is_dir()  # no rm -rf ..


def test_gemini_read_shell_runs_commands(gsd, cli_bin, monkeypatch, tmp_path) -> None:  # noqa: F811
    done = execute(
        gsd,
        cli_bin,
        monkeypatch,
        tmp_path / "repo",
        "read+shell",
        (shell("echo ran-it"), write("src/hello.txt", "x\n"), *REFUSED),
    )
    results = done.results()
    assert "ran-it" in results["call_0000"], results
    assert "denied by policy" in results["call_0001"].lower() or "error" in results["call_0001"]
    assert len(refused(done, 2)) == 3, results
    assert not (done.root / "src" / "hello.txt").exists()


def test_gemini_read_only_changes_nothing(gsd, cli_bin, monkeypatch, tmp_path) -> None:  # noqa: F811
    done = execute(
        gsd,
        cli_bin,
        monkeypatch,
        tmp_path / "repo",
        "read-only",
        (write("src/hello.txt", "x\n"), shell("touch made.txt")),
    )
    results = done.results()
    assert all("error" in results[f"call_{n:04d}"] for n in range(2)), results
    assert git(done.root, "status", "--porcelain") == ""
    assert committed(done.root) == []  # no task commit


def test_gemini_calls_gsds_mcp_tool(gsd, cli_bin, monkeypatch, tmp_path) -> None:  # noqa: F811
    """gsd's MCP server in the user's settings (read whatever the folder's trust): the
    model calls its `status` tool by the name gemini gives it (`mcp_gsd_status`),
    under gsd's sandbox. (In plan mode, gsd's read-only tier, gemini offers no MCP
    tool at all.)"""
    settings = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
    server = {
        "command": sys.executable,
        "args": ["-m", "gsd", "mcp"],
        "cwd": str(tmp_path / "repo"),
    }
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"mcpServers": {"gsd": server}}))
    done = execute(gsd, cli_bin, monkeypatch, tmp_path / "repo", "full", (mcp("status"),))
    offered = {
        f["name"]
        for e in done.log
        if isinstance(e.body, dict) and e.turn is not None
        for t in e.body.get("tools") or []
        for f in t.get("functionDeclarations") or []
    }
    assert "mcp_gsd_status" in offered, sorted(offered)
    assert "01-01" in done.results()["call_0000"], done.results()


@pytest.fixture
def in_tmp() -> Iterator[Path]:
    """A folder under /tmp (sticky, writable by all: gemini-cli 0.61.0 would not read a
    system settings file below it) that the matrix's user may enter."""
    base = Path(tempfile.mkdtemp(prefix="gsd-gemini-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def execute_as(
    cli_bin: Path,  # noqa: F811
    base: Path,
    as_user: bool,
    steps: tuple[Step, ...],
    created: tuple[str, ...] = (),
) -> Outcome:
    """`gsd execute-phase 1` as a separate process, as root or as the matrix's
    unprivileged user (tests/e2e/cells.py), for the project at `base`/repo, whose HOME
    is `base`/home, against a model server that plays `steps`."""
    home = base / "home"
    home.mkdir()
    with ModelServer(Scenario(steps, task_report(created=created), (1000, 50))) as server:
        env = {**cells.user_environment(cli_bin, home), **gemini.configure(home, server.url)}
        done = cells.execute_phase(base, base / "repo", env, as_user, timeout=180)
    return Outcome(done.returncode, done.stdout + done.stderr, list(server.log), base / "repo")


def as_whom(as_user: bool, user_ready: str | None) -> None:  # noqa: F811
    if as_user and user_ready:
        pytest.skip(user_ready)


@pytest.mark.parametrize("as_user", [False, True], ids=["root", "user"])
def test_gsds_gemini_hooks_fire_in_a_gsd_run(
    gsd,
    cli_bin,  # noqa: F811
    user_ready,  # noqa: F811
    monkeypatch,
    in_tmp,
    as_user,
) -> None:
    """`gsd hooks install --gemini` in a project under /tmp: gemini ignores the project's
    settings in the untrusted worktree, so gsd hands the hooks over in the user
    settings of the spawn's private GEMINI_CLI_HOME, as root and as another user. The
    session-start hook's status reaches the model; the post-edit hook hands the plan
    the agent broke back to it (its tool result replaced)."""
    as_whom(as_user, user_ready)
    root = in_tmp / "repo"
    make_project(root, "read+write", {}, 2)
    monkeypatch.chdir(root)
    assert gsd("hooks", "install", "--gemini", "--gsd", "gsd").code == 0
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "hooks")
    plan = ".planning/phases/01-alpha/01-02-PLAN.md"
    done = execute_as(cli_bin, in_tmp, as_user, (write(plan, "# not a plan\n"),), (plan,))
    asked = [json.dumps(e.body) for e in done.log if e.turn == 0]
    assert asked and "gsd status (plans in .planning/" in asked[0], (asked[:1], done.err)
    result = done.results()["call_0000"]
    assert f"gsd validate: {plan} was saved" in result, result
    home = in_tmp / "home" / ".gemini"
    assert not (home / "gsd-runs").exists()  # the private home is gone
    assert json.loads((home / "settings.json").read_text()) == {
        "security": {"auth": {"selectedType": "gemini-api-key"}}
    }  # the user's own settings as they were
    assert (home / "projects.json").is_file()  # what gemini wrote there is the user's


@pytest.mark.parametrize("as_user", [False, True], ids=["root", "user"])
def test_an_agents_turn_limit_reaches_gemini(cli_bin, user_ready, in_tmp, as_user) -> None:  # noqa: F811
    """An agent's `max_turns` becomes gemini's `model.maxSessionTurns` in the private
    home: of a scenario that would go on for 12 turns, the server sees 3."""
    as_whom(as_user, user_ready)
    make_project(in_tmp / "repo", "full", {}, 2, extra="\nmax_turns: 3")
    git(in_tmp / "repo", "commit", "-q", "--allow-empty", "-m", "ready")
    done = execute_as(cli_bin, in_tmp, as_user, tuple(shell(f"echo {n}") for n in range(12)))
    turns = sorted({e.turn for e in done.log if e.turn is not None})
    assert turns == [0, 1, 2], (turns, done.err)
    assert done.code != 0


def test_a_runaway_gemini_is_stopped(gsd, cli_bin, monkeypatch, tmp_path) -> None:  # noqa: F811
    """gemini-cli 0.61.0 streams no usage before its final `result`: gsd estimates from
    the stream (each model turn re-sends about GEMINI_TURN_TOKENS) and stops a scenario
    that would loop for 60 turns long before its end; the record says it was an
    estimate."""
    steps = tuple(shell(f"echo turn {n}") for n in range(60))
    budget = {"budgets": {"gemini": {"warn": 20_000, "abort": 40_000}}}
    done = execute(gsd, cli_bin, monkeypatch, tmp_path / "repo", "full", steps, config=budget)
    turns = {e.turn for e in done.log if e.turn is not None}
    assert done.code != 0
    assert 3 <= len(turns) < 10, sorted(turns)  # 40,000 / 12,000 a turn: the 4th turn
    [record] = [r for r in done.records() if r["error_type"] == "budget-exceeded"]
    assert "stopped at an estimated" in str(record["details"]), record
