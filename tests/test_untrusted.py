"""Issue 10: nothing an agent or an interruption does may cost the user work.

One test per way the issue lists of losing or exposing work, each with a misbehaving agent
(tests/hostile.py) or a real signal to a real `gsd execute-phase`, each ending with the
same check: every task committed exactly once, the user's stashes, branches, tags,
untracked and uncommitted files intact, and no process, tag, worktree, record or lock left.
Tests that an agent's misbehaviour is contained come twice where it matters: with the
sandbox (where Landlock is there, the agent's write fails) and with `sandbox.enabled`
false (gsd's git checks catch it: policy-violation, everything restored).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import hostile
from tests.conftest import REPO, git, plan_text
from tests.hostile import (
    ALL_TASKS,
    Scene,
    assert_gsd_left_nothing,
    assert_nothing_lost,
    assert_user_work_intact,
    committed_anywhere,
    one_line_error,
    snapshot,
    task_counts,
    task_xml,
)


@pytest.fixture
def scene(git_project, tmp_path: Path):
    made = hostile.make_scene(git_project, tmp_path)
    yield made
    (made.control / "release").touch()
    hostile.kill_all(made.token)  # never leave a process behind, even when a test fails


def both_plans_hanging(scene: Scene) -> hostile.Started:
    """`gsd execute-phase 1` started, once both plans of wave 1 have agents that hang."""
    scene.steer("01-01-1", "hang")
    scene.steer("01-02-1", "hang")
    started = scene.start("execute-phase", "1")
    scene.wait_for("started-01-01-1", started)
    scene.wait_for("started-01-02-1", started)
    return started


def outcomes(scene: Scene, task_id: str, what: str) -> list[str]:
    """How the agent's attempts at `what` ended: `done`, an errno name, `exit N`."""
    return [
        line.rsplit(": ", 1)[1]
        for line in scene.log(task_id).splitlines()
        if what in line.rsplit(": ", 1)[0]
    ]


def contained(
    scene: Scene,
    before: hostile.Snapshot,
    task_id: str,
    what: str,
    sandboxed: bool | None,
    *,
    violation: bool = True,
    between: Callable[[], None] | None = None,
    tasks: tuple[str, ...] = ALL_TASKS,
    foreign_records: tuple[str, ...] = (),
) -> None:
    """Run the phase with one agent misbehaving (its attempts named by `what`), then run
    it again with every agent behaving (the next run is where anything planted would be
    acted on): nothing of the user's is lost at any point, and in the end every task in
    `tasks` is committed once and nothing of gsd's is left.

    Then how it was contained. Sandboxed: every attempt failed (a write with EACCES) and
    the first run completed. Not (`sandboxed` None: whichever the agent's log shows):
    the attempt succeeded and gsd's checks caught it: with `violation`, a task of the wave
    failed with a policy-violation (the misbehaving one, rolled back, unless the other
    plan's check found it first) and the first run exited 1. `between` runs
    after the first run (checks of what must hold even then).
    """
    first = scene.run("execute-phase", "1")
    tried = outcomes(scene, task_id, what)
    assert tried, (
        f"the agent never tried {what} (or could not log it in {scene.control}, "
        f"which `sandbox.writable` names): {scene.log(task_id)!r} {first.stderr}"
    )
    assert_user_work_intact(scene.root, before, scene.token)
    if between is not None:
        between()
    rolled_back = committed_anywhere(scene.root)[task_id] == 0
    scene.calm()
    rerun = scene.run("execute-phase", "1")
    assert_user_work_intact(scene.root, before, scene.token)
    assert rerun.returncode == 0, rerun.stderr
    assert_nothing_lost(
        scene.root, before, tasks=tasks, token=scene.token, foreign_records=foreign_records
    )
    if sandboxed is None:
        sandboxed = "done" not in tried
    if sandboxed:
        assert "done" not in tried, f"the sandbox let it through: {scene.log(task_id)}"
        if what.startswith(("write", "symlink")):
            assert set(tried) == {"EACCES"}, scene.log(task_id)
        assert first.returncode == 0, first.stderr
        return
    assert "done" in tried, scene.log(task_id)
    if violation:
        # Without a sandbox the plans of a wave share one repository: a ref or .git file
        # one agent changed is found by whichever plan looks first (gsd cannot tell which
        # agent did it, and puts it back either way). The misbehaving task, if blamed, is
        # rolled back.
        assert first.returncode == 1, first.stderr
        wave = {task_id, "01-01-1", "01-02-1"}
        blamed = [
            t
            for t in sorted(wave)
            if "policy-violation"
            in scene.error_types(t.rsplit("-", 1)[0], int(t.rsplit("-", 1)[1]))
        ]
        assert blamed, first.stderr
        assert task_id not in blamed or rolled_back, f"{task_id} was committed"


# -- interruptions and the user's later work ------------------------------------------


@pytest.mark.parametrize("mode", ["in-place", "worktrees"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_an_interrupted_run_then_a_user_edit_then_a_rerun_keeps_the_edit(
    scene: Scene, mode: str, signum: int
) -> None:
    """Ctrl-C (or a crash), the user edits a tracked file, runs again: the edit stays. In
    place, the rerun refuses the dirty tree (exit 2) until the user commits; in a worktree
    (the default) the rerun merges around the uncommitted edit."""
    root = scene.root
    crash = signum == signal.SIGKILL  # its agents' children live on until the next run
    if mode == "in-place":
        scene.in_place()
    first = scene.user_work()
    scene.steer("01-01-1", "hang")
    scene.steer("01-02-1", "hang")
    started = scene.start("execute-phase", "1")
    scene.wait_for("started-01-01-1", started)
    if mode == "worktrees":
        scene.wait_for("started-01-02-1", started)
    started.process.send_signal(signum)
    code, _, err = started.finish()
    assert_user_work_intact(root, first, None if crash else scene.token)
    assert code == (-signum if crash else 130), err
    edited = "demo\nthe user's edit after the interruption\n"
    (root / "README.md").write_text(edited)
    scene.calm()
    if mode == "in-place":
        scene.forget_spawns()
        dirty = snapshot(root)
        refused = scene.run("execute-phase", "1")
        assert_user_work_intact(root, dirty, None if crash else scene.token)
        assert refused.returncode == 2, refused.stderr
        assert "README.md" in one_line_error(refused.stderr)
        assert scene.spawned() == []
        git(root, "commit", "-q", "-m", "the user's edit", "README.md")
    before = snapshot(root)
    rerun = scene.run("execute-phase", "1")
    assert_user_work_intact(root, before, scene.token)
    assert rerun.returncode == 0, rerun.stderr
    assert_nothing_lost(root, before, token=scene.token)
    assert (root / "README.md").read_text() == edited
    if mode == "worktrees":  # the user's branch moved only by merging finished plans
        assert task_counts(root, "--first-parent", "main") == {}


def test_prune_after_a_crash_then_a_resume_neither_loses_nor_fakes_a_task(scene: Scene) -> None:
    """SIGKILL while task 01-01-2 has written its file; `gsd checkpoints prune`; resume:
    the task runs again and is committed once (not "done, nothing to commit")."""
    root = scene.root
    before = scene.user_work()
    scene.steer("01-01-2", "file", "hang")
    scene.steer("01-02-1", "hang")
    started = scene.start("execute-phase", "1")
    scene.wait_for("started-01-01-2", started)
    scene.wait_for("started-01-02-1", started)
    started.process.send_signal(signal.SIGKILL)
    started.finish()
    pruned = scene.run("checkpoints", "prune")
    assert pruned.returncode == 0, pruned.stderr
    scene.calm()
    resumed = scene.run("execute-phase", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert_nothing_lost(root, before, token=scene.token)
    assert (root / "src/t01-01_2.py").read_text() == "# 01-01 2\n"


# -- an agent rewriting what git keeps ------------------------------------------------


@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_an_agent_clearing_the_stashes_loses_none(scene: Scene, sandbox: str) -> None:
    sandboxed = scene.sandbox(sandbox == "on")
    before = scene.user_work()
    scene.steer("01-01-2", "stash-clear")
    contained(scene, before, "01-01-2", "git stash clear", sandboxed)


PLANTED = "01-01_9-20200101T000000Z-planted.json"


@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_a_planted_checkpoint_record_and_tag_are_never_acted_on(scene: Scene, sandbox: str) -> None:
    """An agent writes a checkpoint record and tag that would rewind the branch, delete
    every other ref and every untracked file; the next run must not act on them."""
    sandboxed = scene.sandbox(sandbox == "on")
    before = scene.user_work()
    scene.steer("01-01-1", "plant-checkpoint")
    contained(
        scene, before, "01-01-1", "refs/tags/checkpoint/", sandboxed, foreign_records=(PLANTED,)
    )
    if sandboxed:  # the folder could not be made (EACCES), so nothing was written in it
        writes = set(outcomes(scene, "01-01-1", "write"))
        assert "EACCES" in set(outcomes(scene, "01-01-1", "mkdir")) | writes
        assert writes <= {"EACCES", "ENOENT"}


@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_an_agent_deleting_another_plans_branch_loses_none_of_its_commits(
    scene: Scene, sandbox: str
) -> None:
    """01-01's second task deletes gsd/01-02 once 01-02 has committed on it."""
    root = scene.root
    sandboxed = scene.sandbox(sandbox == "on")
    before = scene.user_work()
    scene.steer("01-01-2", "delete-branch:gsd/01-02")

    def still_reachable() -> None:
        assert committed_anywhere(root)["01-02-1"] == 1, git(root, "branch", "-a")

    contained(scene, before, "01-01-2", "refs/heads/gsd/01-02", sandboxed, between=still_reachable)


@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_planted_hooks_and_config_are_undone_and_never_run(scene: Scene, sandbox: str) -> None:
    """core.fsmonitor, hooks and info/exclude planted in .git: restored byte for byte
    (the snapshot holds .git/config, hooks/ and info/), and no planted program ever runs
    (each would leave a marker outside the repository)."""
    sandboxed = scene.sandbox(sandbox == "on")
    before = scene.user_work()
    scene.steer("01-01-1", "plant-hooks")

    def nothing_ran() -> None:
        assert sorted(p.name for p in scene.trap.iterdir()) == ["fsmonitor.sh"]

    contained(scene, before, "01-01-1", "core.fsmonitor", sandboxed, between=nothing_ran)
    nothing_ran()
    if sandboxed:
        assert set(outcomes(scene, "01-01-1", "write")) == {"EACCES"}


@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_a_symlink_in_gsds_journal_never_brings_an_outside_file_in(
    scene: Scene, sandbox: str
) -> None:
    """Symlinks in .git/gsd/journal/ to a secret outside the repository: the secret is
    never committed, copied into the checkout, or written to."""
    root = scene.root
    sandboxed = scene.sandbox(sandbox == "on")
    secret = scene.secret.read_bytes()
    before = scene.user_work()
    scene.steer("01-01-1", "journal-symlink")

    def not_leaked() -> None:
        assert scene.secret.read_bytes() == secret
        leaked = f"SECRET-{scene.token}"
        assert leaked not in git(root, "log", "--all", "-p")
        for path in root.rglob("*"):
            if ".git" not in path.relative_to(root).parts and path.is_file():
                assert leaked.encode() not in path.read_bytes(), path

    contained(scene, before, "01-01-1", "symlink", sandboxed, violation=False, between=not_leaked)
    not_leaked()  # nor by the next run, which flushes what the journal holds


@pytest.mark.parametrize(
    ("mode", "sandbox"), [("in-place", "on"), ("in-place", "off"), ("worktrees", "off")]
)
def test_a_read_only_agent_cannot_hide_a_config_edit_with_skip_worktree(
    scene: Scene, mode: str, sandbox: str
) -> None:
    root = scene.root
    if mode == "in-place":
        scene.in_place()
    sandboxed = scene.sandbox(sandbox == "on")
    path = root / ".planning/phases/01-alpha/01-01-PLAN.md"
    path.write_text(path.read_text().replace('specialist="worker"', 'specialist="reader"', 1))
    scene.commit("01-01 task 1 goes to a read-only agent")
    config = (root / ".planning/config.json").read_bytes()
    before = scene.user_work()
    scene.steer("01-01-1", "skip-worktree")

    def config_as_committed() -> None:
        assert (root / ".planning/config.json").read_bytes() == config
        assert git(root, "show", "HEAD:.planning/config.json").encode() == config
        assert git(root, "ls-files", "-v", ".planning/config.json").startswith("H ")

    # a read-only task that changed nothing is done without a commit
    contained(
        scene,
        before,
        "01-01-1",
        "write .planning/config.json",
        sandboxed,
        between=config_as_committed,
        tasks=ALL_TASKS[1:],
    )
    config_as_committed()


def test_ignored_protected_files_an_agent_changes_are_restored(scene: Scene) -> None:
    """In place (the opt-in), an agent overwrites the ignored `.env` and deletes the
    ignored `key.pem`: a policy-violation, both back byte for byte (or, if the sandbox
    keeps the agent off them, the writes fail)."""
    scene.in_place()
    before = scene.user_work()
    scene.steer("01-01-1", "protected")
    contained(scene, before, "01-01-1", ".env", None)


@pytest.mark.parametrize("sandbox", ["on", "off"])
def test_an_agent_in_a_worktree_cannot_change_the_main_checkout(scene: Scene, sandbox: str) -> None:
    """The agent finds the main checkout from `git rev-parse --git-common-dir` and writes
    there (README.md, new files under src/ and .planning/, the user's .env): none of it
    is ever committed, and the checkout is as the user left it."""
    root = scene.root
    sandboxed = scene.sandbox(sandbox == "on")
    before = scene.user_work()
    scene.steer("01-01-1", "main-checkout")

    def main_checkout_as_left() -> None:
        assert f"agent was here {scene.token}" not in git(root, "log", "--all", "-p")
        assert git(root, "diff", "HEAD", "--", "README.md") == ""
        assert not (root / "src/injected.py").exists()
        assert not (root / ".planning/injected.md").exists()

    contained(
        scene,
        before,
        "01-01-1",
        f"write {root}",
        sandboxed,
        violation=False,
        between=main_checkout_as_left,
    )


@pytest.mark.parametrize("mode", ["in-place", "worktrees"])
def test_files_under_planning_at_run_start_are_never_committed(scene: Scene, mode: str) -> None:
    """A notes file holding a token and a draft plan (untracked), and in a worktree run an
    uncommitted edit of PROJECT.md: all stay as they are, uncommitted."""
    root = scene.root
    if mode == "in-place":
        scene.in_place()
    scene.user_work()
    secret = f"notes-{uuid.uuid4().hex}"
    (root / ".planning/notes.md").write_text(f"api token: {secret}\n")
    draft = root / ".planning/phases/02-beta/02-01-PLAN.md"
    draft.parent.mkdir(parents=True)
    draft.write_text(plan_text(phase="02-beta", plan="01"))
    if mode == "worktrees":
        (root / ".planning/PROJECT.md").write_text("# Project\n\nEdited, not committed.\n")
    before = snapshot(root)
    result = scene.run("execute-phase", "1")
    assert result.returncode == 0, result.stderr
    assert secret not in git(root, "log", "--all", "-p")
    assert_nothing_lost(root, before, token=scene.token)


@pytest.mark.parametrize(
    ("signum", "code"),
    [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)],
    ids=["SIGTERM", "SIGHUP", "SIGINT"],
)
def test_a_signal_ends_every_agent_and_leaves_nothing_behind(
    scene: Scene, signum: int, code: int
) -> None:
    """Two agents of a parallel wave, each with a child that ignores SIGTERM: after the
    signal none survives, no tag, record, worktree or lock is left, Session Continuity
    says where the run stopped, no error is recorded, and a rerun completes."""
    root = scene.root
    before = scene.user_work()
    started = both_plans_hanging(scene)
    started.process.send_signal(signum)
    exit_code, _, err = started.finish()
    assert_user_work_intact(root, before, scene.token)
    assert_gsd_left_nothing(root, before)
    assert exit_code == code, err
    assert committed_anywhere(root) == {}
    assert "Last session: never" not in (root / ".planning/STATE.md").read_text()
    assert scene.errors() == []  # an interruption is no specialist's failure
    scene.calm()
    rerun = scene.run("execute-phase", "1")
    assert rerun.returncode == 0, rerun.stderr
    assert_nothing_lost(root, before, token=scene.token)


# -- small things on the same path ------------------------------------------------------


def test_a_verify_command_that_edits_a_tracked_file_is_part_of_its_task(scene: Scene) -> None:
    """Task 1's `<automated>` check edits src/shared.py (tracked, in its files): the edit
    is committed with task 1 and does not fail task 2."""
    root = scene.root
    verify = scene.tmp / "verify.py"
    verify.write_text('open("src/shared.py", "a").write("# checked\\n")\n')
    task_one = task_xml(
        "01-01", 1, files="src/t01-01_1.py, src/shared.py", verify=f"{sys.executable} {verify}"
    )
    hostile.rewrite_plan(
        scene,
        "01-01",
        tasks=task_one + "\n" + task_xml("01-01", 2),
        files_modified="[src/t01-01_1.py, src/t01-01_2.py, src/shared.py]",
    )
    before = scene.user_work()
    result = scene.run("execute-phase", "1")
    assert result.returncode == 0, result.stderr
    assert_nothing_lost(root, before, token=scene.token)
    sha = git(root, "log", "--format=%H", "--grep=^Gsd-Task: 01-01-1$", "main").split()[0]
    assert "src/shared.py" in git(root, "show", "--format=", "--name-only", sha).split()
    assert git(root, "show", "main:src/shared.py") == "# shared\n# checked\n"


def test_a_git_status_loop_beside_the_run_never_fails_it(scene: Scene) -> None:
    """What editors and file watchers do all the time: `git status` in the checkout, in
    loops (three, so that one holds index.lock at almost any instant)."""
    root = scene.root
    before = scene.user_work()
    stop = scene.tmp / "stop-status-loop"
    argv = [sys.executable, "-c", hostile.STATUS_LOOP, str(stop), str(root)]
    loops = [subprocess.Popen([*argv, f"loop-{scene.token}"]) for _ in range(3)]
    try:
        result = scene.run("execute-phase", "1")
    finally:
        stop.touch()
        for loop in loops:
            loop.wait(timeout=60)
    assert result.returncode == 0, result.stderr
    assert "merge-conflict" not in result.stdout + result.stderr
    assert "index.lock" not in result.stdout + result.stderr
    assert scene.errors() == []
    assert_nothing_lost(root, before, token=scene.token)


@pytest.mark.parametrize("case", ["dirty-in-place", "missing-runner", "index-lock"])
def test_an_unusable_start_stops_the_run_before_any_agent(scene: Scene, case: str) -> None:
    """One line, exit 2, no agent spawned (each would leave a marker), no error record
    against a specialist."""
    root = scene.root
    if case == "dirty-in-place":
        scene.in_place()
        before, named = scene.user_work(dirty=True), "README.md"
    elif case == "missing-runner":
        missing = f"/nonexistent/hostile-runner-{scene.token}"
        agent = root / "agents/worker.md"
        text = agent.read_text()
        start = text.index("command: [")
        end = text.index("]\n", start)
        agent.write_text(text[:start] + f'command: ["{missing}"' + text[end:])
        scene.commit("the worker's program is not installed")
        before, named = scene.user_work(), missing
    else:
        before, named = scene.user_work(), "index.lock"
        (root / ".git/index.lock").write_text("")  # another git is at work
    result = scene.run("execute-phase", "1")
    assert result.returncode == 2, result.stderr
    assert named in one_line_error(result.stderr)
    assert scene.spawned() == []
    assert scene.errors() == []
    if case == "index-lock":
        assert (root / ".git/index.lock").exists()  # someone else's: left alone
        (root / ".git/index.lock").unlink()
    assert_nothing_lost(root, before, tasks=(), token=scene.token)


def test_the_run_lock_covers_every_worktree_of_the_repository(scene: Scene) -> None:
    """While a run is live, `execute-phase` and `checkpoints prune` started in a linked
    worktree of the same repository are refused (exit 2) and undo nothing of it."""
    root = scene.root
    linked = scene.tmp / "user-worktree"
    git(root, "worktree", "add", "-q", str(linked), "-b", "user-worktree")
    before = scene.user_work()
    live = both_plans_hanging(scene)
    second = scene.run("execute-phase", "1", "--timeout", "5", cwd=linked)
    assert second.returncode == 2, second.stderr
    one_line_error(second.stderr)
    prune = scene.run("checkpoints", "prune", cwd=linked)
    assert prune.returncode == 2, prune.stderr
    assert live.process.poll() is None
    assert len(hostile.processes_with(f"agent-{scene.token}")) >= 2  # both agents still run
    (scene.control / "release").touch()
    code, _, err = live.finish()
    assert code == 0, err
    assert_nothing_lost(root, before, token=scene.token)


def test_no_preexec_fn_and_a_parallel_waves_agents_die_with_a_killed_gsd(scene: Scene) -> None:
    """`preexec_fn` is unsafe in a threaded process (Python's documentation): gsd does not
    use it, and the agents of a parallel wave (started from threads) still die with a
    SIGKILLed gsd; what they started is gone after the next run at the latest."""
    root = scene.root
    before = scene.user_work()
    started = both_plans_hanging(scene)
    started.process.send_signal(signal.SIGKILL)
    started.finish()
    assert hostile.gone_within(f"agent-{scene.token}", 30) == []
    scene.calm()
    resumed = scene.run("execute-phase", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert_nothing_lost(root, before, token=scene.token)
    users = [p for p in (REPO / "gsd").rglob("*.py") if "preexec_fn" in p.read_text()]
    assert users == []
