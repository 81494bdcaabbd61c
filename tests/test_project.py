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
