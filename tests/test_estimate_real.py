"""Cost known before a run (issue 25) with the real claude CLI: a phase run under the
scripted model server (tests/modelserver/), then the dry run's estimate read from that
run's log, each figure the one claude reported. The CLIs come from `make clis`; without
them this test skips and says why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gsd.formats import execlog
from tests.modelserver.routes import Script, route
from tests.modelserver.scenario import Scenario, task_report, write
from tests.test_clis import cli_bin  # noqa: F401  (the fixture)
from tests.test_multiagent_real import PLAN, execute

pytestmark = pytest.mark.slow

TASK = """\
<task type="auto" specialist="writer">
  <name>Task 1: write</name>
  <files>src/t.txt</files>
  <action>ROUTE-writer: write src/t.txt</action>
  <verify><automated>test -f src/t.txt</automated></verify>
  <done>src/t.txt exists.</done>
</task>"""


def test_a_dry_run_estimates_from_a_real_claude_run(cli_bin: Path, tmp_path: Path) -> None:  # noqa: F811
    plan = PLAN.format(
        plan="01", wave=1, depends="[]", files="src/t.txt", objective="Write a file.", tasks=TASK
    )
    made = task_report(created=("src/t.txt",))
    script = Script(
        route(
            "writer", r"ROUTE-writer", Scenario((write("src/t.txt", "hi\n"),), made), cli="claude"
        )
    )
    (tmp_path / "run").mkdir()
    ran = execute(
        cli_bin, tmp_path / "run", {"01-01": plan}, {"writer": ("claude", "read+write", 2)}, script
    )
    assert ran.code == 0, ran.said()
    events, _ = execlog.read_all(ran.repo / ".planning")
    [result] = [e for e in events if e["event"] == "result"]
    assert (result["agent"], result["runner"], result["success"]) == ("writer", "claude", True)
    assert result["tokens"] > 0 and result["cost_usd"] is not None, result
    done = subprocess.run(
        [sys.executable, "-m", "gsd", "execute-phase", "1", "--dry-run", "--format", "json"],
        cwd=ran.repo,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    [estimate] = [t["estimate"] for t in body["tasks"]]
    assert estimate["runs"] == 1
    assert estimate["tokens"]["median"] == result["tokens"]
    assert estimate["cost_usd"]["median"] == result["cost_usd"]
    assert estimate["seconds"]["median"] == result["duration_s"]
    assert (body["estimate"]["tokens"], body["estimate"]["no_history"]) == (result["tokens"], 0)
