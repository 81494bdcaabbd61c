"""Issue 15's rules: misnamed plans, legacy `## Task N` plans, wave 0, string artifacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gsd.core.rules.filerules import expected_plan_name
from gsd.formats.files import load_text
from gsd.formats.planning import state
from tests.conftest import Project, plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these


def diagnostics(gsd) -> list[dict]:
    result = gsd("validate", "--format", "json")
    assert result.code in (0, 1), result.err
    return json.loads(result.out)["diagnostics"]


@pytest.mark.parametrize(
    ("name", "phase", "expected"),
    [
        pytest.param(
            "01-PLAN-01-foundation.md", "01", "01-01-foundation-PLAN.md", id="upstream-2893"
        ),
        pytest.param("PLAN.md", "03", "03-01-PLAN.md", id="bare-plan"),
        pytest.param("01-02-plan.md", "01", "01-02-PLAN.md", id="lower-case"),
        pytest.param("02.1-PLAN-02.md", "02.1", "02.1-02-PLAN.md", id="decimal-phase"),
        pytest.param("01-01-PLAN.md", "01", None, id="right-name"),
        pytest.param("01-01-SUMMARY.md", "01", None, id="summary"),
        pytest.param("01-PLANNING-NOTES.md", "01", None, id="planning-is-not-plan"),
        pytest.param("01-PLAN-01.txt", "01", None, id="not-markdown"),
    ],
)
def test_expected_plan_name(name: str, phase: str, expected: str | None) -> None:
    assert expected_plan_name(name, phase) == expected


def test_misnamed_plan_is_a_warning_naming_the_expected_name(project: Project, gsd) -> None:
    project.plan("01-01", plan_text())
    project.write(".planning/phases/01-alpha/01-PLAN-02-foundation.md", plan_text(plan="02"))
    found = [d for d in diagnostics(gsd) if d["code"] == "GSD046"]
    assert [(d["path"], d["severity"]) for d in found] == [
        (".planning/phases/01-alpha/01-PLAN-02-foundation.md", "warning")
    ]
    assert "rename it 01-02-foundation-PLAN.md" in found[0]["message"]


def test_legacy_task_headings_say_how_to_convert(project: Project, gsd) -> None:
    text = plan_text(tasks="## Task 1: Build it\n\nDo it.\n\n### Task 2 - Test it\n")
    project.plan("01-01", text)
    (found,) = [d for d in diagnostics(gsd) if d["code"] == "GSD010"]
    assert found["line"] == text.split("\n").index("## Task 1: Build it") + 1
    assert "2 `## Task N` headings" in found["message"]
    assert '<task type="auto">' in found["message"]


def test_no_tasks_without_headings_keeps_its_message(project: Project, gsd) -> None:
    project.plan("01-01", plan_text(tasks="```\n## Task 1 in an example\n```\n"))
    (found,) = [d for d in diagnostics(gsd) if d["code"] == "GSD010"]
    assert found["message"] == "plan has no <task> blocks"


def test_wave_0_without_dependencies_is_fine(project: Project, gsd) -> None:
    project.plan("01-01", plan_text(wave=0))
    assert diagnostics(gsd) == []


def test_wave_0_with_a_dependency_is_still_gsd042(project: Project, gsd) -> None:
    project.plan("01-01", plan_text())
    project.plan(
        "01-02", plan_text(plan="02", wave=0, depends_on="[01-01]", files_modified="[src/y.py]")
    )
    assert {d["code"] for d in diagnostics(gsd)} == {"GSD042"}


@pytest.mark.parametrize(
    "artifacts",
    [
        pytest.param("[output.txt]", id="upstream-fixture"),
        pytest.param('[output.txt, {path: "b.py", contains: "def b"}]', id="mixed"),
    ],
)
def test_string_artifacts_are_accepted(project: Project, gsd, artifacts: str) -> None:
    must = f"must_haves: {{truths: [a], artifacts: {artifacts}, key_links: []}}\n"
    project.plan("01-01", plan_text().replace("autonomous:", must + "autonomous:", 1))
    assert diagnostics(gsd) == []


# --- STATE.md: a line saying there are no blockers is not one ---------------------------

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


@pytest.mark.parametrize(
    ("line", "placeholder"),
    [
        pytest.param("- No active blockers.", True, id="nemesis"),
        pytest.param("None for v1.0 (shipped). See PROJECT.md for v2.0 scope.", True, id="shipped"),
        pytest.param("None.", True, id="none"),
        pytest.param("- No open blockers or concerns", True, id="no-open"),
        pytest.param("- None of the API keys work", False, id="none-of"),
        pytest.param("- No tests cover the auth module", False, id="no-tests"),
        pytest.param("- Next milestone scope is not yet initialized.", False, id="real"),
    ],
)
def test_blocker_placeholders(line: str, placeholder: bool) -> None:
    text = f"# State\n\n### Blockers/Concerns\n\n{line}\n"
    assert state.blockers(text) == ([] if placeholder else [line])


@pytest.mark.parametrize(
    ("project_dir", "expected"),
    [
        pytest.param("Biographica__ag-cli", [], id="ag-cli"),
        pytest.param(
            "Maleick__Nemesis", ["- Next milestone scope is not yet initialized."], id="nemesis"
        ),
    ],
)
def test_corpus_blockers(project_dir: str, expected: list[str]) -> None:
    path = CORPUS / project_dir / ".planning" / "STATE.md"
    if not path.exists():
        pytest.skip(f"{path} is not here (the shared corpus)")
    assert state.blockers(load_text(path)) == expected
