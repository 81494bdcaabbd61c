"""The real claude, codex and gemini CLIs doing real work under `gsd execute-phase`.

Each cell (CLI x tier x worktree or in place x root or an unprivileged user) runs the
CLI's own tool loop against the scripted model server (tests/modelserver) and is judged
by what is in git and on disk afterwards, and by the tool results the CLI sent back to
the model, never by what gsd printed about itself. The cells run side by side (the
first cell's test starts every selected cell); they skip, saying why, when `make clis`
cannot install the CLIs or, for the unprivileged user, when gsd is not run as root.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e import cells
from tests.e2e.cells import CLIS, POLICY, TIERS, Cell, Outcome
from tests.test_clis import cli_bin  # noqa: F401  (the fixture)

WORK = [
    Cell(cli, tier, in_place, as_user)
    for cli in CLIS
    for tier in TIERS
    for in_place in (False, True)
    for as_user in (False, True)
]
# `gsd mcp`'s tools from the widest and the narrowest tier, in a plan's worktree
MCP = [
    Cell(cli, tier, False, as_user, kind="mcp")
    for cli in CLIS
    for tier in ("full", "read-only")
    for as_user in (False, True)
]
WORKERS = 3
_started: dict[Cell, Future[Outcome]] = {}
_lock = threading.Lock()


def _unprivileged_user() -> str | None:
    """Why the unprivileged cells cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return (
            "gsd runs as an ordinary user already; the unprivileged cells need root to create one"
        )
    try:
        pwd.getpwnam(cells.USER)
    except KeyError:
        made = subprocess.run(
            ["useradd", "--create-home", "--shell", "/bin/sh", cells.USER],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            return f"useradd {cells.USER} failed: {made.stderr.strip()}"
    return None


@pytest.fixture(scope="session")
def user_ready(cli_bin: Path) -> str | None:  # noqa: F811
    """Create the unprivileged user; let it reach gsd's checkout, the venv's python and
    the CLI cache (under root's HOME, mode 0700 in a container: o+x on each folder above
    them lets it pass through, not list; nothing else changes)."""
    reason = _unprivileged_user()
    if reason is None:
        for folder in (REPO / "gsd", Path(os.path.realpath(sys.executable)), cli_bin):
            for parent in folder.parents:
                mode = parent.stat().st_mode
                if parent.owner() == "root" and not mode & 0o001:
                    parent.chmod(mode | 0o001)
    return reason


@pytest.fixture
def outcome(request: pytest.FixtureRequest, cli_bin: Path, user_ready: str | None) -> Outcome:  # noqa: F811
    cell: Cell = request.param
    if cell.as_user and user_ready:
        pytest.skip(user_ready)
    with _lock:
        if not _started:  # start every selected cell now, WORKERS at a time
            pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="matrix")
            selected = [
                item.callspec.params["outcome"]
                for item in request.session.items
                if item.module is request.module and hasattr(item, "callspec")
            ]
            for each in selected:
                if not (each.as_user and user_ready):
                    _started[each] = pool.submit(cells.run, each, cli_bin)
            pool.shutdown(wait=False)
    done = _started[cell].result()
    request.addfinalizer(lambda: shutil.rmtree(done.repo.parent, ignore_errors=True))
    return done


# one level of delegation: the specialist's own sub-agent tool is refused
DELEGATE = [Cell(cli, "full", False, False, kind="delegate") for cli in CLIS]


@pytest.mark.parametrize("outcome", DELEGATE, ids=[c.name for c in DELEGATE], indirect=True)
def test_a_specialist_cannot_start_a_sub_agent(outcome: Outcome) -> None:
    """The model's call of the sub-agent tool came back refused; no sub-agent ran (no
    request but the specialist's own conversation reached the model), no file."""
    results = call_results(outcome)
    assert results and not any(ran(text) for text in results), results
    assert not (outcome.repo / "src" / "sub.txt").exists()
    assert {entry.turn for entry in outcome.log if entry.turn is not None} <= {0, 1}


@pytest.mark.parametrize("outcome", MCP, ids=[c.name for c in MCP], indirect=True)
def test_the_model_calls_gsd_mcp(outcome: Outcome) -> None:
    """The model's call of `gsd mcp`'s `status` tool ran: its JSON came back."""
    results = call_results(outcome)
    # claude hands the model the tool's JSON, gemini its text ("Phase 01-matrix: ...")
    shown = ('"phases"', "Phase 01-matrix")
    assert any(any(s in text for s in shown) and "01-01" in text for text in results), results


@pytest.mark.parametrize("outcome", WORK, ids=[c.name for c in WORK], indirect=True)
def test_cell(outcome: Outcome) -> None:
    cell = outcome.cell
    said = f"exit {outcome.code}\n{outcome.out[-3000:]}\n{outcome.err[-3000:]}"
    files = set(outcome.git("ls-tree", "-r", "--name-only", "HEAD", "--", "src").split())
    files.discard("src/README.md")
    expected = {
        "full": {"src/hello.txt", "src/shell_out.txt"},
        "read+write": {"src/hello.txt"} | CLI_SHELL_WRITES.get(cell.cli, set()),
    }.get(cell.tier, set())
    assert files == expected, said
    if cell.writes:
        assert outcome.git("show", "HEAD:src/hello.txt") == "hello, world\n", said
    commits = outcome.git("log", "--format=%H %s%n%b", "--grep=Gsd-Task: 01-01-1").strip()
    tasks = [line for line in commits.splitlines() if line.startswith("Gsd-Task:")]
    if cell.writes:
        assert outcome.code == 0, said
        assert tasks == ["Gsd-Task: 01-01-1"], said
    else:
        assert tasks == [], said
    assert outcome.pushed() == ["refs/heads/main"], said
    assert (outcome.repo.parent / "home").is_dir(), "rm -rf .. ran"
    results = tool_results(outcome)
    for command in POLICY if cell.shell else ():
        assert command in results, (command, results)
        assert not ran(results[command]), (command, results)
    # the other spellings of a push: refused by the CLI's rules, or (what codex's prefix
    # rules cannot express) run and refused the connection by Landlock's port rule; either
    # way `origin`, a git daemon, is as it was (`pushed` above)
    for command in cells.NETWORK if cell.shell and cells.TCP_RULES else ():
        assert command in results, (command, results)
        if (cell.cli, command) in PORT_RULE_HOLDS:
            assert "unable to connect" in results[command], (command, results)
        else:
            assert not ran(results[command]), (command, results)
    used = [e for e in outcome.events() if e.get("input_tokens") is not None]
    assert used, said
    assert (used[-1]["input_tokens"], used[-1]["output_tokens"]) == outcome.sent, (
        used,
        outcome.sent,
    )


# Limits of the CLIs themselves (docs/RUNNERS.md, "Under gsd, doing real work", codex):
# codex 0.169.0's read+write tier writes through its shell too (`codex exec` has no
# shell-free mode, and apply_patch is offered only to models whose metadata asks for it,
# never to the test's model, so its writes and edits are shell commands).
CLI_SHELL_WRITES = {"codex": {"src/shell_out.txt"}}
# codex 0.169.0's exec-policy prefix rules have no word matching any word (`git -C <dir>`)
PORT_RULE_HOLDS = {("codex", "git -C . push origin HEAD")}


def tool_results(outcome: Outcome) -> dict[str, str]:
    """The shell command of each call -> the result the CLI sent back to the model."""
    from tests.modelserver import anthropic, gemini, responses

    module = {"claude": anthropic, "codex": responses, "gemini": gemini}[outcome.cell.cli]
    return module.command_results([entry.body for entry in outcome.log])


def call_results(outcome: Outcome) -> list[str]:
    """Every tool result the CLI sent back to the model."""
    from tests.modelserver import anthropic, gemini, responses

    module = {"claude": anthropic, "codex": responses, "gemini": gemini}[outcome.cell.cli]
    return list(module.tool_results([entry.body for entry in outcome.log]).values())


def ran(result: str) -> bool:
    """Did the command run? A refusal never reaches the shell."""
    lowered = result.lower()
    return not any(word in lowered for word in REFUSALS)


# What the CLIs send back for a call they refused (claude "Permission to use Bash with
# command ... has been denied", "No such tool available: Task. Task is disabled ...";
# codex "exec_command failed: ... rejected: gsd policy: ...", and for a tool it has
# turned off, "unsupported call: multi_agent_v1spawn_agent"; gemini 0.61.0 offers no
# tool its policy denies whole: 'Tool "invoke_agent" not found')
REFUSALS = (
    "denied",
    "not allowed",
    "refused",
    "blocked",
    "permission",
    "no such tool",
    "disabled",
    "not available",
    "unknown tool",
    "rejected: gsd policy",  # codex; not git's "[remote rejected]" of a push that ran
    "unsupported call",
    "not found",
)
