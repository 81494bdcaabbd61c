"""Parallel waves end to end (SPEC 7 step 4): plans in worktrees on `gsd/{plan}`, merged
back `--no-ff` in plan order; conflicts; overlap groups; resume after SIGKILL of gsd
during a spawn, between a commit and the state write, and during a merge."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gsd.formats import errorlog, execlog
from tests.conftest import REPO, git
from tests.hostile import STATE
from tests.test_execute import AGENT_FILE, REPORT
from tests.test_proc import alive_with

# A test agent steered by files in a control folder (its first argument):
#   meet-P-N     write started-P-N, then wait (30 s at most) for started-{content}
#   hang-P-N     sleep until killed
#   write-P-N    "path=text": write that instead of src/tP_N.py
#   need-P-N     a path that must exist in the agent's checkout (else exit 4)
AGENT = """\
import os, sys, time
control = sys.argv[1]
plan, task = os.environ["GSD_PLAN"], os.environ["GSD_TASK"]
def ask(kind):
    path = os.path.join(control, f"{{kind}}-{{plan}}-{{task}}")
    return open(path).read().strip() if os.path.exists(path) else None
open(os.path.join(control, f"started-{{plan}}-{{task}}"), "w").close()
other = ask("meet")
if other:
    deadline = time.time() + 30
    while not os.path.exists(os.path.join(control, f"started-{{other}}")):
        if time.time() > deadline:
            sys.exit(5)
        time.sleep(0.05)
if ask("hang"):
    time.sleep(120)
need = ask("need")
if need and not os.path.exists(need):
    sys.exit(4)
target, _, text = (ask("write") or f"src/t{{plan}}_{{task}}.py=# {{plan}} {{task}}").partition("=")
os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
open(target, "w").write(text + "\\n")
print("{report}")
"""

# test_execute's agent file, with the control folder as argument
AGENT_FILE = AGENT_FILE.replace('"{script}"]', '"{script}", "{control}"]')


def task(plan: str, n: int, files: str | None = None) -> str:
    return (
        f'<task type="auto" specialist="worker">\n<name>Task {n}</name>\n'
        f"<files>{files or f'src/t{plan}_{n}.py'}</files>\n<action>Write it.</action>\n"
        "<verify><automated>true</automated></verify>\n<done>Done.</done>\n</task>"
    )


@pytest.fixture
def control(tmp_path: Path) -> Path:
    folder = tmp_path / "control"
    folder.mkdir()
    return folder


@pytest.fixture
def repo(git_project, tmp_path: Path, control: Path):
    """Phase 1: wave 1 = 01-01 (two tasks) and 01-02 side by side; wave 2 = 01-03."""
    script = tmp_path / "agent.py"
    script.write_text(AGENT.format(report=REPORT))
    for name in ("worker", "gsd-executor"):
        git_project.write(
            f"agents/{name}.md",
            AGENT_FILE.format(name=name, python=sys.executable, script=script, control=control),
        )
    git_project.write(".planning/available_agents.md", "- **worker**: test\n")
    git_project.write(
        ".planning/config.json",
        json.dumps(
            {
                "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
                "voltagent": {"fallback_on_error": False},
                "sandbox": {"writable": [str(control)]},
            }
        ),
    )  # agents note what they started there
    git_project.write(".planning/STATE.md", STATE)
    git_project.plan(
        "01-01",
        tasks=task("01-01", 1) + "\n" + task("01-01", 2),
        files_modified="[src/t01-01_1.py, src/t01-01_2.py]",
    )
    git_project.plan("01-02", tasks=task("01-02", 1), files_modified="[src/t01-02_1.py]")
    git_project.plan(
        "01-03",
        tasks=task("01-03", 1),
        depends_on='["01-01", "01-02"]',
        wave=2,
        files_modified="[src/t01-03_1.py]",
    )
    commit_all(git_project.root, "plans")
    return git_project.root


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def steer(control: Path, kind: str, task_id: str, value: str = "yes") -> None:
    (control / f"{kind}-{task_id}").write_text(value)


def task_commits(root: Path) -> list[str]:
    out = git(root, "log", "--format=%(trailers:key=Gsd-Task,valueonly)", "HEAD")
    return sorted(line.strip() for line in out.splitlines() if line.strip())


def merges(root: Path) -> list[str]:
    return git(root, "log", "--merges", "--reverse", "--format=%s").splitlines()


def leftovers(root: Path) -> dict[str, str]:
    """What a finished run must not leave: worktrees, plan branches, tags, dirt, a merge."""
    found = {
        "worktrees": git(root, "worktree", "list", "--porcelain").count("worktree ") - 1,
        "branches": git(root, "branch", "--list", "--format=%(refname:short)", "gsd/*").strip(),
        "tags": git(root, "tag", "--list").strip(),
        "status": git(root, "status", "--porcelain").strip(),
        "merging": (root / ".git/MERGE_HEAD").exists(),
    }
    return {k: v for k, v in found.items() if v}


def run_gsd(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gsd", *args],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )


def start_gsd(root: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "gsd", *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_for(path: Path, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        assert process is None or process.poll() is None, "gsd ended first"
        time.sleep(0.05)


def test_two_waves_with_parallel_plans_merge_back_in_plan_order(repo, control, gsd) -> None:
    # each plan of wave 1 waits for the other to start: they can only pass side by side
    steer(control, "meet", "01-01-1", "01-02-1")
    steer(control, "meet", "01-02-1", "01-01-1")
    result = gsd("execute-phase", "1", "--format", "json")
    assert result.code == 0, result.err
    assert task_commits(repo) == ["01-01-1", "01-01-2", "01-02-1", "01-03-1"]
    plans = json.loads(result.out)["plans"]
    assert plans == [{"plan": f"01-0{n}", "outcome": "complete"} for n in (1, 2, 3)]
    assert merges(repo) == [
        "Merge branch 'gsd/01-01': plan 01-01 complete",
        "Merge branch 'gsd/01-02': plan 01-02 complete",
        "Merge branch 'gsd/01-03': plan 01-03 complete",
    ]
    # --no-ff: each merge's second parent is the plan branch's tip, its task commits there
    second = git(repo, "log", "--merges", "--reverse", "--format=%P").split("\n")[0].split()[1]
    assert "Gsd-Task: 01-01-2" in git(repo, "log", "-3", "--format=%B", second)
    assert leftovers(repo) == {}
    assert "parallel worktrees" in result.err
    # the third plan (wave 2) ran on the merged result, in its own worktree too
    assert (repo / "src/t01-01_1.py").exists() and (repo / "src/t01-03_1.py").exists()
    folder = repo / ".planning/phases/01-alpha"
    assert all((folder / f"01-0{n}-SUMMARY.md").exists() for n in (1, 2, 3))
    results = git(repo, "ls-files", ".planning/phases/01-alpha").split()
    assert {f".planning/phases/01-alpha/01-0{n}-RESULT.txt" for n in (1, 2, 3)} <= set(results)
    state = (repo / ".planning/STATE.md").read_text()
    assert "Plan: 3 of 3 in current phase" in state and "Status: Phase complete" in state
    for row in ("| Phase 01 P01 |", "| Phase 01 P02 |", "| Phase 01 P03 |"):
        assert row in state
    assert "| 2 tasks | 2 files |" in state.split("P01 |")[1].splitlines()[0]
    assert "Stopped at: Phase 1 complete" in state and "Last session: never" not in state
    events = [e["event"] for e in execlog.read_all(repo / ".planning")[0]]
    assert events.count("merge") == 3 and events.count("plan-complete") == 3
    timeline = json.loads(gsd("report", "--format", "json").out)["timeline"]
    assert [r["outcome"] for r in timeline if r["event"] == "merge"] == [
        "gsd/01-01 merged",
        "gsd/01-02 merged",
        "gsd/01-03 merged",
    ]
    assert [r["outcome"] for r in timeline if r["event"] == "wave-start"] == [
        "wave 1: 01-01, 01-02",
        "wave 2: 01-03",
    ]
    again = gsd("execute-phase", "1")
    assert again.code == 0 and "already complete" in again.err


def test_max_parallel_1_runs_every_plan_in_its_worktree_one_after_another(repo, gsd) -> None:
    result = gsd("execute-phase", "1", "--max-parallel", "1")
    assert result.code == 0, result.err
    assert "2 plans one after another, each in its worktree" in result.err
    assert len(merges(repo)) == 3 and leftovers(repo) == {}
    assert task_commits(repo) == ["01-01-1", "01-01-2", "01-02-1", "01-03-1"]


def test_plans_that_share_files_run_one_after_another(repo, control, gsd) -> None:
    plan = repo / ".planning/phases/01-alpha/01-02-PLAN.md"
    shared = "[src/t01-02_1.py, src/t01-01_2.py]"
    plan.write_text(plan.read_text().replace("[src/t01-02_1.py]", shared))
    commit_all(repo, "01-02 shares a file with 01-01")
    steer(control, "need", "01-02-1", "src/t01-01_2.py")  # built on 01-01's branch
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    assert "(1 group, " in result.err
    assert len(merges(repo)) == 3 and leftovers(repo) == {}


def test_a_merge_conflict_fails_that_plan_keeps_its_branch_and_stops(repo, control, gsd) -> None:
    steer(control, "write", "01-01-2", "src/shared.txt=from 01-01")
    steer(control, "write", "01-02-1", "src/shared.txt=from 01-02")
    result = gsd("execute-phase", "1")
    assert result.code == 1
    assert "01-02: merge-conflict" in result.err and "src/shared.txt" in result.err
    assert merges(repo) == ["Merge branch 'gsd/01-01': plan 01-01 complete"]
    assert leftovers(repo) == {"branches": "gsd/01-02"}  # no worktree, no half merge
    assert "01-03-1" not in task_commits(repo)  # the next wave did not start
    state = (repo / ".planning/STATE.md").read_text()
    assert "- [01-02] merge-conflict: merging gsd/01-02 conflicts in src/shared.txt" in state
    error = errorlog.read_all(repo / ".planning")[0][-1]
    assert (error.error_type, error.plan, error.git_state) == ("merge-conflict", "02", "gsd/01-02")
    # a person merges the branch by hand; the next run tidies up and carries on
    subprocess.run(
        ["git", "merge", "-q", "-X", "ours", "--no-edit", "gsd/01-02"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    resumed = gsd("execute-phase", "1")
    assert resumed.code == 0, resumed.err
    assert "removed gsd/01-02" in resumed.err
    assert task_commits(repo) == ["01-01-1", "01-01-2", "01-02-1", "01-03-1"]
    assert leftovers(repo) == {}


def test_gsd_killed_during_parallel_spawns_resumes_exactly(repo, control, tmp_path) -> None:
    steer(control, "hang", "01-01-2")
    steer(control, "hang", "01-02-1")
    process = start_gsd(repo, "execute-phase", "1")
    wait_for(control / "started-01-01-2", process)
    wait_for(control / "started-01-02-1", process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    branches = git(repo, "branch", "--list", "--format=%(refname:short)", "gsd/*")
    assert branches.split() == ["gsd/01-01", "gsd/01-02"]
    for name in ("hang-01-01-2", "hang-01-02-1"):
        (control / name).unlink()
    resumed = run_gsd(repo, "execute-phase", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.count("left open by an interrupted run") == 2
    assert task_commits(repo) == ["01-01-1", "01-01-2", "01-02-1", "01-03-1"]
    assert leftovers(repo) == {}
    assert alive_with(str(tmp_path / "agent.py")) == []


def kill_hook(root: Path, hook: str, condition: str, control: Path) -> Path:
    """A git hook that has gsd SIGKILLed once (when `condition`, a shell test, holds): it
    says so in `control` (writable from the sandbox the hook runs in, which may signal
    nothing outside it), waits until the test has killed gsd, then fails."""
    fired, go = control / "gsd.fired", control / "gsd.killed"
    path = root / ".git/hooks" / hook
    path.write_text(
        "#!/bin/sh\n"
        f'[ -e "{fired}" ] && exit 0\n'
        f"{condition} || exit 0\n"
        f'touch "{fired}"\n'
        f'i=0; while [ ! -e "{go}" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n'
        "exit 1\n"
    )
    path.chmod(0o755)
    return fired


def killed_by_hook(root: Path, fired: Path) -> None:
    process = start_gsd(root, "execute-phase", "1")
    wait_for(fired, process)
    process.kill()
    process.wait(timeout=300)
    (fired.parent / "gsd.killed").touch()
    assert process.returncode == -signal.SIGKILL


def test_gsd_killed_between_a_task_commit_and_the_state_write(repo, control) -> None:
    # post-commit: the last task of 01-03 is committed, SUMMARY and STATE not yet written
    condition = 'git log -1 --format=%B | grep -q "Gsd-Task: 01-03-1"'
    fired = kill_hook(repo, "post-commit", condition, control)
    killed_by_hook(repo, fired)
    assert not (repo / ".planning/phases/01-alpha/01-03-SUMMARY.md").exists()
    resumed = run_gsd(repo, "execute-phase", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert "01-03 task 1: already committed, skipped" in resumed.stderr
    assert task_commits(repo) == ["01-01-1", "01-01-2", "01-02-1", "01-03-1"]
    assert (repo / ".planning/phases/01-alpha/01-03-SUMMARY.md").exists()
    assert "Plan: 3 of 3" in (repo / ".planning/STATE.md").read_text()
    assert leftovers(repo) == {}


def test_gsd_killed_during_a_merge_merges_again(repo, control) -> None:
    # pre-commit of the merge commit: the merge is staged, STATE.md edited, not committed
    merging = "git rev-parse -q --verify MERGE_HEAD >/dev/null"
    fired = kill_hook(repo, "pre-commit", merging, control)
    killed_by_hook(repo, fired)
    assert (repo / ".git/MERGE_HEAD").exists()
    resumed = run_gsd(repo, "execute-phase", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert "aborted the merge of gsd/01-01" in resumed.stderr
    assert task_commits(repo) == ["01-01-1", "01-01-2", "01-02-1", "01-03-1"]
    assert len(merges(repo)) == 3 and leftovers(repo) == {}


def test_a_plan_paused_in_its_worktree_continues_there_after_approval(repo, gsd) -> None:
    from tests.test_execute import CHECKPOINT

    path = repo / ".planning/phases/01-alpha/01-02-PLAN.md"
    text = path.read_text().replace("autonomous: true", "autonomous: false")
    text = text.replace("</task>\n", f"</task>\n{CHECKPOINT}\n{task('01-02', 3)}\n", 1)
    path.write_text(text.replace("[src/t01-02_1.py]", "[src/t01-02_1.py, src/t01-02_3.py]"))
    commit_all(repo, "a human check in 01-02")
    result = gsd("execute-phase", "1")
    assert result.code == 4 and "Open the page and look" in result.err
    assert merges(repo) == ["Merge branch 'gsd/01-01': plan 01-01 complete"]
    assert leftovers(repo) == {"branches": "gsd/01-02"}  # task 1 waits on its branch
    assert "01-02-1" in git(repo, "log", "--format=%(trailers:key=Gsd-Task,valueonly)", "gsd/01-02")
    status = json.loads(gsd("status", "--format", "json").out)
    plans = {p["plan"]: p for p in status["phases"][0]["plans"]}
    assert (plans["01-02"]["status"], plans["01-02"]["committed_tasks"]) == ("paused", [1])
    assert gsd("approve", "01-02").code == 0
    resumed = gsd("execute-phase", "1")
    assert resumed.code == 0, resumed.err
    assert "plan 01-02 task 1: already committed, skipped" in resumed.err
    assert task_commits(repo) == ["01-01-1", "01-01-2", "01-02-1", "01-02-3", "01-03-1"]
    assert leftovers(repo) == {}


def test_execute_plan_on_a_branch_named_for_the_plan_merges_into_it(repo, gsd) -> None:
    """What the CI fan-out does: check out gsd/{plan}, run `gsd execute-plan` there. The
    plan works on gsd/{plan}-run in its worktree and is merged into the job's branch."""
    git(repo, "checkout", "-q", "-b", "gsd/01-02")
    result = gsd("execute-plan", "01-02")
    assert result.code == 0, result.err
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "gsd/01-02"
    assert task_commits(repo) == ["01-02-1"]
    assert merges(repo) == ["Merge branch 'gsd/01-02-run': plan 01-02 complete"]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "branch", "--list", "gsd/01-02-run") == ""


def test_ctrl_c_during_a_parallel_wave_ends_every_agent_and_rolls_back(
    repo, control, tmp_path
) -> None:
    steer(control, "hang", "01-01-1")
    steer(control, "hang", "01-02-1")
    process = subprocess.Popen(
        [sys.executable, "-m", "gsd", "execute-phase", "1"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for(control / "started-01-01-1", process)
    wait_for(control / "started-01-02-1", process)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130 and b"interrupted" in err
    assert alive_with(str(tmp_path / "agent.py")) == []  # no agent outlives gsd
    assert git(repo, "tag", "--list") == ""  # both attempts were rolled back
    assert task_commits(repo) == []
    for name in ("hang-01-01-1", "hang-01-02-1"):
        (control / name).unlink()
    resumed = run_gsd(repo, "execute-phase", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert task_commits(repo) == ["01-01-1", "01-01-2", "01-02-1", "01-03-1"]
    assert leftovers(repo) == {}


def test_with_commit_docs_false_bookkeeping_stays_uncommitted_and_survives(
    repo, control, gsd
) -> None:
    config = json.loads((repo / ".planning/config.json").read_text())
    config["git"] = {"commit_docs": False}
    (repo / ".planning/config.json").write_text(json.dumps(config))
    commit_all(repo, "commit_docs false")
    steer(control, "hang", "01-03-1")  # wave 2 fails after wave 1's bookkeeping is written
    result = gsd("execute-phase", "1", "--timeout", "2")
    assert result.code == 1 and "01-03" in result.err
    assert task_commits(repo) == ["01-01-1", "01-01-2", "01-02-1"]
    assert len(merges(repo)) == 2
    assert not git(repo, "log", "--format=%s", "--grep=^docs(")  # no docs commits
    state = (repo / ".planning/STATE.md").read_text()
    assert "Plan: 2 of 3" in state and "- [01-03] timeout" in state  # rolled back, not lost
    status = git(repo, "status", "--porcelain")
    assert "STATE.md" in status and "01-alpha/" in status  # with the SUMMARY.md files
    folder = repo / ".planning/phases/01-alpha"
    assert (folder / "01-01-SUMMARY.md").exists() and (folder / "01-02-SUMMARY.md").exists()


def test_a_merge_commit_refused_by_a_hook_fails_the_plan_and_loses_no_log_line(repo, gsd) -> None:
    hook = repo / ".git/hooks/pre-commit"
    hook.write_text(
        "#!/bin/sh\ngit rev-parse -q --verify MERGE_HEAD >/dev/null && exit 1\nexit 0\n"
    )
    hook.chmod(0o755)
    result = gsd("execute-phase", "1")
    assert result.code == 1 and "merge failed" in result.err
    assert merges(repo) == [] and leftovers(repo) == {"branches": "gsd/01-01\ngsd/01-02"}
    events = execlog.read_all(repo / ".planning")[0]
    assert any(e["event"] == "merge" for e in events)
    # each plan's own lines are committed on its branch, with its work, waiting there
    for plan in ("01-01", "01-02"):
        log = git(repo, "show", f"gsd/{plan}:.planning/logs/{plan}.jsonl")
        spawned = {
            json.loads(line)["plan"]
            for line in log.splitlines()
            if json.loads(line).get("event") == "spawn"
        }
        assert spawned == {plan}


def test_a_merge_over_the_users_uncommitted_files_waits_on_its_branch(repo, control, gsd) -> None:
    """SPEC 0: gsd never overwrites the user's uncommitted work. A plan that writes a file
    the user is editing stays complete on its branch; one line names the file and what to
    do; the edit is untouched; once it is committed the next run merges the plan."""
    steer(control, "write", "01-02-1", "README.md=from 01-02")
    plan = repo / ".planning/phases/01-alpha/01-02-PLAN.md"
    plan.write_text(plan.read_text().replace("[src/t01-02_1.py]", "[README.md]"))
    commit_all(repo, "01-02 writes README.md")
    (repo / "README.md").write_text("the user's edit, not committed\n")
    result = gsd("execute-phase", "1")
    assert result.code == 1
    line = result.err.strip().splitlines()[-1]
    assert "01-02 is complete on branch gsd/01-02 but not merged" in line
    assert "README.md" in line and "commit or stash them" in line
    assert (repo / "README.md").read_text() == "the user's edit, not committed\n"
    assert merges(repo) == ["Merge branch 'gsd/01-01': plan 01-01 complete"]
    assert "01-02-1" in git(repo, "log", "--format=%(trailers:key=Gsd-Task,valueonly)", "gsd/01-02")
    assert not (repo / ".git/MERGE_HEAD").exists()
    git(repo, "stash", "-q")
    resumed = gsd("execute-phase", "1")
    assert resumed.code == 0, resumed.err
    assert len(merges(repo)) == 3 and leftovers(repo) == {}
    assert git(repo, "stash", "list").count("stash@") == 1  # the user's edit, kept


def test_staged_changes_of_the_user_keep_a_plan_off_the_branch(repo, gsd) -> None:
    """A merge commit would take the user's staged changes in: the merge waits instead."""
    (repo / "notes.txt").write_text("staged, not committed\n")
    git(repo, "add", "notes.txt")
    result = gsd("execute-phase", "1")
    assert result.code == 1 and "staged changes (notes.txt)" in result.err
    assert git(repo, "diff", "--cached", "--name-only").split() == ["notes.txt"]
    assert merges(repo) == [] and "gsd/01-01" in git(repo, "branch")


def test_an_unwritable_planning_folder_is_one_line_and_leaves_no_half_merge(repo, gsd) -> None:
    """STATE.md cannot be replaced during the merge (an immutable .planning/, where no
    file can be made: the read-only folder a root test can make): exit 2 and one line;
    no merge half done, no tag, no record; the plan waits on its branch and the next run
    merges it."""
    planning = repo / ".planning"
    if subprocess.run(["chattr", "+i", str(planning)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (needs root and ext4-like file system)")
    try:
        result = gsd("execute-phase", "1", "--max-parallel", "1")
    finally:
        subprocess.run(["chattr", "-i", str(planning)], check=True)
    assert result.code == 2, result.err
    last = result.err.strip().splitlines()[-1]
    # the plan's branch adds its log in .planning/logs/: git's merge itself cannot write it
    assert last.startswith("gsd: error: cannot write ") or (
        last.startswith("gsd: error: git merge failed") and "'.planning/logs'" in last
    )
    assert "Traceback" not in result.err
    assert not (repo / ".git/MERGE_HEAD").exists() and git(repo, "tag", "--list") == ""
    assert list((repo / ".git").rglob("checkpoints/*.json")) == []
    assert "gsd/01-01" in git(repo, "branch")
    resumed = gsd("execute-phase", "1")
    assert resumed.code == 0, resumed.err
    assert task_commits(repo) == ["01-01-1", "01-01-2", "01-02-1", "01-03-1"]
    assert len(merges(repo)) == 3 and leftovers(repo) == {}


def test_a_plan_never_overwrites_a_file_the_users_checkout_ignores(repo, control, gsd) -> None:
    """git merge takes ignored files as expendable: a plan whose branch adds `local.db`
    (ignored in the user's checkout, where it holds the user's data) is not merged."""
    (repo / ".gitignore").write_text("*.db\n")
    commit_all(repo, "ignore databases")
    # what an agent without a sandbox can do: force-add an ignored file and commit it
    git(repo, "switch", "-q", "-c", "gsd/01-02")
    (repo / "local.db").write_text("the agent's bytes\n")
    git(repo, "add", "-f", "local.db")
    git(repo, "commit", "-q", "-m", "feat(01-02): Task 1", "-m", "Gsd-Task: 01-02-1")
    git(repo, "switch", "-q", "main")
    (repo / "local.db").write_text("the user's data\n")
    result = gsd("execute-phase", "1")
    assert result.code == 1 and "local.db, which your checkout has as files git ignores" in (
        result.err
    )
    assert (repo / "local.db").read_text() == "the user's data\n"
    assert "gsd/01-02" in git(repo, "branch") and not (repo / ".git/MERGE_HEAD").exists()


def test_a_merge_the_user_began_by_hand_is_left_to_the_user(repo, control, gsd) -> None:
    """gsd's conflict line says: merge the branch by hand. A run started meanwhile must
    not abort that merge (and its resolution): it refuses, one line, and changes nothing."""
    steer(control, "write", "01-01-2", "src/shared.txt=from 01-01")
    steer(control, "write", "01-02-1", "src/shared.txt=from 01-02")
    assert gsd("execute-phase", "1").code == 1  # 01-02 conflicts, its branch is kept
    done = subprocess.run(
        ["git", "merge", "--no-ff", "gsd/01-02"], cwd=repo, capture_output=True, text=True
    )
    assert done.returncode != 0  # the same conflict, now the user's to resolve
    (repo / "src/shared.txt").write_text("resolved by the user\n")
    git(repo, "add", "src/shared.txt")
    again = gsd("execute-phase", "1")
    assert again.code == 2 and "merge is in progress" in again.err
    assert (repo / ".git/MERGE_HEAD").exists()
    assert "src/shared.txt" in git(repo, "diff", "--cached", "--name-only").split()
    assert (repo / "src/shared.txt").read_text() == "resolved by the user\n"


def test_a_gsd_branch_the_user_checked_out_is_theirs(repo, gsd, tmp_path: Path) -> None:
    """A gsd/* branch with nothing left to merge is removed, unless the user has it
    checked out in a worktree of their own."""
    git(repo, "branch", "gsd/01-09")  # at HEAD: nothing on it to merge
    git(repo, "worktree", "add", "-q", str(tmp_path / "mine"), "gsd/01-09")
    assert gsd("execute-phase", "1").code == 0
    assert "gsd/01-09" in git(repo, "branch")
    assert git(tmp_path / "mine", "rev-parse", "--abbrev-ref", "HEAD").strip() == "gsd/01-09"
