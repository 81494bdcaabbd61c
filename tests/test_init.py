"""`gsd init`: `.planning/` from the bundled template, never overwriting, usable at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gsd.commands.scaffold import template_dir
from gsd.formats import settings
from gsd.formats.files import load_text
from gsd.formats.planning import roadmap, state
from tests.conftest import REPO, git, snapshot_checkout
from tests.test_roadmap import plan_checked, progress_row
from tests.test_state import position, progress_percent

TEMPLATE = REPO / ".planning-template"
FILES = [".gitattributes", "PROJECT.md", "ROADMAP.md", "STATE.md", "config.json"]


@pytest.fixture
def empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "new-project"
    root.mkdir()
    monkeypatch.chdir(root)
    git(root, "init", "-q", "-b", "main")
    return root


def test_the_checkout_template_is_the_one_used() -> None:
    assert template_dir() == TEMPLATE
    assert sorted(p.name for p in TEMPLATE.iterdir()) == FILES


def test_init_creates_every_template_file(empty: Path, gsd) -> None:
    result = gsd("init")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [f"created  .planning/{name}" for name in FILES]
    assert result.err.splitlines()[0] == "gsd init: 5 created, 0 kept"
    for name in FILES:
        assert (empty / ".planning" / name).read_bytes() == (TEMPLATE / name).read_bytes()


def test_init_never_overwrites(empty: Path, gsd) -> None:
    gsd("init")
    state_file = empty / ".planning" / "STATE.md"
    state_file.write_text("my own state\n")
    (empty / ".planning" / "ROADMAP.md").unlink()
    result = gsd("init")
    assert result.code == 0
    assert result.out.splitlines() == [
        "kept     .planning/.gitattributes",
        "kept     .planning/PROJECT.md",
        "created  .planning/ROADMAP.md",
        "kept     .planning/STATE.md",
        "kept     .planning/config.json",
    ]
    assert result.err.splitlines()[0] == "gsd init: 1 created, 4 kept"
    assert state_file.read_text() == "my own state\n"


def test_init_keeps_a_symlink_or_a_folder_in_the_way(empty: Path, gsd) -> None:
    planning = empty / ".planning"
    planning.mkdir()
    (planning / "STATE.md").symlink_to(empty / "nowhere.md")  # dangling: still not replaced
    (planning / "config.json").mkdir()
    result = gsd("init")
    assert "kept     .planning/STATE.md" in result.out
    assert "kept     .planning/config.json" in result.out
    assert not (empty / "nowhere.md").exists()


def test_config_holds_every_key_gsd_reads_with_its_default() -> None:
    data = json.loads((TEMPLATE / "config.json").read_text())
    assert data == settings.Settings().model_dump(mode="json")
    assert settings.parse(json.dumps(data)) == settings.Settings()


def test_the_created_files_load_and_edit_cleanly(empty: Path, gsd) -> None:
    gsd("init")
    planning = empty / ".planning"
    assert settings.load(planning) == settings.Settings()

    text = load_text(planning / "STATE.md")
    assert position(text)["status"] == "Ready to plan"
    assert progress_percent(text) == 0
    assert state.blockers(text) == []
    edited = state.add_blocker(
        state.set_position(
            text,
            phase="1 of 2 (Core)",
            plan="1 of 3 in current phase",
            status="In progress",
            last_activity="2030-01-02 - Completed 01-01-PLAN.md",
            progress=1 / 3,
        ),
        "- [01-02] timeout: no output",
    )
    assert progress_percent(edited) == 33
    assert state.blockers(edited) == ["- [01-02] timeout: no output"]

    plans = load_text(planning / "ROADMAP.md")
    assert plan_checked(plans, "01-01") is False
    ticked = roadmap.set_progress(
        roadmap.check_plan(plans, "01-01"), "1", 1, 2, "In progress", None
    )
    assert plan_checked(ticked, "01-01") is True
    assert progress_row(ticked, "1") == {
        "plans": "1/2",
        "status": "In progress",
        "completed": "-",
    }


def test_a_fresh_project_validates_and_reports(empty: Path, gsd) -> None:
    gsd("init")
    result = gsd("validate")
    assert result.code == 0, result.out + result.err
    assert (result.out, result.err) == ("", "0 errors, 0 warnings in 0 files\n")
    assert gsd("validate", "--strict").code == 0
    assert gsd("status").code == 0


def test_init_outside_git_works_and_says_what_comes_next(tmp_path: Path, gsd, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = gsd("init", "nested/project")
    assert result.code == 0, result.err
    assert (tmp_path / "nested" / "project" / ".planning" / "STATE.md").is_file()
    assert result.err.splitlines()[-1] == (
        f"gsd: warning: {tmp_path.resolve()}/nested/project is not in a git repository; "
        "run git init before "
        "gsd execute-phase or gsd hooks install"
    )


def test_a_file_named_planning_is_one_line_exit_2(empty: Path, gsd) -> None:
    (empty / ".planning").write_text("not a folder\n")
    result = gsd("init")
    assert result.code == 2
    assert result.err == (
        "gsd: error: .planning exists and is not a directory (move it away first)\n"
    )


def test_the_package_carries_the_template_as_package_data(tmp_path: Path) -> None:
    """setuptools' build_py step, offline, on this checkout: what a wheel puts in
    gsd/bundled/ (wheels installed --user and --prefix are in test_install.py)."""
    source = tmp_path / "src"
    snapshot_checkout(source)
    build = tmp_path / "build"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import setuptools; setuptools.setup()",
            "-q",
            "build_py",
            "--build-lib",
            str(build),
        ],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    shipped = build / "gsd" / "bundled" / "planning_template"
    assert sorted(p.name for p in shipped.iterdir()) == FILES
    for name in FILES:
        assert (shipped / name).read_bytes() == (TEMPLATE / name).read_bytes()


def test_the_logs_merge_line_by_line_after_init(empty: Path, gsd) -> None:
    """Two branches that each appended a record to the same log merge with plain
    `git merge` and keep both records (the .gitattributes `gsd init` writes)."""
    git(empty, "init", "-q", "-b", "main")
    gsd("init")
    log = empty / ".planning" / "execution-log.jsonl"
    log.write_text('{"event": "run-start"}\n')
    git(empty, "add", "-A")
    git(empty, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    for branch, line in (("a", '{"event": "a"}'), ("b", '{"event": "b"}')):
        git(empty, "switch", "-q", "-c", branch, "main")
        with log.open("a") as out:
            out.write(line + "\n")
        git(empty, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", branch)
    git(empty, "switch", "-q", "main")
    for branch in ("a", "b"):
        git(
            empty,
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "merge",
            "-q",
            "--no-ff",
            "-m",
            f"merge {branch}",
            branch,
        )
    assert log.read_text().splitlines() == [
        '{"event": "run-start"}',
        '{"event": "a"}',
        '{"event": "b"}',
    ]


def test_init_prints_the_next_steps_of_the_quick_start(empty: Path, gsd) -> None:
    result = gsd("init")
    steps = result.err.split("next steps", 1)[1].splitlines()[1:]
    assert [line.split(". ", 1)[0].strip() for line in steps] == ["1", "2", "3", "4", "5", "6"]
    text = "\n".join(steps)
    for needed in (
        ".planning/phases/01-NAME/01-01-PLAN.md",
        "gsd agents sync",
        "voltagent.fallback_on_error to false",
        "git add -A && git commit",
        "gsd validate && gsd execute-phase 1 --dry-run",
        "gsd execute-phase 1 && gsd status",
    ):
        assert needed in text, needed
    assert "Quick start" in result.err and "Quick start" in (REPO / "README.md").read_text()
    assert result.out.splitlines()[-1].startswith("created")  # stdout stays the file list


def test_init_elsewhere_starts_its_next_steps_with_cd(tmp_path: Path, gsd, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = gsd("init", "nested/project")
    assert "  1. cd nested/project\n  2. write plans:" in result.err
