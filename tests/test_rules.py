"""Every rule of `gsd validate`: a plan that triggers it, and near misses that do not.

Each case is checked the way a user reads `gsd validate --format json`: the code,
its severity, the file and the line, and the exit code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gsd.core.models import REQUIRED_FIELDS
from gsd.core.rules import RULES
from tests.conftest import Project, Run, auto_task, plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these

PHASE_DIR = ".planning/phases/01-alpha"
PLAN_01 = f"{PHASE_DIR}/01-01-PLAN.md"
PLAN_02 = f"{PHASE_DIR}/01-02-PLAN.md"
ROSTER = ".planning/available_agents.md"


# --- helpers ------------------------------------------------------------------------------


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """1-based line of the nth occurrence of `needle` in `text`."""
    index = -1
    for _ in range(nth):
        index = text.index(needle, index + 1)
    return text.count("\n", 0, index) + 1


def validate(gsd, *args: str) -> tuple[Run, list[dict]]:
    result = gsd("validate", "--format", "json", *args)
    assert result.code in (0, 1), result.err
    assert "Traceback" not in result.err
    return result, json.loads(result.out)["diagnostics"]


def codes(diagnostics: list[dict], path: str | None = None) -> set[str]:
    return {d["code"] for d in diagnostics if path is None or d["path"] == path}


def task(type_: str, body: str, attrs: str = "") -> str:
    return f'<task type="{type_}"{attrs}>\n{body}</task>'


HUMAN_VERIFY = task(
    "checkpoint:human-verify",
    "  <name>Look at it</name>\n  <what-built>The page</what-built>\n"
    "  <how-to-verify>Open it</how-to-verify>\n  <resume-signal>Type approved</resume-signal>\n",
)
DECISION = task(
    "checkpoint:decision",
    "  <name>Pick</name>\n  <decision>Which db</decision>\n  <context>c</context>\n"
    '  <options>\n    <option id="pg"><name>Postgres</name><pros>p</pros><cons>c</cons></option>\n'
    '    <option id="sqlite"><name>SQLite</name></option>\n  </options>\n'
    "  <resume-signal>Type the id</resume-signal>\n",
)
HUMAN_ACTION = task(
    "checkpoint:human-action",
    "  <name>Log in</name>\n  <action>Create the key</action>\n"
    "  <instructions>Go to the site</instructions>\n"
    "  <verification>It is there</verification>\n  <resume-signal>Type done</resume-signal>\n",
)


# --- one triggering case per rule ---------------------------------------------------------


@dataclass(frozen=True)
class Trigger:
    """Plans to write (id -> text or bytes, in phase 01-alpha), and where the finding lands."""

    name: str
    plans: dict[str, str | bytes]
    path: str  # the file the diagnostic names
    line: Callable[[str], int]  # the expected line, from that file's text
    severity: str
    also: frozenset[str] = field(default_factory=frozenset)  # codes that may come with it


def at(needle: str, nth: int = 1) -> Callable[[str], int]:
    return lambda text: line_of(text, needle, nth)


def line(number: int) -> Callable[[str], int]:
    return lambda _text: number


def without(text: str, key: str) -> str:
    """The plan text without the frontmatter field `key` (and its indented block)."""
    rows: list[str] = []
    skipping = False
    for row in text.split("\n"):
        if row.startswith(f"{key}:"):
            skipping = True
            continue
        if skipping and row.startswith((" ", "- ")):
            continue
        skipping = False
        rows.append(row)
    return "\n".join(rows)


BASE = plan_text()
TRIGGERS: dict[str, Trigger] = {
    "GSD001": Trigger(
        "no-frontmatter", {"01-01": "# Plan\n\n" + auto_task()}, PLAN_01, line(1), "error"
    ),
    "GSD002": Trigger("no-wave", {"01-01": without(BASE, "wave")}, PLAN_01, line(1), "error"),
    "GSD003": Trigger(
        "type-build",
        {"01-01": BASE.replace("type: execute", "type: build")},
        PLAN_01,
        at("type: build"),
        "error",
    ),
    "GSD010": Trigger(  # the first body line, after the closing fence
        "no-tasks",
        {"01-01": plan_text(tasks="")},
        PLAN_01,
        lambda t: line_of(t, "\n---\n") + 2,
        "warning",
    ),
    "GSD011": Trigger(
        "type-manual",
        {"01-01": plan_text(tasks=task("manual", "<name>n</name><action>a</action>\n"))},
        PLAN_01,
        at('<task type="manual"'),
        "error",
    ),
    "GSD012": Trigger(
        "auto-without-action",
        {
            "01-01": plan_text(
                tasks=task(
                    "auto",
                    "<name>n</name><files>src/x.py</files><verify>v</verify><done>d</done>\n",
                )
            )
        },
        PLAN_01,
        at("<task "),
        "error",
    ),
    "GSD013": Trigger(
        "auto-without-verify",
        {
            "01-01": plan_text(
                tasks=task(
                    "auto",
                    "<name>n</name><files>src/x.py</files><action>a</action><done>d</done>\n",
                )
            )
        },
        PLAN_01,
        at("<task "),
        "warning",
    ),
    "GSD014": Trigger(
        "checkpoint-in-autonomous-plan",
        {"01-01": plan_text(autonomous="true", tasks=HUMAN_VERIFY)},
        PLAN_01,
        at("<task "),
        "error",
    ),
    "GSD015": Trigger(
        "unclosed-task",
        {"01-01": plan_text(tasks=auto_task().removesuffix("</task>"))},
        PLAN_01,
        at("<task "),
        "error",
    ),
    "GSD020": Trigger(
        "shell-in-specialist",
        {"01-01": plan_text(tasks=auto_task(attrs=' specialist="$(id)"'))},
        PLAN_01,
        at("<task "),
        "error",
    ),
    "GSD021": Trigger(
        "no-roster",
        {"01-01": plan_text(tasks=auto_task(attrs=' specialist="python-pro"'))},
        PLAN_01,
        at("<task "),
        "warning",
    ),
    "GSD022": Trigger(
        "unknown-runner",
        {"01-01": plan_text(tasks=auto_task(attrs=' runner="gpt" model="o3"'))},
        PLAN_01,
        at("<task "),
        "error",
    ),
    "GSD023": Trigger(
        "shell-in-review",
        {"01-01": plan_text(tasks=auto_task(attrs=' review="$(id)"'))},
        PLAN_01,
        at("<task "),
        "error",
    ),
    "GSD024": Trigger(
        "plan-first-yes",
        {"01-01": plan_text(tasks=auto_task(attrs=' plan-first="yes"'))},
        PLAN_01,
        at("<task "),
        "error",
    ),
    "GSD030": Trigger(
        "absolute-files-modified",
        {"01-01": plan_text(files_modified="[/etc/passwd]")},
        PLAN_01,
        at("files_modified:"),
        "error",
    ),
    "GSD040": Trigger(
        "missing-dependency",
        {"01-01": plan_text(depends_on='["01-09"]', wave=2)},
        PLAN_01,
        at("depends_on:"),
        "error",
    ),
    "GSD041": Trigger(
        "two-plan-cycle",
        {
            "01-01": plan_text(plan="01", depends_on='["01-02"]', files_modified="[a.py]"),
            "01-02": plan_text(plan="02", depends_on='["01-01"]', files_modified="[b.py]"),
        },
        PLAN_01,
        at("depends_on:"),
        "error",
    ),
    "GSD042": Trigger(
        "wave-1-after-dependency",
        {
            "01-01": plan_text(plan="01", files_modified="[a.py]"),
            "01-02": plan_text(plan="02", depends_on='["01-01"]', wave=1, files_modified="[b.py]"),
        },
        PLAN_02,
        at("wave:"),
        "warning",
    ),
    "GSD043": Trigger(
        "wave-3-without-dependencies",
        {"01-01": plan_text(wave=3)},
        PLAN_01,
        at("wave:"),
        "warning",
        also=frozenset({"GSD042"}),
    ),
    "GSD044": Trigger(
        "two-wave-1-plans-share-a-file",
        {
            "01-01": plan_text(plan="01", files_modified="[src/shared.py]"),
            "01-02": plan_text(plan="02", files_modified="[src/shared.py]"),
        },
        PLAN_01,
        at("files_modified:"),
        "warning",
    ),
    "GSD045": Trigger(
        "two-files-one-id",
        {
            "01-01-a": plan_text(files_modified="[a.py]"),
            "01-01-b": plan_text(files_modified="[b.py]"),
        },
        f"{PHASE_DIR}/01-01-b-PLAN.md",
        line(1),
        "error",
    ),
    "GSD046": Trigger(
        "misnamed-plan",
        {"01-PLAN-02-foundation.md": plan_text(plan="02")},
        f"{PHASE_DIR}/01-PLAN-02-foundation.md",
        line(1),
        "warning",
    ),
    "GSD047": Trigger(
        "suppression-of-no-rule",
        {"01-01": BASE.replace("</objective>", "</objective> <!-- gsd: ignore GSD0133 -->")},
        PLAN_01,
        at("gsd: ignore"),
        "warning",
    ),
    "GSD050": Trigger(
        "latin-1",
        {"01-01": BASE.replace("Do the thing.", "Caf\xe9 time.").encode("latin-1")},
        PLAN_01,
        at("<objective>"),
        "error",
    ),
    "GSD060": Trigger(
        "misspelt-setting",
        {"01-01": BASE, "../../config.json": '{\n  "sandbox": {"writeable": []}\n}\n'},
        ".planning/config.json",
        line(2),
        "warning",
    ),
}


def write_plans(project: Project, plans: dict[str, str | bytes]) -> None:
    for name, content in plans.items():
        file = name if name.endswith((".md", ".json")) else f"{name}-PLAN.md"  # as is
        project.write(f"{PHASE_DIR}/{file}", content)


def test_every_rule_has_a_triggering_case() -> None:
    assert set(TRIGGERS) == set(RULES)


def test_rule_severities_match_the_spec() -> None:
    assert {code: rule.severity for code, rule in RULES.items()} == {
        code: trigger.severity for code, trigger in TRIGGERS.items()
    }


@pytest.mark.parametrize("code", [pytest.param(c, id=f"{c}-{t.name}") for c, t in TRIGGERS.items()])
def test_rule_is_triggered(project: Project, gsd, code: str) -> None:
    trigger = TRIGGERS[code]
    write_plans(project, trigger.plans)
    result, diagnostics = validate(gsd)
    hits = [d for d in diagnostics if d["code"] == code and d["path"] == trigger.path]
    assert hits, diagnostics
    text = (project.root / trigger.path).read_bytes().decode("utf-8", "replace")
    assert hits[0]["line"] == trigger.line(text)
    assert hits[0]["severity"] == trigger.severity
    assert codes(diagnostics) <= {code} | trigger.also, diagnostics  # nothing unrelated
    assert result.code == (1 if trigger.severity == "error" else 0)


# --- near misses: each main rule stays silent on a correct plan ---------------------------

NEAR_MISSES = [
    pytest.param({"01-01": BASE}, id="template-plan"),
    pytest.param({"01-01": BASE.replace("plan: 01", 'plan: "01"')}, id="quoted-plan-number"),
    pytest.param({"01-01": BASE.replace("type: execute", "type: tdd")}, id="type-tdd"),
    pytest.param(
        {"01-01": BASE.replace("files_modified", "files-modified")}, id="files-modified-spelling"
    ),
    pytest.param(
        {"01-01": plan_text(tasks=auto_task(attrs=' tdd="true" gate="blocking"'))},
        id="gate-blocking",
    ),
    pytest.param(
        {"01-01": plan_text(autonomous="false", tasks=HUMAN_VERIFY)}, id="human-verify-checkpoint"
    ),
    pytest.param(
        {"01-01": plan_text(autonomous="false", tasks=DECISION)}, id="decision-checkpoint"
    ),
    pytest.param(
        {"01-01": plan_text(autonomous="false", tasks=HUMAN_ACTION)}, id="human-action-checkpoint"
    ),
    pytest.param(
        {"01-01": plan_text(autonomous="False", tasks=auto_task() + "\n" + HUMAN_VERIFY)},
        id="autonomous-False-capitalised",
    ),
    pytest.param(
        {"01-01": plan_text(tasks=auto_task(files="src/../src/x.py"))}, id="dotdot-back-inside"
    ),
    pytest.param(
        {"01-01": plan_text(tasks=auto_task(attrs=' runner="gemini" model="gemini-2.5-pro"'))},
        id="runner-and-model-on-a-task",
    ),
    pytest.param(
        {
            "01-01": plan_text(files_modified="[a.py]"),
            "01-02": plan_text(plan="02", depends_on='["01-01"]', wave=2, files_modified="[a.py]"),
        },
        id="same-file-in-different-waves",
    ),
    pytest.param(
        {
            "01-01": plan_text(files_modified="[a.py]"),
            "01-02": plan_text(
                plan="02", depends_on='["01-01-PLAN.md"]', wave=2, files_modified="[b.py]"
            ),
        },
        id="long-form-dependency",
    ),
    pytest.param(
        {
            "01-01": plan_text(files_modified="[a.py]"),
            "01-02": plan_text(plan="02", files_modified="[b.py]"),
        },
        id="two-wave-1-plans-disjoint",
    ),
    pytest.param(
        {
            "01-01": plan_text(
                tasks=task(
                    "auto",
                    "<name>n</name><files>src/x.py</files>"
                    "<action>x = List<T> & y</action><verify>v</verify>"
                    "<done>d</done>\n",
                )
            )
        },
        id="generics-and-bare-ampersand",
    ),
    pytest.param(
        {"01-01": plan_text(tasks='```xml\n<task type="bogus">\n```\n' + auto_task())},
        id="task-in-fenced-code-is-ignored",
    ),
]


@pytest.mark.parametrize("plans", NEAR_MISSES)
def test_near_miss_is_clean(project: Project, gsd, plans: dict[str, str]) -> None:
    write_plans(project, plans)
    result, diagnostics = validate(gsd)
    assert diagnostics == []
    assert result.code == 0


# --- frontmatter fields ------------------------------------------------------------------


@pytest.mark.parametrize("key", REQUIRED_FIELDS)
def test_each_required_field_is_gsd002(project: Project, gsd, key: str) -> None:
    project.plan("01-01", without(BASE, key))
    result, diagnostics = validate(gsd)
    gsd002 = [d for d in diagnostics if d["code"] == "GSD002"]
    assert [(d["severity"], d["line"]) for d in gsd002] == [("error", 1)]
    assert f"`{key}`" in gsd002[0]["message"]
    assert result.code == 1


WRONG_VALUES = [  # (frontmatter line as written, the key it is reported on)
    pytest.param("type: build", "type", id="type-build"),
    pytest.param('plan: ""', "plan", id="plan-empty"),
    pytest.param("plan: [1]", "plan", id="plan-list"),
    pytest.param('plan: "01/../../../tmp/evil"', "plan", id="plan-path"),
    pytest.param("plan: 1a", "plan", id="plan-not-a-number"),
    pytest.param('plan: "01-02"', "plan", id="plan-long-form"),
    pytest.param("phase: {a: b}", "phase", id="phase-mapping"),
    pytest.param("wave: x", "wave", id="wave-word"),
    pytest.param("wave: -1", "wave", id="wave-negative"),
    pytest.param("wave: 1.5", "wave", id="wave-fraction"),
    pytest.param("wave: ²", "wave", id="wave-superscript-digit"),
    pytest.param("autonomous: maybe", "autonomous", id="autonomous-maybe"),
    pytest.param("depends_on: [[01-01]]", "depends_on", id="depends-on-nested-list"),
    pytest.param("depends_on: {a: b}", "depends_on", id="depends-on-mapping"),
    pytest.param("files_modified: [{a: b}]", "files_modified", id="files-modified-mappings"),
    pytest.param("must_haves: everything", "must_haves", id="must-haves-scalar"),
    pytest.param(
        "must_haves: {truths: [a], artifacts: [{provides: x}], key_links: []}",
        "must_haves",
        id="artifact-without-path",
    ),
    pytest.param(
        "must_haves: {truths: [a], artifacts: [], key_links: [{from: a}]}",
        "must_haves",
        id="key-link-without-to",
    ),
]


@pytest.mark.parametrize(("written", "key"), WRONG_VALUES)
def test_wrong_value_is_gsd003_on_its_line(project: Project, gsd, written: str, key: str) -> None:
    text = without(BASE, key).replace("---\n\n<objective>", f"{written}\n---\n\n<objective>")
    project.plan("01-01", text)
    result, diagnostics = validate(gsd)
    gsd003 = [d for d in diagnostics if d["code"] == "GSD003"]
    assert [(d["severity"], d["line"]) for d in gsd003] == [("error", line_of(text, written))], (
        diagnostics
    )
    assert f"`{key}`" in gsd003[0]["message"]
    assert result.code == 1


def test_wave_0_is_a_valid_value(project: Project, gsd) -> None:
    project.plan("01-01", plan_text(wave=0))
    _, diagnostics = validate(gsd)
    assert "GSD003" not in codes(diagnostics)


# --- task types: checked by type, not by the auto task's children -------------------------

CHECKPOINT_CASES = [  # (tasks, expected codes, where the finding is)
    pytest.param(HUMAN_VERIFY, set(), None, id="human-verify-complete"),
    pytest.param(
        HUMAN_VERIFY.replace("  <resume-signal>Type approved</resume-signal>\n", ""),
        {"GSD012"},
        "<task ",
        id="human-verify-without-resume-signal",
    ),
    pytest.param(
        HUMAN_VERIFY.replace(
            "<how-to-verify>Open it</how-to-verify>", "<how-to-verify> </how-to-verify>"
        ),
        {"GSD012"},
        "<task ",
        id="human-verify-with-empty-how-to-verify",
    ),
    pytest.param(
        HUMAN_VERIFY.replace("  <name>Look at it</name>\n", ""),
        set(),
        None,
        id="human-verify-without-name-as-upstream-writes-it",
    ),
    pytest.param(DECISION, set(), None, id="decision-complete"),
    pytest.param(
        DECISION.replace('<option id="pg">', "<option>"),
        {"GSD012"},
        "<option>",
        id="decision-option-without-id",
    ),
    pytest.param(
        DECISION.replace('<option id="pg">', "<choice>")
        .replace('<option id="sqlite">', "<choice>")
        .replace("</option>", "</choice>"),
        {"GSD012"},
        "<options>",
        id="decision-options-without-option",
    ),
    pytest.param(
        DECISION.split("  <options>")[0] + "  <resume-signal>r</resume-signal>\n</task>",
        {"GSD012"},
        "<task ",
        id="decision-without-options",
    ),
    pytest.param(HUMAN_ACTION, set(), None, id="human-action-complete"),
    pytest.param(
        HUMAN_ACTION.replace("  <instructions>Go to the site</instructions>\n", ""),
        {"GSD012"},
        "<task ",
        id="human-action-without-instructions",
    ),
]


@pytest.mark.parametrize(("tasks", "expected", "where"), CHECKPOINT_CASES)
def test_checkpoint_tasks_are_checked_by_their_type(
    project: Project, gsd, tasks: str, expected: set[str], where: str | None
) -> None:
    text = plan_text(autonomous="false", tasks=tasks)
    project.plan("01-01", text)
    result, diagnostics = validate(gsd)
    assert codes(diagnostics) == expected, diagnostics
    assert [(d["severity"], d["line"]) for d in diagnostics] == [
        (RULES[code].severity, line_of(text, where)) for code in expected if where
    ]
    assert result.code == (1 if "GSD012" in expected else 0)


def test_option_without_id_points_at_the_option(project: Project, gsd) -> None:
    text = plan_text(autonomous="false", tasks=DECISION.replace('<option id="sqlite">', "<option>"))
    project.plan("01-01", text)
    _, diagnostics = validate(gsd)
    assert [(d["code"], d["line"]) for d in diagnostics] == [("GSD012", line_of(text, "<option>"))]


@pytest.mark.parametrize(
    ("autonomous", "expected"),
    [
        pytest.param("true", {"GSD014"}, id="true"),
        pytest.param("false", set(), id="false"),
        pytest.param(None, {"GSD002", "GSD014"}, id="missing"),
    ],
)
def test_checkpoint_needs_autonomous_false(
    project: Project, gsd, autonomous: str | None, expected: set[str]
) -> None:
    text = plan_text(autonomous=autonomous or "x", tasks=auto_task() + "\n" + HUMAN_ACTION)
    if autonomous is None:
        text = without(text, "autonomous")
    project.plan("01-01", text)
    result, diagnostics = validate(gsd)
    assert codes(diagnostics) == expected
    gsd014 = [d for d in diagnostics if d["code"] == "GSD014"]
    assert [d["line"] for d in gsd014] == (
        [line_of(text, "checkpoint:human-action")] if gsd014 else []
    )
    assert result.code == (1 if expected else 0)


TASK_ATTRIBUTE_CASES = [  # (task open-tag attributes, expected codes)
    pytest.param(' gate="blocking-human"', set(), id="gate-blocking-human"),
    pytest.param(' gate="sometimes"', {"GSD011"}, id="gate-unknown"),
    pytest.param(' tdd="true"', set(), id="tdd"),
]


@pytest.mark.parametrize(("attrs", "expected"), TASK_ATTRIBUTE_CASES)
def test_task_attributes(project: Project, gsd, attrs: str, expected: set[str]) -> None:
    text = plan_text(tasks=auto_task(attrs=attrs))
    project.plan("01-01", text)
    _, diagnostics = validate(gsd)
    assert [(d["code"], d["line"]) for d in diagnostics] == [
        (c, line_of(text, "<task ")) for c in expected
    ]


def test_task_without_type_is_gsd011(project: Project, gsd) -> None:
    text = plan_text(tasks=auto_task().replace(' type="auto"', ""))
    project.plan("01-01", text)
    _, diagnostics = validate(gsd)
    assert [(d["code"], d["line"]) for d in diagnostics] == [("GSD011", line_of(text, "<task>"))]
    assert "no type" in diagnostics[0]["message"]


def test_unsafe_path_among_several_in_files(project: Project, gsd) -> None:
    text = plan_text(tasks=auto_task(files="src/x.py, ../outside.py\nsrc/y.py"))
    project.plan("01-01", text)
    _, diagnostics = validate(gsd)
    assert [(d["code"], d["line"]) for d in diagnostics] == [("GSD030", line_of(text, "<files>"))]
    assert "'../outside.py'" in diagnostics[0]["message"]


# --- specialists --------------------------------------------------------------------------

MALFORMED_NAMES = [
    pytest.param("x; touch {pwned}", id="semicolon-command"),
    pytest.param("$(id)", id="command-substitution"),
    pytest.param("a b", id="space"),
    pytest.param("../x", id="path"),
    pytest.param("-rf", id="leading-dash"),
    pytest.param("`id`", id="backticks"),
]


@pytest.mark.parametrize("name", MALFORMED_NAMES)
@pytest.mark.parametrize("form", ["attribute", "inline", "frontmatter"])
def test_malformed_specialist_is_gsd020_in_every_form(
    project: Project, gsd, tmp_path: Path, name: str, form: str
) -> None:
    pwned = tmp_path / "pwned"
    name = name.format(pwned=pwned)
    if form == "attribute":
        text = plan_text(tasks=auto_task(attrs=f' specialist="{name}"'))
    elif form == "inline":
        text = plan_text(tasks=auto_task().replace("  <name>", f"  specialist: {name}\n  <name>"))
    else:
        text = plan_text(tasks=auto_task()).replace(
            "wave: 1", f"wave: 1\ntasks:\n  - specialist: '{name}'"
        )
    project.write(ROSTER, "# Agents\n\n- **python-pro**: Python\n")
    project.plan("01-01", text)
    result, diagnostics = validate(gsd)
    assert [(d["code"], d["severity"], d["line"]) for d in diagnostics] == [
        ("GSD020", "error", line_of(text, "<task "))
    ]
    assert repr(name) in diagnostics[0]["message"]
    assert result.code == 1
    assert not pwned.exists()


@pytest.mark.parametrize(
    "attrs",
    [
        pytest.param(' specialist="null"', id="null"),
        pytest.param(' specialist=""', id="empty"),
        pytest.param(" specialist=\"'null'\"", id="quoted-null"),
        pytest.param("", id="absent"),
    ],
)
def test_null_or_empty_specialist_is_silent(project: Project, gsd, attrs: str) -> None:
    project.plan("01-01", plan_text(tasks=auto_task(attrs=attrs)))
    result, diagnostics = validate(gsd)
    assert diagnostics == []
    assert result.code == 0


ROSTER_TEXT = (
    "# Available agents\n\n- **python-pro**: Python expert\n- **voltagent-lang:rust-pro**: Rust\n"
)


@pytest.mark.parametrize(
    ("roster", "name", "expected"),
    [
        pytest.param(None, "python-pro", {"GSD021"}, id="no-roster-file"),
        pytest.param(ROSTER_TEXT, "python-pro", set(), id="in-roster"),
        pytest.param(ROSTER_TEXT, "voltagent-lang:rust-pro", set(), id="namespaced-in-roster"),
        pytest.param(ROSTER_TEXT, "golang-pro", {"GSD021"}, id="not-in-roster"),
        pytest.param(ROSTER_TEXT, "Python-Pro", {"GSD021"}, id="case-differs"),
    ],
)
@pytest.mark.parametrize("form", ["attribute", "inline", "frontmatter"])
def test_specialist_roster(
    project: Project, gsd, roster: str | None, name: str, expected: set[str], form: str
) -> None:
    if roster is not None:
        project.write(ROSTER, roster)
    if form == "attribute":
        text = plan_text(tasks=auto_task(attrs=f' specialist="{name}"'))
    elif form == "inline":
        text = plan_text(tasks=auto_task().replace("  <done>", f"  specialist: {name}\n  <done>"))
    else:
        text = plan_text().replace("wave: 1", f"wave: 1\ntasks: [{{specialist: '{name}'}}]")
    project.plan("01-01", text)
    result, diagnostics = validate(gsd)
    assert codes(diagnostics) == expected
    assert result.code == 0  # a warning alone
    if expected:
        [d] = diagnostics
        assert (d["severity"], d["line"]) == ("warning", line_of(text, "<task "))
        assert name in d["message"]
        strict, strict_diagnostics = validate(gsd, "--strict")
        assert [(d["code"], d["severity"]) for d in strict_diagnostics] == [("GSD021", "error")]
        assert strict.code == 1


SPECIALIST_FORMS = [  # (tasks, frontmatter lines to add, expected (code, task number) pairs)
    pytest.param(
        auto_task().replace("Write the code.", "Write\nspecialist: $(id)\ncode"),
        "",
        [],
        id="specialist-line-inside-action-is-text",
    ),
    pytest.param(
        auto_task(attrs=' specialist="python-pro"').replace(
            "  <name>", "  specialist: $(id)\n  <name>"
        ),
        "",
        [],
        id="attribute-wins-over-inline",
    ),
    pytest.param(
        auto_task(attrs=' specialist="python-pro"'),
        "tasks: [{specialist: '$(id)'}]",
        [],
        id="attribute-wins-over-frontmatter",
    ),
    pytest.param(
        auto_task() + "\n" + auto_task("Task 2"),
        "tasks: [{}, {specialist: 'a b'}]",
        [("GSD020", 2)],
        id="frontmatter-list-matches-task-positions",
    ),
    pytest.param(
        auto_task() + "\n" + auto_task("Task 2", attrs=' specialist="go pro"'),
        "",
        [("GSD020", 2)],
        id="second-task-attribute",
    ),
    pytest.param(
        auto_task().replace("  <name>", "  specialist: golang-pro\n  <name>"),
        "",
        [("GSD021", 1)],
        id="inline-not-in-roster",
    ),
]


@pytest.mark.parametrize(("tasks", "extra", "expected"), SPECIALIST_FORMS)
def test_specialist_forms(
    project: Project, gsd, tasks: str, extra: str, expected: list[tuple[str, int]]
) -> None:
    project.write(ROSTER, ROSTER_TEXT)
    text = plan_text(tasks=tasks)
    if extra:
        text = text.replace("wave: 1", f"wave: 1\n{extra}")
    project.plan("01-01", text)
    _, diagnostics = validate(gsd)
    assert [(d["code"], d["line"]) for d in diagnostics] == [
        (code, line_of(text, "<task ", number)) for code, number in expected
    ]


def test_specialist_line_in_fenced_code_is_not_the_inline_form(project: Project, gsd) -> None:
    example = "  ```yaml\n  specialist: $(id)\n  ```\n"
    project.plan("01-01", plan_text(tasks=auto_task().replace("  <name>", example + "  <name>")))
    _, diagnostics = validate(gsd)
    assert diagnostics == []


@pytest.mark.parametrize(
    "roster",
    [
        pytest.param("- **python-pro**: Python expert\n", id="bold"),
        pytest.param("- `python-pro`: Python expert\n", id="backticks"),
        pytest.param("python-pro\n", id="bare-name"),
        pytest.param(
            "# Agents\n\n```\n- **golang-pro**: example\n```\n- **python-pro**: Python\n",
            id="after-a-fence",
        ),
    ],
)
def test_roster_forms_are_read(project: Project, gsd, roster: str) -> None:
    project.write(ROSTER, roster)
    project.plan("01-01", plan_text(tasks=auto_task(attrs=' specialist="python-pro"')))
    result, diagnostics = validate(gsd, "--strict")
    assert diagnostics == []
    assert result.code == 0


def test_roster_example_in_a_fence_is_not_a_name(project: Project, gsd) -> None:
    project.write(
        ROSTER, "# Agents\n\n```\n- **golang-pro**: example\n```\n- **python-pro**: Python\n"
    )
    project.plan("01-01", plan_text(tasks=auto_task(attrs=' specialist="golang-pro"')))
    _, diagnostics = validate(gsd)
    assert codes(diagnostics) == {"GSD021"}


def test_warnings_alone_exit_0_and_1_with_strict(project: Project, gsd) -> None:
    project.plan("01-01", plan_text(wave=3))  # GSD042 + GSD043, both warnings
    relaxed = gsd("validate")
    assert relaxed.code == 0
    assert "0 errors, 2 warnings in 1 file" in relaxed.err
    assert f"{PLAN_01}:{line_of(plan_text(wave=3), 'wave:')}:1: warning GSD043 " in relaxed.out
    assert gsd("validate", "--strict").code == 1


# --- the phase graph ----------------------------------------------------------------------


def test_cycle_message_lists_the_path(project: Project, gsd) -> None:
    write_plans(project, TRIGGERS["GSD041"].plans)
    result, diagnostics = validate(gsd)
    cycles = [d for d in diagnostics if d["code"] == "GSD041"]
    assert {d["path"] for d in cycles} == {PLAN_01, PLAN_02}
    assert all("01-01 -> 01-02 -> 01-01" in d["message"] for d in cycles)
    assert result.code == 1
    waves = gsd("waves", "1")
    assert waves.code == 1
    assert "01-01 -> 01-02 -> 01-01" in waves.out


def test_three_plan_cycle(project: Project, gsd) -> None:
    write_plans(
        project,
        {
            "01-01": plan_text(plan="01", depends_on='["01-03"]', files_modified="[a.py]"),
            "01-02": plan_text(plan="02", depends_on='["01-01"]', files_modified="[b.py]"),
            "01-03": plan_text(plan="03", depends_on='["01-02"]', files_modified="[c.py]"),
        },
    )
    _, diagnostics = validate(gsd)
    cycles = [d for d in diagnostics if d["code"] == "GSD041"]
    assert len(cycles) == 3
    assert all("01-01 -> 01-03 -> 01-02 -> 01-01" in d["message"] for d in cycles)


def test_self_dependency_is_a_cycle(project: Project, gsd) -> None:
    project.plan("01-01", plan_text(depends_on='["01-01"]'))
    _, diagnostics = validate(gsd)
    assert "GSD041" in codes(diagnostics)


def test_validating_one_file_reports_only_that_file(project: Project, gsd) -> None:
    write_plans(project, TRIGGERS["GSD041"].plans)
    result, diagnostics = validate(gsd, PLAN_02)
    assert [(d["code"], d["path"]) for d in diagnostics] == [("GSD041", PLAN_02)]
    assert json.loads(result.out)["files"] == 1


def test_dependency_on_an_earlier_phase_is_not_gsd040(project: Project, gsd) -> None:
    project.plan("01-01", plan_text(files_modified="[a.py]"))
    project.plan("02-01", plan_text(phase="02-beta", depends_on='["01-01"]'), phase_dir="02-beta")
    result, diagnostics = validate(gsd)
    assert diagnostics == []
    assert result.code == 0


def test_dependency_on_a_missing_plan_of_another_phase_is_gsd040(project: Project, gsd) -> None:
    project.plan("01-01", plan_text(files_modified="[a.py]"))
    text = plan_text(phase="02-beta", depends_on='["01-07"]')
    project.plan("02-01", text, phase_dir="02-beta")
    result, diagnostics = validate(gsd)
    assert [(d["code"], d["path"], d["line"]) for d in diagnostics] == [
        ("GSD040", ".planning/phases/02-beta/02-01-PLAN.md", line_of(text, "depends_on:"))
    ]
    assert "01-07" in diagnostics[0]["message"]
    assert result.code == 1


def test_dependency_on_a_later_phase_is_gsd040(project: Project, gsd) -> None:
    project.plan("01-01", plan_text(depends_on='["02-01"]'))
    project.plan("02-01", plan_text(phase="02-beta", files_modified="[b.py]"), phase_dir="02-beta")
    _, diagnostics = validate(gsd)
    assert [(d["code"], d["path"]) for d in diagnostics] == [("GSD040", PLAN_01)]


def test_shared_file_in_wave_1_warns_both_plans(project: Project, gsd) -> None:
    write_plans(project, TRIGGERS["GSD044"].plans)
    result, diagnostics = validate(gsd)
    assert sorted((d["code"], d["path"], d["severity"]) for d in diagnostics) == [
        ("GSD044", PLAN_01, "warning"),
        ("GSD044", PLAN_02, "warning"),
    ]
    assert all("src/shared.py" in d["message"] for d in diagnostics)
    assert result.code == 0


def test_duplicate_id_names_the_other_file(project: Project, gsd) -> None:
    write_plans(project, TRIGGERS["GSD045"].plans)
    _, diagnostics = validate(gsd)
    [d] = diagnostics
    assert d["code"] == "GSD045"
    assert f"{PHASE_DIR}/01-01-a-PLAN.md" in d["message"]


# --- output formats and options -----------------------------------------------------------


def two_findings(project: Project) -> str:
    """A plan with an error (GSD011) and a warning (GSD013); returns its text."""
    text = plan_text(
        tasks=task("manual", "<name>n</name><action>a</action>\n")
        + "\n"
        + task("auto", "<name>n</name><files>src/x.py</files><action>a</action><done>d</done>\n")
    )
    project.plan("01-01", text)
    return text


def test_github_format(project: Project, gsd) -> None:
    text = two_findings(project)
    result = gsd("validate", "--format", "github")
    assert result.code == 1
    error, warning = result.out.splitlines()
    assert error.startswith(f"::error file={PLAN_01},line={line_of(text, '<task ')},")
    assert "::GSD011 " in error
    assert warning.startswith(f"::warning file={PLAN_01},line={line_of(text, '<task ', 2)},")
    assert "::GSD013 " in warning


def test_sarif_format(project: Project, gsd) -> None:
    text = two_findings(project)
    result = gsd("validate", "--format", "sarif")
    assert result.code == 1
    log = json.loads(result.out)
    assert log["version"] == "2.1.0"
    [run] = log["runs"]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == set(RULES)
    found = [
        (
            r["ruleId"],
            r["level"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
        )
        for r in run["results"]
    ]
    assert found == [
        ("GSD011", "error", PLAN_01, line_of(text, "<task ")),
        ("GSD013", "warning", PLAN_01, line_of(text, "<task ", 2)),
    ]


def test_phase_option_validates_only_that_phase(project: Project, gsd) -> None:
    project.plan("01-01", plan_text(wave="x"))
    project.plan("02-01", plan_text(phase="02-beta", wave="y"), phase_dir="02-beta")
    everything, all_diagnostics = validate(gsd)
    assert {d["path"] for d in all_diagnostics} == {
        PLAN_01,
        ".planning/phases/02-beta/02-01-PLAN.md",
    }
    result, diagnostics = validate(gsd, "--phase", "1")
    assert [(d["code"], d["path"]) for d in diagnostics] == [("GSD003", PLAN_01)]
    assert json.loads(result.out)["files"] == 1
    assert result.code == 1
    _, second = validate(gsd, "--phase", "02")
    assert {d["path"] for d in second} == {".planning/phases/02-beta/02-01-PLAN.md"}


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_rules_command_lists_every_code(gsd, fmt: str) -> None:
    result = gsd("rules", "--format", fmt)
    assert result.code == 0
    for code in RULES:
        assert code in result.out
    if fmt == "json":
        table = json.loads(result.out)
        assert [(r["code"], r["severity"]) for r in table] == [
            (c, r.severity) for c, r in RULES.items()
        ]


# --- plan ids -----------------------------------------------------------------------------

EVIL = "01/../../../tmp/evil"


def test_a_plan_value_that_is_a_path_never_becomes_the_plan_id(project: Project, gsd) -> None:
    """With no id in the file name the id comes from the frontmatter, and only if it is one."""
    text = plan_text(plan=f'"{EVIL}"')
    project.write(f"{PHASE_DIR}/alpha-PLAN.md", text)
    result, diagnostics = validate(gsd)
    assert [(d["code"], d["line"]) for d in diagnostics] == [("GSD003", line_of(text, "plan:"))]
    assert EVIL in diagnostics[0]["message"]
    assert result.code == 1
    waves = gsd("waves", "1", "--format", "json")
    assert json.loads(waves.out)["plans"] == 0  # not scheduled under any id
    shown = gsd("show", f"{PHASE_DIR}/alpha-PLAN.md", "--format", "json")
    assert json.loads(shown.out)["plans"][0]["id"] == ""
    assert "evil" not in gsd("execute-phase", "1", "--dry-run").out


def test_a_plan_named_by_its_frontmatter_alone(project: Project, gsd) -> None:
    project.write(f"{PHASE_DIR}/alpha-PLAN.md", plan_text(plan="02"))
    _, diagnostics = validate(gsd)
    assert diagnostics == []
    assert json.loads(gsd("waves", "1", "--format", "json").out)["waves"][0]["plans"] == ["01-02"]


def test_a_phase_without_its_number_and_no_id_in_the_file_name(project: Project, gsd) -> None:
    text = plan_text(phase="alpha")
    project.write(f"{PHASE_DIR}/alpha-PLAN.md", text)
    _, diagnostics = validate(gsd)
    assert [(d["code"], d["line"]) for d in diagnostics] == [("GSD003", line_of(text, "phase:"))]


@pytest.mark.parametrize(
    "depends_on",
    [
        pytest.param('["01-01"]', id="once"),
        pytest.param('["01-01", "01-01"]', id="twice"),
        pytest.param('["01-01", "01-01-PLAN.md"]', id="twice-in-two-spellings"),
    ],
)
def test_a_repeated_dependency_does_not_hide_gsd042(project: Project, gsd, depends_on: str) -> None:
    project.plan("01-01")
    text = plan_text(plan="02", depends_on=depends_on, files_modified="[src/y.py]")
    project.plan("01-02", text)  # wave 1, but 01-01 puts it in wave 2
    _, diagnostics = validate(gsd)
    assert [(d["code"], d["path"], d["line"]) for d in diagnostics] == [
        ("GSD042", PLAN_02, line_of(text, "wave:"))
    ]


def test_two_findings_on_one_line_come_out_in_one_order(project: Project) -> None:
    """Two GSD002s on line 1 sorted by where and code alone came out in the order of a
    set, which changes with PYTHONHASHSEED: the message breaks the tie."""
    project.plan("01-01", without(without(BASE, "wave"), "type"))
    outputs = set()
    for seed in ("1", "2", "3", "4", "5"):
        done = subprocess.run(
            [sys.executable, "-m", "gsd", "validate", "--format", "json"],
            cwd=project.root,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert done.returncode == 1, done.stderr
        outputs.add(done.stdout)
    assert len(outputs) == 1
    found = [d for d in json.loads(outputs.pop())["diagnostics"] if d["code"] == "GSD002"]
    assert [d["message"] for d in found] == sorted(d["message"] for d in found)
    assert len(found) == 2
