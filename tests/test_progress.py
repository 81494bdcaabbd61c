"""`gsd status`: each plan's standing, from SUMMARY files, commits and STATE.md."""

from __future__ import annotations

from gsd.commands import progress
from gsd.io.project import Project as GsdProject
from tests.conftest import Project

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
    plans = {p["plan"]: p["status"] for p in status["phases"][0]["plans"]}
    assert plans == {
        "01-01": "pending",
        "01-02": "pending",  # a person's note about the plan: not a failure
        "01-03": "failed",  # written `[1-3]`: the same plan
        "01-04": "paused",
        "01-05": "done",
    }
    assert len(status["blockers"]) == 3  # every line is still listed
