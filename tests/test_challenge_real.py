"""`gsd challenge` (issue 24) with a real CLI under the scripted model server: the
read-only challenger reads a plan with its own reading tool (claude's Read, codex's
shell `cat`), then answers a Challenge Report; gsd writes it beside the plans and
commits nothing. Judged on disk, in git and by what the model was sent back, never by
what gsd printed. The CLIs come from `make clis`; without them this test skips."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gsd.formats.challengereport import parse_challenge
from tests.e2e.cells import CONFIGURE, user_environment
from tests.modelserver.routes import Script, route
from tests.modelserver.scenario import Scenario, read
from tests.modelserver.server import ModelServer
from tests.test_clis import cli_bin  # noqa: F401  (the fixture)
from tests.test_multiagent_real import PLAN, Ran, build, task

pytestmark = pytest.mark.slow

MARKER = "PLAN-MARKER-5f3a"  # in the plan's objective: in the prompt, then in what was read
PLAN_PATH = ".planning/phases/01-mixed/01-01-PLAN.md"
CHALLENGE_FILE = ".planning/phases/01-mixed/01-CHALLENGE.md"
ANSWER = """\
I read the plan.

### Challenge Report
- Assumptions:
  - 01-01: src/hello.txt is assumed to be new; nothing says it is not there already
- Missing dependencies: none
- Too large: none
- Alternatives:
  - write both files in one task
"""


@pytest.mark.parametrize("runner", ["claude", "codex"])
def test_a_real_cli_reads_the_plan_and_answers_the_report(
    cli_bin: Path,  # noqa: F811
    tmp_path: Path,
    runner: str,
) -> None:
    plan = PLAN.format(
        plan="01",
        wave=1,
        depends="[]",
        files="src/hello.txt",
        objective=f"Greet. {MARKER}",
        tasks=task("writer", "Task 1: greet", "src/hello.txt", "ROUTE-writer: write it"),
    )
    script = Script(
        route(
            "challenger", r"### Challenge Report", Scenario((read(PLAN_PATH),), ANSWER), cli=runner
        )
    )
    agents = {"writer": ("claude", "read+write", 2), "challenger": (runner, "read-only", 2)}
    (tmp_path / "run").mkdir()
    ran = _challenge(cli_bin, tmp_path / "run", {"01-01": plan}, agents, script)
    assert ran.code == 0, ran.said()
    assert ran.server.misses == [], ran.said()
    # on disk: the report, as the model answered it; in git: nothing else
    report = parse_challenge((ran.repo / CHALLENGE_FILE).read_text())
    assert not isinstance(report, str), report
    assert report.assumptions[0].startswith("01-01: src/hello.txt is assumed to be new")
    assert report.alternatives == ("write both files in one task",)
    assert ran.git("status", "--porcelain", "--untracked-files=all") == f"?? {CHALLENGE_FILE}\n"
    assert ran.git("log", "--all", "--format=%s") == "plan\n"  # no commit, no branch left
    assert ran.git("for-each-ref", "--format=%(refname)") == "refs/heads/main\n"
    # the CLI ran the read: what it sent back after holds the plan once more than the prompt
    (call,) = ran.calls("challenger")
    asked, after = json.dumps(call[0].body), json.dumps(call[-1].body)
    assert len(call) >= 2 and after.count(MARKER) > asked.count(MARKER), ran.said()


def _challenge(
    bin_dir: Path,
    base: Path,
    plans: dict[str, str],
    agents: dict[str, tuple[str, str, float]],
    script: Script,
) -> Ran:
    """`gsd challenge 1 --agent challenger` in a new repository under `base`, every CLI
    pointed at one server playing `script`."""
    home, repo = base / "home", base / "repo"
    home.mkdir()
    build(repo, plans, agents, retries=0)
    with ModelServer(script) as server:
        env = user_environment(bin_dir, home)
        for configure in CONFIGURE.values():
            env.update(configure(home, server.url))
        done = subprocess.run(
            [sys.executable, "-m", "gsd", "challenge", "1", "--agent", "challenger"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
    return Ran(done.returncode, done.stdout, done.stderr, repo, server)
