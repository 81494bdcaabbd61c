"""STATE.md edits: byte-exact round trips over the corpus, owned lines only, small tables."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from gsd.core.errors import ERROR_TYPES, InputError
from gsd.formats.files import load_text, save_text
from gsd.formats.lines import Lines
from gsd.formats.planning import metrics, state
from tests.conftest import CORPUS, REPO, requires_corpus

pytestmark = pytest.mark.unit  # `make test-fast` runs these

DEMO = REPO / "examples" / "demo" / ".planning" / "STATE.md"
TEMPLATE = REPO / ".planning-template" / "STATE.md"
CORPUS_FILES = sorted(CORPUS.rglob("STATE.md")) if CORPUS.is_dir() else []
OURS = [pytest.param(DEMO, id="demo"), pytest.param(TEMPLATE, id="template")]
THEIRS = [
    pytest.param(path, id=path.relative_to(CORPUS).parts[0], marks=requires_corpus)
    for path in CORPUS_FILES
]
ALL_FILES = OURS + THEIRS

Edit = Callable[[str], str]

NEW_POSITION = {
    "phase": "3 of 7 (Brand New)",
    "plan": "2 of 4 in current phase",
    "status": "In progress",
    "last_activity": "2030-01-02 - Completed 03-02-PLAN.md",
}
NEW_SESSION = {
    "last_session": "2030-01-02 10:00",
    "stopped_at": "Completed 03-02-PLAN.md",
    "resume_file": ".planning/phases/03-x/03-03-PLAN.md",
}
BLOCKER = "- [03-02] timeout: no output for 300s"
METRIC_ROW = re.compile(
    r"^\| Phase (?P<phase>\S+) P(?P<plan>\d+) \| (?P<duration>[^|]+?) \| "
    r"(?P<tasks>\d+) tasks? \| (?P<files>\d+) files? \|$"
)


# gsd writes these lines and never reads them back (derive computes them afresh); the
# tests read them back, through state's own field reader, to check what was written.
def _fields(
    text: str, title: re.Pattern[str], names: tuple[tuple[str, str], ...]
) -> dict[str, str]:
    lines = Lines(text)
    span = lines.section(title)
    values = {}
    for key, label in names:
        found = lines.field(span, label) if span else None
        if found:
            values[key] = found[1].group("value").rstrip()
    return values


def position(text: str) -> dict[str, str]:
    """The Current Position values present, by `set_position` keyword (progress raw)."""
    fields = (*state._POSITION_FIELDS, ("progress", "Progress"))
    return _fields(text, state._POSITION_RE, fields)


def progress_percent(text: str) -> int | None:
    """The percentage of the Current Position progress bar, if it has one."""
    bar = state._BAR_RE.match(position(text).get("progress", ""))
    return round(float(bar.group("pct"))) if bar else None


def session(text: str) -> dict[str, str]:
    """The Session Continuity values present, by `set_session` keyword."""
    return _fields(text, state._SESSION_RE, state._SESSION_FIELDS)


def set_all_position(text: str) -> str:
    return state.set_position(text, **NEW_POSITION, progress=0.42)


def set_all_session(text: str) -> str:
    return state.set_session(text, **NEW_SESSION)


def add_blocker(text: str) -> str:
    return state.add_blocker(text, BLOCKER)


def record_metric(text: str) -> str:
    return metrics.record_metric(text, plan_id="03-02", duration="7min", tasks=3, files=1)


EDITS = [
    pytest.param(set_all_position, id="set_position"),
    pytest.param(set_all_session, id="set_session"),
    pytest.param(add_blocker, id="add_blocker"),
    pytest.param(lambda t: state.remove_blockers(add_blocker(t), "03-02"), id="remove_blockers"),
    pytest.param(record_metric, id="record_metric"),
]


def changes(old: str, new: str) -> tuple[list[str], list[str]]:
    """The lines difflib sees removed and added; everything else is equal and in order."""
    before, after = old.split("\n"), new.split("\n")
    removed: list[str] = []
    added: list[str] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += before[i1:i2]
            added += after[j1:j2]
    return removed, added


# ------------------------------------------------------------------ 1. round trips


@pytest.mark.parametrize("path", ALL_FILES)
def test_values_already_there_change_nothing(path: Path) -> None:
    text = load_text(path)
    values = position(text)
    percent = progress_percent(text)
    fields = {k: v for k, v in values.items() if k != "progress"}
    progress = None if percent is None else percent / 100
    assert state.set_position(text, **fields, progress=progress) is text
    assert state.set_position(text) is text
    assert state.set_session(text, **session(text)) is text
    for line in state.blockers(text):
        if line.startswith("- "):
            assert state.add_blocker(text, line) is text
    assert state.remove_blockers(text, "99-99") is text
    rows = [m for line in text.split("\n") if (m := METRIC_ROW.match(line))]
    for row in rows:
        same = metrics.record_metric(
            text,
            plan_id=f"{row['phase']}-{row['plan']}",
            duration=row["duration"],
            tasks=int(row["tasks"]),
            files=int(row["files"]),
        )
        assert same is text


@pytest.mark.parametrize("path", ALL_FILES)
def test_load_save_is_byte_exact(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    copy = tmp_path / "STATE.md"
    copy.write_bytes(data)
    assert save_text(copy, load_text(copy)) is False
    target = tmp_path / "new" / "STATE.md"
    assert save_text(target, load_text(path)) is True
    assert target.read_bytes() == data


@requires_corpus
def test_the_corpus_has_the_shapes_we_support() -> None:
    texts = {path.relative_to(CORPUS).parts[0]: load_text(path) for path in CORPUS_FILES}
    assert len(texts) >= 8
    assert any("\r\n" in text for text in texts.values())
    assert any(progress_percent(text) is None for text in texts.values())
    assert any(METRIC_ROW.match(line) for t in texts.values() for line in t.split("\n"))


# ---------------------------------------------------------- 2. owned lines only


OWNED: dict[str, Callable[[str], bool]] = {
    # A section gsd creates brings its heading and blank lines.
    "set_position": lambda line: (
        line in ("", "## Current Position")
        or bool(re.match(r"(Phase|Plan|Status|Last activity|Progress): ", line))
    ),
    "set_session": lambda line: (
        line in ("", "## Session Continuity")
        or bool(re.match(r"(Last session|Stopped at|Resume file): ", line))
    ),
    "add_blocker": lambda line: (
        line in (BLOCKER, "## Blockers", "", "None.", "None yet.") or "None currently" in line
    ),
    "record_metric": lambda line: line.startswith("|"),
}


@pytest.mark.parametrize("path", ALL_FILES)
@pytest.mark.parametrize("name", list(OWNED))
def test_new_values_touch_only_owned_lines(path: Path, name: str) -> None:
    text = load_text(path).replace("\r\n", "\n")  # CRLF is covered by its own test
    edit = {
        "set_position": set_all_position,
        "set_session": set_all_session,
        "add_blocker": add_blocker,
        "record_metric": record_metric,
    }[name]
    new = edit(text)
    removed, added = changes(text, new)
    owned = OWNED[name]
    assert all(owned(line) for line in removed), removed
    assert all(owned(line) for line in added), added
    if name == "set_position":
        assert "Phase: 3 of 7 (Brand New)" in new and "42%" in new
    elif name == "set_session":
        assert "Stopped at: Completed 03-02-PLAN.md" in new
    elif name == "add_blocker":
        assert added.count(BLOCKER) == 1 and BLOCKER in state.blockers(new)
    elif re.search(r"^\| Plan \| Duration", text, re.M):
        assert "| Phase 03 P02 | 7min | 3 tasks | 1 file |" in new
    else:
        assert new is text


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
    bare = text.rstrip("\n")
    assert edit(bare) == expected.rstrip("\n")


# ------------------------------------------------------------- 3. table tests


@pytest.mark.parametrize(
    ("progress", "expected"),
    [
        pytest.param(0, "[░░░░░░░░░░] 0%", id="0"),
        pytest.param(0.3, "[███░░░░░░░] 30%", id="30"),
        pytest.param(1, "[██████████] 100%", id="100"),
        pytest.param(2 / 3, "[██████░░░░] 67%", id="two-thirds-rounds-up"),
        pytest.param(1 / 3, "[███░░░░░░░] 33%", id="one-third"),
        pytest.param(0.005, "[░░░░░░░░░░] 1%", id="half-rounds-up"),
        pytest.param(0.29, "[██░░░░░░░░] 29%", id="float-noise"),
        pytest.param(0.95, "[█████████░] 95%", id="whole-cells-only"),
        pytest.param(0.999, "[█████████░] 99%", id="not-100-before-done"),
        pytest.param(8 / 9, "[████████░░] 89%", id="corpus-89"),
    ],
)
def test_progress_bar(progress: float, expected: str) -> None:
    assert state.progress_bar(progress) == expected


@pytest.mark.parametrize("bad", [-0.1, 1.01, 30, math.nan])
def test_progress_is_a_fraction(bad: float) -> None:
    with pytest.raises(ValueError, match="fraction"):
        state.set_position("", progress=bad)


POSITION = """\
# Project State

## Current Position

Phase: 1 of 2 (Alpha)
Plan: 0 of 3 in current phase
Status: Ready to execute
Last activity: 2026-01-01 - planned

Progress: [░░░░░░░░░░] 0%

## Accumulated Context

Notes.
"""


@pytest.mark.parametrize(
    ("text", "kwargs", "expected"),
    [
        pytest.param(
            POSITION,
            {"plan": "1 of 3 in current phase", "progress": 1 / 3},
            POSITION.replace("Plan: 0 of 3", "Plan: 1 of 3").replace(
                "[░░░░░░░░░░] 0%", "[███░░░░░░░] 33%"
            ),
            id="plan-and-bar",
        ),
        pytest.param(
            POSITION,
            {"status": "Paused\nat checkpoint"},
            POSITION.replace("Ready to execute", "Paused at checkpoint"),
            id="value-made-one-line",
        ),
        pytest.param(
            POSITION.replace("Status: Ready to execute\n", ""),
            {"status": "In progress"},
            POSITION.replace("Status: Ready to execute", "Status: In progress"),
            id="missing-line-after-its-predecessor",
        ),
        pytest.param(
            "## Current Position\n\nMilestone: v1.3\nStatus: Done\n\nProgress: [█] 100%\n",
            {"phase": "1 of 2 (A)", "plan": "1 of 1"},
            "## Current Position\n\nMilestone: v1.3\nPhase: 1 of 2 (A)\nPlan: 1 of 1\n"
            "Status: Done\n\nProgress: [█] 100%\n",
            id="missing-lines-before-their-successor",
        ),
        pytest.param(
            "## Current Position\n\nMilestone: v1.0\n\nProgress: [██████████] 100%\n\n## Next\n",
            {"phase": "1 of 2 (A)", "status": "Ready"},
            "## Current Position\n\nMilestone: v1.0\nPhase: 1 of 2 (A)\nStatus: Ready\n\n"
            "Progress: [██████████] 100%\n\n## Next\n",
            id="missing-lines-join-the-paragraph-above",
        ),
        pytest.param(
            "## Current Position\n\nProgress: [░░░░░░░░░░] 0%\n",
            {"phase": "1 of 2 (A)"},
            "## Current Position\n\nPhase: 1 of 2 (A)\nProgress: [░░░░░░░░░░] 0%\n",
            id="missing-line-never-joins-the-heading",
        ),
        pytest.param(
            "## Current Position\n\nPhase: 9 of 9\n\nGit SHA: abc\n\n## Next\n",
            {"progress": 0.3},
            "## Current Position\n\nPhase: 9 of 9\n\nGit SHA: abc\n\n"
            "Progress: [███░░░░░░░] 30%\n\n## Next\n",
            id="missing-progress-ends-the-section",
        ),
        pytest.param(
            "# Project State\n\nIntro.\n",
            {"phase": "1 of 1 (Only)", "progress": 0.5},
            "# Project State\n\nIntro.\n\n## Current Position\n\n"
            "Phase: 1 of 1 (Only)\n\nProgress: [█████░░░░░] 50%\n",
            id="missing-section-at-end",
        ),
        pytest.param(
            "## Current Position\n\nProgress: Phase 9 complete\n",
            {"progress": 0.5},
            "## Current Position\n\nProgress: [█████░░░░░] 50%\n",
            id="free-text-progress-becomes-a-bar",
        ),
        pytest.param(
            "## Current Position\n\nProgress: [████████████████████] 100%\n",
            {"progress": 0.25},
            "## Current Position\n\nProgress: [█████░░░░░░░░░░░░░░░] 25%\n",
            id="twenty-cells-stay-twenty",
        ),
        pytest.param(
            "## Current Position\n\nProgress: [==============================..] 87% (v1.1)\n",
            {"progress": 0.5},
            "## Current Position\n\nProgress: [================................] 50% (v1.1)\n",
            id="ascii-bar-and-note-kept",
        ),
        pytest.param(
            "## Current Position\n\nProgress: [████████░░] 89% (8 of 9 phases complete)\n",
            {"progress": 0.89},
            "## Current Position\n\nProgress: [████████░░] 89% (8 of 9 phases complete)\n",
            id="same-percentage-untouched",
        ),
        pytest.param(
            "## Current Position\n\n**Status:** Ready\n- Plan: 1 of 2\n",
            {"status": "Done", "plan": "2 of 2"},
            "## Current Position\n\n**Status:** Done\n- Plan: 2 of 2\n",
            id="bold-and-bullet-labels",
        ),
        pytest.param(
            "## Current Position\n\nPhase: 1\nPlans: 3 total\n## Next\n\nPlan: keep\n",
            {"plan": "2 of 3"},
            "## Current Position\n\nPhase: 1\nPlan: 2 of 3\nPlans: 3 total\n"
            "## Next\n\nPlan: keep\n",
            id="only-inside-the-section",
        ),
        pytest.param(
            "---\nstatus: x\n# Current Position\n---\n\n## Current Position\n\nStatus: old\n",
            {"status": "new"},
            "---\nstatus: x\n# Current Position\n---\n\n## Current Position\n\nStatus: new\n",
            id="frontmatter-is-not-a-heading",
        ),
        pytest.param(
            "## Current Position\n\n```\nStatus: quoted\n```\n\n## Notes\n",
            {"status": "new"},
            "## Current Position\n\n```\nStatus: quoted\n```\nStatus: new\n\n## Notes\n",
            id="a-fenced-label-is-not-the-field",
        ),
    ],
)
def test_set_position(text: str, kwargs: dict[str, object], expected: str) -> None:
    assert state.set_position(text, **kwargs) == expected  # type: ignore[arg-type]


BLOCKERS = """\
## Accumulated Context

### Pending Todos

None yet.

### Blockers/Concerns

{body}
## Session Continuity

Last session: 2026-01-01
"""


def blockers_text(body: str) -> str:
    return BLOCKERS.format(body=body)


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        pytest.param(
            blockers_text("None yet.\n"),
            "- [01-02] timeout: slow",
            blockers_text("- [01-02] timeout: slow\n"),
            id="placeholder-replaced",
        ),
        pytest.param(
            blockers_text("None.\n"),
            "[01-02] timeout: slow",
            blockers_text("- [01-02] timeout: slow\n"),
            id="bullet-added-and-none-replaced",
        ),
        pytest.param(
            blockers_text("- None currently\n"),
            "- [01-02] timeout: slow",
            blockers_text("- [01-02] timeout: slow\n"),
            id="bullet-placeholder-replaced",
        ),
        pytest.param(
            blockers_text("- Schema unclear.\n"),
            "- [01-02] timeout: slow",
            blockers_text("- Schema unclear.\n- [01-02] timeout: slow\n"),
            id="appended-after-content",
        ),
        pytest.param(
            blockers_text("None yet.\nMore notes.\n"),
            "- [01-02] timeout: slow",
            blockers_text("None yet.\nMore notes.\n- [01-02] timeout: slow\n"),
            id="placeholder-kept-when-not-alone",
        ),
        pytest.param(
            blockers_text("- [01-02] timeout: slow\n- [01-03] nonzero-exit: 2\n"),
            "- [1-2] policy-violation: wrote src/x.py",
            blockers_text("- [1-2] policy-violation: wrote src/x.py\n- [01-03] nonzero-exit: 2\n"),
            id="same-plan-replaced-in-place",
        ),
        pytest.param(
            blockers_text("- [01-02] needs an API key\n- [01-02] timeout: slow\n"),
            "- [01-02] nonzero-exit: exit 2",
            blockers_text("- [01-02] needs an API key\n- [01-02] nonzero-exit: exit 2\n"),
            id="notes-about-the-plan-are-not-gsds",
        ),
        pytest.param(
            blockers_text("- [01-02] needs an API key\n"),
            "- [01-02] timeout",
            blockers_text("- [01-02] needs an API key\n- [01-02] timeout\n"),
            id="note-kept-bare-type-added",
        ),
        pytest.param(
            blockers_text(""),
            "- [01-02] timeout: slow",
            blockers_text("- [01-02] timeout: slow\n\n"),
            id="empty-section",
        ),
        pytest.param(
            "## Current Position\n\nStatus: x\n",
            "- [01-02] timeout: slow",
            "## Current Position\n\nStatus: x\n\n## Blockers\n\n- [01-02] timeout: slow\n",
            id="section-created-at-end",
        ),
        pytest.param(
            "# STATE\n\nStatus: x",
            "- [01-02] timeout: slow",
            "# STATE\n\nStatus: x\n\n## Blockers\n\n- [01-02] timeout: slow",
            id="created-without-final-newline",
        ),
        pytest.param(
            "",
            "- [01-02] timeout: slow",
            "## Blockers\n\n- [01-02] timeout: slow\n",
            id="empty-file",
        ),
        pytest.param(
            "## Blockers\n\nNone\n\n## Session Continuity\n",
            "- [01-02] timeout: slow",
            "## Blockers\n\n- [01-02] timeout: slow\n\n## Session Continuity\n",
            id="level-two-heading",
        ),
        pytest.param(
            "## Blockers\n\n```\n- [01-02] timeout: old\n```\n",
            "- [01-02] timeout: new",
            "## Blockers\n\n```\n- [01-02] timeout: old\n```\n- [01-02] timeout: new\n",
            id="fenced-example-untouched",
        ),
        pytest.param(
            "## Blockers\n## Next\n",
            "- [01-02] timeout: slow",
            "## Blockers\n\n- [01-02] timeout: slow\n\n## Next\n",
            id="heading-right-after-heading",
        ),
    ],
)
def test_add_blocker(text: str, line: str, expected: str) -> None:
    assert state.add_blocker(text, line) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            blockers_text("- [01-02] timeout: slow\n"),
            blockers_text("None yet.\n"),
            id="placeholder-restored",
        ),
        pytest.param(
            blockers_text("- Schema.\n- [1-2] timeout: a\n- [01-02] timeout: b\n"),
            blockers_text("- Schema.\n"),
            id="every-line-of-the-plan",
        ),
        pytest.param(
            blockers_text("- [01-02] blocked on review\n- [01-02] merge-conflict: src/a.py\n"),
            blockers_text("- [01-02] blocked on review\n"),
            id="notes-about-the-plan-kept",
        ),
        pytest.param(
            blockers_text("- [01-03] timeout: slow\n"),
            blockers_text("- [01-03] timeout: slow\n"),
            id="other-plan-kept",
        ),
        pytest.param(
            "## Blockers\n\n- Other\n- [01-02] timeout: slow",
            "## Blockers\n\n- Other",
            id="last-line-without-newline",
        ),
        pytest.param("# STATE\n", "# STATE\n", id="no-section"),
    ],
)
def test_remove_blockers(text: str, expected: str) -> None:
    assert state.remove_blockers(text, "01-02") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "## Blockers\n\n- [01-02] timeout: slow\n- [1-3] checkpoint-paused: look\n",
            [("01-02", "timeout"), ("1-3", "checkpoint-paused")],
            id="failure-and-pause",
        ),
        pytest.param(
            "### Blockers/Concerns\n\n- [01-02] needs an API key\n- [01-04] unknown\n",
            [("01-04", "unknown")],
            id="a-persons-note-is-not-gsds",
        ),
        pytest.param("## Blockers\n\n```\n- [01-02] timeout: an example\n```\n", [], id="fenced"),
        pytest.param("## Notes\n\n- [01-02] timeout: elsewhere\n", [], id="not-a-blocker"),
        pytest.param("", [], id="empty"),
    ],
)
def test_blocker_plans(text: str, expected: list[tuple[str, str]]) -> None:
    assert state.blocker_plans(text) == expected


def test_blocker_line_is_read_back_as_gsds_own() -> None:
    for error_type in (*ERROR_TYPES, "checkpoint-paused"):
        for details in ("", "a: b [c] | d"):
            line = state.blocker_line("02.1-03", error_type, details)
            text = state.add_blocker("# State\n", line)
            assert state.blocker_plans(text) == [("02.1-03", error_type)]
            assert state.remove_blockers(text, "2.1-3") == text.replace(line, "None yet.")


def test_blocker_line() -> None:
    assert state.blocker_line("01-02", "timeout", "no output\n  for 300s") == (
        "- [01-02] timeout: no output for 300s"
    )
    assert state.blocker_line("01-02", "unknown") == "- [01-02] unknown"
    long = state.blocker_line("01-02", "nonzero-exit", "x" * 500, width=20)
    assert long == "- [01-02] nonzero-exit: " + "x" * 19 + "…"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "## Session Continuity\n\nLast session: old\nStopped at: old\nResume file: None\n",
            "## Session Continuity\n\nLast session: 2030-01-02 10:00\n"
            "Stopped at: Completed 03-02-PLAN.md\n"
            "Resume file: .planning/phases/03-x/03-03-PLAN.md\n",
            id="all-three",
        ),
        pytest.param(
            "## Session Continuity\n\nLast major action: archived.\n",
            "## Session Continuity\n\nLast major action: archived.\n"
            "Last session: 2030-01-02 10:00\nStopped at: Completed 03-02-PLAN.md\n"
            "Resume file: .planning/phases/03-x/03-03-PLAN.md\n",
            id="missing-lines-end-the-section",
        ),
        pytest.param(
            "## Session Continuity\n\nLast session: a\nStopped at: b\nResume notes: c\n",
            "## Session Continuity\n\nLast session: 2030-01-02 10:00\n"
            "Stopped at: Completed 03-02-PLAN.md\n"
            "Resume file: .planning/phases/03-x/03-03-PLAN.md\nResume notes: c\n",
            id="missing-line-after-its-predecessor",
        ),
        pytest.param(
            "# STATE\n",
            "# STATE\n\n## Session Continuity\n\nLast session: 2030-01-02 10:00\n"
            "Stopped at: Completed 03-02-PLAN.md\n"
            "Resume file: .planning/phases/03-x/03-03-PLAN.md\n",
            id="missing-section",
        ),
    ],
)
def test_set_session(text: str, expected: str) -> None:
    assert state.set_session(text, **NEW_SESSION) == expected


def test_set_session_partial() -> None:
    text = "## Session Continuity\n\nLast session: a\nStopped at: b\nResume file: c\n"
    assert state.set_session(text, stopped_at="d") == text.replace("b", "d")
    assert state.set_session(text) is text


def test_demo_after_a_plan() -> None:
    text = load_text(DEMO)
    new = state.set_position(
        text,
        plan="1 of 3 in current phase",
        status="In progress",
        last_activity="2026-11-23 - Completed 01-01-PLAN.md",
        progress=1 / 3,
    )
    new = state.set_session(new, last_session="2026-11-23", stopped_at="Completed 01-01-PLAN.md")
    new = state.add_blocker(new, state.blocker_line("01-02", "timeout", "no output"))
    removed, added = changes(text, new)
    assert removed == [
        "Plan: 0 of 3 in current phase",
        "Status: Ready to execute",
        "Last activity: 2026-11-22 - Phase 1 planned (3 plans in 2 waves)",
        "Progress: [░░░░░░░░░░] 0%",
        "None yet.",
        "Last session: 2026-11-22",
        "Stopped at: Phase 1 planned",
    ]
    assert added == [
        "Plan: 1 of 3 in current phase",
        "Status: In progress",
        "Last activity: 2026-11-23 - Completed 01-01-PLAN.md",
        "Progress: [███░░░░░░░] 33%",
        "- [01-02] timeout: no output",
        "Last session: 2026-11-23",
        "Stopped at: Completed 01-01-PLAN.md",
    ]
    assert "None yet." in new.split("### Blockers")[0]  # Pending Todos keeps its own
    assert state.remove_blockers(new, "01-02").count("None yet.") == 2


def test_template_reads_back() -> None:
    text = load_text(TEMPLATE)
    assert position(text) == {
        "phase": "1 of [N] ([Phase name])",
        "plan": "0 of [M] in current phase",
        "status": "Ready to plan",
        "last_activity": "[date] - Project initialized",
        "progress": "[░░░░░░░░░░] 0%",
    }
    assert progress_percent(text) == 0
    assert session(text)["resume_file"] == "None"
    assert state.blockers(text) == []
    assert record_metric(text) is text  # the template has no per-plan table


def test_load_keeps_crlf_and_reports_problems(tmp_path: Path) -> None:
    path = tmp_path / "project" / "STATE.md"
    path.parent.mkdir()
    path.write_bytes(b"## Blockers\r\n\r\nNone\r\n")
    text = load_text(path)
    assert text == "## Blockers\r\n\r\nNone\r\n"
    assert save_text(path, state.add_blocker(text, "- [01-01] timeout: x")) is True
    assert path.read_bytes() == b"## Blockers\r\n\r\n- [01-01] timeout: x\r\n"
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind
    with pytest.raises(InputError, match="not found"):
        load_text(tmp_path / "missing.md")
    assert load_text(tmp_path / "missing.md", missing_ok=True) == ""
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe")
    with pytest.raises(InputError, match="cannot read"):
        load_text(tmp_path / "bad.md")


def test_save_compares_with_the_text_the_caller_loaded(tmp_path: Path) -> None:
    path = tmp_path / "STATE.md"
    path.write_text("## Blockers\n\n- [01-01] timeout: x\n")
    text = load_text(path)
    assert save_text(path, state.remove_blockers(text, "01-02"), old=text) is False
    edited = state.remove_blockers(text, "01-01")
    assert save_text(path, edited, old=text) is True and load_text(path) == edited
    # `old` stands in for the file: it is not read again
    assert save_text(tmp_path / "unread.md", "same", old="same") is False
    assert not (tmp_path / "unread.md").exists()


def test_a_missing_line_goes_before_a_subsection_not_into_it() -> None:
    from gsd.formats.planning.state import set_position

    text = (
        "## Current Position\n\nPhase: 1 of 1\nStatus: Ready\n\n"
        "### Blockers/Concerns\n\nNone yet.\n"
    )
    updated = set_position(text, plan="1 of 2 in current phase", progress=0.5)
    head, _, tail = updated.partition("### Blockers/Concerns")
    assert "Plan: 1 of 2 in current phase" in head and "Progress:" in head
    assert tail == "\n\nNone yet.\n"
