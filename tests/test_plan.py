"""PLAN.md parsing: frontmatter, lenient task blocks, children, line numbers."""

from __future__ import annotations

import pytest

from gsd.core.models import Plan, is_plan_id
from gsd.formats.planning.plan import parse, parse_bytes
from tests.conftest import plan_text

pytestmark = pytest.mark.unit  # `make test-fast` runs these

FM = "---\nphase: 01-a\nplan: 01\n---\n"


@pytest.mark.parametrize(
    ("body", "names"),
    [
        pytest.param('<task type="auto"><name>A</name></task>', ["A"], id="one-line"),
        pytest.param(
            '<tasks>\n<task type="auto">\n<name>A</name>\n</task>\n'
            '<task type="auto">\n<name>B</name>\n</task>\n</tasks>\n',
            ["A", "B"],
            id="two-tasks",
        ),
        pytest.param(
            '```xml\n<task type="auto"><name>X</name></task>\n```\n'
            '<task type="auto"><name>A</name></task>\n',
            ["A"],
            id="fenced-example-ignored",
        ),
        pytest.param(
            '```markdown\nintro\n```bash\n<task type="auto"><name>X</name></task>\n```\n```\n'
            '<task type="auto"><name>A</name></task>\n',
            ["A"],
            id="nested-fences-closed-by-two-bare-lines",
        ),
        pytest.param(
            '~~~\n<task type="auto"><name>X</name></task>\n~~~\n'
            '<task type="auto"><name>A</name></task>\n',
            ["A"],
            id="tilde-fence",
        ),
        pytest.param(
            'See `<task>` and `</task>` markers.\n<task type="auto"><name>A</name></task>\n',
            ["A"],
            id="inline-code-tags-ignored",
        ),
        pytest.param(
            '<task type="auto">\n<name>A</name>\n<action>use List<T> & Map<K, V></action>\n'
            "</task>\n",
            ["A"],
            id="not-well-formed-xml",
        ),
        pytest.param("<tasks></tasks>", [], id="no-tasks"),
        pytest.param('<task type="auto"/>', [""], id="self-closing"),
    ],
)
def test_task_blocks(body: str, names: list[str]) -> None:
    plan = parse(FM + body)
    assert [t.name for t in plan.tasks] == names


def test_child_text_is_kept_exactly() -> None:
    action = "\n  line one &amp; <b>bold</b>\n\n    indented `code` &xxe;\n  "
    plan = parse(FM + f'<task type="auto">\n<name>A</name>\n<action>{action}</action>\n</task>\n')
    assert plan.tasks[0].child_text("action") == action


def test_line_numbers_of_tasks_and_children() -> None:
    text = FM + '\n<tasks>\n<task type="auto">\n  <name>A</name>\n  <files>a.py</files>\n</task>\n'
    task = parse(text).tasks[0]
    assert task.line == 7
    assert [(c.tag, c.line) for c in task.children] == [("name", 8), ("files", 9)]


def test_bom_and_crlf_give_the_same_plan_and_lines() -> None:
    text = plan_text()
    crlf = ("\ufeff" + text).replace("\n", "\r\n").encode()
    plain, other = parse_bytes(text.encode(), "p"), parse_bytes(crlf, "p")
    assert plain.frontmatter == other.frontmatter
    assert [(t.line, t.name) for t in plain.tasks] == [(t.line, t.name) for t in other.tasks]
    assert other.diagnostics == []


@pytest.mark.parametrize(
    ("task", "specialist", "form"),
    [
        pytest.param(
            '<task type="auto" specialist="python-pro"><name>A</name></task>',
            "python-pro",
            "attribute",
            id="attribute",
        ),
        pytest.param(
            "<task type='auto' specialist='voltagent-lang:python-pro'><name>A</name></task>",
            "voltagent-lang:python-pro",
            "attribute",
            id="namespaced-single-quotes",
        ),
        pytest.param(
            '<task type="auto">\n  specialist: postgres-pro\n  <name>A</name>\n</task>',
            "postgres-pro",
            "inline",
            id="inline-line",
        ),
        pytest.param(
            '<task type="auto">\n  <name>A</name>\n  <action>\nspecialist: no\n</action>\n</task>',
            None,
            None,
            id="inline-inside-child-is-not-the-form",
        ),
        pytest.param(
            '<task type="auto" specialist="">\n<name>A</name></task>',
            "",
            "attribute",
            id="empty-attribute",
        ),
        pytest.param('<task type="auto"><name>A</name></task>', None, None, id="none"),
    ],
)
def test_specialist_forms(task: str, specialist: str | None, form: str | None) -> None:
    parsed = parse(FM + task).tasks[0]
    assert (parsed.specialist, parsed.specialist_form) == (specialist, form)


def test_frontmatter_tasks_list_is_the_third_form() -> None:
    text = (
        "---\nphase: 01-a\nplan: 01\ntasks:\n  - specialist: typescript-pro\n  - {}\n---\n"
        '<task type="auto"><name>A</name></task>\n<task type="auto" specialist="x">'
        "<name>B</name></task>\n"
    )
    tasks = parse(text).tasks
    assert (tasks[0].specialist, tasks[0].specialist_form) == ("typescript-pro", "frontmatter")
    assert (tasks[1].specialist, tasks[1].specialist_form) == ("x", "attribute")


def test_frontmatter_values_stay_strings() -> None:
    plan = parse("---\nplan: 01\nwave: 2\ncompleted: 2026-01-02\nautonomous: false\n---\n")
    assert plan.frontmatter == {
        "plan": "01",
        "wave": "2",
        "completed": "2026-01-02",
        "autonomous": "false",
    }
    assert (plan.wave, plan.autonomous) == (2, False)


def test_task_attributes_and_files() -> None:
    task = parse(
        FM + '<task type="auto" tdd="true" gate="blocking">\n<name>A</name>\n'
        "<files>src/a.py, src/b.py\nsrc/c.py</files>\n</task>"
    ).tasks[0]
    assert task.attrs == {"type": "auto", "tdd": "true", "gate": "blocking"}
    assert task.files == ["src/a.py", "src/b.py", "src/c.py"]


def test_verify_automated_and_decision_options_are_read() -> None:
    text = FM + (
        '<task type="checkpoint:decision">\n<decision>Which?</decision>\n<options>\n'
        '  <option id="a"><name>A</name><pros>fast</pros><cons>new</cons></option>\n'
        '  <option id="b"><name>B</name></option>\n</options>\n'
        "<verify><automated>pytest -q</automated><human-check>look</human-check></verify>\n"
        "</task>"
    )
    task = parse(text).tasks[0]
    options = task.child("options")
    assert options is not None
    assert [o.attrs["id"] for o in options.children] == ["a", "b"]
    verify = task.child("verify")
    assert verify is not None
    assert [(c.tag, c.text) for c in verify.children] == [
        ("automated", "pytest -q"),
        ("human-check", "look"),
    ]


def test_plan_ids() -> None:
    from gsd.core.models import normalize_plan_ref, plan_id_from_filename

    assert plan_id_from_filename("x/03-01-auth-PLAN.md") == "03-01"
    assert plan_id_from_filename("02.1-01-PLAN.md") == "02.1-01"
    assert plan_id_from_filename("12A-03-PLAN.md") == "12A-03"
    assert normalize_plan_ref('"01-02"') == "01-02"
    assert normalize_plan_ref("01-foundation/01-02-PLAN.md") == "01-02"


@pytest.mark.parametrize(
    ("path", "phase", "number", "expected"),
    [
        pytest.param("p/03-01-auth-PLAN.md", "01-x", "02", "03-01", id="file-name-wins"),
        pytest.param("p/auth-PLAN.md", "03-auth", "02", "03-02", id="from-frontmatter"),
        pytest.param("p/auth-PLAN.md", "03-auth", "01/../../x", "", id="plan-is-a-path"),
        pytest.param("p/auth-PLAN.md", "../03", "01", "", id="phase-is-a-path"),
        pytest.param("p/auth-PLAN.md", "03-auth", "01\n", "", id="trailing-newline"),
    ],
)
def test_plan_id_is_always_a_plan_id_or_empty(
    path: str, phase: str, number: str, expected: str
) -> None:
    plan = Plan(path)
    plan.frontmatter = {"phase": phase, "plan": number}
    assert plan.id == expected
    assert expected == "" or is_plan_id(plan.id)
