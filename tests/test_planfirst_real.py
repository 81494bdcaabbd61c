"""A plan-first gate (issue 24) with the real claude CLI, its model scripted
(tests/modelserver/routes.py): the specialist proposes read-only, the run pauses (exit
4), `gsd approve` approves the proposal's content, and the next run has claude write
the file with its own Write tool, the approved proposal in its prompt. Judged in git
and in what the model was asked. The CLIs come from `make clis`; without them this
test skips and says why.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gsd.formats import execlog
from gsd.formats.proposal import parse_proposal
from tests.e2e.cells import CONFIGURE, user_environment
from tests.modelserver.routes import Script, route
from tests.modelserver.scenario import Scenario, answer, task_report, write
from tests.modelserver.server import ModelServer
from tests.test_clis import cli_bin  # noqa: F401  (the fixture)
from tests.test_multiagent_real import PLAN, Ran, build

pytestmark = pytest.mark.slow

PROPOSAL = ".planning/phases/01-mixed/01-01-T1-PROPOSAL.md"
TASK = """\
<task type="auto" specialist="guard" plan-first="true">
  <name>Task 1: write the guard</name>
  <files>src/guard.txt</files>
  <action>ROUTE-guard: write src/guard.txt saying guarded</action>
  <verify><automated>test -f src/guard.txt</automated></verify>
  <done>src/guard.txt says guarded.</done>
</task>"""
ANSWER = (
    "I read the repository.\n\n### Proposal\n- Files:\n  - `src/guard.txt`: the guard, new\n"
    "- Plan: create src/guard.txt with one line, guarded.\n- Risks: none\n"
)


def script() -> Script:
    """The proposal's route first: only its prompt asks for a Proposal."""
    return Script(
        route("propose", r"## Your Proposal \(read-only\)", answer(ANSWER), cli="claude"),
        route(
            "work",
            r"## Approved Proposal",
            Scenario(
                (write("src/guard.txt", "guarded\n"),), task_report(created=("src/guard.txt",))
            ),
            cli="claude",
        ),
    )


def gsd(env: dict[str, str], repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gsd", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def test_claude_proposes_a_person_approves_claude_writes(
    cli_bin: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    plan = PLAN.format(
        plan="01", wave=1, depends="[]", files="src/guard.txt", objective="Guard.", tasks=TASK
    )
    home, repo = tmp_path / "run" / "home", tmp_path / "run" / "repo"
    home.mkdir(parents=True)
    build(repo, {"01-01": plan}, {"guard": ("claude", "read+write", 2)}, 0)
    with ModelServer(script()) as server:
        env = user_environment(cli_bin, home)
        for configure in CONFIGURE.values():
            env.update(configure(home, server.url))
        first = gsd(env, repo, "execute-phase", "1")
        ran = Ran(first.returncode, first.stdout, first.stderr, repo, server)
        assert first.returncode == 4, ran.said()
        text = ran.git("show", f"gsd/01-01:{PROPOSAL}")
        said = parse_proposal(text)
        assert not isinstance(said, str) and said.paths == ("src/guard.txt",), text
        assert ran.git("log", "--all", "--format=%H", "--grep=^Gsd-Task: 01-01-1$") == ""
        approved = gsd(env, repo, "approve", "01-01", "--task", "1")
        assert approved.returncode == 0, approved.stderr
        assert PROPOSAL in approved.stdout
        second = gsd(env, repo, "execute-phase", "1")
        ran = Ran(second.returncode, second.stdout, second.stderr, repo, server)
        assert second.returncode == 0, ran.said()
    assert server.misses == [], ran.said()
    commits = ran.git("log", "main", "--format=%H", "--grep=^Gsd-Task: 01-01-1$").split()
    assert len(commits) == 1, ran.said()
    assert ran.git("show", f"{commits[0]}:src/guard.txt") == "guarded\n"
    files = ran.git("show", "--name-only", "--format=", commits[0]).split()
    assert [f for f in files if not f.startswith(".planning/")] == ["src/guard.txt"]
    assert ran.git("show", f"main:{PROPOSAL}") == text  # merged with the plan
    (asked,) = server.prompts("propose")
    assert "Propose, do not change files" in asked
    (work,) = server.prompts("work")
    assert "## Approved Proposal" in work and "`src/guard.txt`: the guard, new" in work
    found, _ = execlog.read_all(repo / ".planning")
    made = [e for e in found if e["event"] == "proposal" and not e.get("approved")]
    assert len(made) == 1, found  # proposed once: the second run went to the work
