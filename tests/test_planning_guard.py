"""Issue 20: `.planning/` is the user's and gsd's, not an agent's; no forged state.

Real hostile agents (`runner: command` programs, run with gsd's defaults: sandbox on,
`specialists.scope: warn`) in a temporary repository with a two-wave phase: plan 01-01 in
wave 1, plan 01-02 in wave 2, whose `<automated>` check records that it ran and fails.
Each agent runs the Python its test hands it, then writes its task file. Judged by git,
the disk, the exit status, `gsd status` and whether 01-02's check ran.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests import hostile
from tests.conftest import git, plan_text
from tests.hostile import Scene, task_counts, task_xml

PHASE = ".planning/phases/01-alpha"

# argv: control folder. Runs control/do-{plan}-{task} (Python, if there), then writes its
# task file and prints a success Task Report.
AGENT = r"""
import json, os, socket, sys
control = sys.argv[1]
plan, task = os.environ["GSD_PLAN"], os.environ["GSD_TASK"]
me = f"{plan}-{task}"
outside = os.path.dirname(control)
steering = os.path.join(control, f"do-{me}")
if os.path.exists(steering):
    exec(open(steering).read())
os.makedirs("src", exist_ok=True)
with open(f"src/t{plan}_{task}.py", "w") as handle:
    handle.write(f"# {plan} {task}\n")
print(REPORT)
"""

BLOCKING_HUMAN = (
    '<task type="checkpoint:human-verify" gate="blocking-human">\n<what-built>x</what-built>\n'
    "<how-to-verify>Look at the page</how-to-verify>\n"
    "<resume-signal>approved</resume-signal>\n</task>"
)


@pytest.fixture
def scene(git_project, tmp_path: Path):
    made = hostile.make_scene(git_project, tmp_path)
    (tmp_path / "agent.py").write_text(AGENT.replace("print(REPORT)", f"print({hostile.REPORT!r})"))
    checked = made.control / "checked-01-02"
    rewrite(made, "01-02", verify=f"touch {checked}; false")
    git(made.root, "rm", "-q", f"{PHASE}/01-03-PLAN.md")
    made.commit("two waves: 01-01, then 01-02 whose check fails")
    yield made
    hostile.kill_all(made.token)


def rewrite(scene: Scene, plan_id: str, *, verify: str = "true", tasks: str = "") -> None:
    number = plan_id.split("-")[1]
    wave, depends = (1, "[]") if plan_id == "01-01" else (2, '["01-01"]')
    body = tasks or task_xml(plan_id, 1, verify=verify)
    (scene.root / PHASE / f"{plan_id}-PLAN.md").write_text(
        plan_text(
            plan=number,
            wave=wave,
            depends_on=depends,
            tasks=body,
            files_modified=f"[src/t{plan_id}_1.py]",
            autonomous="false" if "checkpoint" in body else "true",
        )
    )


def checked(scene: Scene) -> bool:
    """Whether plan 01-02's `<automated>` check ran."""
    return (scene.control / "checked-01-02").exists()


def status(scene: Scene) -> dict[str, str]:
    done = scene.run("status", "--format", "json")
    assert done.returncode == 0, done.stderr
    plans = json.loads(done.stdout)["phases"][0]["plans"]
    return {p["plan"]: p["status"] for p in plans}


def policy_violation(scene: Scene, plan: str = "01-01") -> bool:
    return "policy-violation" in scene.error_types(plan, 1)


def tracked(scene: Scene, rel: str) -> bool:
    return bool(git(scene.root, "ls-files", "--", rel).strip())


# -- a forged SUMMARY.md --------------------------------------------------------------


@pytest.mark.parametrize("how", ["sandbox", "no sandbox", "in place"])
def test_a_summary_another_plans_agent_wrote_is_a_violation_and_never_done(scene, how: str) -> None:
    """With Landlock or without, in a worktree or in place: the SUMMARY.md is where the
    agent may write; gsd's checks catch it every time."""
    scene.sandbox(how != "no sandbox")
    if how == "in place":
        scene.in_place()
    summary = f"{PHASE}/01-02-SUMMARY.md"
    scene.steer("01-01-1", f"open({summary!r}, 'w').write('---\\nphase: 01-alpha\\n---\\n')")
    first = scene.run("execute-phase", "1")
    assert first.returncode == 1, first.stderr
    assert policy_violation(scene), first.stderr
    assert not (scene.root / summary).exists() and not tracked(scene, summary)
    assert "01-02: done" not in first.stderr
    assert task_counts(scene.root, "main") == {}  # rolled back: nothing of 01-01 merged
    assert status(scene) == {"01-01": "failed", "01-02": "pending"}
    scene.calm()
    rerun = scene.run("execute-phase", "1")
    assert rerun.returncode == 1, rerun.stderr  # 01-02's own check fails, as it should
    assert checked(scene)
    assert status(scene)["01-02"] == "failed"


def forge_by_hand(scene: Scene, plan_id: str, trailer: str) -> str:
    """A SUMMARY.md of `plan_id` committed with `trailer` (as a task commit before this
    fix would carry it: what an existing project may hold)."""
    rel = f"{PHASE}/{plan_id}-SUMMARY.md"
    (scene.root / rel).write_text("---\nphase: 01-alpha\nplan: '02'\n---\n# forged\n")
    git(scene.root, "add", rel)
    message = f"feat(01-01): task 1\n\n{trailer}\n" if trailer else "docs: my summary\n"
    git(scene.root, "commit", "-q", "-m", message)
    return rel


def test_a_summary_a_task_commit_carried_does_not_make_its_plan_done(scene) -> None:
    """What an older gsd merged (a SUMMARY.md in a task commit) is not "done": status
    (and `gsd mcp`'s progress, which is status), sync's STATE.md and the run's skip logic
    all say so, with a note; the plan runs and its check fails."""
    forge_by_hand(scene, "01-02", "Gsd-Task: 01-01-1\nGsd-Specialist: worker")
    assert status(scene)["01-02"] == "pending"
    synced = scene.run("sync")
    assert synced.returncode == 0, synced.stderr
    state = (scene.root / ".planning/STATE.md").read_text()
    assert "Plan: 0 of 2 in current phase" in state, state  # derived: nothing done
    run = scene.run("execute-phase", "1")
    assert run.returncode == 1, run.stderr
    assert "01-02: done (SUMMARY.md exists)" not in run.stderr
    assert "01-02-SUMMARY.md" in run.stderr and "task commit" in run.stderr
    assert checked(scene)


@pytest.mark.parametrize("how", ["committed", "untracked"])
def test_the_users_own_summary_still_makes_a_plan_done(scene, how: str) -> None:
    """An upstream-GSD project's hand-written SUMMARY.md, committed by the user or not
    committed at all, still means done: the plan is skipped, its check never runs."""
    if how == "committed":
        forge_by_hand(scene, "01-02", "")
    else:
        (scene.root / PHASE / "01-02-SUMMARY.md").write_text("# done by hand\n")
    assert status(scene)["01-02"] == "done"
    run = scene.run("execute-phase", "1", "--allow-dirty")
    assert run.returncode == 0, run.stderr
    assert "plan 01-02: done (SUMMARY.md exists), skipped" in run.stderr
    assert not checked(scene)


# -- a forged approval ----------------------------------------------------------------


def with_blocking_gate(scene: Scene) -> None:
    rewrite(scene, "01-02", tasks=BLOCKING_HUMAN + "\n" + task_xml("01-02", 2))
    scene.commit("01-02 waits for a person")


def test_an_approval_an_agent_appended_is_a_violation_and_never_counts(scene) -> None:
    with_blocking_gate(scene)
    line = json.dumps({"plan": "01-02", "task": 1, "option": None, "ts": "x"})
    scene.steer("01-01-1", f"open('.planning/approvals.jsonl', 'a').write({line + chr(10)!r})")
    first = scene.run("execute-phase", "1")
    assert first.returncode == 1, first.stderr
    assert policy_violation(scene)
    assert "approved by gsd approve" not in first.stderr
    approvals = scene.root / ".planning/approvals.jsonl"
    assert not approvals.exists() or "01-02" not in approvals.read_text()
    scene.calm()
    rerun = scene.run("execute-phase", "1")
    assert rerun.returncode == 4, rerun.stderr  # paused: the gate waits for a person
    assert "waits for a person" in rerun.stderr


@pytest.mark.parametrize("how", ["not committed", "in a task commit"])
def test_an_approval_gsd_approve_did_not_make_is_ignored_with_a_note(scene, how: str) -> None:
    """An unsigned line (an older gsd's, or anything else's) not committed, or one a task
    commit brought, answers nothing: the run pauses, says why in one line, and an
    approval `gsd approve` makes then counts."""
    with_blocking_gate(scene)
    approvals = scene.root / ".planning/approvals.jsonl"
    approvals.write_text(json.dumps({"plan": "01-02", "task": 1, "option": None}) + "\n")
    if how == "in a task commit":
        git(scene.root, "add", ".planning/approvals.jsonl")
        git(scene.root, "commit", "-q", "-m", "feat(01-01): x\n\nGsd-Task: 01-01-9\n")
    run = scene.run("execute-phase", "1")
    assert run.returncode == 4, run.stderr
    notes = [line for line in run.stderr.splitlines() if "not signed" in line]
    assert len(notes) == 1 and "gsd approve 01-02" in notes[0], run.stderr
    assert "approved by gsd approve" not in run.stderr
    approved = scene.run("approve", "01-02")
    assert approved.returncode == 0, approved.stderr
    done = scene.run("execute-phase", "1", "--allow-dirty")
    assert done.returncode == 0, done.stderr
    assert "approved (approved by gsd approve)" in done.stderr, done.stderr
    assert task_counts(scene.root, "main")["01-02-2"] == 1


def test_an_approval_a_person_committed_counts_whoever_signed_it(scene) -> None:
    """The CI flow: approved on another machine (another key, or an older gsd that did
    not sign), committed and pushed by a person: it counts."""
    with_blocking_gate(scene)
    line = {"plan": "01-02", "task": 1, "option": None, "mac": "0" * 64}
    (scene.root / ".planning/approvals.jsonl").write_text(json.dumps(line) + "\n")
    scene.commit("approve 01-02")
    done = scene.run("execute-phase", "1")
    assert done.returncode == 0, done.stderr
    assert "approved (approved by gsd approve)" in done.stderr
    assert "not signed" not in done.stderr


# -- a later plan's check switched off ------------------------------------------------


def test_a_later_plans_check_switched_off_is_put_back_and_runs_on_the_rerun(scene) -> None:
    plan = f"{PHASE}/01-02-PLAN.md"
    original = (scene.root / plan).read_bytes()
    flip = (
        f"path = {plan!r}\ntext = open(path).read()\n"
        "open(path, 'w').write(text.replace('; false</automated>', '; true</automated>'))\n"
    )
    scene.steer("01-01-1", flip)
    first = scene.run("execute-phase", "1")
    assert first.returncode == 1, first.stderr
    assert policy_violation(scene)
    assert (scene.root / plan).read_bytes() == original
    assert git(scene.root, "show", f"HEAD:{plan}").encode() == original
    scene.calm()
    rerun = scene.run("execute-phase", "1")
    assert rerun.returncode == 1, rerun.stderr
    assert checked(scene)  # 01-02's check ran, and failed
    assert status(scene) == {"01-01": "done", "01-02": "failed"}


# -- symlinks and special files -------------------------------------------------------


def test_state_and_roadmap_swapped_for_symlinks_are_put_back(scene) -> None:
    roadmap = scene.root / ".planning/ROADMAP.md"
    roadmap.write_text("# Roadmap\n\n- [ ] 01-01\n- [ ] 01-02\n")
    scene.commit("a roadmap")
    outside = scene.tmp / "outside.md"
    outside.write_text("OUTSIDE TEXT\n")
    swap = "".join(
        f"os.unlink({p!r}); os.symlink({str(outside)!r}, {p!r})\n"
        for p in (".planning/STATE.md", ".planning/ROADMAP.md")
    )
    scene.steer("01-01-1", swap)
    first = scene.run("execute-phase", "1")
    assert first.returncode == 1, first.stderr
    assert policy_violation(scene)
    for name in ("STATE.md", "ROADMAP.md"):
        path = scene.root / ".planning" / name
        assert not path.is_symlink() and path.is_file(), name
        assert "OUTSIDE TEXT" not in path.read_text()
        mode = git(scene.root, "ls-files", "-s", f".planning/{name}").split()[0]
        assert mode == "100644", (name, mode)
    assert outside.read_text() == "OUTSIDE TEXT\n"


def test_the_logs_folder_swapped_for_a_symlink_is_put_back(scene) -> None:
    """`.planning/logs` made a link to a folder outside: a violation, the link gone; no
    log line of this run or the rerun lands outside."""
    outside = scene.tmp / "elsewhere"
    outside.mkdir()
    swap = (
        "import shutil\nshutil.rmtree('.planning/logs', ignore_errors=True)\n"
        f"os.symlink({str(outside)!r}, '.planning/logs')\n"
    )
    scene.steer("01-01-1", swap)
    first = scene.run("execute-phase", "1")
    assert first.returncode == 1 and policy_violation(scene), first.stderr
    assert not (scene.root / ".planning/logs").is_symlink()
    scene.calm()
    scene.run("execute-phase", "1")
    assert checked(scene)
    assert list(outside.iterdir()) == []


def test_a_symlink_named_in_the_tasks_own_files_is_still_a_violation(scene) -> None:
    notes = f"{PHASE}/notes.md"
    rewrite(scene, "01-01", tasks=task_xml("01-01", 1, files=f"src/t01-01_1.py, {notes}"))
    scene.commit("01-01 may write its notes")
    scene.steer("01-01-1", f"os.symlink({str(scene.secret)!r}, {notes!r})")
    first = scene.run("execute-phase", "1")
    assert first.returncode == 1 and policy_violation(scene), first.stderr
    assert not os.path.lexists(scene.root / notes)


def test_a_planning_file_the_tasks_own_files_name_is_its_to_write(scene) -> None:
    """A planner task writes the next plan it names in `<files>`: no violation."""
    draft = f"{PHASE}/research.md"
    rewrite(scene, "01-01", tasks=task_xml("01-01", 1, files=f"src/t01-01_1.py, {draft}"))
    rewrite(scene, "01-02")
    scene.commit("01-01 writes research notes; 01-02 passes")
    scene.steer("01-01-1", f"open({draft!r}, 'w').write('# notes\\n')")
    run = scene.run("execute-phase", "1")
    assert run.returncode == 0, run.stderr
    assert tracked(scene, draft)


def test_a_proposal_even_one_the_tasks_own_files_name_is_a_violation(scene) -> None:
    """A plan-first task's proposal is what a person approves: an agent that writes one
    (here the next plan's, named in its own `<files>`) forges an approval's subject."""
    forged = f"{PHASE}/01-02-T1-PROPOSAL.md"
    rewrite(scene, "01-01", tasks=task_xml("01-01", 1, files=f"src/t01-01_1.py, {forged}"))
    scene.commit("01-01 names a proposal in its files")
    scene.steer("01-01-1", f"open({forged!r}, 'w').write('### Proposal\\n- Files:\\n')")
    first = scene.run("execute-phase", "1")
    assert first.returncode == 1 and policy_violation(scene), first.stderr
    assert not (scene.root / forged).exists() and not tracked(scene, forged)


MAKE_SPECIAL = """
def made(what, action):
    try:
        action()
        result = "done"
    except OSError as exc:
        result = type(exc).__name__
    open(os.path.join(control, f"made-{me}"), "a").write(f"{what}: {result}\\n")
made(".env", lambda: os.mkfifo(".env"))
made("key.pem", lambda: socket.socket(socket.AF_UNIX).bind("key.pem"))
made("SUMMARY", lambda: os.mkfifo(%r))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="FIFOs and sockets as Linux makes them")
@pytest.mark.parametrize("mode", ["worktrees", "in-place"])
def test_protected_paths_made_as_fifos_or_sockets_are_violations(scene, mode: str) -> None:
    """`.env` a FIFO, `key.pem` a socket, another plan's SUMMARY.md a FIFO (git sees none
    of them): a policy-violation, all taken away, nothing committed; or, where the
    sandbox refuses to make them, nothing there at all."""
    if mode == "in-place":
        scene.in_place()
    scene.steer("01-01-1", MAKE_SPECIAL % f"{PHASE}/01-02-SUMMARY.md")
    first = scene.run("execute-phase", "1")
    tried = (scene.control / "made-01-01-1").read_text()
    assert tried.count(":") == 3, tried
    for rel in (".env", "key.pem", f"{PHASE}/01-02-SUMMARY.md"):
        path = scene.root / rel
        assert not os.path.lexists(path) or stat.S_ISREG(os.lstat(path).st_mode), rel
    if "done" not in tried:  # the sandbox held: nothing was made
        assert first.returncode == 0, first.stderr
        return
    assert first.returncode == 1, (tried, first.stderr)
    assert policy_violation(scene), first.stderr
    assert task_counts(scene.root, "main")["01-01-1"] == 0, tried


# -- the rule itself ------------------------------------------------------------------


def test_what_a_task_may_write_in_planning() -> None:
    from gsd.core.safety.planguard import forbidden

    own = [
        f"src/a.py, {PHASE}/02-01-PLAN.md",
        ".planning/ROADMAP.md",
        f"{PHASE}/01-02-SUMMARY.md",
        ".planning/research/",
        ".planning/notes/*.md",
        ".planning/STATE.md",
    ]
    changed = [
        "src/a.py",
        f"{PHASE}/02-01-PLAN.md",  # named: its to write
        ".planning/ROADMAP.md",  # named
        f"{PHASE}/01-02-SUMMARY.md",  # named, but gsd's own
        ".planning/STATE.md",  # named, but gsd's own
        ".planning/research/x.md",  # only its folder is named
        ".planning/notes/y.md",  # only a glob matches
        ".planning/approvals.jsonl",
        ".planning/logs/01-01.jsonl",
        f"{PHASE}/01-01-RESULT.txt",
        ".planning/available_agents.md",
        f"{PHASE}/01-03-PLAN.md",  # another plan, not named
    ]
    found = forbidden(changed, own, {f"{PHASE}/02-01-PLAN.md": "symlink"})
    paths = [line.split(" (")[0] for line in found]
    assert paths == sorted(set(changed) - {"src/a.py", ".planning/ROADMAP.md"})
    assert f"{PHASE}/02-01-PLAN.md (a symlink)" in found
    assert forbidden([".planning", "docs/.planning-notes.md"], []) == [".planning (gsd's own)"]


def test_fifos_an_agent_leaves_in_your_checkout_without_a_sandbox_are_moved_aside(scene) -> None:
    """No Landlock: from its worktree the agent finds your checkout and makes a FIFO
    `.env.local` and one in `.planning/` there. Both are a violation, moved to
    `.git/gsd/displaced/`, and your checkout is as you left it."""
    scene.sandbox(False)
    before = scene.user_work()
    plant = (
        "import subprocess\n"
        "common = subprocess.run(['git', 'rev-parse', '--path-format=absolute',"
        " '--git-common-dir'], capture_output=True, text=True).stdout.strip()\n"
        "main = os.path.dirname(common)\n"
        "os.mkfifo(os.path.join(main, '.env.local'))\n"
        "os.mkfifo(os.path.join(main, '.planning', 'fifo.md'))\n"
    )
    scene.steer("01-01-1", plant)
    first = scene.run("execute-phase", "1")
    assert first.returncode == 1 and policy_violation(scene), first.stderr
    for rel in (".env.local", ".planning/fifo.md"):
        assert not os.path.lexists(scene.root / rel), rel
    kept = list((scene.root / ".git/gsd/displaced").rglob("*"))
    assert {p.name for p in kept} >= {".env.local", "fifo.md"}, kept
    hostile.assert_user_work_intact(scene.root, before)
