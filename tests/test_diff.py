"""`gsd diff`: plans and tasks compared between two revisions, read from git objects."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from gsd.commands.diff import Side, Snapshot, compare, diff_task, match_tasks
from gsd.formats.planning.plan import parse
from tests.conftest import auto_task, git, plan_text

PHASE = ".planning/phases/01-alpha"
ROSTER = "- **python-pro**: Python\n- **typescript-pro**: TypeScript\n"


def task(name: str, action: str = "Write the code.", attrs: str = "", files: str = "src/x.py"):
    return auto_task(name, files, attrs).replace("Write the code.", action)


def commit(project, message: str) -> str:
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", message)
    return git(project.root, "rev-parse", "HEAD").strip()


@pytest.fixture
def history(git_project):
    """Two commits of phase 1; `base` and `head` are their shas.

    base: 01-01 (three tasks), 01-02, 01-03 (wave 2 after 01-01; a task without an
    <action>: GSD012 at both sides). head: 01-01 gets a new first task, a changed
    specialist, a renamed task and an edited action; 01-02 is removed; 01-04 is added
    and depends on a plan that does not exist (GSD040, new); 01-03 changes
    depends_on, wave, files_modified and autonomous.
    """
    p = git_project
    p.write(".planning/available_agents.md", ROSTER)
    p.plan(
        "01-01",
        tasks="\n".join(
            [
                task("Build the parser", "Parse tokens.\nKeep spans.", ' specialist="python-pro"'),
                task("Old name", "Write the lexer."),
                task("Write docs", "Document the parser."),
            ]
        ),
    )
    p.plan("01-02", files_modified="[src/b.py]", tasks=task("Only task", files="src/b.py"))
    no_action = task("Wire it", files="src/c.py").replace("<action>Write the code.</action>", "")
    p.plan("01-03", depends_on='["01-01"]', wave=2, files_modified="[src/c.py]", tasks=no_action)
    base = commit(p, "base")
    p.plan(
        "01-01",
        tasks="\n".join(
            [
                task("Set up the package", "Create pyproject.toml."),
                task(
                    "Build the parser", "Parse tokens.\nKeep spans.", ' specialist="typescript-pro"'
                ),
                task("New name", "Write the lexer."),
                task("Write docs", "Document the parser.\nAdd examples."),
            ]
        ),
    )
    (p.root / PHASE / "01-02-PLAN.md").unlink()
    p.plan("01-04", depends_on='["01-01", "01-99"]', wave=2, files_modified="[src/d.py]")
    p.plan(
        "01-03",
        depends_on='["01-01", "01-04"]',
        wave=3,
        autonomous="false",
        files_modified="\n  - src/c.py\n  - src/e.py",
        tasks=no_action,
    )
    head = commit(p, "head")
    return p, base, head


def by_id(report: dict, plan_id: str) -> dict:
    (found,) = [p for p in report["plans"] if p["id"] == plan_id]
    return found


def fields(changes: list[dict]) -> dict[str, tuple]:
    return {c["field"]: (c["before"], c["after"]) for c in changes}


def test_json_between_two_revisions(history, gsd) -> None:
    _, base, head = history
    result = gsd("diff", base, head, "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["base"] == {"label": base, "commit": base, "planning": True}
    assert report["head"]["commit"] == head
    assert report["summary"] == {
        "plans_added": 1,
        "plans_removed": 1,
        "plans_changed": 2,
        "tasks_added": 1,
        "tasks_removed": 0,
        "tasks_renamed": 1,
        "tasks_changed": 2,
        "new_errors": 1,
        "new_warnings": 0,
        "fixed": 0,
    }
    assert [(p["id"], p["status"]) for p in report["plans"]] == [
        ("01-01", "changed"),
        ("01-02", "removed"),
        ("01-03", "changed"),
        ("01-04", "added"),
    ]

    tasks = by_id(report, "01-01")["tasks"]
    assert [(t["status"], t["base_index"], t["head_index"], t["name"]) for t in tasks] == [
        ("added", None, 1, "Set up the package"),
        ("changed", 1, 2, "Build the parser"),
        ("renamed", 2, 3, "New name"),
        ("changed", 3, 4, "Write docs"),
    ]
    assert fields(tasks[1]["changes"]) == {"specialist": ("python-pro", "typescript-pro")}
    assert tasks[2]["base_name"] == "Old name"
    assert fields(tasks[2]["changes"]) == {"name": ("Old name", "New name")}
    assert fields(tasks[3]["changes"]) == {
        "action": ("Document the parser.", "Document the parser.\nAdd examples.")
    }

    assert fields(by_id(report, "01-03")["changes"]) == {
        "wave": (2, 3),
        "depends_on": (["01-01"], ["01-01", "01-04"]),
        "files_modified": (["src/c.py"], ["src/c.py", "src/e.py"]),
        "autonomous": (True, False),
    }
    assert by_id(report, "01-03")["tasks"] == []
    added = by_id(report, "01-04")
    assert added["path"] == f"{PHASE}/01-04-PLAN.md"
    assert [t["name"] for t in added["tasks"]] == ["Task 1: do it"]
    assert by_id(report, "01-02")["base_path"] == f"{PHASE}/01-02-PLAN.md"

    # only the new problem: GSD012 of 01-03 moved down a line but is not new
    assert [(d["code"], d["path"]) for d in report["new_diagnostics"]] == [
        ("GSD040", f"{PHASE}/01-04-PLAN.md")
    ]
    assert report["fixed_diagnostics"] == []


def test_markdown_for_a_pull_request(history, gsd) -> None:
    _, base, head = history
    result = gsd("diff", f"{base}..{head}", "--format", "markdown")
    assert result.code == 0, result.err
    out = result.out
    assert out.startswith(f"## Plan changes: `{base[:7]}` → `{head[:7]}`\n")
    assert (
        "**plans: 1 added, 1 removed, 2 changed; tasks: 1 added, 1 renamed, 2 changed; "
        "1 new error**" in out
    )
    assert f"### `01-01` changed · `{PHASE}/01-01-PLAN.md`" in out
    assert "| 3 `New name` | renamed from `Old name` |" in out
    assert "| 2 `Build the parser` | `specialist` `python-pro` → `typescript-pro` |" in out
    assert "| 4 `Write docs` | `action` text changed (+1 -0 lines) |" in out
    assert "- `wave`: `2` → `3`" in out
    assert "- `depends_on`: added `01-04`" in out
    assert "- `files_modified`: added `src/e.py`" in out
    assert "- `autonomous`: `true` → `false`" in out
    assert f"### `01-02` removed · `{PHASE}/01-02-PLAN.md`\n\n1 task removed." in out
    assert "| 1 | `Task 1: do it` | `auto` | - |" in out  # the added plan's tasks
    assert "```diff\n@@ -1 +1,2 @@\n Document the parser.\n+Add examples.\n```" in out
    assert "### New validation problems at " in out
    assert f"| `{PHASE}/01-04-PLAN.md:6` | error | GSD040 |" in out


def test_text_is_the_default(history, gsd) -> None:
    _, base, head = history
    result = gsd("diff", base, head)
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == f"Plans: {base[:7]} -> {head[:7]}"
    assert '  renamed  task 3 "Old name" -> "New name"' in lines
    assert '  changed  task 2 "Build the parser": specialist python-pro -> typescript-pro' in lines
    assert '  added    task 1 "Set up the package" (auto)' in lines
    assert "  depends_on: added 01-04" in lines
    assert f"01-02 removed  {PHASE}/01-02-PLAN.md  (1 task)" in lines
    assert any(line.startswith(f"  {PHASE}/01-04-PLAN.md:6:1: error GSD040") for line in lines)


def test_default_revisions_are_like_git_diff(history, gsd) -> None:
    p, base, head = history
    assert gsd("diff").out.endswith("No plan changes.\n")  # HEAD vs a clean tree
    p.plan("01-04", depends_on='["01-01"]', wave=2, files_modified="[src/d.py]")
    tree = json.loads(gsd("diff", "--format", "json").out)
    assert tree["base"] == {"label": "HEAD", "commit": head, "planning": True}
    assert tree["head"] == {"label": "working tree", "commit": None, "planning": True}
    assert fields(by_id(tree, "01-04")["changes"]) == {
        "depends_on": (["01-01", "01-99"], ["01-01"])
    }
    assert tree["summary"]["fixed"] == 1  # the GSD040 is gone in the working tree
    # BASE alone: BASE vs the working tree
    one = json.loads(gsd("diff", base, "--format", "json").out)
    assert one["base"]["commit"] == base and one["head"]["label"] == "working tree"
    assert by_id(one, "01-04")["status"] == "added"
    # --staged: the index, not the tree
    staged = json.loads(gsd("diff", "--staged", "--format", "json").out)
    assert staged["head"]["label"] == "index" and staged["plans"] == []
    git(p.root, "add", "-A")
    staged = json.loads(gsd("diff", "--cached", "--format", "json").out)
    assert [d["id"] for d in staged["plans"]] == ["01-04"]


def test_three_dots_compare_from_the_merge_base(history, gsd) -> None:
    p, base, head = history
    git(p.root, "checkout", "-q", "-b", "feature", base)
    p.plan("01-02", files_modified="[src/b.py]", tasks=task("Renamed only task", files="src/b.py"))
    feature = commit(p, "feature")
    dots = json.loads(gsd("diff", "main...feature", "--format", "json").out)
    assert dots["base"] == {
        "label": "merge base of main and feature",
        "commit": base,
        "planning": True,
    }
    assert [(d["id"], d["status"]) for d in dots["plans"]] == [("01-02", "changed")]
    assert dots["head"]["commit"] == feature
    two = json.loads(gsd("diff", "main..feature", "--format", "json").out)
    assert len(two["plans"]) == 4  # main's own changes show too, as with git diff A..B
    assert json.loads(gsd("diff", "main...", "--format", "json").out)["plans"] == dots["plans"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["no-such-branch"], "gsd: error: unknown revision 'no-such-branch': no commit by that"),
        (["HEAD", "nope"], "gsd: error: unknown revision 'nope'"),
        (["nope...HEAD"], "gsd: error: unknown revision 'nope'"),
        (["HEAD:README.md"], "gsd: error: unknown revision 'HEAD:README.md'"),
        (["a", "b", "c"], "gsd: error: gsd diff takes at most two revisions"),
        (["--staged", "HEAD", "HEAD"], "gsd: error: --staged compares one revision"),
        (["--staged", "nope", "nada"], "gsd: error: --staged compares one revision"),
        (["--staged", "nope..nada"], "gsd: error: --staged compares one revision"),
    ],
)
def test_bad_revisions_are_one_line(history, gsd, args: list[str], message: str) -> None:
    result = gsd("diff", *args)
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith(message)
    assert result.err.count("\n") == 1 and "Traceback" not in result.err


def test_outside_a_git_repository(project, gsd) -> None:
    project.plan("01-01")
    result = gsd("diff")
    assert result.code == 2
    assert result.err.startswith(f"gsd: error: not a git repository: {project.root}")


def test_no_planning_at_one_side(git_project, gsd) -> None:
    first = git(git_project.root, "rev-parse", "HEAD").strip()  # README.md only
    git_project.plan("01-01")
    second = commit(git_project, "plans")
    report = json.loads(gsd("diff", first, second, "--format", "json").out)
    assert report["base"]["planning"] is False and report["head"]["planning"] is True
    assert [(p["id"], p["status"]) for p in report["plans"]] == [("01-01", "added")]
    back = json.loads(gsd("diff", second, first, "--format", "json").out)
    assert [(p["id"], p["status"]) for p in back["plans"]] == [("01-01", "removed")]
    assert back["new_diagnostics"] == [] and back["summary"]["fixed"] == 0
    markdown = gsd("diff", first, second, "--format", "markdown").out
    assert f"`{first[:7]}` has no `.planning/`." in markdown


def test_a_branch_with_no_commit_yet(project, gsd) -> None:
    git(project.root, "init", "-q", "-b", "main")
    project.plan("01-01")
    report = json.loads(gsd("diff", "--format", "json").out)
    assert report["base"] == {"label": "HEAD (no commit yet)", "commit": None, "planning": False}
    assert [(p["id"], p["status"]) for p in report["plans"]] == [("01-01", "added")]


def test_empty_diff_and_exit_code(history, gsd) -> None:
    p, _, head = history
    markdown = gsd("diff", head, head, "--format", "markdown")
    assert markdown.code == 0
    assert "No plan changes." in markdown.out and "###" not in markdown.out
    assert gsd("diff", "--exit-code").code == 0
    p.plan("01-04", depends_on='["01-01"]', wave=2, files_modified="[src/d.py]")
    assert gsd("diff", "--exit-code").code == 1
    assert gsd("diff").code == 0  # information, like git diff


def tree_state(root: Path) -> tuple[str, str, dict[str, str]]:
    files = {
        str(f.relative_to(root)): hashlib.sha1(f.read_bytes()).hexdigest()
        for f in root.rglob("*")
        if f.is_file() and ".git" not in f.relative_to(root).parts
    }
    index = hashlib.sha1((root / ".git" / "index").read_bytes()).hexdigest()
    return git(root, "status", "--porcelain=v2", "--untracked-files=all"), index, files


def test_the_working_tree_and_index_are_untouched(history, gsd) -> None:
    p, base, head = history
    p.write(f"{PHASE}/01-01-PLAN.md", plan_text(tasks=task("Half-done edit")))
    git(p.root, "add", f"{PHASE}/01-01-PLAN.md")
    p.write(f"{PHASE}/01-05-PLAN.md", plan_text(plan="05"))  # untracked
    before = tree_state(p.root)
    refs = git(p.root, "show-ref")
    for args in ([], [base], [base, head], [f"{base}...{head}"], ["--staged"]):
        assert gsd("diff", *args, "--format", "json").code == 0
    assert tree_state(p.root) == before
    assert git(p.root, "show-ref") == refs


def test_a_moved_plan_is_changed_not_removed_and_added(history, gsd) -> None:
    p, _, head = history
    git(p.root, "mv", f"{PHASE}/01-04-PLAN.md", f"{PHASE}/01-04-extra-PLAN.md")
    report = json.loads(gsd("diff", "--staged", "--format", "json").out)
    (moved,) = report["plans"]
    assert moved["status"] == "changed" and moved["base_path"] == f"{PHASE}/01-04-PLAN.md"
    assert fields(moved["changes"]) == {
        "path": (f"{PHASE}/01-04-PLAN.md", f"{PHASE}/01-04-extra-PLAN.md")
    }
    assert report["new_diagnostics"] == [] and report["summary"]["fixed"] == 0


def test_markdown_never_lets_plan_text_format_or_mention(git_project, gsd) -> None:
    git_project.plan("01-01")
    commit(git_project, "one")
    evil = "Ping @octocat | `x` <img src=x> **bold**"
    git_project.plan("01-01", tasks=task(evil))
    out = gsd("diff", "--format", "markdown").out
    assert (
        "| 1 ``Ping @octocat \\| `x` <img src=x> **bold**`` | renamed from `Task 1: do it` |" in out
    )


# --- task matching, on parsed plans (pure) ---------------------------------------------------


def tasks_of(*blocks: str) -> list:
    return parse(plan_text(tasks="\n".join(blocks))).tasks


def statuses(base: list, head: list) -> list[tuple]:
    out = []
    for old, new, moved in match_tasks(base, head):
        d = diff_task(old, new, moved)
        out.append(d and (d.status, d.base_index, d.head_index, [c.field for c in d.changes]))
    return out


def test_a_task_inserted_before_a_renamed_one() -> None:
    base = tasks_of(task("A", "Do a."), task("B", "Do b, carefully."), task("C", "Do c."))
    head = tasks_of(
        task("A", "Do a."),
        task("New", "Brand new."),
        task("B2", "Do b, carefully."),
        task("C", "Do c."),
    )
    assert statuses(base, head) == [
        None,
        ("added", None, 2, []),
        ("renamed", 2, 3, ["name"]),
        None,
    ]


def test_a_different_task_in_the_same_place_is_removed_and_added() -> None:
    base = tasks_of(task("Migrate the database", "ALTER TABLE users ADD age int;"))
    head = tasks_of(
        task("Write release notes", "Summarise the changes for users.\nLink the PRs.\nThank.")
        .replace("<verify><automated>true</automated></verify>", "<verify>read it</verify>")
        .replace("<done>It is done.</done>", "<done>Published.</done>")
        .replace("src/x.py", "NOTES.md")
    )
    assert statuses(base, head) == [("removed", 1, None, []), ("added", None, 1, [])]


def test_reordered_tasks_report_a_position_change() -> None:
    base = tasks_of(task("A"), task("B"), task("C"))
    head = tasks_of(task("C"), task("A"), task("B"))
    assert statuses(base, head) == [("changed", 3, 1, ["position"]), None, None]


def test_tasks_of_one_name_pair_in_order() -> None:
    base = tasks_of(task("Same", "first"), task("Same", "second"))
    head = tasks_of(task("Same", "first"), task("Same", "second, edited"))
    assert statuses(base, head) == [None, ("changed", 2, 2, ["action"])]


def test_compare_is_pure_over_snapshots() -> None:
    old = parse(plan_text(), f"{PHASE}/01-01-PLAN.md")
    new = parse(plan_text(wave=2), f"{PHASE}/01-01-PLAN.md")
    side = Side("x", None, True)
    changes = compare(Snapshot(side, {old.path: old}, []), Snapshot(side, {new.path: new}, []))
    assert [(c.field, c.before, c.after) for c in changes.plans[0].changes] == [("wave", 1, 2)]
    assert not changes.empty


def test_a_planning_file_is_not_a_planning_folder(tmp_path: Path) -> None:
    from gsd.commands.revisions import load_snapshot
    from gsd.io.plans.sources import WorkingTree

    (tmp_path / ".planning").write_text("---\nphase: 01-a\n---\n")
    snapshot = load_snapshot(tmp_path, WorkingTree(tmp_path), Side("working tree", None, True))
    assert (snapshot.side.has_planning, snapshot.plans, snapshot.diagnostics) == (False, {}, [])


# --- the plan's own sections: <objective>, <context>, <verification>, ... -------------------

SECTIONED = plan_text().replace(
    "<objective>Do the thing.</objective>",
    "<objective>\nBuild the parser.\n</objective>\n\n<context>\n@src/x.py\n</context>",
) + (
    "\n<verification>\n- tests pass\n</verification>\n"
    "\n<success_criteria>\n- parser works\n</success_criteria>\n"
    "\n<output>\nAfter completion, create 01-01-SUMMARY.md\n</output>\n"
    "\n```xml\n<objective>in a fence: text, not a section</objective>\n```\n"
)


@pytest.fixture
def sections(git_project):
    """01-01 with every body section; HEAD's copy edits each one, and one task's verify
    and done."""
    git_project.plan("01-01", text=SECTIONED)
    base = commit(git_project, "base")
    edited = (
        SECTIONED.replace("Build the parser.", "Build the parser.\nKeep spans.")
        .replace("@src/x.py", "@src/x.py\n@docs/grammar.md")
        .replace("- tests pass", "- tests pass\n- lint passes")
        .replace("- parser works", "- parser is fast")
        .replace("create 01-01-SUMMARY.md", "create the summary")
        .replace("<automated>true</automated>", "<automated>pytest -q</automated>")
        .replace("<done>It is done.</done>", "<done>The parser is done.</done>")
        .replace("in a fence: text", "in a fence: other text")
    )
    git_project.plan("01-01", text=edited)
    return git_project, base, commit(git_project, "head")


def test_json_reports_every_changed_section(sections, gsd) -> None:
    _, base, head = sections
    result = gsd("diff", base, head, "--format", "json")
    assert result.code == 0, result.err
    (plan,) = json.loads(result.out)["plans"]
    assert fields(plan["changes"]) == {
        "<objective>": ("Build the parser.", "Build the parser.\nKeep spans."),
        "<context>": ("@src/x.py", "@src/x.py\n@docs/grammar.md"),
        "<verification>": ("- tests pass", "- tests pass\n- lint passes"),
        "<success_criteria>": ("- parser works", "- parser is fast"),
        "<output>": (
            "After completion, create 01-01-SUMMARY.md",
            "After completion, create the summary",
        ),
    }
    (task,) = plan["tasks"]
    assert fields(task["changes"]) == {
        "verify": ("<automated>true</automated>", "<automated>pytest -q</automated>"),
        "done": ("It is done.", "The parser is done."),
    }
    assert json.loads(result.out)["summary"]["plans_changed"] == 1


def test_text_names_each_section(sections, gsd) -> None:
    _, base, head = sections
    out = gsd("diff", base, head).out
    assert "  <objective>: text changed (+1 -0 lines)\n" in out
    assert "  <context>: text changed (+1 -0 lines)\n" in out
    assert "  <success_criteria>: - parser works -> - parser is fast\n" in out
    assert "  <output>: After completion, create 01-01-SUMMARY.md -> After completion, " in out
    assert 'changed  task 1 "Task 1: do it": verify <automated>true</automated> -> ' in out


def test_markdown_folds_each_changed_section(sections, gsd) -> None:
    _, base, head = sections
    out = gsd("diff", base, head, "--format", "markdown").out
    assert "- `<objective>`: text changed (+1 -0 lines)\n" in out
    assert "<details><summary><code>&lt;objective&gt;</code></summary>" in out
    assert "```diff\n@@ -1 +1,2 @@\n Build the parser.\n+Keep spans.\n```" in out
    assert "<details><summary><code>&lt;verification&gt;</code></summary>" in out


def test_only_a_section_changed_is_a_changed_plan(git_project, gsd) -> None:
    git_project.plan("01-01", text=SECTIONED)
    base = commit(git_project, "base")
    git_project.plan("01-01", text=SECTIONED.replace("- tests pass", "- all tests pass"))
    result = gsd("diff", base, "--exit-code")
    assert result.code == 1
    assert "plans: 1 changed\n" in result.out
    assert "  <verification>: - tests pass -> - all tests pass\n" in result.out


def test_sections_in_code_fences_and_tasks_are_not_plan_sections() -> None:
    from gsd.commands.diff import body_sections

    found = body_sections(SECTIONED)
    assert list(found) == [
        "<objective>",
        "<context>",
        "<verification>",
        "<success_criteria>",
        "<output>",
    ]
    assert found["<context>"] == "@src/x.py"


def test_markdown_shows_heads_wave_graph_when_the_schedule_changed(git_project, gsd) -> None:
    git_project.plan("01-01", files_modified="[a]")
    git_project.plan("01-02", files_modified="[b]")
    base = commit(git_project, "two plans side by side")
    git_project.plan("01-02", files_modified="[b]", depends_on='["01-01"]')
    head = commit(git_project, "01-02 after 01-01")
    out = gsd("diff", base, head, "--format", "markdown").out
    assert f"### Waves of `01-alpha` at `{head[:7]}`" in out
    assert '```mermaid\n---\ntitle: "Phase 01-alpha"\n---\nflowchart LR\n' in out
    assert "p01_01 --> p01_02" in out


def test_markdown_has_no_wave_graph_when_the_schedule_did_not_change(git_project, gsd) -> None:
    git_project.plan("01-01", files_modified="[a]")
    base = commit(git_project, "one plan")
    git_project.plan("01-01", files_modified="[a]", tasks=task("A new name"))
    head = commit(git_project, "renamed its task")
    out = gsd("diff", base, head, "--format", "markdown").out
    assert "renamed from" in out and "```mermaid" not in out


def test_a_list_of_mappings_in_the_frontmatter_is_compared_not_a_crash(git_project, gsd) -> None:
    """Upstream plans carry lists of mappings (`user_setup: [{service: ...}]`); a change in
    one is reported like any other change, in any order of the list."""
    text = plan_text().replace(
        "autonomous:", "user_setup:\n  - service: stripe\n    why: pay\nautonomous:"
    )
    git_project.write(".planning/phases/01-alpha/01-01-PLAN.md", text)
    base = commit(git_project, "a plan that needs a service")
    changed = text.replace("service: stripe", "service: paddle")
    git_project.write(".planning/phases/01-alpha/01-01-PLAN.md", changed)
    head = commit(git_project, "another service")
    done = gsd("diff", base, head, "--format", "json")
    assert done.code == 0, done.err
    (plan,) = json.loads(done.out)["plans"]
    assert [c["field"] for c in plan["changes"]] == ["user_setup"]
    assert plan["changes"][0]["after"] == [{"service": "paddle", "why": "pay"}]
