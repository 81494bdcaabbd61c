"""`gsd doctor`, with tiny real programs on an isolated PATH: the machine, then a project."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest

from gsd.commands import doctor
from gsd.io.confine import sandbox
from tests.conftest import auto_task, fake_runner_programs

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH is this folder alone, holding git: no runner program the machine may have."""
    folder = tmp_path / "bin"
    folder.mkdir()
    assert GIT is not None
    (folder / "git").symlink_to(GIT)
    monkeypatch.setenv("PATH", str(folder))
    return folder


def run_doctor(gsd, *args: str) -> tuple[int, dict]:
    result = gsd("doctor", "--format", "json", *args)
    assert "Traceback" not in result.err
    return result.code, json.loads(result.out)


def messages(report: dict, status: str | None = None) -> list[str]:
    return [f["message"] for f in report["findings"] if status in (None, f["status"])]


def program(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


# --- the machine ------------------------------------------------------------------------------


def test_outside_a_project_only_the_machine_is_checked(
    tmp_path: Path, bin_dir: Path, gsd, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_runner_programs(bin_dir, ("claude", "gemini"), version="2.1.197 (Claude Code)")
    outside = tmp_path / "nowhere"
    outside.mkdir()
    monkeypatch.chdir(outside)
    code, report = run_doctor(gsd)
    assert code == 0 and report["project"] is None
    runners = report["runners"]
    assert runners["claude"]["version"] == "2.1.197 (Claude Code)"
    assert runners["claude"]["path"] == str(bin_dir / "claude")
    assert runners["codex"] == {
        "name": "codex",
        "path": None,
        "version": None,
        "error": "not installed or not on PATH",
    }
    assert report["git"]["minimum"] == "2.23" and report["git"]["path"] == str(bin_dir / "git")
    assert "npm install -g @openai/codex" in " ".join(messages(report, "info"))
    text = gsd("doctor")
    assert text.code == 0
    lines = text.out.splitlines()
    assert lines[0] == (
        "gsd doctor: not in a gsd project (no .planning/ here or above): machine checks only"
    )
    assert any(line.split()[:3] == ["ok", "claude", "2.1.197"] for line in lines)
    assert any(line.split()[:2] == ["info", "codex:"] for line in lines)
    assert len(lines) < 25  # one screen


def test_landlock_is_reported_as_the_kernel_has_it(tmp_path: Path, bin_dir: Path, gsd) -> None:
    os.chdir(tmp_path)
    _, report = run_doctor(gsd)
    assert report["landlock"]["abi"] == sandbox.landlock_abi()
    (landlock,) = [f for f in report["findings"] if f["topic"] == "landlock"]
    if sandbox.landlock_abi():
        assert landlock["status"] == "ok"
    else:
        assert landlock["status"] == "warning"
        assert sandbox.unavailable_reason() in landlock["message"]


def test_git_missing_or_too_old_is_a_problem(
    tmp_path: Path, gsd, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.chdir(tmp_path)
    code, report = run_doctor(gsd)
    assert code == 1
    assert messages(report, "problem") == [
        "git: not installed or not on PATH (gsd needs git 2.23 or newer)"
    ]
    program(empty, "git", "print('git version 2.20.1')\n")
    code, report = run_doctor(gsd)
    assert code == 1
    assert messages(report, "problem") == [
        "git 2.20.1 is too old: gsd needs 2.23 or newer (for `git restore`)"
    ]
    program(empty, "git", "print('git version 2.23.0.windows.1')\n")
    assert run_doctor(gsd)[0] == 0


def test_a_version_that_never_comes_is_waited_for_briefly_and_ended(
    tmp_path: Path, bin_dir: Path, gsd, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "hung.pid"
    program(
        bin_dir,
        "gemini",
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n",
    )
    program(
        bin_dir, "codex", "import sys\nprint('unexpected argument', file=sys.stderr)\nsys.exit(2)\n"
    )
    monkeypatch.setattr(doctor, "VERSION_TIMEOUT_S", 1.0)
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    code, report = run_doctor(gsd)
    assert time.monotonic() - started < 60  # 1 s timeout, 2 s grace: wide margin
    assert code == 0  # there, and no task needs them: a warning each
    assert report["runners"]["gemini"]["error"] == "`--version` gave no answer in 1 s"
    assert report["runners"]["codex"]["error"] == "`--version` exited 2: unexpected argument"
    assert len(messages(report, "warning")) >= 2
    hung = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # its whole group was ended
        os.kill(hung, 0)


# --- a project --------------------------------------------------------------------------------


AGENT = "---\nname: {name}\ntools: [write_file, run_shell_command]\nrunner: {runner}\n---\nX.\n"


@pytest.fixture
def planned(git_project, bin_dir: Path):
    """Tasks on claude (gsd-executor), and one on gemini through the plan's runner=."""
    tasks = "\n".join([auto_task("Task 1: a"), auto_task("Task 2: b", attrs=' runner="gemini"')])
    git_project.plan("01-01", tasks=tasks)
    git_project.write("agents/rust-pro.md", AGENT.format(name="rust-pro", runner="codex"))
    return git_project


def test_a_task_whose_runner_program_is_missing_is_a_problem(planned, bin_dir: Path, gsd) -> None:
    fake_runner_programs(bin_dir, ("claude",))
    code, report = run_doctor(gsd)
    assert code == 1
    assert report["project"] == str(planned.root)
    (problem,) = messages(report, "problem")
    assert problem == (
        "gemini: not installed or not on PATH, and 1 task runs on it: 01-01 task 2 "
        "(gsd-executor) (install: npm install -g @google/gemini-cli)"
    )
    info = messages(report, "info")
    # codex: no task runs on it; rust-pro needs it and no task runs rust-pro
    idle = "codex: not installed or not on PATH; no task runs on it"
    assert any(m.startswith(idle) for m in info)
    assert "1 agent no task runs needs `codex`, which is missing: rust-pro" in info
    fake_runner_programs(bin_dir, ("gemini",))
    code, report = run_doctor(gsd)
    assert code == 0, messages(report, "problem")
    assert [f["status"] for f in report["findings"] if f["topic"] == "runner"] == [
        "ok",
        "ok",
        "info",
    ]


def test_the_fallback_on_a_missing_program_is_a_problem(planned, bin_dir: Path, gsd) -> None:
    planned.plan("01-01", tasks=auto_task(attrs=' specialist="rust-pro"'))
    planned.write(".planning/available_agents.md", "- **rust-pro**: Rust\n")
    fake_runner_programs(bin_dir, ("codex",))
    code, report = run_doctor(gsd)
    assert code == 1  # as a run, which refuses to start (tests/test_refuse.py)
    assert messages(report, "problem") == [
        "gsd-executor, which takes over a failed task, runs `claude`, which is missing: a "
        "run refuses to start until it is installed or `voltagent.fallback_on_error` is "
        "false in .planning/config.json"
    ]
    planned.write(".planning/config.json", '{"voltagent": {"fallback_on_error": false}}')
    code, report = run_doctor(gsd)
    assert code == 0 and messages(report, "problem") == []


def test_config_problems_and_skipped_agent_files(planned, bin_dir: Path, gsd) -> None:
    fake_runner_programs(bin_dir)
    planned.write(".planning/config.json", '{"specialists": {"agent_paths": ["~/nope"]}}')
    planned.write("agents/broken.md", "---\nname: broken\nrunner: perl\n---\nX\n")
    planned.write("agents/also-broken.md", "---\nname: also-broken\nmax_turns: 0\n---\nX\n")
    code, report = run_doctor(gsd)
    assert code == 0
    warnings = messages(report, "warning")
    assert any("specialists.agent_paths: ~/nope is not a folder" in w for w in warnings)
    (skipped,) = [w for w in warnings if "skipped" in w]
    assert skipped == "agents: 2 of 3 agent files skipped (see `gsd agents check`)"
    planned.write(".planning/config.json", '{"workflow": {"use_worktrees": "yes"}}')
    code, report = run_doctor(gsd)
    assert code == 1
    assert any(
        "`workflow.use_worktrees` must be true or false" in m for m in messages(report, "problem")
    )
    planned.write(".planning/config.json", '{\n  "mode": \n}\n')
    code, report = run_doctor(gsd)
    assert code == 1
    (problem,) = [m for m in messages(report, "problem") if "config.json" in m]
    assert "config.json:3:1: invalid JSON" in problem  # where the value is missing
    assert report["runners"]["claude"]["version"] == "1.2.3"  # the machine is still checked


def test_a_task_runner_the_agent_cannot_take_is_a_problem(planned, bin_dir: Path, gsd) -> None:
    fake_runner_programs(bin_dir)
    planned.plan("01-01", tasks=auto_task(attrs=' runner="command"'))
    code, report = run_doctor(gsd)
    assert code == 1
    (problem,) = messages(report, "problem")
    assert problem.startswith("phase 01-alpha: .planning/phases/01-alpha/01-01-PLAN.md:")
    assert 'runner="command" but agent gsd-executor runs on claude' in problem


def test_every_bad_setting_is_one_problem_with_its_line(planned, bin_dir: Path, gsd) -> None:
    fake_runner_programs(bin_dir)
    planned.write(
        ".planning/config.json",
        '{\n  "depth": "standard",\n  "specialists": {"max_retries": -1},\n'
        '  "sandbox": {"writable": "~/.cache"}\n}\n',
    )
    code, report = run_doctor(gsd)
    assert code == 1
    path = planned.root / ".planning" / "config.json"
    assert [m for m in messages(report, "problem") if "config.json" in m] == [
        f"{path}:3: `specialists.max_retries` must be a whole number >= 0, not -1",
        f'{path}:4: `sandbox.writable` must be a list of paths, e.g. ["~/.cache"], not "~/.cache"',
    ]


def config_lines(gsd) -> tuple[int, list[str]]:
    result = gsd("doctor")
    return result.code, [line for line in result.out.splitlines() if "config.json" in line]


def test_a_key_gsd_does_not_read_in_its_own_sections_is_a_warning(
    planned, bin_dir: Path, gsd
) -> None:
    fake_runner_programs(bin_dir)
    text = (
        '{\n  "specialists": {"max_retry": 3},\n  "sandbox": {\n    "zzz": 1\n  },\n'
        '  "specialist": {},\n  "workflow": {"research": true, "use_worktree": true},\n'
        '  "voltagent": {"complexity_threshold": 3}, "depth": "standard"\n}\n'
    )
    planned.write(".planning/config.json", text)
    code, lines = config_lines(gsd)
    assert code == 0
    assert lines == [
        "  ok       .planning/config.json: every setting gsd reads is usable",
        "  warning  .planning/config.json:2: `specialists.max_retry` is not a setting gsd "
        "reads: it has no effect (did you mean specialists.max_retries?)",
        "  warning  .planning/config.json:4: `sandbox.zzz` is not a setting gsd reads: it has "
        "no effect",
        "  warning  .planning/config.json:6: `specialist` is not a setting gsd reads: it has "
        "no effect (did you mean specialists?)",
        "  warning  .planning/config.json:7: `workflow.use_worktree` is not a setting gsd "
        "reads: it has no effect (did you mean workflow.use_worktrees?)",
    ]  # upstream's keys in shared sections (workflow, voltagent, the top level) stay quiet


def test_a_missing_config_is_said_with_its_defaults(planned, bin_dir: Path, gsd) -> None:
    fake_runner_programs(bin_dir)
    assert not (planned.planning / "config.json").exists()
    code, lines = config_lines(gsd)
    assert code == 0
    assert lines == [
        "  warning  .planning/config.json: missing, so every setting has its default "
        "(gsd init writes one)"
    ]
