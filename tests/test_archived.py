"""Archived milestones (`.planning/milestones/v1.0-phases/`); STATE.md's position in status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gsd.commands.progress import PhaseStatus, PlanStatus, compare_position
from gsd.formats.planning import state
from gsd.io.plans.phases import list_archived_phases, list_phases, resolve_phase
from tests.conftest import CORPUS

pytestmark = pytest.mark.unit  # `make test-fast` runs these

AG_CLI = CORPUS / "Biographica__ag-cli"


@pytest.fixture
def planning(tmp_path: Path) -> Path:
    root = tmp_path / ".planning"
    for folder in (
        "phases/03-new",
        "milestones/v1.0-phases/01-setup",
        "milestones/v1.0-phases/02-api",
        "milestones/v1.10-phases/02-api-again",
        "milestones/v1.9-phases/03-old",
        "milestones/notes-phases/01-x",  # not a version: not an archive
        "milestones/v1.0-phases/not-a-phase",
    ):
        (root / folder).mkdir(parents=True)
    (root / "milestones" / "v1.0-ROADMAP.md").write_text("# v1.0\n")
    return root


def test_archives_are_listed_newest_milestone_first(planning: Path) -> None:
    found = [(p.milestone, p.name) for p in list_archived_phases(planning)]
    assert found == [
        ("v1.10", "02-api-again"),
        ("v1.9", "03-old"),
        ("v1.0", "01-setup"),
        ("v1.0", "02-api"),
    ]
    assert [p.name for p in list_phases(planning)] == ["03-new"]  # what a run executes


@pytest.mark.parametrize(
    ("spec", "name", "milestone"),
    [
        pytest.param("3", "03-new", None, id="current-first"),
        pytest.param("2", "02-api-again", "v1.10", id="newest-archive"),
        pytest.param("02-api", "02-api", "v1.0", id="by-folder"),
        pytest.param("1", "01-setup", "v1.0", id="only-archived"),
    ],
)
def test_resolve_tries_current_phases_then_archives(
    planning: Path, spec: str, name: str, milestone: str | None
) -> None:
    phase = resolve_phase(planning, spec)
    assert (phase.name, phase.milestone, phase.archived) == (name, milestone, bool(milestone))


@pytest.fixture
def ag_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if not AG_CLI.is_dir():
        pytest.skip(f"the corpus is absent ({AG_CLI})")
    root = tmp_path / "ag-cli"
    shutil.copytree(AG_CLI, root)
    monkeypatch.chdir(root)
    return root


def test_corpus_archive_is_found_by_status_show_waves_validate(ag_cli: Path, gsd) -> None:
    status = json.loads(gsd("status", "--format", "json").out)
    phases = {p["phase"]: p for p in status["phases"]}
    assert list(phases) == [
        "01-foundation",
        "02-data-infrastructure",
        "02.1-integration-fixes",
        "02.2-integration-fixes-ii",
    ]
    assert {p["archived"] for p in phases.values()} == {"v1.0"}
    assert sum(len(p["plans"]) for p in phases.values()) == 6
    assert "(archived, milestone v1.0)" in gsd("status").out
    shown = gsd("show", "1")
    assert shown.code == 0 and "milestones/v1.0-phases/01-foundation/01-01-PLAN.md" in shown.out
    assert "(archived, milestone v1.0)" in shown.out.splitlines()[0]
    assert {
        p["archived"] for p in json.loads(gsd("show", "1", "--format", "json").out)["plans"]
    } == {"v1.0"}
    waves = gsd("waves", "02")
    assert waves.out.startswith("Phase 02-data-infrastructure: 2 plans in 1 wave (archived, ")
    assert json.loads(gsd("waves", "2.1", "--format", "json").out)["archived"] == "v1.0"
    assert gsd("validate", "--phase", "2.2").code == 0


def test_corpus_archive_is_never_run_unless_named(ag_cli: Path, gsd) -> None:
    from gsd.io.plans.project import Project

    assert Project(ag_cli).phases() == []  # what execute-phase and sync walk
    named = gsd("execute-phase", "1", "--dry-run")  # named: its tasks are dispatched
    assert "01-01" in named.out + named.err  # (without `claude` installed: an error naming it)


def test_corpus_status_shows_state_position_and_agrees(ag_cli: Path, gsd) -> None:
    position = json.loads(gsd("status", "--format", "json").out)["position"]
    assert position["recorded"] == {"progress": "[██████████] 100% — v1.0 complete"}
    assert position["computed"]["project_percent"] == 100
    assert position["disagreements"] == []
    assert "STATE.md: [██████████] 100% — v1.0 complete" in gsd("status").out


@pytest.mark.parametrize(
    ("recorded", "expected"),
    [
        pytest.param({"phase": "2 of 3 (API)", "progress": "[█████░░░░░] 50%"}, [], id="agrees"),
        pytest.param({"progress": "25%"}, [], id="project-percent"),
        pytest.param(
            {"phase": "1 of 3 (Setup)"},
            ["STATE.md says phase 1, gsd finds phase 02 current"],
            id="phase",
        ),
        pytest.param(
            {"progress": "[███████░░░] 70%"},
            ["STATE.md says 70% done, gsd computes 25% / 50%"],
            id="progress",
        ),
    ],
)
def test_compare_position(recorded: dict[str, str], expected: list[str]) -> None:
    plan = PlanStatus("", None, "pending", 0, [], False)
    phases = [
        PhaseStatus("01-setup", None, 0, [plan] * 0),
        PhaseStatus("02-api", None, 1, [plan, plan]),
        PhaseStatus("03-ui", None, 0, [plan, plan]),
    ]
    assert compare_position(recorded, phases).disagreements == expected


def test_status_markdown_flags_a_disagreement(project, gsd) -> None:
    project.plan("01-01", phase_dir="01-setup")
    (project.planning / "STATE.md").write_text(
        "# State\n\n## Current Position\n\nPhase: 2 of 2 (Done)\nProgress: [██████████] 100%\n"
    )
    out = gsd("status", "--format", "markdown").out
    assert "## Current position" in out
    assert "- **Disagrees:** STATE.md says phase 2, gsd finds phase 01 current" in out
    assert "- **Disagrees:** STATE.md says 100% done, gsd computes 0%" in out


def test_state_position_reads_the_lines() -> None:
    text = "## Current Position\n\nPhase: 2 of 5 (Auth)\nStatus: In progress\n\n## Next\n"
    assert state.position(text) == {"phase": "2 of 5 (Auth)", "status": "In progress"}
    assert state.position("# no position\n") == {}
    assert state.position_percent("[===.] 87% done") == 87
    assert state.position_percent("45%") == 45
    assert state.position_percent("soon") is None


def test_a_dependency_done_in_an_archived_milestone_is_done(planning: Path) -> None:
    """validate accepts a depends_on naming an archived plan; a run must find its SUMMARY
    there too, or `execute-plan` would wait for it forever."""
    from gsd.io.plans.project import Project

    done = planning / "milestones" / "v1.0-phases" / "01-setup" / "01-01-SUMMARY.md"
    done.write_text("---\nphase: 01\nplan: 01\n---\n# done\n")
    project = Project(planning.parent)
    assert project.summary_of("01-01") == done
    assert project.summary_of("01-02") is None
