"""SUMMARY.md: upstream's frontmatter and headings, render -> parse round trips, the corpus."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from gsd.core.models import TaskReport
from gsd.core.verdict.outcomes import TaskOutcome
from gsd.formats.planning import summary, summaryread

pytestmark = pytest.mark.unit  # `make test-fast` runs these

STARTED = datetime(2026, 2, 23, 14, 0, 0, tzinfo=timezone.utc)
FINISHED = STARTED + timedelta(minutes=3, seconds=5)
NAMES = {1: "Task 1: Write the model", 2: "Add the API", 3: "Task 3: Document it"}

UPSTREAM_KEYS = [
    "phase",
    "plan",
    "subsystem",
    "tags",
    "key-files",
    "key-decisions",
    "duration",
    "completed",
    "specialist_usage",
]
UPSTREAM_HEADINGS = [
    "## Performance",
    "## Task Commits",
    "## Files Created/Modified",
    "## Deviations from Plan",
    "## Issues Encountered",
    "## Tokens and Cost",
]


def outcome(task: int, agent: str = "gsd-executor", **fields: Any) -> TaskOutcome:
    done = TaskOutcome.blank("01-02", task, agent)._replace(
        success=True,
        commit=f"{task}bcdef0123456789abcdef0123456789abcdef0"[:40],
        changed=[f"src/t{task}.py"],
        exit_code=0,
        duration_s=30.0,
        input_tokens=1000,
        output_tokens=200,
        cost_usd=0.05,
        checkpoint=f"gsd/checkpoint/01-02/{task}",
    )
    return done._replace(**fields)


def render(outcomes: list[TaskOutcome], **overrides: Any) -> str:
    args: dict[str, Any] = {
        "phase_dir": "01-alpha",
        "plan_id": "01-02",
        "plan_frontmatter": {"phase": "01-alpha", "plan": "02", "subsystem": "api"},
        "outcomes": outcomes,
        "task_names": NAMES,
        "started": STARTED,
        "finished": FINISHED,
    }
    args.update(overrides)
    return summary.render(**args)


def section(text: str, heading: str) -> str:
    """The lines under `## heading`, up to the next heading or rule."""
    body = text.split(f"## {heading}\n", 1)[1]
    return re.split(r"^(?:## |---$)", body, flags=re.M)[0].strip()


def three_tasks() -> list[TaskOutcome]:
    return [
        outcome(1, changed=["src/model.py", "tests/test_model.py"]),
        outcome(
            2,
            "python-pro",
            success=False,
            error_type="timeout",
            commit=None,
            exit_code=124,
            details="SIGTERM after 300s",
            input_tokens=None,
            output_tokens=None,
            cost_usd=None,
        ),
        outcome(
            2,
            "python-pro",
            attempt=2,
            changed=["src/api.py", "src/model.py"],
            deviations=["wrote src/extra.py, outside files_modified"],
        ),
        outcome(3, changed=["README.md"], soft_success=True),
    ]


def test_frontmatter_keys_in_upstream_order() -> None:
    text = render(three_tasks())
    assert text.startswith("---\n")
    assert list(summaryread.parse(text)) == UPSTREAM_KEYS


def test_frontmatter_values() -> None:
    data = summaryread.parse(render(three_tasks()))
    assert data == {
        "phase": "01-alpha",
        "plan": "02",
        "subsystem": "api",
        "tags": [],
        "key-files": {
            "created": [],
            "modified": ["README.md", "src/api.py", "src/model.py", "tests/test_model.py"],
        },
        "key-decisions": [],
        "duration": "3min",
        "completed": "2026-02-23",
        "specialist_usage": {"gsd-executor": ["1", "3"], "python-pro": ["2"]},
    }


def test_plan_number_is_quoted_and_stays_zero_padded() -> None:
    text = render([outcome(1)])
    assert '\nplan: "02"\n' in text
    assert summaryread.parse(text)["plan"] == "02"
    front = text.split("---\n")[1]
    assert yaml.safe_load(front)["plan"] == "02"  # a YAML 1.1 reader agrees


def test_specialist_usage_groups_task_numbers_by_agent_as_upstream_writes_it() -> None:
    text = render(three_tasks())
    assert "specialist_usage:\n  gsd-executor: [1, 3]\n  python-pro: [2]\n" in text


def test_specialist_usage_counts_the_agent_of_the_successful_attempt() -> None:
    outcomes = [
        outcome(1, "python-pro", success=False, error_type="nonzero-exit", commit=None),
        outcome(1, "gsd-executor", attempt=2),
    ]
    assert summaryread.parse(render(outcomes))["specialist_usage"] == {"gsd-executor": ["1"]}


def test_subsystem_falls_back_to_domain_then_empty() -> None:
    domain = render([outcome(1)], plan_frontmatter={"domain": "auth"})
    assert summaryread.parse(domain)["subsystem"] == "auth"
    neither = render([outcome(1)], plan_frontmatter={})
    assert '\nsubsystem: ""\n' in neither
    assert summaryread.parse(neither)["subsystem"] == ""


def test_body_headings_match_upstream() -> None:
    text = render(three_tasks())
    assert "\n# Phase 01 Plan 02: Summary\n" in text
    positions = [text.index(f"\n{heading}\n") for heading in UPSTREAM_HEADINGS]
    assert positions == sorted(positions)


def test_performance_section() -> None:
    assert section(render(three_tasks()), "Performance").splitlines() == [
        "- **Duration:** 3 min",
        "- **Started:** 2026-02-23T14:00:00Z",
        "- **Completed:** 2026-02-23T14:03:05Z",
        "- **Tasks:** 3",
        "- **Files modified:** 4",
    ]


def test_task_commits_shorten_hashes_to_seven_and_name_the_agent() -> None:
    assert section(render(three_tasks()), "Task Commits").splitlines() == [
        "1. **Task 1: Write the model** - `1bcdef0` (gsd-executor)",
        "2. **Task 2: Add the API** - `2bcdef0` (python-pro)",
        "3. **Task 3: Document it** - `3bcdef0` (gsd-executor)",
    ]


def test_task_commits_without_a_commit_or_an_outcome() -> None:
    text = render([outcome(1, commit=None, changed=[])], task_names={1: "Check", 2: "Later"})
    assert section(text, "Task Commits").splitlines() == [
        "1. **Task 1: Check** - no changes to commit (gsd-executor)",
        "2. **Task 2: Later** - no run recorded (done in an earlier run, or a checkpoint)",
    ]


def test_a_writing_task_that_made_no_change_is_said_in_commits_and_deviations() -> None:
    text = render([outcome(1, commit=None, changed=[], no_change=True)], task_names={1: "Write"})
    assert section(text, "Task Commits") == "1. **Task 1: Write** - made no change (gsd-executor)"
    assert section(text, "Deviations from Plan").splitlines() == [
        f"- **Task 1 (gsd-executor):** {summary.MADE_NO_CHANGE}",
        "",
        "**Total deviations:** 1",
    ]


def test_files_created_and_modified() -> None:
    report = TaskReport(
        status="success",
        files_created=["src/new.py"],
        files_modified=[],
        files_deleted=[],
        validation="pass",
        errors=None,
        key_interfaces="",
        patterns="",
        warnings="",
        complete=True,
    )
    outcomes = [
        outcome(1, changed=["src/new.py", "src/old.py"], report=report),
        outcome(2, changed=["src/old.py", "docs/x.md"]),
    ]
    text = render(outcomes, created=["docs/x.md", "src/new.py"])  # what git saw added
    assert section(text, "Files Created/Modified").splitlines() == [
        "- `docs/x.md` - created (Task 2)",
        "- `src/new.py` - created (Task 1)",
        "- `src/old.py` - modified (Tasks 1, 2)",
    ]
    assert summaryread.parse(text)["key-files"] == {
        "created": ["docs/x.md", "src/new.py"],
        "modified": ["src/old.py"],
    }
    # without git's word, the Task Report's "Files created" is all there is
    assert summaryread.parse(render(outcomes))["key-files"]["created"] == ["src/new.py"]
    # with it, git decides: a file the report calls created but git saw modified is modified
    assert summaryread.parse(render(outcomes, created=["docs/x.md"]))["key-files"] == {
        "created": ["docs/x.md"],
        "modified": ["src/new.py", "src/old.py"],
    }


def test_deviations_are_listed_per_task() -> None:
    outcomes = three_tasks()
    outcomes[0] = outcomes[0]._replace(deviations=["touched a file\n  outside the plan"])
    assert section(render(outcomes), "Deviations from Plan").splitlines() == [
        "- **Task 1 (gsd-executor):** touched a file outside the plan",
        "- **Task 2 (python-pro):** wrote src/extra.py, outside files_modified",
        "",
        "**Total deviations:** 2",
    ]


def test_no_deviations_says_so_as_upstream_does() -> None:
    text = render([outcome(1)])
    assert section(text, "Deviations from Plan") == "None - plan executed exactly as written."


def test_issues_list_failed_attempts_and_soft_successes() -> None:
    assert section(render(three_tasks()), "Issues Encountered").splitlines() == [
        "- **Task 2 attempt 1 (python-pro):** timeout, exit 124 - SIGTERM after 300s; rolled back",
        "- **Task 3 attempt 1 (gsd-executor):** timed out after a complete success Task "
        "Report; accepted as a soft success",
    ]
    assert section(render([outcome(1)]), "Issues Encountered") == "None"


def test_tokens_and_cost_per_agent_with_totals() -> None:
    lines = section(render(three_tasks()), "Tokens and Cost").splitlines()
    assert lines[:5] == [
        "| Agent | Attempts | Input tokens | Output tokens | Cost (USD) |",
        "|-------|---------:|-------------:|--------------:|-----------:|",
        "| gsd-executor | 2 | 2,000 | 400 | $0.1000 |",
        "| python-pro | 2 | 1,000 (partial) | 200 (partial) | $0.0500 (partial) |",
        "| **Total** | 4 | 3,000 (partial) | 600 (partial) | $0.1500 (partial) |",
    ]


def test_tokens_not_reported_when_the_runner_gave_none() -> None:
    quiet = outcome(1, "command", input_tokens=None, output_tokens=None, cost_usd=None)
    lines = section(render([quiet]), "Tokens and Cost").splitlines()
    assert lines[2] == "| command | 1 | not reported | not reported | not reported |"
    assert lines[3] == "| **Total** | 1 | not reported | not reported | not reported |"


@pytest.mark.parametrize(
    ("seconds", "short", "long"),
    [
        pytest.param(45, "45s", "45 sec", id="under-a-minute"),
        pytest.param(185, "3min", "3 min", id="minutes"),
        pytest.param(3 * 3600, "180min", "180 min", id="hours-as-minutes"),
    ],
)
def test_duration(seconds: int, short: str, long: str) -> None:
    text = render([outcome(1)], finished=STARTED + timedelta(seconds=seconds))
    assert summaryread.parse(text)["duration"] == short
    assert f"- **Duration:** {long}\n" in text


def test_naive_times_are_utc_and_completed_is_the_utc_date() -> None:
    late = datetime(2026, 2, 23, 23, 59, 30, tzinfo=timezone(timedelta(hours=-5)))
    text = render([outcome(1)], started=late - timedelta(minutes=1), finished=late)
    assert summaryread.parse(text)["completed"] == "2026-02-24"
    naive = render([outcome(1)], started=STARTED.replace(tzinfo=None), finished=FINISHED)
    assert "- **Started:** 2026-02-23T14:00:00Z" in naive


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("01-alpha", id="phase-dir"),
        pytest.param("02", id="zero-padded"),
        pytest.param("2026-02-23", id="date"),
        pytest.param("1.5", id="float"),
        pytest.param("yes", id="bool-word"),
        pytest.param("null", id="null"),
        pytest.param("", id="empty"),
        pytest.param("a: b # c", id="colon-and-hash"),
        pytest.param('say "hi" \\ now', id="quotes-and-backslash"),
        pytest.param("line\nbreak\ttab\x7f", id="control-characters"),
        pytest.param("- [x] {y} & *z !w", id="yaml-indicators"),
        pytest.param("ünïcode ✓ 🚀", id="unicode"),
    ],
)
def test_awkward_strings_read_back_unchanged(value: str) -> None:
    outcomes = [outcome(1, agent=value or "x", changed=[value or "y"])]
    text = render(outcomes, phase_dir=value or "z", plan_frontmatter={"subsystem": value})
    data = summaryread.parse(text)
    assert data["phase"] == (value or "z")
    assert data["subsystem"] == value
    assert data["key-files"]["modified"] == [value or "y"]
    assert data["specialist_usage"] == {value or "x": ["1"]}
    front = text.split("\n---\n")[0].removeprefix("---\n")
    assert yaml.load(front, Loader=yaml.BaseLoader) == data  # PyYAML reads the same strings


def test_render_parse_round_trip() -> None:
    outcomes = three_tasks()
    text = render(outcomes, plan_id="02.1-03", phase_dir="02.1-hotfix")
    data = summaryread.parse(text)
    assert data["phase"] == "02.1-hotfix"
    assert data["plan"] == "03"
    assert "\n# Phase 02.1 Plan 03: Summary\n" in text
    assert text.endswith("*Phase: 02.1-hotfix*\n*Completed: 2026-02-23*\n")
    assert render(outcomes, plan_id="02.1-03", phase_dir="02.1-hotfix") == text  # pure


def test_write_then_load(tmp_path: Path) -> None:
    path = summaryread.summary_path(tmp_path / "phases" / "01-alpha", "01-02")
    text = render(three_tasks())
    summary.write(path, text)
    assert path.read_text(encoding="utf-8") == text
    assert summaryread.load(path) == summaryread.parse(text)
    assert [p.name for p in path.parent.iterdir()] == ["01-02-SUMMARY.md"]  # no temp left
