from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from gsd.core import layout
from gsd.io.lock import process_alive
from tests.conftest import git, slack
from tests.e2e.cells import user_environment
from tests.modelserver import responses
from tests.modelserver.scenario import Scenario, mcp
from tests.modelserver.server import ModelServer
from tests.test_clis import cli_bin  # noqa: F401
from tests.test_mcp_run_real import build


def test_codex_hub(cli_bin: Path, tmp_path: Path) -> None:  # noqa: F811
    repo = build(tmp_path)
    (tmp_path / "markers" / "sleep-01-01-1").write_text("2")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    steps = (
        mcp("execute_phase", phase="1"),
        mcp("run_status"),
        mcp("progress", phase="1"),
    )
    scenario = Scenario(steps=steps, final="Phase 1 is under way.", usage=(900, 40))
    with ModelServer(scenario) as server:
        env = {**user_environment(cli_bin, home), **responses.configure(home, server.url)}
        gsd = [sys.executable, "-m", "gsd", "mcp", "--allow-run"]
        subprocess.run(
            ["codex", "mcp", "add", "gsd", "--", *gsd],
            env=env,
            check=True,
            capture_output=True,
            cwd=home,
        )
        argv = ["codex", "exec", "--json", "--skip-git-repo-check", "Run phase 1 with gsd."]
        done = subprocess.run(
            argv,
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=slack(180),
            stdin=subprocess.DEVNULL,
        )
        bodies = [entry.body for entry in server.log]
    results = list(responses.tool_results(bodies).values())
    print("EXIT", done.returncode)
    print(done.stdout[-4000:])
    print(done.stderr[-3000:])
    print("RESULTS", [r[:300] for r in results])
    records = sorted(layout.background_dir(repo / ".git").glob("*.json"))
    print("RECORDS", records)
    if records:
        pid = json.loads(records[0].read_text())["pid"]
        deadline = time.monotonic() + 60
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.3)
        print("ALIVE", process_alive(pid))
        print(git(repo, "log", "--oneline"))
        print(records[0].with_suffix(".out").read_text()[-3000:])
        print(records[0].read_text())
    raise AssertionError("show")
