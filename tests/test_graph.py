"""The phase graph: waves, cycles, critical path, overlap groups."""

from __future__ import annotations

import pytest

from gsd.core.graph import build
from gsd.formats.planning.plan import parse
from tests.conftest import plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def make(pid: str, deps: list[str] = [], files: list[str] = ["a"]):  # noqa: B006
    number = pid.split("-")[1]
    text = plan_text(
        plan=number,
        depends_on="[" + ", ".join(f'"{d}"' for d in deps) + "]",
        files_modified="[" + ", ".join(files) + "]",
    )
    return parse(text, f".planning/phases/01-alpha/{pid}-PLAN.md")


def test_waves_are_kahn_levels() -> None:
    graph = build(
        [
            make("01-04", ["01-02", "01-03"], ["d"]),
            make("01-01", [], ["a"]),
            make("01-02", ["01-01"], ["b"]),
            make("01-03", [], ["c"]),
        ]
    )
    assert graph.waves == [["01-01", "01-03"], ["01-02"], ["01-04"]]
    assert graph.critical_path == ["01-01", "01-02", "01-04"]
    assert graph.cycles == []


def test_cycle_is_reported_with_its_path() -> None:
    graph = build(
        [
            make("01-01", ["01-03"], ["a"]),
            make("01-02", ["01-01"], ["b"]),
            make("01-03", ["01-02"], ["c"]),
            make("01-04", [], ["d"]),
        ]
    )
    assert graph.waves == [["01-04"]]
    assert len(graph.cycles) == 1
    cycle = graph.cycles[0]
    assert cycle[0] == cycle[-1] and set(cycle) == {"01-01", "01-02", "01-03"}


def test_self_dependency_is_a_cycle_and_unknown_dependency_dropped() -> None:
    graph = build([make("01-01", ["01-01", "01-09"])])
    assert graph.waves == []
    assert graph.cycles == [["01-01", "01-01"]]


def test_overlap_groups_per_wave() -> None:
    graph = build(
        [
            make("01-01", [], ["src/x.py"]),
            make("01-02", [], ["./src/x.py", "y"]),
            make("01-03", [], ["y"]),
            make("01-04", [], ["z"]),
            make("01-05", ["01-04"], ["src/x.py"]),
        ]
    )
    assert graph.overlap_groups == [["01-01", "01-02", "01-03"]]
    assert graph.sequential_groups(graph.waves[0]) == [["01-01", "01-02", "01-03"], ["01-04"]]


def test_empty_phase() -> None:
    graph = build([])
    assert (graph.waves, graph.critical_path, graph.cycles) == ([], [], [])


def test_one_phase_graph_per_directory_for_every_caller(project) -> None:
    """`phase_graph` (waves, status, execute) is `graph_of` (validate, show): built once,
    from the readable plans (an unreadable one is GSD050, not a plan of wave 1)."""
    from gsd.io.plans.project import Project

    project.plan("01-01")
    project.plan("01-02", depends_on='["01-01"]', wave=2)
    project.plan("01-03", b"\xff\xfe not UTF-8")
    gsd_project = Project(project.root)
    phase = gsd_project.phase("1")
    graph = gsd_project.phase_graph(phase)
    assert graph is gsd_project.phase_graph(phase)
    assert graph is gsd_project.graph_of(".planning/phases/01-alpha/01-02-PLAN.md")
    assert graph.waves == [["01-01"], ["01-02"]]
