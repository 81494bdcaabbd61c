"""Which rules `gsd validate` reports: --select, --ignore, config.json's `validate`
section, and the `<!-- gsd: ignore -->` comment; and validate's one table of options."""

from __future__ import annotations

import json
import re

import pytest

from gsd.cli import lint
from gsd.core.rules import RULES
from gsd.core.rules.select import Selection, parse_codes
from gsd.formats.lines import suppressions
from tests.conftest import Project, Run, git, plan_text

PLAN = ".planning/phases/01-alpha/01-01-PLAN.md"
BOGUS = '<task type="bogus">\n<name>n</name>\n<action>a</action>\n</task>'  # GSD011, error
NO_VERIFY = (
    '<task type="auto">\n<name>n</name><action>a</action><files>x.py</files><done>d</done>\n</task>'
)


def findings(gsd, *args: str) -> tuple[Run, list[tuple[str, int]]]:
    result = gsd("validate", "--format", "json", *args)
    assert "Traceback" not in result.err
    if result.code == 2:
        return result, []
    return result, [(d["code"], d["line"]) for d in json.loads(result.out)["diagnostics"]]


def write(project: Project, tasks: str, **fields: object) -> str:
    text = plan_text(tasks=tasks, **fields)  # type: ignore[arg-type]
    project.write(PLAN, text)
    return text


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def three(project: Project) -> str:
    """A plan with GSD003 (wave), GSD011 (a bogus task) and GSD013 (no <verify>)."""
    return write(project, f"{BOGUS}\n\n{NO_VERIFY}", wave="soon")


def test_select_and_ignore_by_code_and_prefix(project: Project, gsd) -> None:
    three(project)
    _, every = findings(gsd)
    assert {code for code, _ in every} == {"GSD003", "GSD011", "GSD013"}
    assert {c for c, _ in findings(gsd, "--select", "GSD01")[1]} == {"GSD011", "GSD013"}
    assert {c for c, _ in findings(gsd, "--select", "gsd003,GSD013")[1]} == {"GSD003", "GSD013"}
    assert {c for c, _ in findings(gsd, "--ignore", "GSD01")[1]} == {"GSD003"}
    assert {c for c, _ in findings(gsd, "--ignore", "GSD003 GSD011")[1]} == {"GSD013"}
    # the longer code wins; a tie goes to --ignore
    both = ("--select", "GSD013", "--ignore", "GSD01")
    assert {c for c, _ in findings(gsd, *both)[1]} == {"GSD013"}
    assert findings(gsd, "--select", "GSD01", "--ignore", "GSD01")[1] == []


def test_the_selection_as_ruff_reads_it() -> None:
    assert Selection().keeps("GSD047")
    assert not Selection(("GSD01",), ()).keeps("GSD003")
    assert Selection(("GSD0",), ("GSD01",)).keeps("GSD003")
    assert not Selection(("GSD0",), ("GSD01",)).keeps("GSD013")
    assert Selection(("GSD013",), ("GSD01",)).keeps("GSD013")
    assert parse_codes("GSD01, gsd040", "--select") == ("GSD01", "GSD040")


def test_only_ignored_errors_left_exit_zero(project: Project, gsd) -> None:
    three(project)
    assert gsd("validate").code == 1
    result = gsd("validate", "--ignore", "GSD003,GSD011")
    assert result.code == 0
    assert "GSD013" in result.out and "GSD011" not in result.out
    assert result.err == "0 errors, 1 warning in 1 file\n"
    assert gsd("validate", "--strict", "--ignore", "GSD003,GSD011").code == 1
    assert gsd("validate", "--strict", "--ignore", "GSD0").code == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--select", "GSD0133"), "gsd: error: --select: 'GSD0133' is no rule's code"),
        (("--ignore", "GSD013,GSD99"), "gsd: error: --ignore: 'GSD99' is no rule's code"),
    ],
)
def test_an_unknown_code_is_a_usage_error(project: Project, gsd, args, words: str) -> None:
    three(project)
    result = gsd("validate", *args)
    assert result.code == 2 and result.out == ""
    [line] = result.err.splitlines()
    assert line.startswith(words), line
    assert "did you mean GSD013?" in line or "gsd rules" in line


def test_the_did_you_mean() -> None:
    with pytest.raises(Exception, match=r"did you mean GSD013\?"):
        parse_codes("GSD0133", "--select")


def config(project: Project, section: object) -> None:
    project.write(".planning/config.json", json.dumps({"validate": section}, indent=2) + "\n")


def test_config_selects_and_ignores(project: Project, gsd) -> None:
    three(project)
    config(project, {"select": ["GSD01"]})
    assert {c for c, _ in findings(gsd)[1]} == {"GSD011", "GSD013"}
    config(project, {"ignore": ["GSD011", "GSD003"]})
    result, found = findings(gsd)
    assert {c for c, _ in found} == {"GSD013"} and result.code == 0


def test_the_command_line_over_the_config(project: Project, gsd) -> None:
    three(project)
    config(project, {"select": ["GSD01"], "ignore": ["GSD013"]})
    assert {c for c, _ in findings(gsd)[1]} == {"GSD011"}
    # --select replaces the config's select; --ignore adds to its ignore
    assert {c for c, _ in findings(gsd, "--select", "GSD")[1]} == {"GSD003", "GSD011"}
    assert findings(gsd, "--ignore", "GSD011")[1] == []


def test_a_bad_config_is_one_line(project: Project, gsd) -> None:
    three(project)
    config(project, {"ignore": ["GSD0111"]})
    result = gsd("validate")
    assert result.code == 2
    assert result.err.splitlines() == [
        "gsd: error: .planning/config.json:3: `validate.ignore`: 'GSD0111' is no rule's code "
        "nor the start of one (did you mean GSD011?) (`gsd rules` lists the codes)"
    ]
    config(project, {"select": "GSD01"})
    [line] = gsd("validate").err.splitlines()
    assert line.startswith("gsd: error: .planning/config.json:3: `validate.select` must be a list")


def test_a_misspelt_key_of_the_section_is_gsd060(project: Project, gsd) -> None:
    project.plan("01-01")
    config(project, {"ignroe": ["GSD013"]})
    result = gsd("validate")
    assert result.out.splitlines() == [
        ".planning/config.json:3:1: warning GSD060 `validate.ignroe` is not a setting gsd "
        "reads: it has no effect (did you mean validate.ignore?)"
    ]


def test_the_settings_model_reads_the_section() -> None:
    from gsd.formats.settings import InvalidSettings, Settings, parse

    assert Settings().rules.select == ["GSD"]
    assert parse('{"validate": {"ignore": ["GSD013"]}}').rules.ignore == ["GSD013"]
    with pytest.raises(InvalidSettings, match="`validate.select` must be a list of rule codes"):
        parse('{"validate": {"select": ["GSD9"]}}')


# --- <!-- gsd: ignore --> ------------------------------------------------------------------


def test_a_comment_at_the_end_of_the_line(project: Project, gsd) -> None:
    text = write(
        project, BOGUS + "\n\n" + NO_VERIFY.replace(">\n", "> <!-- gsd: ignore GSD013 -->\n", 1)
    )
    result, found = findings(gsd)
    assert found == [("GSD011", line_of(text, "bogus"))]
    assert result.code == 1


def test_a_comment_alone_on_the_line_above(project: Project, gsd) -> None:
    text = write(project, f"<!-- gsd: ignore GSD011, GSD013 -->\n{BOGUS}\n\n{NO_VERIFY}")
    assert findings(gsd)[1] == [("GSD013", line_of(text, '"auto"'))]
    write(project, f"<!-- gsd: ignore -->\n{BOGUS}\n\n<!-- gsd:ignore GSD01 -->\n{NO_VERIFY}")
    result, found = findings(gsd)
    assert found == [] and result.code == 0


def test_a_comment_hides_only_its_own_line(project: Project, gsd) -> None:
    write(project, f"{NO_VERIFY}\n<!-- gsd: ignore GSD013 -->\n\n{BOGUS}")  # a blank between
    assert {c for c, _ in findings(gsd)[1]} == {"GSD011", "GSD013"}
    write(project, f"<!-- gsd: ignore GSD013 -->\n{BOGUS}\n\n{NO_VERIFY}")  # another line
    assert {c for c, _ in findings(gsd)[1]} == {"GSD011", "GSD013"}


def test_a_comment_naming_no_rule_is_gsd047(project: Project, gsd) -> None:
    text = write(project, f"<!-- gsd: ignore GSD0111 -->\n{BOGUS}")
    result = gsd("validate")
    assert result.out.splitlines() == [
        f"{PLAN}:{line_of(text, 'gsd: ignore')}:1: warning GSD047 this `gsd: ignore` hides "
        "nothing: 'GSD0111' is no rule's code nor the start of one (did you mean GSD011?)",
        f"{PLAN}:{line_of(text, 'bogus')}:1: error GSD011 task 1 has type 'bogus'; allowed: "
        "auto, checkpoint:human-verify, checkpoint:decision, checkpoint:human-action",
    ]
    assert gsd("validate", "--ignore", "GSD047").out.count("GSD047") == 0


def test_comments_are_read_from_the_line_alone() -> None:
    text = "a <!-- gsd: ignore GSD013 -->\n  <!--gsd: ignore-->\nb\n`<!-- gsd: ignore -->` c\n"
    assert [(s.line, s.codes, s.at) for s in suppressions(text)] == [
        (1, ("GSD013",), 1),
        (3, (), 2),
    ]


def test_a_plan_with_a_comment_still_reads_the_same(project: Project, gsd) -> None:
    """The comment is not a child of the task: `gsd show` sees the same task."""
    write(project, NO_VERIFY)
    plain = json.loads(gsd("show", PLAN, "--format", "json").out)["plans"][0]["tasks"]
    write(
        project, "<!-- gsd: ignore -->\n" + NO_VERIFY.replace(">\n", "> <!-- gsd: ignore -->\n", 1)
    )
    shown = gsd("show", PLAN, "--format", "json")
    assert shown.code == 0
    [task] = json.loads(shown.out)["plans"][0]["tasks"]
    assert {**task, "line": plain[0]["line"]} == plain[0]  # one line down, the same task


# --- one table of options ------------------------------------------------------------------


def test_help_lists_every_option_of_the_table(gsd) -> None:
    result = gsd("validate", "--help")
    assert result.code == 0
    for option in lint.OPTIONS:
        for name in option.names:
            assert re.search(rf"(^|[ ,]){re.escape(name)}\b", result.out, re.M), name


def test_the_table_sets_every_field_of_options() -> None:
    assert {o.field for o in lint.OPTIONS} == set(lint.Options._fields) - {"paths"}


def test_the_fast_path_and_click_agree(project: Project, gsd, capsys) -> None:
    """Every option of the table through the fast path and through Click."""
    from gsd.cli.app import run

    three(project)
    args = ["--select", "GSD0", "--ignore", "GSD003", "--strict", "-j", "1", "--format", "json"]
    assert lint.parse(args) is not None  # the fast path takes them all
    fast = gsd("validate", *args)
    capsys.readouterr()
    code = run(["validate", *args])
    assert (code, capsys.readouterr().out) == (fast.code, fast.out)
    assert [d["code"] for d in json.loads(fast.out)["diagnostics"]] == ["GSD011", "GSD013"]


def test_every_rule_is_in_the_rules_table_of_plans_md() -> None:
    """docs/PLANS.md's table is each rule's registered docs (or its summary)."""
    from tests.conftest import REPO

    text = (REPO / "docs" / "PLANS.md").read_text(encoding="utf-8")
    rows = [r for r in text.splitlines() if r.startswith("| GSD")]
    expected = [
        f"| {code} | {rule.severity}{' (error with `--strict`)' if rule.strict else ''} "
        f"| {rule.explained} |"
        for code, rule in RULES.items()
    ]
    assert rows == expected


def test_forked_workers_read_the_comments_too(project: Project, monkeypatch) -> None:
    from gsd.core.rules.select import Selection
    from gsd.io.plans import project as project_io
    from gsd.io.plans import validate as validate_io

    monkeypatch.setattr(validate_io, "PARALLEL_MIN_PLANS", 1)
    for phase in ("01-alpha", "02-beta"):
        text = plan_text(phase=phase, tasks=f"<!-- gsd: ignore GSD011 -->\n{BOGUS}\n\n{NO_VERIFY}")
        project.write(f".planning/phases/{phase}/{phase[:2]}-01-PLAN.md", text)
    report = validate_io.validate(
        project_io.Project(project.root), [".planning"], jobs=2, selection=Selection()
    )
    assert sorted(d.code for d in report.diagnostics) == ["GSD013", "GSD013"]


def test_a_misnamed_plan_file_reads_its_comment(project: Project, gsd) -> None:
    project.write(".planning/phases/01-alpha/01-PLAN-02-x.md", "# plan\n")
    assert [c for c, _ in findings(gsd)[1]] == ["GSD046"]
    project.write(".planning/phases/01-alpha/01-PLAN-02-x.md", "# plan <!-- gsd: ignore -->\n")
    assert findings(gsd)[1] == []


def test_gsd_rules_says_how_to_choose_and_hide_and_its_example_runs(project: Project, gsd) -> None:
    """`gsd rules` ends with how to select, ignore and suppress; its example command is
    one `gsd validate` accepts and does what it says."""
    footer = gsd("rules").out.split("\n\n")[-1]
    assert "<!-- gsd: ignore GSD013 -->" in footer and '"validate"' in footer
    example = footer.split("Choose: gsd ")[1].split(" (or")[0].split()
    assert example == ["validate", "--select", "GSD01,GSD040", "--ignore", "GSD013"]
    three(project)
    assert {c for c, _ in findings(gsd, *example[1:])[1]} == {"GSD011"}


def test_staged_validation_reads_the_staged_config(project: Project, gsd) -> None:
    """`--staged` checks what is about to be committed: its config.json's `validate`
    section too, not the working tree's."""
    three(project)
    config(project, {"ignore": ["GSD011", "GSD003"]})
    git(project.root, "init", "-q", "-b", "main")
    git(project.root, "add", "-A")
    config(project, {"ignore": []})  # changed in the working tree, not staged
    assert {c for c, _ in findings(gsd, "--staged")[1]} == {"GSD013"}
    assert {c for c, _ in findings(gsd)[1]} == {"GSD003", "GSD011", "GSD013"}
