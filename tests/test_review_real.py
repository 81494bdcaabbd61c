"""The review gate (issue 24) with real CLIs: an author on claude, its reviewer on codex
(read-only), one scripted model server for both (tests/modelserver/routes.py).

The reviewer answers `changes` with a finding, the author's retry (its prompt carrying
the finding) writes the fix, the reviewer's second call answers `approve`, and only that
attempt is committed. Judged by git, gsd's run log and what each CLI's model was asked.
The CLIs come from `make clis`; without them this test skips and says why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gsd.formats import execlog
from tests.modelserver.routes import Script, route
from tests.modelserver.scenario import Scenario, answer, review_report, task_report, write
from tests.test_clis import cli_bin  # noqa: F401  (the fixture)
from tests.test_multiagent_real import PLAN, execute

pytestmark = pytest.mark.slow

FINDING = "src/t.txt:1: say fixed"
TASK = """\
<task type="auto" specialist="writer" review="critic">
  <name>Task 1: write</name>
  <files>src/t.txt</files>
  <action>ROUTE-writer: write src/t.txt</action>
  <verify><automated>test -f src/t.txt</automated></verify>
  <done>src/t.txt says fixed.</done>
</task>"""


def script() -> Script:
    """The reviewer's route first: its prompt holds the author's task (and its marker)."""
    made = task_report(created=("src/t.txt",))
    return Script(
        route(
            "critic",
            r"### Review Report",
            answer(review_report("changes", FINDING)),
            answer(review_report("approve")),
            cli="codex",
        ),
        route(
            "writer",
            r"ROUTE-writer",
            Scenario((write("src/t.txt", "draft\n"),), made),
            Scenario((write("src/t.txt", "fixed\n"),), made),
            cli="claude",
        ),
    )


def test_changes_then_approve_across_two_clis(cli_bin: Path, tmp_path: Path) -> None:  # noqa: F811
    plan = PLAN.format(
        plan="01",
        wave=1,
        depends="[]",
        files="src/t.txt",
        objective="Write a reviewed file.",
        tasks=TASK,
    )
    agents = {"writer": ("claude", "read+write", 2), "critic": ("codex", "read-only", 2)}
    (tmp_path / "run").mkdir()
    ran = execute(cli_bin, tmp_path / "run", {"01-01": plan}, agents, script(), retries=0)
    assert ran.code == 0, ran.said()
    assert ran.server.misses == [], ran.said()
    commits = ran.git("log", "main", "--format=%H", "--grep=^Gsd-Task: 01-01-1$").split()
    assert len(commits) == 1, ran.said()  # the approved attempt's only
    assert ran.git("show", f"{commits[0]}:src/t.txt") == "fixed\n"
    found, warnings = execlog.read_all(ran.repo / ".planning")
    reviews = [(e["verdict"], e["round"], e["attempt"]) for e in found if e["event"] == "review"]
    assert reviews == [("changes", 1, 1), ("approve", 2, 2)], found
    # what each model was asked: the reviewer each attempt's work, the author's retry
    # the finding
    first, second = ran.server.prompts("critic")
    assert "+draft" in first and "+fixed" in second, (first[-3000:], second[-3000:])
    draft, retry = ran.server.prompts("writer")
    assert FINDING not in draft
    assert "## Review Findings (round 1)" in retry and f"- {FINDING}" in retry, retry[-3000:]
