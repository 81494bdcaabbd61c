"""gsd verify: must_haves and @ references against a real working tree (core, io, CLI)."""

from __future__ import annotations

import json
import re

import pytest
from lxml import etree

from gsd.core.musthaves import (
    Artifact,
    KeyLink,
    check_artifact,
    check_key_link,
    check_reference,
    declared,
    references,
)
from gsd.io.plans.verify import unfenced

pytestmark = pytest.mark.unit  # `make test-fast` runs these

PLAN = """\
---
phase: 01-alpha
plan: "01"
type: execute
wave: 1
depends_on: []
files_modified: [src/app.py]
autonomous: true
must_haves:
  truths:
    - "the app greets"
  artifacts:
    - path: src/app.py
      provides: "the app"
      min_lines: 3
      contains: "def greet"
      exports: [greet, main]
    - output.txt
    - "a description of something"
  key_links:
    - from: src/app.py
      to: src/util.py
      via: "import"
      pattern: "from util import \\\\w+"
    - from: src/util.py
      to: src/app.py
---

<context>
@.planning/PROJECT.md
@src/missing/thing.py
</context>

```python
@router.get("/x/y")
```

<tasks>
<task type="auto">
  <name>Task 1: app</name>
  <files>src/app.py</files>
  <action>Write it.</action>
  <verify>true</verify>
  <done>Done.</done>
</task>
</tasks>
"""

APP = "from util import helper\n\ndef greet():\n    return helper()\n\ndef main():\n    greet()\n"


@pytest.mark.parametrize(
    ("artifact", "text", "status", "detail"),
    [
        pytest.param(Artifact("a.py"), None, "fail", "file not found", id="missing"),
        pytest.param(Artifact("a.py"), "", "pass", "exists", id="empty-exists"),
        # upstream counts "a\nb\n".split("\n"): 3 lines
        pytest.param(
            Artifact("a.py", min_lines=3),
            "a\nb\n",
            "pass",
            "exists, 3 lines >= 3",
            id="min-lines-as-upstream",
        ),
        pytest.param(
            Artifact("a.py", min_lines=4), "a\nb\n", "fail", "only 3 lines, need 4", id="too-short"
        ),
        pytest.param(
            Artifact("a.py", contains=("x.y(",)),
            "call x.y(1)",
            "pass",
            "exists, contains 'x.y('",
            id="contains-is-a-substring",
        ),
        pytest.param(
            Artifact("a.py", contains=("zz",)),
            "abc",
            "fail",
            "does not contain 'zz'",
            id="contains-missing",
        ),
        pytest.param(
            Artifact("a.py", not_contains=("TODO",)),
            "x TODO",
            "fail",
            "contains 'TODO', which it must not",
            id="not-contains",
        ),
        pytest.param(
            Artifact("a.py", exports=("f", "g")),
            "def f(): ...",
            "fail",
            "no export 'g'",
            id="export-missing",
        ),
    ],
)
def test_check_artifact(artifact, text, status, detail) -> None:
    check = check_artifact(artifact, text)
    assert (check.status, check.detail) == (status, detail)


@pytest.mark.parametrize(
    ("link", "source", "target", "status", "detail"),
    [
        pytest.param(
            KeyLink("a", "b", r"use\(b\)"),
            "use(b)",
            None,
            "pass",
            r"pattern 'use\(b\)' found in a",
            id="in-source",
        ),
        pytest.param(
            KeyLink("a", "b", "export B"),
            "x",
            "export B",
            "pass",
            "pattern 'export B' found in b",
            id="in-target",
        ),
        pytest.param(
            KeyLink("a", "b", "nope"),
            "x",
            "y",
            "fail",
            "pattern 'nope' found in neither file",
            id="in-neither",
        ),
        pytest.param(KeyLink("a", "b", "x"), None, "x", "fail", "a not found", id="no-source"),
        pytest.param(
            KeyLink("a", "src/b.ts"),
            "import './src/b.ts'",
            None,
            "pass",
            "a names src/b.ts",
            id="no-pattern-names-target",
        ),
        pytest.param(
            KeyLink("a", "src/b.ts"),
            "nothing",
            None,
            "fail",
            "a does not name src/b.ts",
            id="no-pattern-unnamed",
        ),
    ],
)
def test_check_key_link(link, source, target, status, detail) -> None:
    check = check_key_link(link, source, target)
    assert (check.status, check.detail) == (status, detail)


def test_a_pattern_that_is_no_regex_fails_with_why() -> None:
    check = check_key_link(KeyLink("a", "b", "f(("), "f((", None)
    assert check.status == "fail" and check.detail.startswith("pattern 'f((' is no regex")


def test_declared_reads_strings_mappings_and_skips_descriptions() -> None:
    found = declared(
        {
            "artifacts": [
                "output.txt",
                "the whole app",
                {"path": "a.py", "min_lines": "30", "exports": "f"},
                {"provides": "x"},
                {"path": "b.py", "min_lines": "many"},
            ],
            "key_links": [{"from": "a.py", "to": "b.py", "pattern": "b"}, "a -> b"],
        }
    )
    assert found.artifacts == [
        Artifact("output.txt"),
        Artifact("a.py", min_lines=30, exports=("f",)),
    ]
    assert found.key_links == [KeyLink("a.py", "b.py", "b")]
    assert [c.detail for c in found.skipped] == [
        "'the whole app' is a description, not a path: nothing to check",
        "no path",
        "min_lines is 'many', not a whole number",
        "not a mapping with from and to",
    ]
    assert declared(None) == declared("text") == ([], [], [])


def test_references_as_upstream_finds_them_but_not_in_code() -> None:
    text = "See @.planning/PROJECT.md, @src/a.py) and @here and @~/x/y.md\n"
    assert references(text) == [".planning/PROJECT.md", "src/a.py", "~/x/y.md"]
    assert references('@router.get("/x") curl -F f=@/tmp/a.vtt"') == ["/tmp/a.vtt"]
    assert references(unfenced("```\n@src/in/fence.py\n```\n@src/out.py\n")) == ["src/out.py"]
    assert check_reference("/tmp/a", None).status == "skip"


@pytest.fixture
def verified(project):
    project.plan("01-01", PLAN)
    project.write("src/app.py", APP)
    project.write("src/util.py", "def helper():\n    return 'hi'\n")
    project.write("output.txt", "done\n")
    project.write(".planning/PROJECT.md", "# Project\n")
    return project


def test_verify_json_every_check(verified, gsd) -> None:
    result = gsd("verify", "01-01", "--format", "json")
    assert result.code == 1, result.err  # src/missing/thing.py is not there
    (plan,) = json.loads(result.out)["plans"]
    got = [(c["kind"], c["subject"], c["status"]) for c in plan["checks"]]
    assert got == [
        ("artifact", "src/app.py", "pass"),
        ("artifact", "output.txt", "pass"),
        ("key_link", "src/app.py -> src/util.py", "pass"),
        ("key_link", "src/util.py -> src/app.py", "fail"),
        ("artifact", "entry 3", "skip"),
        ("reference", ".planning/PROJECT.md", "pass"),
        ("reference", "src/missing/thing.py", "fail"),
    ]


def test_verify_passes_when_everything_is_there(verified, gsd) -> None:
    verified.write("src/missing/thing.py", "x = 1\n")
    verified.write("src/util.py", "# used by src/app.py\ndef helper():\n    return 'hi'\n")
    result = gsd("verify", "1")
    assert result.code == 0, result.out
    assert "src/app.py -> src/util.py" in result.out
    assert result.out.rstrip().endswith("7 checks: 6 passed, 0 failed, 1 skipped")


def test_verify_a_plan_file_as_markdown(verified, gsd) -> None:
    result = gsd("verify", ".planning/phases/01-alpha/01-01-PLAN.md", "--format", "markdown")
    assert result.code == 1
    assert result.out.startswith("## Plan 01-01 (.planning/phases/01-alpha/01-01-PLAN.md)\n\n|")
    assert re.search(r"\| reference +\| src/missing/thing.py +\| FAIL +\| not found", result.out)


def test_verify_junit_is_one_case_per_check(verified, gsd) -> None:
    result = gsd("verify", "01-01", "--format", "junit")
    root = etree.fromstring(result.out.encode())
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "01-01"
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("7", "2", "1")


def test_artifacts_outside_the_project_are_not_read(project, gsd, tmp_path) -> None:
    (tmp_path / "secret.txt").write_text("x\n")
    text = PLAN.replace("- output.txt", "- ../secret.txt").replace("@src/missing/thing.py", "")
    project.plan("01-01", text)
    result = gsd("verify", "01-01", "--format", "json")
    checks = json.loads(result.out)["plans"][0]["checks"]
    assert {
        "kind": "artifact",
        "subject": "../secret.txt",
        "status": "fail",
        "detail": "outside the project: gsd reads no file there",
    } in checks


def test_outside_references_are_skipped_with_a_note_by_default(verified, gsd, tmp_path) -> None:
    """`@~/...` failed where upstream GSD was not installed while `@/...` was skipped: the
    same kind of reference judged two ways (issue 21, trap 4). Both are skipped now."""
    (tmp_path / "abs.md").write_text("x\n")
    refs = f"@~/.claude/gsd/x.md @{tmp_path}/missing/y.md @{tmp_path}/abs.md"
    verified.plan("01-01", PLAN.replace("@src/missing/thing.py", refs))
    checks = json.loads(gsd("verify", "01-01", "--format", "json").out)["plans"][0]["checks"]
    outside = [c for c in checks if c["kind"] == "reference" and "/" in c["subject"][:2]]
    assert [c["status"] for c in outside] == ["skip", "skip", "skip"]
    assert {c["detail"] for c in outside} == {
        "outside the project: not looked at (verification.outside_references: skip)"
    }


def test_outside_references_are_checked_when_config_asks(verified, gsd, tmp_path) -> None:
    verified.write(".planning/config.json", '{"verification": {"outside_references": "check"}}')
    (tmp_path / "abs").mkdir()
    (tmp_path / "abs" / "here.md").write_text("x\n")
    refs = f"@~/.claude/gsd/x.md @{tmp_path}/abs/here.md"
    verified.plan("01-01", PLAN.replace("@src/missing/thing.py", refs))
    out = gsd("verify", "01-01").out
    assert re.search(r"reference +~/.claude/gsd/x.md +FAIL +not found", out)
    assert re.search(rf"reference +{re.escape(str(tmp_path))}/abs/here.md +ok +found", out)
    (tmp_path / "home" / ".claude" / "gsd").mkdir(parents=True)
    (tmp_path / "home" / ".claude" / "gsd" / "x.md").write_text("x\n")
    assert re.search(r"reference +~/.claude/gsd/x.md +ok +found", gsd("verify", "01-01").out)


def test_outside_references_take_skip_or_check(verified, gsd) -> None:
    verified.write(".planning/config.json", '{"verification": {"outside_references": "yes"}}')
    result = gsd("verify", "01-01")
    assert result.code == 2 and "outside_references" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_verify_an_unknown_plan_is_one_line(project, gsd) -> None:
    result = gsd("verify", "01-09")
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1


def test_a_key_link_with_nothing_to_look_for_is_skipped_not_passed() -> None:
    """`{from: a.py}` alone gave "a.py names ''", a pass that checked nothing."""
    found = declared(
        {"key_links": [{"from": "a.py", "via": "import"}, {"from": "a.py", "to": " "}]}
    )
    assert found.key_links == []
    assert [c.status for c in found.skipped] == ["skip", "skip"]
    assert {c.detail for c in found.skipped} == {"no to and no pattern: nothing to check"}
    kept = declared({"key_links": [{"from": "a.py", "pattern": "import b"}]})
    assert kept.key_links == [KeyLink("a.py", "", "import b")]


def test_a_contains_list_is_searched_item_by_item(project, gsd) -> None:
    """`contains: ["## A", "## B"]` was searched as its Python text (issue 21, trap 6)."""
    listed = '    - path: doc.md\n      contains: ["## A", "## B"]\n'
    text = PLAN.replace("    - output.txt\n", listed).replace("@src/missing/thing.py", "")
    project.plan("01-01", text)
    project.write("doc.md", "# Doc\n\n## A\n\n## B\n")
    out = gsd("verify", "01-01").out
    assert re.search(r"artifact +doc.md +ok +exists, contains '## A', '## B'", out), out
    project.write("doc.md", "# Doc\n\n## A\n")
    out = gsd("verify", "01-01").out
    assert re.search(r"artifact +doc.md +FAIL +does not contain '## B'$", out, re.M), out


def test_a_block_contains_list_is_searched_item_by_item() -> None:
    found = declared({"artifacts": [{"path": "a.md", "contains": ["## A", "## B"]}]})
    assert found.artifacts == [Artifact("a.md", contains=("## A", "## B"))]
    assert check_artifact(found.artifacts[0], "## B\n## A\n").status == "pass"
