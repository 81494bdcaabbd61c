"""The CI fan-out of examples/github/gsd.yml, run as GitHub would run it, without GitHub.

Every `run:` script is read from the workflow file (never copied) and run with bash, as a
runner does, against a bare origin: the matrix jobs of a wave in parallel, each in its own
clone; branches merged with plain `git merge --no-ff`, as the merge button does.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, git, plan_text
from tests.test_execute import AGENT_FILE, CHECKPOINT, REPORT

WORKFLOW = yaml.safe_load((REPO / "examples" / "github" / "gsd.yml").read_text())
# plans 01-02 and 01-04 both append to src/shared.txt (an overlap group, GSD044); each
# task also writes a file of its own
AGENT = f"""\
import os
plan, task = os.environ["GSD_PLAN"], os.environ["GSD_TASK"]
os.makedirs("src", exist_ok=True)
open(f"src/{{plan}}-{{task}}.txt", "w").write(f"{{plan}} task {{task}}\\n")
if plan in ("01-02", "01-04"):
    with open("src/shared.txt", "a") as shared:
        shared.write(f"{{plan}} task {{task}}\\n")
print("{REPORT}")
"""
# phase 1: three waves of ten plans, as the issue measured them (27 of 30 merges then
# conflicted): wave 1 = 01-01 .. 01-10 (01-02 then 01-04: one overlap group); plan n of
# waves 2 and 3 depends on plan n - 10; 01-17 stops at a human checkpoint (its task 2)
PER_WAVE = 10
PLANS = [f"01-{n:02d}" for n in range(1, 3 * PER_WAVE + 1)]
DEPENDS = {f"01-{n:02d}": f"01-{n - PER_WAVE:02d}" for n in range(PER_WAVE + 1, 3 * PER_WAVE + 1)}
WAVES = [PLANS[i : i + PER_WAVE] for i in range(0, len(PLANS), PER_WAVE)]
CHECKPOINT_PLAN = "01-17"
EVERY_TASK = sorted([f"{p}-1" for p in PLANS] + [f"{CHECKPOINT_PLAN}-3"])
ROADMAP = """\
# Roadmap: Demo

## Phases

- [ ] **Phase 1: Alpha** - Thirty plans in three waves

## Phase Details

### Phase 1: Alpha
**Goal**: Everything
**Depends on**: none
**Plans**: 30 plans

Plans:
{plans}

## Progress

| Phase | Plans Complete | Status | Completed |
|-------|----------------|--------|-----------|
| 1. Alpha | 0/30 | Not started | - |
"""


def auto(plan: str, n: int) -> str:
    files = f"src/{plan}-{n}.txt" + (", src/shared.txt" if plan in ("01-02", "01-04") else "")
    return (
        f'<task type="auto" specialist="worker">\n<name>Task {n}</name>\n<files>{files}</files>\n'
        "<action>Write it.</action>\n<verify><automated>true</automated></verify>\n"
        "<done>Done.</done>\n</task>"
    )


def files_of(plan: str) -> str:
    tasks = (1, 3) if plan == CHECKPOINT_PLAN else (1,)
    files = [f"src/{plan}-{n}.txt" for n in tasks]
    return "[" + ", ".join(files + (["src/shared.txt"] if plan in ("01-02", "01-04") else [])) + "]"


def write_phase(root: Path, agent: Path) -> None:
    """The whole project: agents, config, STATE.md, ROADMAP.md and the thirty plans."""

    def write(rel: str, text: str) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)

    for name in ("worker", "gsd-executor"):
        write(
            f"agents/{name}.md", AGENT_FILE.format(name=name, python=sys.executable, script=agent)
        )
    write(".planning/available_agents.md", "- **worker**: test\n")
    write(
        ".planning/config.json",
        json.dumps({"specialists": {"kill_grace_seconds": 1, "max_retries": 1}}, indent=2) + "\n",
    )
    write(".planning/STATE.md", (REPO / ".planning-template" / "STATE.md").read_text())
    write(
        ".planning/ROADMAP.md",
        ROADMAP.format(plans="\n".join(f"- [ ] {p}-PLAN.md — plan {p}" for p in PLANS)),
    )
    for plan in PLANS:
        dep = DEPENDS.get(plan)
        wave = 1 if dep is None else 2 if DEPENDS.get(dep) is None else 3
        tasks = [auto(plan, 1)]
        if plan == CHECKPOINT_PLAN:
            tasks += [CHECKPOINT, auto(plan, 3)]
        write(
            f".planning/phases/01-alpha/{plan}-PLAN.md",
            plan_text(
                plan=plan[3:],
                wave=wave,
                depends_on=f'["{dep}"]' if dep else "[]",
                files_modified=files_of(plan),
                tasks="\n".join(tasks),
                autonomous="false" if plan == CHECKPOINT_PLAN else "true",
            ),
        )


# --- running the workflow's own scripts ---------------------------------------------------


def step(job: str, *, containing: str = "", step_id: str = "") -> dict[str, Any]:
    """The step of `job` whose id is `step_id`, or whose script contains `containing`."""
    found = [
        s
        for s in WORKFLOW["jobs"][job]["steps"]
        if (step_id and s.get("id") == step_id) or (containing and containing in s.get("run", ""))
    ]
    assert len(found) == 1, (job, containing, step_id)
    return found[0]


class Runner:
    """A GitHub runner for one test: bash, the workflow's environment, a fake `gh`."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.bin.mkdir()
        gsd = self.bin / "gsd"
        gsd.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gsd "$@"\n')
        (self.bin / "python").symlink_to(sys.executable)
        gh = self.bin / "gh"  # records its argv; `pr list` answers from a file
        log, listed = tmp / "gh.log", tmp / "gh-open"
        gh.write_text(
            textwrap.dedent(f"""\
            #!/bin/sh
            printf '%s\\n' "$*" >> "{log}"
            if [ "$1 $2" = "pr list" ] && [ -f "{listed}" ]; then cat "{listed}"; fi
            """)
        )
        for program in (gsd, gh):
            program.chmod(0o755)
        self.jobs = 0

    def env(self, values: dict[str, str]) -> tuple[dict[str, str], Path]:
        """A step's environment, and the file it names as $GITHUB_OUTPUT."""
        self.jobs += 1
        output = self.tmp / f"output-{self.jobs}"
        output.write_text("")
        return {
            **os.environ,
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(REPO),
            "GITHUB_OUTPUT": str(output),
            **values,
        }, output

    def start(self, script: dict[str, Any], cwd: Path, **values: str) -> subprocess.Popen[str]:
        """The step's own `run:` text, as a runner runs it: `bash -e`."""
        return subprocess.Popen(
            ["bash", "-e", "-c", script["run"]],
            cwd=cwd,
            text=True,
            env=self.env(values)[0],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )

    def run(self, script: dict[str, Any], cwd: Path, **values: str) -> tuple[int, str, str]:
        """(exit status, output, what the step wrote to $GITHUB_OUTPUT)."""
        env, output = self.env(values)
        done = subprocess.run(
            ["bash", "-e", "-c", script["run"]],
            cwd=cwd,
            text=True,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=120,
        )
        return done.returncode, done.stdout, output.read_text()

    def clone(self, origin: Path, name: str) -> Path:
        """actions/checkout with fetch-depth 0: the dispatched branch, every branch fetched."""
        where = self.tmp / "jobs" / name
        where.parent.mkdir(exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(origin), str(where)], check=True)
        return where

    def schedule(self, origin: Path, wave: int) -> list[dict[str, Any]]:
        checkout = self.clone(origin, f"schedule-{self.jobs}")
        code, out, output = self.run(
            step("schedule", step_id="waves"), checkout, PHASE="1", WAVE=str(wave)
        )
        assert code == 0, out
        (line,) = output.splitlines()
        name, _, matrix = line.partition("=")
        assert name == "matrix"
        return list(json.loads(matrix)["include"])

    def execute(self, origin: Path, wave: int) -> dict[str, tuple[int, str]]:
        """Every matrix job of a wave at once, each in its own clone: plans -> (exit, log)."""
        script = step("execute", containing="gsd execute-plan")
        jobs = {}
        for entry in self.schedule(origin, wave):
            checkout = self.clone(origin, f"execute-{self.jobs}-{entry['plan']}")
            jobs[entry["plans"]] = self.start(script, checkout, PLANS=entry["plans"])
        ended = {}
        for plans, job in jobs.items():
            out, _ = job.communicate(timeout=120)
            ended[plans] = (job.returncode, out)
        return ended


def remote_branches(origin: Path) -> set[str]:
    out = git(origin, "for-each-ref", "--format=%(refname:short)", "refs/heads/gsd/")
    return set(out.split())


def merge(checkout: Path, branches: list[str]) -> list[str]:
    """`git merge --no-ff` of each branch into the checkout's branch: the conflicted ones."""
    conflicted = []
    git(checkout, "fetch", "-q", "origin")
    for branch in branches:
        done = subprocess.run(
            ["git", "merge", "-q", "--no-ff", "--no-edit", f"origin/{branch}"],
            cwd=checkout,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            unmerged = git(checkout, "diff", "--name-only", "--diff-filter=U").split()
            conflicted.append(f"{branch}: {', '.join(unmerged)}")
            git(checkout, "merge", "--abort")
    return conflicted


def task_trailers(checkout: Path, rev: str = "HEAD") -> list[str]:
    out = git(checkout, "log", rev, "--format=%(trailers:key=Gsd-Task,valueonly)")
    return sorted(line.strip() for line in out.splitlines() if line.strip())


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare origin whose main holds the project: ten plans, nothing run yet."""
    seed = tmp_path / "seed"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    seed.joinpath("README.md").write_text("demo\n")
    write_phase(seed, agent)
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "ten plans")
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(bare)], check=True)
    return bare


def gsd_in(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "gsd", *args], cwd=checkout, text=True, capture_output=True, env=env
    )


# --- the whole phase ----------------------------------------------------------------------


def test_three_waves_fan_out_merge_cleanly_and_end_as_a_local_run(origin, tmp_path) -> None:
    runner = Runner(tmp_path)
    shuffle = random.Random(12).shuffle  # fixed: a failure shows again as it was
    reviewer = runner.clone(origin, "reviewer")  # a person merging pull requests on main
    one_each = {p: 0 for p in WAVES[0] if p not in ("01-02", "01-04")}

    # wave 1: nine jobs (01-02 and 01-04 share a file: one job runs both, in order)
    ended = runner.execute(origin, 1)
    assert {plans: code for plans, (code, _) in ended.items()} == {**one_each, "01-02 01-04": 0}, (
        ended
    )
    assert remote_branches(origin) == {f"gsd/{p}" for p in WAVES[0]}

    # wave 2 dispatched too early: every plan is refused (exit 2), no branch is pushed
    early = runner.execute(origin, 2)
    assert {plans: code for plans, (code, _) in early.items()} == dict.fromkeys(WAVES[1], 2)
    assert "plan 01-11 depends on 01-01, not done yet" in early["01-11"][1]
    assert remote_branches(origin) == {f"gsd/{p}" for p in WAVES[0]}

    branches = [f"gsd/{p}" for p in WAVES[0]]
    shuffle(branches)
    assert merge(reviewer, branches) == []  # no conflict, whatever the order
    git(reviewer, "push", "-q", "origin", "main")

    # wave 2: 01-17 pauses at its human checkpoint (exit 4), its task 1 pushed
    ended = runner.execute(origin, 2)
    assert {plans: code for plans, (code, _) in ended.items()} == {
        **dict.fromkeys(WAVES[1], 0),
        CHECKPOINT_PLAN: 4,
    }, ended
    assert "plan 01-11 complete" in ended["01-11"][1]
    assert task_trailers(origin, f"gsd/{CHECKPOINT_PLAN}") == sorted(
        [f"{p}-1" for p in WAVES[0]] + [f"{CHECKPOINT_PLAN}-1"]
    )
    branches = [f"gsd/{p}" for p in WAVES[1] if p != CHECKPOINT_PLAN]
    shuffle(branches)
    assert merge(reviewer, branches) == []  # no conflict, whatever the order
    git(reviewer, "push", "-q", "origin", "main")

    # a person approves 01-17 on its branch and dispatches wave 2 again: the others are
    # done (nothing run, nothing pushed), 01-17 continues after its task 1
    person = runner.clone(origin, "person")
    git(person, "switch", "-q", f"gsd/{CHECKPOINT_PLAN}")
    assert gsd_in(person, "approve", CHECKPOINT_PLAN).returncode == 0
    git(person, "add", ".planning/approvals.jsonl")
    git(person, "commit", "-q", "-m", f"approve {CHECKPOINT_PLAN}")
    git(person, "push", "-q", "origin", f"gsd/{CHECKPOINT_PLAN}")
    before = {
        f"gsd/{p}": git(origin, "rev-parse", f"gsd/{p}").strip()
        for p in WAVES[1]
        if p != CHECKPOINT_PLAN
    }
    again = runner.execute(origin, 2)
    assert {plans: code for plans, (code, _) in again.items()} == dict.fromkeys(WAVES[1], 0)
    assert f"{CHECKPOINT_PLAN} task 1: already committed, skipped" in again[CHECKPOINT_PLAN][1]
    assert "checkpoint:human-verify approved" in again[CHECKPOINT_PLAN][1]
    assert {b: git(origin, "rev-parse", b).strip() for b in before} == before
    assert merge(reviewer, [f"gsd/{CHECKPOINT_PLAN}"]) == []
    git(reviewer, "push", "-q", "origin", "main")

    # wave 3
    ended = runner.execute(origin, 3)
    assert {plans: code for plans, (code, _) in ended.items()} == dict.fromkeys(WAVES[2], 0)
    branches = [f"gsd/{p}" for p in WAVES[2]]
    shuffle(branches)
    assert merge(reviewer, branches) == []

    assert task_trailers(reviewer) == EVERY_TASK  # every task committed once
    shared = (reviewer / "src/shared.txt").read_text()
    assert shared == "01-02 task 1\n01-04 task 1\n"  # the group ran in order
    synced = gsd_in(reviewer, "sync")
    assert synced.returncode == 0, synced.stderr
    git(reviewer, "commit", "-q", "-am", "gsd sync")
    assert gsd_in(reviewer, "sync", "--check").returncode == 0

    # the same phase run locally in one go ends with the same STATE.md and ROADMAP.md
    local = runner.clone(origin, "local")
    git(local, "reset", "-q", "--hard", git(local, "rev-list", "--max-parents=0", "HEAD").strip())
    assert gsd_in(local, "approve", CHECKPOINT_PLAN).returncode == 0
    git(local, "add", ".planning/approvals.jsonl")
    git(local, "commit", "-q", "-m", f"approve {CHECKPOINT_PLAN}")
    ran = gsd_in(local, "execute-phase", "1")
    assert ran.returncode == 0, ran.stderr
    assert task_trailers(local) == EVERY_TASK
    for name in ("STATE.md", "ROADMAP.md"):
        ours = (reviewer / ".planning" / name).read_text()
        assert ours == (local / ".planning" / name).read_text(), name


# --- the collect job ----------------------------------------------------------------------


def test_collect_merges_a_waves_complete_plans_into_one_pull_request(origin, tmp_path) -> None:
    runner = Runner(tmp_path)
    assert all(code == 0 for code, _ in runner.execute(origin, 1).values())
    collect = runner.clone(origin, "collect")
    merge_step = step("collect", step_id="collect")
    code, out, output = runner.run(merge_step, collect, PHASE="1", WAVE="1")
    assert code == 0, out
    assert output.splitlines() == ["branch=gsd/wave-01-1", "title=gsd: phase 01, wave 1"]
    assert f"{' '.join(WAVES[0])} complete and merged here" in (collect / "wave.md").read_text()
    assert task_trailers(origin, "gsd/wave-01-1") == sorted(f"{p}-1" for p in WAVES[0])
    pull = step("collect", containing="gh pr create")
    values = {"BRANCH": "gsd/wave-01-1", "TITLE": "gsd: phase 01, wave 1", "BASE": "main"}
    assert runner.run(pull, collect, **values)[0] == 0
    (tmp_path / "gh-open").write_text("7\n")  # the pull request is open now: updated
    assert runner.run(pull, collect, **values)[0] == 0
    log = (tmp_path / "gh.log").read_text().splitlines()
    assert (
        log[1] == "pr create --head gsd/wave-01-1 --base main --title gsd: phase 01, wave 1 "
        "--body-file wave.md"
    )
    assert log[3] == "pr edit 7 --body-file wave.md"
    # merged by a reviewer as it is: main has every task of the wave, and nothing stale
    reviewer = runner.clone(origin, "reviewer")
    assert merge(reviewer, ["gsd/wave-01-1"]) == []
    assert gsd_in(reviewer, "sync", "--check").returncode == 0


# --- execute-plan alone -------------------------------------------------------------------


@pytest.fixture
def checkout(origin, tmp_path) -> Path:
    where = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(origin), str(where)], check=True)
    return where


def test_execute_plan_waits_for_the_plan_before_it_in_its_overlap_group(checkout) -> None:
    refused = gsd_in(checkout, "execute-plan", "01-04")
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        "gsd: error: plan 01-04 waits for 01-02, not done yet: it runs after 01-02 in their "
        "overlap group (both modify src/shared.txt)"
    )
    assert task_trailers(checkout) == []
    assert gsd_in(checkout, "execute-plan", "01-02").returncode == 0
    done = gsd_in(checkout, "execute-plan", "01-04")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "gsd: plan 01-04 complete"
    assert "phase" not in git(checkout, "log", "-1", "--format=%s")


def test_execute_plan_waits_for_a_dependency_in_an_earlier_phase(checkout) -> None:
    later = checkout / ".planning/phases/02-beta/02-01-PLAN.md"
    later.parent.mkdir()
    later.write_text(
        plan_text(
            phase="02-beta",
            plan="01",
            depends_on='["01-03"]',
            files_modified="[src/beta.txt]",
            tasks=auto("02-01", 1).replace("src/02-01-1.txt", "src/beta.txt"),
        )
    )
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "phase 2")
    refused = gsd_in(checkout, "execute-plan", "02-01")
    assert refused.returncode == 2
    assert "plan 02-01 depends on 01-03, not done yet" in refused.stderr
    assert gsd_in(checkout, "execute-plan", "01-03").returncode == 0
    assert gsd_in(checkout, "execute-plan", "02-01").returncode == 0


def test_a_paused_plan_continues_on_its_own_branch(checkout) -> None:
    assert gsd_in(checkout, "execute-plan", "01-07").returncode == 0  # what 01-17 needs
    git(checkout, "switch", "-q", "-c", "gsd/01-17")
    paused = gsd_in(checkout, "execute-plan", "01-17")
    assert paused.returncode == 4, paused.stderr
    # the task committed before the checkpoint is on the job's branch, not left behind
    assert "01-17-1" in task_trailers(checkout)
    assert git(checkout, "branch", "--list", "gsd/01-17-run") == ""
    assert gsd_in(checkout, "approve", "01-17").returncode == 0
    git(checkout, "add", ".planning/approvals.jsonl")
    git(checkout, "commit", "-q", "-m", "approve")
    resumed = gsd_in(checkout, "execute-plan", "01-17")
    assert resumed.returncode == 0, resumed.stderr
    assert "plan 01-17 task 1: already committed, skipped" in resumed.stderr
    assert resumed.stderr.splitlines()[-1] == "gsd: plan 01-17 complete"
    assert git(checkout, "rev-parse", "--abbrev-ref", "HEAD").strip() == "gsd/01-17"
    assert task_trailers(checkout) == ["01-07-1", "01-17-1", "01-17-3"]


def test_the_validate_job_fails_a_pull_request_only_on_errors_it_introduces(tmp_path) -> None:
    """The validate job's own script on a pull request's checkout: an error already on
    the base branch is annotated and does not fail the check; a new one does."""
    repo = tmp_path / "repo"
    phase = repo / ".planning" / "phases" / "01-alpha"
    phase.mkdir(parents=True)
    git_in = ("git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t")
    subprocess.run([*git_in[:3], "init", "-q", "-b", "main"], check=True)
    broken = "---\nphase: 01-alpha\n---\n<task type='odd'></task>\n"
    (phase / "01-01-PLAN.md").write_text(broken)
    subprocess.run([*git_in, "add", "-A"], check=True)
    subprocess.run([*git_in, "commit", "-qm", "base: one broken plan"], check=True)
    base = subprocess.run(
        [*git_in, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    runner = Runner(tmp_path)
    script = step("validate", containing="gsd validate")
    (phase / "01-01-PLAN.md").write_text(broken.replace("---\n<task", "---\nWords.\n<task"))
    code, out, _ = runner.run(script, repo, BASE_SHA=base)
    assert code == 0, out
    assert "::error file=.planning/phases/01-alpha/01-01-PLAN.md" in out
    (phase / "01-02-PLAN.md").write_text(broken)
    code, out, _ = runner.run(script, repo, BASE_SHA=base)
    assert code == 1, out
    assert "::error file=.planning/phases/01-alpha/01-02-PLAN.md" in out
