"""ROADMAP.md edits: byte-exact round trips over the corpus, owned lines only, small tables."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from gsd.core.ids import phase_key
from gsd.formats.files import load_text, save_text
from gsd.formats.lines import Lines, row_cells
from gsd.formats.planning import roadmap
from tests.conftest import CORPUS, REPO, requires_corpus
from tests.test_state import changes

pytestmark = pytest.mark.unit  # `make test-fast` runs these

DEMO = REPO / "examples" / "demo" / ".planning" / "ROADMAP.md"
TEMPLATE = REPO / ".planning-template" / "ROADMAP.md"
CORPUS_FILES = sorted(CORPUS.rglob("ROADMAP.md")) if CORPUS.is_dir() else []
ALL_FILES = [pytest.param(DEMO, id="demo"), pytest.param(TEMPLATE, id="template")] + [
    pytest.param(path, id=path.relative_to(CORPUS).parts[0], marks=requires_corpus)
    for path in CORPUS_FILES
]

# Independent readings of the corpus shapes, to find what to feed the functions.
PLAN_BOX = re.compile(r"^- \[[ xX]\] (?P<id>\d+(?:\.\d+)?-\d+)(?:-PLAN\.md|:)")
PHASE_ROW = re.compile(r"^\| (?P<phase>\d+(?:\.\d+)?)\.? ")


def plan_ids(text: str) -> list[str]:
    return [m["id"] for line in text.splitlines() if (m := PLAN_BOX.match(line))]


def phases(text: str) -> list[str]:
    return [m["phase"] for line in text.splitlines() if (m := PHASE_ROW.match(line))]


Edit = Callable[[str], str]


def first_plan_done(text: str) -> str:
    ids = plan_ids(text)
    return roadmap.check_plan(text, ids[0]) if ids else text


def every_plan_undone(text: str) -> str:
    for plan_id in plan_ids(text):
        text = roadmap.check_plan(text, plan_id, done=False)
    return text


def every_phase_in_progress(text: str) -> str:
    for phase in phases(text):
        text = roadmap.set_progress(text, phase, 1, 9, "In Progress", None)
    return text


EDITS = [
    pytest.param(first_plan_done, id="check_plan"),
    pytest.param(every_plan_undone, id="uncheck_plan"),
    pytest.param(every_phase_in_progress, id="set_progress"),
]


# gsd ticks boxes and fills rows and never reads them back (derive computes them); the
# tests read them back, through roadmap's own readers, to check what was written.
def plan_checked(text: str, plan_id: str) -> bool | None:
    """Whether the plan's checkbox is ticked; None when the roadmap lists no such plan."""
    for _, box in roadmap._checkboxes(Lines(text), plan_id):
        return box.group("mark") != " "
    return None


def progress_row(text: str, phase: str) -> dict[str, str] | None:
    """The phase's `plans`, `status` and `completed` cells as written, or None."""
    lines = Lines(text)
    rows = list(roadmap._progress_rows(lines, phase))
    if not rows:
        return None
    index, columns = rows[-1]
    cells = row_cells(lines.body(index))
    return {name: cells[column] if column < len(cells) else "" for name, column in columns.items()}


# ------------------------------------------------------------------ 1. round trips


@pytest.mark.parametrize("path", ALL_FILES)
def test_values_already_there_change_nothing(path: Path) -> None:
    text = load_text(path)
    ids = plan_ids(text)
    for plan_id in ids:
        done = plan_checked(text, plan_id)
        assert done is not None
        assert roadmap.check_plan(text, plan_id, done) is text
    rows = 0
    for phase in phases(text):
        row = progress_row(text, phase)
        assert row is not None
        plans = re.fullmatch(r"(\d+)/(\d+)", row["plans"])
        if plans is None:  # `0/TBD`, `0/?`, or a row whose cells slid one column
            continue
        date = None if row.get("completed", "-") == "-" else row["completed"]
        same = roadmap.set_progress(text, phase, int(plans[1]), int(plans[2]), row["status"], date)
        assert same is text
        rows += 1
    assert roadmap.check_plan(text, "99-99") is text
    assert roadmap.set_progress(text, "99", 1, 1, "Complete", None) is text
    assert ids or rows or path == TEMPLATE


@pytest.mark.parametrize("path", ALL_FILES)
def test_load_save_is_byte_exact(path: Path, tmp_path: Path) -> None:
    target = tmp_path / "planning" / "ROADMAP.md"
    assert save_text(target, load_text(path)) is True
    assert target.read_bytes() == path.read_bytes()
    assert save_text(target, load_text(target)) is False


# ---------------------------------------------------------- 2. owned lines only


@pytest.mark.parametrize("path", ALL_FILES)
def test_check_plan_touches_only_its_checkbox(path: Path) -> None:
    text = load_text(path)
    for plan_id in plan_ids(text):
        done = plan_checked(text, plan_id)
        new = roadmap.check_plan(text, plan_id, not done)
        removed, added = changes(text, new)
        assert len(removed) == len(added) == 1
        assert re.match(rf"- \[[ xX]\] {re.escape(plan_id)}\b", removed[0].rstrip("\r"))
        assert added[0] == re.sub(r"\[[ xX]\]", "[ ]" if done else "[x]", removed[0], count=1)
        assert plan_checked(new, plan_id) is (not done)


@pytest.mark.parametrize("path", ALL_FILES)
def test_set_progress_touches_only_its_row(path: Path) -> None:
    text = load_text(path)
    for phase in phases(text):
        new = roadmap.set_progress(text, phase, 7, 9, "In Progress", "2030-01-02")
        removed, added = changes(text, new)
        assert len(removed) == len(added) == 1
        before, after = removed[0].rstrip("\r"), added[0].rstrip("\r")
        assert before.startswith(f"| {phase}") and after.split("|")[:2] == before.split("|")[:2]
        assert "| 7/9 | In Progress | 2030-01-02 |" in after
        if before.count("|") == 6:  # the Milestone column stays as it was
            assert after.split("|")[2] == before.split("|")[2]
        assert progress_row(new, phase) == {
            "plans": "7/9",
            "status": "In Progress",
            "completed": "2030-01-02",
        }


@pytest.mark.parametrize("path", ALL_FILES)
@pytest.mark.parametrize("edit", EDITS)
def test_edits_are_idempotent(path: Path, edit: Edit) -> None:
    once = edit(load_text(path))
    assert edit(once) == once


@pytest.mark.parametrize("path", ALL_FILES)
@pytest.mark.parametrize("edit", EDITS)
def test_line_endings_and_final_newline_are_kept(path: Path, edit: Edit) -> None:
    text = load_text(path).replace("\r\n", "\n")
    expected = edit(text)
    assert edit(text.replace("\n", "\r\n")) == expected.replace("\n", "\r\n")
    assert edit(text.rstrip("\n")) == expected.rstrip("\n")


# ------------------------------------------------------------- 3. table tests


@pytest.mark.parametrize(
    ("line", "plan_id", "done", "expected"),
    [
        pytest.param(
            "- [ ] 01-02-PLAN.md — Name helper",
            "01-02",
            True,
            "- [x] 01-02-PLAN.md — Name helper",
            id="plan-file-form",
        ),
        pytest.param("- [ ] 01-02: Config", "01-02", True, "- [x] 01-02: Config", id="colon"),
        pytest.param(
            "- [ ] 07.1-01-PLAN.md -- Core",
            "07.1-01",
            True,
            "- [x] 07.1-01-PLAN.md -- Core",
            id="decimal-phase",
        ),
        pytest.param(
            "- [ ] 03-01-auth-PLAN.md", "03-01", True, "- [x] 03-01-auth-PLAN.md", id="slug"
        ),
        pytest.param("- [ ] **01-02**: x", "01-02", True, "- [x] **01-02**: x", id="bold"),
        pytest.param("  * [ ] 01-02: x", "01-02", True, "  * [x] 01-02: x", id="indented-star"),
        pytest.param("- [ ] 01-02: x", "1-2", True, "- [x] 01-02: x", id="unpadded-id"),
        pytest.param("- [X] 01-02: x", "01-02", True, "- [X] 01-02: x", id="capital-x-is-done"),
        pytest.param("- [x] 01-02: x", "01-02", False, "- [ ] 01-02: x", id="uncheck"),
        pytest.param("- [ ] 01-02: x", "01-12", True, "- [ ] 01-02: x", id="other-plan"),
        pytest.param("- [ ] 02.1-01: x", "02-01", True, "- [ ] 02.1-01: x", id="other-phase"),
        pytest.param("- [ ] 101-02: x", "01-02", True, "- [ ] 101-02: x", id="longer-phase"),
        pytest.param("- [ ] 01-020: x", "01-02", True, "- [ ] 01-020: x", id="longer-plan"),
        pytest.param(
            "- [ ] **Phase 1: Foundation** - x",
            "01-01",
            True,
            "- [ ] **Phase 1: Foundation** - x",
            id="phase-box-untouched",
        ),
        pytest.param(
            "```\n- [ ] 01-02: x\n```", "01-02", True, "```\n- [ ] 01-02: x\n```", id="fenced"
        ),
        pytest.param(
            "- [ ] 01-02: a\r\n- [ ] 01-03: b",
            "01-03",
            True,
            "- [ ] 01-02: a\r\n- [x] 01-03: b",
            id="crlf-no-final-newline",
        ),
    ],
)
def test_check_plan(line: str, plan_id: str, done: bool, expected: str) -> None:
    assert roadmap.check_plan(line, plan_id, done) == expected


FOUR = """\
| Phase | Plans Complete | Status | Completed |
|-------|----------------|--------|-----------|
{rows}"""
FIVE = """\
| Phase | Milestone | Plans Complete | Status | Completed |
|-------|-----------|----------------|--------|-----------|
{rows}"""


@pytest.mark.parametrize(
    ("table", "row", "phase", "expected"),
    [
        pytest.param(
            FOUR,
            "| 1. Foundation | 0/3 | Not started | - |\n",
            "1",
            "| 1. Foundation | 2/3 | In Progress | - |\n",
            id="four-columns",
        ),
        pytest.param(
            FIVE,
            "| 1. Foundation | v1.0 | 0/3 | Not started | - |\n",
            "01",
            "| 1. Foundation | v1.0 | 2/3 | In Progress | - |\n",
            id="milestone-column-kept",
        ),
        pytest.param(
            FOUR,
            "| 2.1 Integration Fixes | 0/1 | Not started | - |\n",
            "2.1",
            "| 2.1 Integration Fixes | 2/3 | In Progress | - |\n",
            id="decimal-no-dot",
        ),
        pytest.param(
            FOUR,
            "| 07.1. VoltAgent | 0/2 | Complete    | 2026-02-23 |\n",
            "7.1",
            "| 07.1. VoltAgent | 2/3 | In Progress | - |\n",
            id="padded-and-dated",
        ),
        pytest.param(
            FIVE,
            "| 9. Overview Tab | v1.1 | Complete    | 2026-02-26 | - |\n",
            "9",
            "| 9. Overview Tab | v1.1 | 2/3 | In Progress | - |\n",
            id="slid-cells-repaired",
        ),
        pytest.param(
            FOUR,
            "| 1. Foundation | 0/3 | Not started | - \n",
            "1",
            "| 1. Foundation | 2/3 | In Progress | - \n",
            id="no-closing-pipe",
        ),
        pytest.param(
            FOUR,
            "| 1. Foundation | 0/3 |\n",
            "1",
            "| 1. Foundation | 2/3 | In Progress | - |\n",
            id="short-row-filled",
        ),
        pytest.param(
            FOUR,
            "|1. Foundation|0/3|Not started|-|\n",
            "1",
            "|1. Foundation| 2/3 | In Progress |-|\n",
            id="tight-cells",
        ),
        pytest.param(
            FOUR,
            "| 10. Later | 0/3 | Not started | - |\n",
            "1",
            "| 10. Later | 0/3 | Not started | - |\n",
            id="ten-is-not-one",
        ),
        pytest.param(
            FOUR,
            "| 1. A | 0/3 | Not started | - |\n| 2. B | 0/1 | Not started | - |",
            "2",
            "| 1. A | 0/3 | Not started | - |\n| 2. B | 2/3 | In Progress | - |",
            id="no-final-newline",
        ),
        pytest.param(
            "| Phase | Goal |\n|---|---|\n",
            "| 1. A | 0/3 |\n",
            "1",
            "| Phase | Goal |\n|---|---|\n| 1. A | 0/3 |\n",
            id="not-a-progress-table",
        ),
    ],
)
def test_set_progress(table: str, row: str, phase: str, expected: str) -> None:
    text = table.format(rows=row)
    assert roadmap.set_progress(text, phase, 2, 3, "In Progress", None) == table.format(
        rows=expected
    )


def test_set_progress_cells() -> None:
    text = FOUR.format(rows="| 1. A | 0/3 | Not started | - |\n")
    done = roadmap.set_progress(text, "1", 3, 3, "Complete", "2026-03-01")
    assert done == FOUR.format(rows="| 1. A | 3/3 | Complete | 2026-03-01 |\n")
    piped = roadmap.set_progress(text, "1", 0, 3, "Blocked | see\nSTATE", None)
    assert piped == FOUR.format(rows="| 1. A | 0/3 | Blocked \\| see STATE | - |\n")


def test_the_last_table_listing_a_phase_wins() -> None:
    old = FOUR.format(rows="| 1. Old | 1/1 | Complete | 2025-01-01 |\n")
    new = FOUR.format(rows="| 1. New | 0/2 | Not started | - |\n")
    text = f"## v1.0\n\n{old}\n## Progress\n\n{new}"
    expected = f"## v1.0\n\n{old}\n## Progress\n\n" + new.replace(
        "0/2 | Not started", "1/2 | Doing"
    )
    assert roadmap.set_progress(text, "1", 1, 2, "Doing", None) == expected


def test_demo_after_a_plan() -> None:
    text = load_text(DEMO)
    new = roadmap.set_progress(roadmap.check_plan(text, "01-01"), "1", 1, 3, "In Progress", None)
    assert changes(text, new) == (
        [
            "- [ ] 01-01-PLAN.md — Language-aware greet() with tests",
            "| 1. Greeting Service | 0/3 | Not started | - |",
        ],
        [
            "- [x] 01-01-PLAN.md — Language-aware greet() with tests",
            "| 1. Greeting Service | 1/3 | In Progress | - |",
        ],
    )
    assert progress_row(text, "2") == {
        "plans": "0/TBD",
        "status": "Not started",
        "completed": "-",
    }


def test_template_reads_back() -> None:
    text = load_text(TEMPLATE)
    assert plan_checked(text, "01-02") is False
    assert plan_checked(text, "01-03") is None
    assert progress_row(text, "1") == {
        "plans": "0/[N]",
        "status": "Not started",
        "completed": "-",
    }


def test_an_escaped_pipe_written_into_a_cell_reads_back_as_one_cell() -> None:
    text = FOUR.format(rows="| 1. A | 0/3 | Not started | - |\n")
    once = roadmap.set_progress(text, "1", 1, 3, "Blocked | see STATE", None)
    assert once == FOUR.format(rows="| 1. A | 1/3 | Blocked \\| see STATE | - |\n")
    assert roadmap.set_progress(once, "1", 1, 3, "Blocked | see STATE", None) is once
    assert progress_row(once, "1") == {
        "plans": "1/3",
        "status": "Blocked | see STATE",
        "completed": "-",
    }


@pytest.mark.parametrize(
    ("line", "name"),
    [
        pytest.param("### Phase 1: Foundation", "Foundation", id="heading"),
        pytest.param("### Phase 1: Foundation ###", "Foundation", id="closing-run"),
        pytest.param("   ## Phase 1: Foundation", "Foundation", id="indented-heading"),
        pytest.param("    ### Phase 1: Foundation", None, id="indented-code"),
        pytest.param("- [ ] **Phase 1: Foundation** - core", "Foundation", id="checkbox"),
        pytest.param("**Phase 1: Foundation**", "Foundation", id="bold-line"),
    ],
)
def test_phase_titles_are_read_with_the_heading_reader(line: str, name: str | None) -> None:
    assert roadmap.phase_title(f"# Roadmap\n\n{line}\n", "1") == name


@pytest.mark.parametrize("path", ALL_FILES)
def test_edits_in_one_pass_are_the_edits_in_turn(path: Path) -> None:
    """Issue 23: `check_plans`, `check_phases`, `set_progresses` and `phase_titles` give
    what `check_plan`, `check_phase`, `set_progress` and `phase_title` give one by one."""
    text = path.read_text(encoding="utf-8")
    ids = plan_ids(text)
    ticks = [(plan_id, n % 3 != 0) for n, plan_id in enumerate(ids)] + [(i, True) for i in ids[:2]]
    numbers = [*phases(text), "1", "01", "2.1", "99"]
    marks = [(phase, n % 2 == 0) for n, phase in enumerate(numbers)]
    rows = [
        (phase, n, 9, "In Progress", None if n % 2 else "2026-01-02")
        for n, phase in enumerate(numbers)
    ]
    expected = text
    for plan_id, done in ticks:
        expected = roadmap.check_plan(expected, plan_id, done)
    assert roadmap.check_plans(text, ticks) == expected
    expected = text
    for phase, done in marks:
        expected = roadmap.check_phase(expected, phase, done)
    assert roadmap.check_phases(text, marks) == expected
    expected = text
    for row in rows:
        expected = roadmap.set_progress(expected, *row)
    assert roadmap.set_progresses(text, rows) == expected
    titles = roadmap.phase_titles(text)
    for phase in numbers:
        key = phase_key(phase)
        assert roadmap.phase_title(text, phase) == (titles.get(key) if key else None)
