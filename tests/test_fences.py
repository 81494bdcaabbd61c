"""One fence reader (gsd.formats.lines): each place today's readers disagreed, read as CommonMark.

CommonMark 0.31.2 section 4.5, https://spec.commonmark.org/0.31.2/#fenced-code-blocks.
"""

from __future__ import annotations

import json

import pytest

from gsd.formats import taskreport
from gsd.formats.lines import Fence, Lines, fence_of, fenced_ranges
from gsd.formats.planning import roadmap, state
from gsd.formats.planning.plan import parse
from tests.conftest import auto_task, git, plan_text
from tests.test_execute import AGENT, REPORT, install_agents, task

pytestmark = pytest.mark.unit  # `make test-fast` runs these


@pytest.mark.parametrize(
    ("line", "fence"),
    [
        pytest.param("```", Fence("`", 3, ""), id="backticks"),
        pytest.param("~~~~ python \r", Fence("~", 4, "python"), id="tildes-with-info"),
        pytest.param("       ```json", Fence("`", 3, "json"), id="in-a-list-item"),
        pytest.param("``", None, id="two-are-not-a-fence"),
        pytest.param("```a``` is inline code", None, id="backtick-in-backtick-info"),
        pytest.param("~~~ a`b", Fence("~", 3, "a`b"), id="backtick-in-tilde-info"),
        pytest.param("text ```", None, id="not-at-the-start"),
    ],
)
def test_fence_lines(line: str, fence: Fence | None) -> None:
    assert fence_of(line) == fence


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        pytest.param("```\na\n~~~\nb\n```\nc", [(0, 15)], id="other-character-is-text"),
        pytest.param("````\n```\na\n````\nc", [(0, 15)], id="shorter-run-is-text"),
        pytest.param("```\n```python\n```\nc", [(0, 17)], id="closer-has-no-info"),
        pytest.param("```\na\nb", [(0, 7)], id="unclosed-runs-to-the-end"),
    ],
)
def test_fenced_ranges_read_as_commonmark(text: str, blocks: list[tuple[int, int]]) -> None:
    assert fenced_ranges(text) == blocks


# --- plans: `gsd show` lists the tasks the one reader finds -------------------------------


def shown_tasks(project, gsd, tasks: str) -> list[str]:
    project.plan("01-01", plan_text(tasks=tasks))
    shown = gsd("show", "01-01", "--format", "json")
    assert shown.code == 0, shown.err
    [view] = json.loads(shown.out)["plans"]
    return [t["name"] for t in view["tasks"]]


@pytest.mark.parametrize(
    "tasks",
    [
        # before: the bare ``` closed the ~~~ block, so Example was a task, and the
        # closing ~~~ opened a block to the end that hid Real
        pytest.param(
            f"~~~\n```\n{auto_task('Example')}\n~~~\n{auto_task('Real')}",
            id="task-in-a-tilde-fence-with-a-backtick-line",
        ),
        # before: a bare ``` closed the ```` block, so Example was a task
        pytest.param(
            f"````markdown\n```\n{auto_task('Example')}\n```\n````\n{auto_task('Real')}",
            id="shorter-bare-fence-inside-a-longer-one",
        ),
        # before: ```<task>``` opened a block to the end of the plan: no task at all
        pytest.param(
            f"```<task>``` blocks are written so.\n{auto_task('Real')}",
            id="inline-code-of-three-backticks",
        ),
    ],
)
def test_plan_fences_are_read_as_commonmark(project, gsd, tasks: str) -> None:
    assert shown_tasks(project, gsd, tasks) == ["Real"]


def test_plans_keep_spec_2_nested_fences(project, gsd) -> None:
    """SPEC 2 over CommonMark: an info-string fence line inside a block opens one within."""
    tasks = f"```markdown\n```bash\n{auto_task('Example')}\n```\n```\n{auto_task('Real')}"
    assert shown_tasks(project, gsd, tasks) == ["Real"]
    assert [t.name for t in parse(plan_text(tasks=tasks)).tasks] == ["Real"]


# --- STATE.md, ROADMAP.md ------------------------------------------------------------------


def test_a_fence_line_with_an_info_string_closes_nothing_in_roadmap() -> None:
    # before: ```text closed the block, and the line after it was ticked
    text = "```\n- [ ] 01-02: a\n```text\n- [ ] 01-02: b\n```\n"
    assert roadmap.check_plan(text, "01-02") == text


def test_inline_code_of_three_backticks_opens_no_fence_in_roadmap() -> None:
    # before: ```x``` opened a block that the bare ``` closed, hiding the checkbox
    text = "```x``` is inline code\n- [ ] 01-02: a\n```\n"
    assert roadmap.check_plan(text, "01-02") == text.replace("[ ]", "[x]")


def test_a_fence_in_a_list_item_hides_its_lines_in_state() -> None:
    # before: four spaces of indent made the fence lines text, so the quoted Status was
    # taken for the field
    text = "## Current Position\n\n- note:\n\n    ```\n    Status: quoted\n    ```\n\n## Notes\n"
    edited = state.set_position(text, status="new")
    assert "    Status: quoted\n" in edited and "Status: new\n" in edited


def test_editors_still_let_an_unclosed_fence_fence_nothing() -> None:
    """The one deviation kept: gsd edits these files and must find what it appended."""
    assert Lines("a\n```\nb\n").plain() == [0, 1, 2]


# --- agent output ----------------------------------------------------------------------------

REAL = "### Task Report\n- Status: success\n- Files Created: a\n- Validation: pass\n"
EXAMPLE = "```markdown\n### Task Report\n- Status: failure\n- Errors: an example\n```\n"


def test_a_report_shown_in_a_fence_does_not_override_the_real_one() -> None:
    report = taskreport.parse_task_report(REAL + "\nThe template looks like this:\n\n" + EXAMPLE)
    assert report is not None and report.status == "success"


def test_a_fenced_report_still_counts_when_it_is_the_only_one() -> None:
    report = taskreport.parse_task_report(EXAMPLE.replace("failure", "success"))
    assert report is not None and report.status == "success"


def test_inline_code_of_three_backticks_does_not_end_a_report() -> None:
    # before: any line starting ``` ended the report, even inline code
    text = "### Task Report\n```x``` is done\n- Status: success\n"
    report = taskreport.parse_task_report(text)
    assert report is not None and report.status == "success"


def test_a_run_reads_the_report_outside_the_fence(git_project, gsd, tmp_path) -> None:
    """CLI: an agent prints its report, then shows a failing example in a fence."""
    root = git_project.root
    script = tmp_path / "agent.py"
    example = EXAMPLE.replace("\n", "\\n")
    script.write_text(AGENT.format(report=REPORT + "\\nFor reference:\\n" + example))
    install_agents(git_project, script)
    (tmp_path / "markers").mkdir()
    git_project.write(
        ".planning/config.json", json.dumps({"sandbox": {"writable": [str(tmp_path / "markers")]}})
    )
    git_project.plan("01-01", tasks=task("01-01", 1), files_modified="[src/t01-01_1.py]")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")
    run = gsd("execute-phase", "1", "--format", "json")
    assert run.code == 0, run.err
    assert [t["outcome"] for t in json.loads(run.out)["tasks"]] == ["committed"]
