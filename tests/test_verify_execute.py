"""execute-phase runs gsd verify on each plan it completes (real git, command agents)."""

from __future__ import annotations

import json

from tests.conftest import git
from tests.test_execute import logged_errors, phase  # noqa: F401  (`phase` is a fixture)

SUMMARY = ".planning/phases/01-alpha/{}-SUMMARY.md"


def _config(project, must_haves: str) -> None:
    path = project.root / ".planning/config.json"
    config = json.loads(path.read_text())
    config["verification"] = {"must_haves": must_haves}
    path.write_text(json.dumps(config))
    git(project.root, "commit", "-qam", "verification")


def test_warn_records_the_checks_in_summary_and_completes(phase, gsd) -> None:  # noqa: F811
    # the template's plans promise src/x.py, which no agent writes
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert "warning: plan 01-01: must_haves: 1 failed: src/x.py (file not found)" in result.err
    text = (phase.root / SUMMARY.format("01-01")).read_text()
    section = text[text.index("## Must-haves") :]
    assert "1 of 1 checks failed (verification.must_haves: warn)." in section
    assert "| artifact | src/x.py | FAIL | file not found |" in section


def test_met_must_haves_pass_in_summary(phase, gsd) -> None:  # noqa: F811
    plan = phase.root / ".planning/phases/01-alpha/01-01-PLAN.md"
    met = '    - path: src/t01-01_1.py\n      contains: "# worker"\n'
    plan.write_text(plan.read_text().replace("    - path: src/x.py\n", met))
    git(phase.root, "commit", "-qam", "a met must_have")
    assert gsd("execute-phase", "1").code == 0
    text = (phase.root / SUMMARY.format("01-01")).read_text()
    assert "All 1 checks passed or were skipped" in text
    assert "| artifact | src/t01-01_1.py | ok | exists, contains '# worker' |" in text


def test_fail_fails_the_plan_as_validation_failed(phase, gsd) -> None:  # noqa: F811
    _config(phase, "fail")
    result = gsd("execute-phase", "1")
    assert result.code == 1
    assert "plan 01-01: must_haves not met: 1 failed: src/x.py (file not found)" in result.err
    assert not (phase.root / SUMMARY.format("01-01")).exists()
    (record,) = [r for r in logged_errors(phase.root) if r.error_type == "validation-failed"]
    assert record.git_state == "verify" and "verification.must_haves" in record.details


def test_a_run_skips_references_outside_the_project(phase, gsd) -> None:  # noqa: F811
    """`make demo` warned about `@~/.claude/get-shit-done/...`, which exists only where
    upstream GSD is installed (issue 21, trap 4): the run now skips it with a note."""
    plan = phase.root / ".planning/phases/01-alpha/01-01-PLAN.md"
    met = '    - path: src/t01-01_1.py\n      contains: "# worker"\n'
    text = plan.read_text().replace("    - path: src/x.py\n", met)
    plan.write_text(text + "\n@~/.claude/get-shit-done/workflows/execute-plan.md\n")
    git(phase.root, "commit", "-qam", "an upstream reference")
    result = gsd("execute-phase", "1")
    assert result.code == 0 and "plan 01-01: must_haves" not in result.err, result.err
    summary = (phase.root / SUMMARY.format("01-01")).read_text()
    assert "| reference | ~/.claude/get-shit-done/workflows/execute-plan.md | skip |" in summary
