"""A project's plans: listed and parsed once per run, forgotten per phase when asked."""

from __future__ import annotations

import pytest

from gsd.io.plans.project import Project
from gsd.io.plans.sources import WorkingTree
from tests.conftest import git, plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these

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

    from gsd.core.errors import UsageError

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


# --- what a newcomer sees where there is no .planning/ --------------------------------------

NO_PROJECT = "(run gsd init to create one, or run gsd in a project that has .planning/)"
TAKE_NO_FILES = [
    ["status"],
    ["waves", "1"],
    ["show", "1"],
    ["execute-phase", "1", "--dry-run"],
    ["execute-plan", "01-01"],
    ["errors"],
    ["report"],
    ["agents", "list"],
    ["agents", "sync"],
    ["diff"],
    ["approve", "01-01"],
]


@pytest.fixture
def bare(tmp_path, monkeypatch):
    """A folder with neither .planning/ nor .git, at or above it."""
    where = tmp_path / "bare"
    where.mkdir()
    monkeypatch.chdir(where)
    if any((p / ".planning").is_dir() or (p / ".git").exists() for p in where.parents):
        pytest.skip(f"{where} is inside a project or a git repository")
    return where


@pytest.mark.parametrize("command", TAKE_NO_FILES, ids=" ".join)
def test_no_project_names_gsd_init_and_never_plan_files(bare, gsd, command) -> None:
    result = gsd(*command)
    assert result.code == 2
    assert result.err == f"gsd: error: no .planning/ directory in {bare} or above {NO_PROJECT}\n"


def test_validate_offers_plan_files_and_reads_them_outside_a_project(bare, gsd) -> None:
    result = gsd("validate")
    assert result.code == 2
    assert result.err == (
        f"gsd: error: no .planning/ directory in {bare} or above "
        "(run gsd init to create one, or pass plan files)\n"
    )
    (bare / "01-01-PLAN.md").write_text(plan_text())
    result = gsd("validate", "01-01-PLAN.md")
    assert result.code == 0, result.err
    assert result.err.endswith("0 errors, 0 warnings in 1 file\n")


@pytest.mark.parametrize("command", [["status"], ["agents", "sync"]], ids=" ".join)
def test_a_git_repository_without_planning_names_gsd_init(bare, gsd, command) -> None:
    git(bare, "init", "-q")
    result = gsd(*command)
    assert result.code == 2
    assert result.err == f"gsd: error: no .planning/ in {bare} {NO_PROJECT}\n"
    assert not (bare / ".planning").exists()


@pytest.mark.parametrize("command", [["waves", "1"], ["execute-phase", "1"]], ids=" ".join)
def test_a_phase_without_planning_names_gsd_init(bare, gsd, command) -> None:
    git(bare, "init", "-q")
    result = gsd(*command)
    assert result.code == 2
    assert result.err == (
        f"gsd: error: no phase '1': no .planning/ in {bare} "
        "(run gsd init to create it, then add phase folders)\n"
    )
