"""A name a letter or two off one gsd knows gets a "did you mean": specialists, config keys
in gsd's own sections, phases and plans (issue 21, trap 5)."""

from __future__ import annotations

import json

import pytest

from gsd.core.words import close_name, did_you_mean, suggested
from tests.conftest import Project, auto_task

pytestmark = pytest.mark.unit  # `make test-fast` runs these

ROSTER = "# Available agents\n\n- **text-writer**: writes text\n- **python-pro**: Python\n"


def test_the_one_suggestion_helper() -> None:
    assert close_name("text-writr", ["python-pro", "text-writer"]) == "text-writer"
    assert close_name("zzz", ["python-pro", "text-writer"]) is None
    assert close_name("same", ["same"]) is None  # never the name itself
    assert did_you_mean("max_retry", ["max_retries", "scope"]) == "did you mean max_retries?"
    assert suggested("max_retry", ["max_retries"]) == " (did you mean max_retries?)"
    assert suggested("zzz", ["max_retries"]) == ""


def misspelt_specialist(project: Project, name: str = "text-writr") -> None:
    project.write(".planning/available_agents.md", ROSTER)
    project.plan("01-01", tasks=auto_task(attrs=f' specialist="{name}"'))


def test_validate_suggests_the_specialist_a_letter_off(project: Project, gsd) -> None:
    misspelt_specialist(project)
    result = gsd("validate")
    assert result.code == 0
    assert result.out.splitlines() == [
        ".planning/phases/01-alpha/01-01-PLAN.md:21:1: warning GSD021 task 1 names specialist "
        "'text-writr', which is not in .planning/available_agents.md; it falls back to "
        "gsd-executor (did you mean text-writer?)"
    ]


def test_validate_suggests_nothing_when_no_name_is_close(project: Project, gsd) -> None:
    misspelt_specialist(project, "golang-pro")
    out = gsd("validate").out
    assert "GSD021" in out and "did you mean" not in out


def test_dry_run_fallback_names_the_close_specialist(project: Project, gsd) -> None:
    misspelt_specialist(project)
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    assert result.code == 0
    (task,) = json.loads(result.out)["tasks"]
    assert task["fallback_reason"] == (
        "not in .planning/available_agents.md (did you mean text-writer?)"
    )


def test_a_listed_specialist_without_its_agent_file_names_the_close_file(
    project: Project, gsd
) -> None:
    project.write(".planning/available_agents.md", "- **text-writr**: writes text\n")
    project.write("agents/text-writer.md", "---\nname: text-writer\nrunner: claude\n---\nX.\n")
    project.plan("01-01", tasks=auto_task(attrs=' specialist="text-writr"'))
    result = gsd("execute-phase", "1", "--dry-run", "--format", "json")
    (task,) = json.loads(result.out)["tasks"]
    assert task["fallback_reason"] == (
        "no agent file for it (see `gsd agents list`) (did you mean text-writer?)"
    )


# --- config.json keys gsd does not read ----------------------------------------------------

CONFIG = (
    '{\n  "specialists": {"max_retry": 3},\n  "workflow": {"research": true},\n'
    '  "voltagent": {"max_delegation_depth": 2},\n  "depth": "standard"\n}\n'
)


def test_the_keys_table_is_the_settings_model() -> None:
    """configkeys keeps the keys gsd reads without pydantic: they must be Settings's own."""
    from gsd.formats.configkeys import READ, TOP
    from gsd.formats.settings import Settings

    sections = {
        f.alias or name: tuple(getattr(f.annotation, "model_fields", {}))
        for name, f in Settings.model_fields.items()
    }
    assert set(TOP) == set(sections)
    assert READ == {name: keys for name, keys in sections.items() if keys}


def test_validate_warns_about_a_misspelt_setting(project: Project, gsd) -> None:
    project.plan("01-01")
    project.write(".planning/config.json", CONFIG)
    result = gsd("validate")
    assert result.code == 0
    assert result.out.splitlines() == [
        ".planning/config.json:2:1: warning GSD060 `specialists.max_retry` is not a setting gsd "
        "reads: it has no effect (did you mean specialists.max_retries?)"
    ]  # upstream's keys (workflow.research, voltagent.max_delegation_depth, depth): quiet
    assert gsd("validate", "--strict").code == 1
    assert gsd("validate", "--phase", "1").out == ""  # a phase: its plans alone


def test_validate_is_quiet_on_upstream_configs(project: Project, gsd) -> None:
    project.plan("01-01")
    project.write(".planning/config.json", CONFIG.replace("max_retry", "max_retries"))
    assert gsd("validate").out == ""


# --- gsd errors --phase / --plan naming nothing --------------------------------------------


def record_failure(project: Project, phase: str, plan: str) -> None:
    from gsd.formats import errorlog

    record = errorlog.ErrorRecord(
        phase=phase, plan=plan, task="1", specialist="coder", error_type="timeout"
    )
    errorlog.append(errorlog.log_path(project.root), record)


def test_errors_refuses_a_phase_that_does_not_exist(project: Project, gsd) -> None:
    project.plan("01-01")
    result = gsd("errors", "--phase", "9")
    phases = project.planning / "phases"
    assert (result.code, result.out) == (2, "")
    assert result.err.splitlines() == [
        f"gsd: error: no phase '9' under {phases} (phases: 01-alpha) "
        "(name a phase by its number (01) or its folder (01-alpha))"
    ]
    misspelt = gsd("errors", "--phase", "01-alpah")
    assert misspelt.code == 2
    assert misspelt.err.splitlines() == [
        f"gsd: error: no phase '01-alpah' under {phases} (phases: 01-alpha) "
        "(did you mean 01-alpha?)"
    ]


def test_errors_refuses_a_plan_that_does_not_exist(project: Project, gsd) -> None:
    project.plan("01-01")
    project.plan("01-02", plan="02")
    phases = project.planning / "phases"
    result = gsd("errors", "--plan", "09-01")
    assert (result.code, result.out) == (2, "")
    assert result.err.splitlines() == [
        f"gsd: error: no plan 09-01 under {phases}, and no recorded failure names it "
        "(did you mean 01-01?)"
    ]
    far = gsd("errors", "--plan", "07", "--phase", "1")
    assert far.code == 2
    assert far.err.splitlines() == [
        f"gsd: error: no plan 07 in phase 1 under {phases}, and no recorded failure names it "
        "(name a plan by its id, such as 01-02)"
    ]


def test_errors_of_a_plan_or_phase_there_or_in_the_logs_are_listed(project: Project, gsd) -> None:
    project.plan("01-01")
    assert gsd("errors", "--plan", "01-01") == gsd("errors", "--phase", "1")
    quiet = gsd("errors", "--plan", "01-01")
    assert (quiet.code, quiet.out) == (0, "No errors recorded.\n")
    record_failure(project, "7", "03")  # phase 7 was removed since: its failures still show
    for args in (("--phase", "7"), ("--plan", "07-03"), ("--phase", "07", "--plan", "3")):
        shown = gsd("errors", *args)
        assert shown.code == 0 and "timeout" in shown.out, args


def test_a_plan_id_a_digit_off_one_there_is_suggested(project: Project, gsd) -> None:
    project.plan("01-01")
    phases = project.planning / "phases"
    result = gsd("show", "01-11")
    assert (result.code, result.out) == (2, "")
    assert result.err.splitlines() == [
        f"gsd: error: no plan 01-11 under {phases} (did you mean 01-01?)"
    ]
