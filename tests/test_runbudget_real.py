"""A whole run's budget (issue 25) with the real claude CLI under the scripted model
server: task 1 uses part of `--budget-tokens`, task 2's first model turn reports more
than is left while its model would go on: claude is stopped on its streamed usage, the
attempt rolled back, nothing of it on any branch. The CLIs come from `make clis`;
without them this test skips and says why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gsd.formats import execlog
from tests.e2e.cells import CONFIGURE, user_environment
from tests.modelserver.routes import Script, route
from tests.modelserver.scenario import Scenario, task_report, write
from tests.modelserver.server import ModelServer
from tests.test_clis import cli_bin  # noqa: F401  (the fixture)
from tests.test_multiagent_real import PLAN, build

pytestmark = pytest.mark.slow

TASK = """\
<task type="auto" specialist="writer">
  <name>Task {n}: write</name>
  <files>src/{name}.txt</files>
  <action>ROUTE-writer: write src/{name}.txt</action>
  <verify><automated>test -f src/{name}.txt</automated></verify>
  <done>src/{name}.txt exists.</done>
</task>"""


def test_claude_is_stopped_when_it_crosses_what_is_left(cli_bin: Path, tmp_path: Path) -> None:  # noqa: F811
    tasks = "\n".join(TASK.format(n=n, name=name) for n, name in ((1, "one"), (2, "two")))
    plan = PLAN.format(
        plan="01",
        wave=1,
        depends="[]",
        files="src/one.txt, src/two.txt",
        objective="Write two files.",
        tasks=tasks,
    )
    script = Script(
        route(
            "writer",
            r"ROUTE-writer",
            Scenario((write("src/one.txt", "1\n"),), task_report(created=("src/one.txt",))),
            Scenario(
                (write("src/two.txt", "2\n"), write("src/three.txt", "3\n")),
                task_report(created=("src/two.txt",)),
                usage=(40_000, 50),
                ending="hang",
            ),
            cli="claude",
        )
    )
    base = tmp_path / "run"  # beside the test's own home (conftest's isolated_home)
    home, repo = base / "home", base / "repo"
    home.mkdir(parents=True)
    build(repo, {"01-01": plan}, {"writer": ("claude", "read+write", 2)}, retries=0)
    with ModelServer(script) as server:
        env = user_environment(cli_bin, home)
        for configure in CONFIGURE.values():
            env.update(configure(home, server.url))
        done = subprocess.run(
            [sys.executable, "-m", "gsd", "execute-phase", "1", "--budget-tokens", "20000"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    said = f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 1, said
    events, _ = execlog.read_all(repo / ".planning")
    first, second = [e for e in events if e["event"] == "result"]
    assert first["success"] and first["tokens"] < 20_000, said
    left = 20_000 - first["tokens"]
    assert (second["error_type"], second["budget"], second["budget_abort"]) == (
        "budget-exceeded",
        "aborted",
        left,
    ), said
    assert second["tokens"] > left and second["duration_s"] < 60, said  # not its 2 min timeout

    def git(*args: str) -> str:
        argv = ["git", "-c", "safe.directory=*", "-C", str(repo), *args]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    trailers = git("log", "--branches", "--format=%(trailers:key=Gsd-Task,valueonly)").split()
    assert trailers == ["01-01-1"], said
    for path in ("src/two.txt", "src/three.txt"):
        assert git("log", "--branches", "--format=%H", "--", path).strip() == "", path
