"""A project's plans: listed and parsed once per run, forgotten per phase when asked."""

from __future__ import annotations

from gsd.project import Project
from gsd.sources import WorkingTree

PHASE = ".planning/phases/01-alpha"


class CountingTree(WorkingTree):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.listed: list[str] = []

    def plans_in(self, folder: str) -> list[str]:
        self.listed.append(folder)
        return super().plans_in(folder)


def test_a_folder_is_listed_once_and_release_forgets_its_plans(project) -> None:
    project.plan("01-01")
    project.plan("01-02")
    source = CountingTree(project.root)
    gsd_project = Project(project.root, source=source)
    first = gsd_project.folder_plans(PHASE)
    gsd_project.graph_of(f"{PHASE}/01-01-PLAN.md")
    assert gsd_project.siblings(f"{PHASE}/01-02-PLAN.md") == first
    assert source.listed == [PHASE]
    gsd_project.release(PHASE)
    again = gsd_project.folder_plans(PHASE)
    assert [p.path for p in again] == [p.path for p in first]
    assert again[0] is not first[0]  # parsed anew: the first ones were let go
    assert source.listed == [PHASE, PHASE]


def test_find_plan_reads_the_phase_of_the_id_alone(project) -> None:
    import pytest

    from gsd.errors import UsageError

    project.plan("01-01")
    project.plan("02-01", phase_dir="02-beta")
    project.plan("02-02", phase_dir="02-beta")
    gsd_project = Project(project.root)
    assert gsd_project.find_plan("02-02").path == ".planning/phases/02-beta/02-02-PLAN.md"
    assert {p.rsplit("/", 2)[1] for p in gsd_project._plans} == {"02-beta"}
    for missing in ("02-09", "07-01"):
        with pytest.raises(UsageError, match=f"^no plan {missing} under "):
            gsd_project.find_plan(missing)
    with pytest.raises(UsageError, match="is not a plan id"):
        gsd_project.find_plan("02")


def test_show_and_approve_find_a_plan_by_id(project, gsd) -> None:
    project.plan("01-01")
    assert gsd("show", "01-01").out.startswith("Plan 01-01 ")
    for command in ("show", "approve"):
        missing = gsd(command, "03-01")
        assert (missing.code, missing.err.split(" under ")[0]) == (2, "gsd: error: no plan 03-01")
