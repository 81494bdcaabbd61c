"""JUnit XML for CI test reporters: `gsd validate --format junit` and `gsd report --format
junit`, checked against tests/data/junit.xsd (a subset of Jenkins' junit-10.xsd)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from gsd.cli import lint
from gsd.commands.report import PlannedTask, task_cases
from gsd.formats.junit import Case, Failure, Suite, document
from gsd.output import reportview
from tests.conftest import REPO, plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these

SCHEMA = etree.XMLSchema(etree.parse(str(REPO / "tests" / "data" / "junit.xsd")))


def parsed(text: str) -> Any:
    """The document, after the schema has accepted it."""
    assert text.startswith("<?xml version='1.0' encoding='UTF-8'?>\n")
    root = etree.fromstring(text.encode("utf-8"))
    SCHEMA.assertValid(root)
    return root


def cases_of(root: Any) -> dict[str, Any]:
    return {case.get("name"): case for case in root.iter("testcase")}


@pytest.fixture
def plans(project):
    project.plan("01-01")  # clean
    project.plan("01-02", plan_text(plan="02", tasks="", files_modified="[b]"))  # a warning
    project.plan("01-03", plan_text(plan="03", wave="x", autonomous="maybe", files_modified="[c]"))
    return project


PHASE = ".planning/phases/01-alpha"


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--format", "junit"], id="fast-path"),
        pytest.param(["-j1", "--format=junit"], id="click"),  # -j1: the fast path hands over
    ],
)
def test_validate_junit_has_a_case_per_plan_file(plans, gsd, args: list[str]) -> None:
    assert (lint.parse(args) is None) == (args[0] == "-j1")
    result = gsd("validate", *args)
    assert result.code == 1 and result.err == ""
    root = parsed(result.out)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "0")
    suite = root.find("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("skipped")) == (
        "gsd validate",
        "3",
        "0",
    )
    cases = cases_of(root)
    assert list(cases) == [f"{PHASE}/01-0{n}-PLAN.md" for n in (1, 2, 3)]
    clean, warned, failed = cases.values()
    assert len(clean) == 0 and clean.get("classname") == "gsd validate"
    assert [child.tag for child in warned] == ["system-out"]
    assert " warning GSD010 plan has no <task> blocks\n" in warned.findtext("system-out")
    failure = failed.find("failure")
    errors = failure.text.splitlines()
    assert len(errors) == 2 and all(f"{PHASE}/01-03-PLAN.md:" in e for e in errors)
    assert failure.get("type") == errors[0].split()[2]
    assert failure.get("message").endswith(" (and 1 more error)")


def test_validate_junit_output_is_the_same_on_both_paths(plans, gsd) -> None:
    assert (
        gsd("validate", "--format", "junit").out == gsd("validate", "-j1", "--format", "junit").out
    )


def test_validate_junit_with_nothing_to_check(project, gsd) -> None:
    root = parsed(gsd("validate", "--format", "junit").out)
    assert root.get("tests") == "0" and root.find("testsuite").get("tests") == "0"


def test_characters_xml_cannot_hold_are_written_out() -> None:
    case = Case("bad\x01name", "c", Failure("m\x1b[31m", "T", "line \x00\n"), output="\ufffe")
    root = parsed(document("x", [Suite("s", [case])]))
    testcase = root.find("testsuite/testcase")
    assert testcase.get("name") == "bad\\x01name"
    assert testcase.find("failure").get("message") == "m\\x1b[31m"
    assert testcase.findtext("failure") == "line \\x00\n"
    assert testcase.findtext("system-out") == "\\ufffe"


def result(plan: str, task: int, success: bool, attempt: int = 1, **more: Any) -> dict[str, Any]:
    return {
        "event": "result",
        "plan": plan,
        "task": task,
        "agent": "worker",
        "attempt": attempt,
        "success": success,
        "duration_s": 1.5,
        "error_type": None if success else "timeout",
        **more,
    }


EVENTS = [
    {"event": "run-start", "phase": "01-alpha"},
    {"event": "wave-start", "wave": 1, "plans": ["01-01", "01-02"]},
    {"event": "spawn", "plan": "01-01", "task": 1},
    result("01-01", 1, False),
    {"event": "retry", "plan": "01-01", "task": 1},
    result("01-01", 1, True, attempt=2),
    result("01-01", 2, False),
    {"event": "checkpoint-paused", "plan": "01-02", "task": 1},
]
PLANNED = {
    "01-01": [
        PlannedTask(1, "Write it", False),
        PlannedTask(2, "Test it", False),
        PlannedTask(3, "Ship it", False),
    ],
    "01-02": [PlannedTask(1, "Look", True), PlannedTask(2, "After", False)],
}


def test_task_cases_from_a_runs_events() -> None:
    cases = task_cases(EVENTS, lambda plan: PLANNED.get(plan, []))
    shown = [(c.plan, c.task, c.outcome, c.why, len(c.attempts), c.seconds) for c in cases]
    assert shown == [
        ("01-01", "1", "passed", "", 2, 3.0),
        ("01-01", "2", "failed", "timeout", 1, 1.5),
        ("01-01", "3", "skipped", "not run", 0, 0.0),
        (
            "01-02",
            "1",
            "skipped",
            "paused at a human checkpoint: answer it with gsd approve",
            0,
            0.0,
        ),
        ("01-02", "2", "skipped", "not run", 0, 0.0),
    ]


def test_tasks_only_the_log_knows_are_cases_too() -> None:
    events = [*EVENTS, {"event": "spawn", "plan": "01-09", "task": 4}]
    cases = task_cases(events)  # no plan file read: the log alone
    assert [(c.plan, c.task, c.outcome) for c in cases] == [
        ("01-01", "1", "passed"),
        ("01-01", "2", "failed"),
        ("01-02", "1", "skipped"),
        ("01-09", "4", "skipped"),
    ]
    assert cases[-1].why == "started, but the run stopped before its result"


def test_only_the_last_run_unless_all() -> None:
    earlier = [{"event": "run-start"}, result("01-07", 1, True)]
    assert [c.plan for c in task_cases([*earlier, *EVENTS])] == ["01-01", "01-01", "01-02"]
    assert task_cases([*earlier, *EVENTS], last_run_only=False)[0].plan == "01-07"


def test_report_junit_document() -> None:
    root = parsed(reportview.junit(task_cases(EVENTS, lambda plan: PLANNED.get(plan, []))))
    assert (root.get("tests"), root.get("failures"), root.get("time")) == ("5", "1", "4.5")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["plan 01-01", "plan 01-02"]
    assert (suites[0].get("failures"), suites[0].get("skipped")) == ("1", "1")
    cases = cases_of(root)
    assert list(cases) == [
        "task 1: Write it",
        "task 2: Test it",
        "task 3: Ship it",
        "task 1: Look",
        "task 2: After",
    ]
    passed = cases["task 1: Write it"]
    assert passed.get("classname") == "plan 01-01" and passed.get("time") == "3.0"
    assert passed.findtext("system-out") == (
        "attempt 1: worker: timeout (1.5 s)\nattempt 2: worker: ok (1.5 s)\n"
    )
    failure = cases["task 2: Test it"].find("failure")
    assert (failure.get("type"), failure.get("message")) == ("timeout", "timeout (attempt 1)")
    skipped = cases["task 3: Ship it"]
    assert skipped.find("skipped").get("message") == "not run" and skipped.get("time") is None


def test_report_junit_with_no_run_logged(project, gsd) -> None:
    result = gsd("report", "--format", "junit")
    assert result.code == 0
    root = parsed(result.out)
    assert root.get("tests") == "0" and root.findall("testsuite") == []


def test_report_help_names_junit(gsd) -> None:
    assert "junit (JUnit XML for CI test reports)" in " ".join(gsd("report", "--help").out.split())


def test_junit_xsd_names_its_source() -> None:
    text = (REPO / "tests" / "data" / "junit.xsd").read_text()
    assert "jenkinsci/xunit-plugin" in text and "junit-10.xsd" in text


def test_a_path_outside_the_checked_files_is_still_a_case(tmp_path: Path) -> None:
    from gsd.core.models import Diagnostic
    from gsd.core.rules import Report
    from gsd.output.render import junit as render_junit

    stray = Diagnostic(
        path="other/PLAN.md", line=3, col=1, severity="error", code="GSD003", message="bad"
    )
    root = parsed(render_junit(Report(1, [stray], ["a/01-01-PLAN.md"])))
    assert list(cases_of(root)) == ["a/01-01-PLAN.md", "other/PLAN.md"]
