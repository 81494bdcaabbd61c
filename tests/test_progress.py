"""`gsd status`: each plan's standing, from SUMMARY files, commits and STATE.md."""

from __future__ import annotations

import json

import pytest

from gsd.commands import progress
from gsd.io.plans.project import Project as GsdProject
from tests.conftest import CORPUS, Project, auto_task, git, requires_corpus
from tests.test_cli import markdown_rows

pytestmark = pytest.mark.unit  # `make test-fast` runs these

STATE = """\
# Project State

### Blockers/Concerns

- [01-02] needs an API key before anyone runs it
- [1-3] timeout: no output for 300s
- [01-04] checkpoint-paused: check the login page
"""


def test_status_reads_gsds_own_blocker_bullets_not_peoples_notes(project: Project) -> None:
    for number in range(1, 6):
        project.plan(f"01-0{number}", files_modified=f"[src/p{number}.py]")
    project.write(".planning/STATE.md", STATE)
    project.write(".planning/phases/01-alpha/01-05-SUMMARY.md", "# done\n")
    status = progress.project_status(GsdProject(project.root))
    plans = {p.plan: p.status for p in status.phases[0].plans}
    assert plans == {
        "01-01": "pending",
        "01-02": "pending",  # a person's note about the plan: not a failure
        "01-03": "failed",  # written `[1-3]`: the same plan
        "01-04": "paused",
        "01-05": "done",
    }
    assert len(status.blockers) == 3  # every line is still listed


def test_a_plan_done_upstream_is_done_without_zero_committed(git_project: Project, gsd) -> None:
    """A SUMMARY.md and commits without gsd's trailer (upstream GSD's own) showed
    `done ... tasks committed 0/2` (issue 21, trap 6)."""
    tasks = auto_task("Task 1: a", "src/a.py") + auto_task("Task 2: b", "src/b.py")
    git_project.plan("01-01", tasks=tasks)
    git_project.plan("01-02", tasks=tasks, files_modified="[src/c.py]")
    git_project.write(".planning/phases/01-alpha/01-01-SUMMARY.md", "# done upstream\n")
    git(git_project.root, "add", "-A")
    git(git_project.root, "commit", "-qm", "feat(01-01): both tasks, as upstream commits them")
    out = gsd("status").out
    assert "01-01  wave 1  done         2 tasks done outside gsd (no gsd commits)" in out
    assert "0/2" not in out.split("01-02")[0]
    assert "01-02  wave 1  pending      tasks committed 0/2" in out
    rows = markdown_rows(gsd("status", "--format", "markdown").out)
    assert rows[2] == ["01-01", "1", "done", "none: 2 tasks done outside gsd"]
    plans = json.loads(gsd("status", "--format", "json").out)["phases"][0]["plans"]
    assert [p["done_outside_gsd"] for p in plans] == [True, False]


@requires_corpus
def test_plans_done_upstream_in_the_corpus_show_no_zero_committed(gsd, monkeypatch) -> None:
    monkeypatch.chdir(CORPUS / "Biographica__ag-cli")
    out = gsd("status").out
    assert "done         2 tasks done outside gsd (no gsd commits)" in out
    assert "tasks committed 0/" not in out
