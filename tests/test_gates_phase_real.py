"""Issue 24's whole phase with real CLIs: a plan-first security task, review by another
runner, a `changes` answered then `approve`, and a timed-out attempt salvaged.

Authors run on claude, the reviewer (config.json's `review.agent`, every task) on
codex, read-only; one scripted model server plays every model (tests/modelserver). Plan
01-01's first task is a security task: `gates.plan_first: true` gates it, so its
specialist first proposes, read-only, and the run pauses (exit 4) until a person runs
`gsd approve 01-01 --task 1`; the next run does the work with the approved proposal in
its prompt. Its second task's first attempt gets `changes` from the reviewer, its retry
`approve`. Plan 01-02's author writes a file and then its model hangs past the timeout:
the attempt is rolled back and kept under its salvage ref, the retry does the work.

Judged by git (each task's commit and files, the proposal's commit, the salvage ref),
gsd's run log and what each model was asked; `gsd report` must say all of it. The CLIs
come from `make clis`; without them these tests skip and say why.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gsd.formats import execlog
from gsd.io.confine.sandbox import landlock_abi
from tests.e2e.cells import CONFIGURE, user_environment
from tests.modelserver.routes import Script, route
from tests.modelserver.scenario import Scenario, answer, review_report, task_report, write
from tests.modelserver.server import ModelServer
from tests.test_clis import cli_bin  # noqa: F401  (the fixture)
from tests.test_multiagent_real import PLAN, build, task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(landlock_abi() == 0, reason="no Landlock on this kernel"),
]

AGENTS = {  # name: (runner, tier, timeout in minutes)
    "security-engineer": ("claude", "read+write", 2),
    "writer": ("claude", "read+write", 2),
    "fixer": ("claude", "read+write", 0.15),  # 9 s: its first attempt's model hangs
    "critic": ("codex", "read-only", 2),
}
CONFIG = {
    "specialists": {"max_retries": 1, "kill_grace_seconds": 2},
    "voltagent": {"fallback_on_error": False},
    "review": {"agent": "critic", "when": "all"},
    "gates": {"plan_first": True},
}
FINDING = "src/notes.txt:1: say what the notes are for"
PROPOSAL = """\
### Proposal
- Files:
  - `src/auth.txt`: the token check the login needs
- Plan: write src/auth.txt with the check, nothing else.
- Risks: none
"""


def plans() -> dict[str, str]:
    secure = task("security-engineer", "Task 1: check tokens", "src/auth.txt", "write src/auth.txt")
    notes = task("writer", "Task 2: notes", "src/notes.txt", "write src/notes.txt")
    fix = task(
        "fixer", "Task 1: fix", "src/fix.txt", "write src/fix.txt", "grep -qx good src/fix.txt"
    )
    return {
        "01-01": PLAN.format(
            plan="01",
            wave=1,
            depends="[]",
            files="src/auth.txt, src/notes.txt",
            objective="Check tokens, then write the notes.",
            tasks=f"{secure}\n{notes}",
        ),
        "01-02": PLAN.format(
            plan="02",
            wave=1,
            depends="[]",
            files="src/fix.txt",
            objective="Fix a file.",
            tasks=fix,
        ),
    }


def script() -> Script:
    """The reviewer's routes first (codex; its prompt holds the task it reviews), one per
    task; then each author's, by the marker its task's action carries."""

    approve = answer(review_report("approve"))
    return Script(
        route("critic-security", r"ROUTE-security", approve, cli="codex"),
        route(
            "critic-writer",
            r"ROUTE-writer",
            answer(review_report("changes", FINDING)),
            approve,
            cli="codex",
        ),
        route("critic-fixer", r"ROUTE-fixer", approve, cli="codex"),
        route(
            "security",
            r"ROUTE-security",
            answer(PROPOSAL),  # the read-only proposal: run 1
            Scenario((write("src/auth.txt", "check\n"),), task_report(created=("src/auth.txt",))),
            cli="claude",
        ),
        route(
            "writer",
            r"ROUTE-writer",
            Scenario((write("src/notes.txt", "notes\n"),), task_report(created=("src/notes.txt",))),
            Scenario(
                (write("src/notes.txt", "notes on the token check\n"),),
                task_report(created=("src/notes.txt",)),
            ),
            cli="claude",
        ),
        route(
            "fixer",
            r"ROUTE-fixer",
            Scenario((write("src/fix.txt", "bad\n"),), task_report(), ending="hang"),
            Scenario((write("src/fix.txt", "good\n"),), task_report(created=("src/fix.txt",))),
            cli="claude",
        ),
    )


@dataclass
class Said:
    code: int
    out: str
    err: str


@dataclass
class Project:
    """The phase's repository, and every gsd command run in it against one server."""

    repo: Path
    env: dict[str, str]
    server: ModelServer
    runs: dict[str, Said] = field(default_factory=dict)

    def gsd(self, name: str, *args: str) -> Said:
        done = subprocess.run(
            [sys.executable, "-m", "gsd", *args],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        self.runs[name] = Said(done.returncode, done.stdout, done.stderr)
        return self.runs[name]

    def git(self, *args: str) -> str:
        argv = ["git", "-c", "safe.directory=*", "-C", str(self.repo), *args]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def said(self) -> str:
        shown = [
            f"== {n}: exit {s.code}\n{s.out[-2500:]}\n{s.err[-2500:]}" for n, s in self.runs.items()
        ]
        return "\n".join(shown) + f"\nmisses: {self.server.misses}"

    def commit_of(self, key: str) -> list[str]:
        return self.git("log", "main", "--format=%H", f"--grep=^Gsd-Task: {key}$").split()


@pytest.fixture(scope="module")
def phase(cli_bin: Path) -> Iterator[Project]:  # noqa: F811
    """The phase run as a user runs it: execute-phase (it pauses for the proposal),
    approve, execute-phase again, then the report."""
    base = Path(tempfile.mkdtemp(prefix="gsd-gates-"))
    home, repo = base / "home", base / "repo"
    home.mkdir()
    build(repo, plans(), AGENTS, 1, CONFIG, "01-gates")
    with ModelServer(script()) as server:
        env = user_environment(cli_bin, home)
        for configure in CONFIGURE.values():
            env.update(configure(home, server.url))
        project = Project(repo, env, server)
        project.gsd("first run", "execute-phase", "1")
        project.gsd("approve", "approve", "01-01", "--task", "1")
        project.gsd("second run", "execute-phase", "1")
        project.gsd("report", "report", "--all")
        yield project
    shutil.rmtree(base, ignore_errors=True)


def test_the_first_run_pauses_for_the_proposal_and_does_the_rest(phase: Project) -> None:
    first = phase.runs["first run"]
    assert first.code == 4, phase.said()
    assert "01-01-T1-PROPOSAL.md" in first.err + first.out, phase.said()
    assert phase.runs["approve"].code == 0, phase.said()
    assert phase.runs["second run"].code == 0, phase.said()
    assert phase.server.misses == [], phase.said()


def test_the_security_task_proposed_read_only_then_did_what_was_approved(phase: Project) -> None:
    proposal = ".planning/phases/01-gates/01-01-T1-PROPOSAL.md"
    text = phase.git("show", f"main:{proposal}")
    assert "src/auth.txt" in text and "the token check the login needs" in text
    # the proposal was committed before the work: the work's commit has it as an ancestor
    [work] = phase.commit_of("01-01-1")
    [proposed] = phase.git("log", "main", "--format=%H", "--", proposal).split()[-1:]
    assert phase.git("merge-base", "--is-ancestor", proposed, work) == ""
    files = phase.git("show", "--name-only", "--format=", work).split()
    assert [f for f in files if f.startswith("src/")] == ["src/auth.txt"]
    assert phase.git("show", f"{work}:src/auth.txt") == "check\n"
    # the proposal's call could not write (read-only); the work's prompt held the approval
    asked, working = phase.server.prompts("security")
    assert "### Proposal" in asked
    assert "Approved Proposal" in working and "the token check the login needs" in working


def test_another_runner_reviewed_every_task_changes_then_approve(phase: Project) -> None:
    found, _ = execlog.read_all(phase.repo / ".planning")
    reviews = sorted(
        (e["plan"] if "plan" in e else "", e["task"], e["verdict"], e["runner"])
        for e in found
        if e["event"] == "review"
    )
    assert [(r[1], r[2], r[3]) for r in reviews if r[2] == "changes"] == [(2, "changes", "codex")]
    assert {r[3] for r in reviews} == {"codex"}
    assert len(reviews) == 4, found  # security, writer twice, fixer
    [notes] = phase.commit_of("01-01-2")
    assert phase.git("show", f"{notes}:src/notes.txt") == "notes on the token check\n"
    draft, retry = phase.server.prompts("writer")
    assert FINDING not in draft and FINDING in retry


def test_the_timed_out_attempt_is_salvaged_and_its_retry_committed(phase: Project) -> None:
    assert phase.git("show", "refs/gsd/salvage/01-02/1/1:src/fix.txt") == "bad\n"
    assert phase.git("branch", "--contains", "refs/gsd/salvage/01-02/1/1") == ""
    [fixed] = phase.commit_of("01-02-1")
    assert phase.git("show", f"{fixed}:src/fix.txt") == "good\n"
    assert phase.git("status", "--porcelain") == ""


def test_the_report_says_it_all(phase: Project) -> None:
    report = phase.runs["report"]
    assert report.code == 0, phase.said()
    shown = report.out
    for said in ("01-01-T1-PROPOSAL.md", "changes", "approve", "refs/gsd/salvage/01-02/1/1"):
        assert said in shown, (said, shown)
