"""Several real agent CLIs in one `gsd execute-phase`, each following its own script.

One scripted model server (tests/modelserver, its Script of routes) serves claude,
codex and gemini at once. Wave 1: an author on claude writes a file, an author on codex
writes another, and a read-only reviewer on gemini (the tier issue 24's review gate
runs its reviewer at) answers a fixed Review Report, `changes`. Wave 2: the gemini
reviewer's second call answers `approve`; a claude author's model hangs past its
timeout after a write, the attempt is rolled back, and its retry (the same prompt, the
route's second call) does the work; read-only reviewers on claude and codex answer
their own reports. Then, alone: a reviewer whose model refuses and one whose model
never answers each fail their task (a review gate's "error, never a silent approve"). Judged
by git (each task's commit and its files), by gsd's records (each plan's RESULT file
holds its last agent's answer, the run log each attempt) and by the server's log (which
CLI each route's calls came from, what each was asked), never by what gsd printed.

The CLIs come from `make clis` (tests/test_clis.py's cli_bin fixture); without them
these tests skip and say why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gsd.formats import errorlog
from gsd.formats.runners.invocation import parse_output
from gsd.io.confine.sandbox import landlock_abi
from tests.e2e.cells import CONFIGURE, run_git, user_environment
from tests.modelserver import anthropic
from tests.modelserver.routes import Script, route
from tests.modelserver.scenario import (
    Scenario,
    answer,
    review_report,
    task_report,
    write,
)
from tests.modelserver.server import Logged, ModelServer
from tests.test_clis import cli_bin  # noqa: F401  (the fixture)
from tests.test_runners import TOOLS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(landlock_abi() == 0, reason="no Landlock on this kernel"),
]

AGENTS = {  # name: (runner, tier)
    "greeter": ("claude", "read+write"),
    "fixer": ("claude", "read+write"),
    "closer": ("codex", "read+write"),
    "critic": ("gemini", "read-only"),
    # read-only reviewers on the other two CLIs, each alone in its plan (wave 2)
    "auditor": ("claude", "read-only"),
    "checker": ("codex", "read-only"),
}
TASK = """\
<task type="auto" specialist="{agent}">
  <name>{name}</name>
  <files>{files}</files>
  <action>{marker}: {action}</action>
  <verify><automated>{verify}</automated></verify>
  <done>Done.</done>
</task>"""
PLAN = """\
---
phase: 01-mixed
plan: {plan}
type: execute
wave: {wave}
depends_on: {depends}
files_modified: [{files}]
autonomous: true
must_haves:
  truths:
    - "the greeting files exist"
  artifacts: []
  key_links: []
---

<objective>{objective}</objective>

<tasks>
{tasks}
</tasks>
"""
FINDING = "src/hello.txt:1: say who is greeted"
REJECTED = "src/bye.txt:1: a farewell nobody asked for"
FIX_CHECK = "grep -qx good src/fix.txt"
FIXER_MINUTES = 0.15  # 9 s: a claude run here takes 1-2 s; its first attempt hangs


def task(agent: str, name: str, files: str, action: str, verify: str = "true") -> str:
    marker = f"ROUTE-{agent}"
    return TASK.format(
        agent=agent, name=name, files=files, marker=marker, action=action, verify=verify
    )


def plans() -> dict[str, str]:
    first = [
        task("greeter", "Task 1: greet", "src/hello.txt", "write src/hello.txt"),
        task("closer", "Task 2: close", "src/bye.txt", "write src/bye.txt"),
        task("critic", "Task 3: review", "src/hello.txt", "review the greeting files"),
    ]
    # the fixer's first attempt writes a file, then its model hangs past the timeout
    # (gsd retries a timeout); the retry, the same prompt again, is the route's second
    # call and gets its second scenario
    fix = task("fixer", "Task 1: fix", "src/fix.txt", "write src/fix.txt", FIX_CHECK)
    again = task("critic", "Task 2: review again", "src/hello.txt", "review them again")
    return {
        "01-01": PLAN.format(
            plan="01",
            wave=1,
            depends="[]",
            files="src/hello.txt, src/bye.txt",
            objective="Make the greeting files, then review them.",
            tasks="\n".join(first),
        ),
        "01-02": PLAN.format(
            plan="02",
            wave=2,
            depends="[01-01]",
            files="src/fix.txt",
            objective="Fix a file, then review the greeting files again.",
            tasks=f"{fix}\n{again}",
        ),
        **{
            f"01-0{number}": PLAN.format(
                plan=f"0{number}",
                wave=2,
                depends="[01-01]",
                files="src/bye.txt",
                objective="Review the farewell.",
                tasks=task(agent, "Task 1: audit", "src/bye.txt", "review src/bye.txt"),
            )
            for number, agent in ((3, "auditor"), (4, "checker"))
        },
    }


def script() -> Script:
    """Each agent's conversations by the marker its task's action carries."""

    def review(verdict: str, *findings: str) -> Scenario:
        return answer(f"{review_report(verdict, *findings)}\n\n{task_report()}")

    return Script(
        route(
            "greeter",
            r"ROUTE-greeter",
            Scenario((write("src/hello.txt", "hello\n"),), task_report(created=("src/hello.txt",))),
            cli="claude",
        ),
        route(
            "closer",
            r"ROUTE-closer",
            Scenario((write("src/bye.txt", "bye\n"),), task_report(created=("src/bye.txt",))),
            cli="codex",
        ),
        route(
            "fixer",
            r"ROUTE-fixer",
            Scenario((write("src/fix.txt", "bad\n"),), task_report(), ending="hang"),
            Scenario((write("src/fix.txt", "good\n"),), task_report(created=("src/fix.txt",))),
            cli="claude",
        ),
        route(
            "critic", r"ROUTE-critic", review("changes", FINDING), review("approve"), cli="gemini"
        ),
        route("auditor", r"ROUTE-auditor", review("reject", REJECTED), cli="claude"),
        route("checker", r"ROUTE-checker", review("approve"), cli="codex"),
    )


def agent_file(name: str, runner: str, tier: str, minutes: float) -> str:
    return "\n".join(
        [
            "---",
            f"name: {name}",
            f"description: the {name}",
            f"tools: {TOOLS[tier]}",
            f"runner: {runner}",
            f"timeout_mins: {minutes}",
            "---",
            f"The {name}.",
            "",
        ]
    )


def build(
    repo: Path,
    plans: dict[str, str],
    agents: dict[str, tuple[str, str, float]],
    retries: int,
    config: dict[str, object] | None = None,
    phase: str = "01-mixed",
) -> None:
    """A repository holding `plans` (id: text) in `phase` and `agents` (name: runner,
    tier, minutes), `retries` retries of a timeout, no fallback (or `config`)."""
    settings = {
        "specialists": {"max_retries": retries, "kill_grace_seconds": 2},
        "voltagent": {"fallback_on_error": False},
    }
    files = {
        **{f".planning/phases/{phase}/{p}-PLAN.md": text for p, text in plans.items()},
        **{f".claude/agents/{name}.md": agent_file(name, *spec) for name, spec in agents.items()},
        ".planning/available_agents.md": "".join(f"- **{n}**: the {n}\n" for n in agents),
        ".planning/config.json": json.dumps(config or settings),
        "README.md": "mixed\n",
        "src/README.md": "sources\n",
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    run_git(repo, "init", "-q", "-b", "main")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "plan")


@dataclass
class Ran:
    code: int
    out: str
    err: str
    repo: Path
    server: ModelServer

    def git(self, *args: str) -> str:
        argv = ["git", "-c", "safe.directory=*", "-C", str(self.repo), *args]
        return subprocess.run(argv, capture_output=True, text=True, check=True).stdout

    def said(self) -> str:
        return f"exit {self.code}\n{self.out[-3000:]}\n{self.err[-3000:]}\n{self.server.misses}"

    def calls(self, name: str) -> list[list[Logged]]:
        return self.server.calls(name)


def execute(
    bin_dir: Path,
    base: Path,
    plans: dict[str, str],
    agents: dict[str, tuple[str, str, float]],
    script: Script,
    retries: int = 1,
) -> Ran:
    """`gsd execute-phase 1` in a new repository under `base`, every CLI (from
    `bin_dir`) pointed at one server playing `script`."""
    home, repo = base / "home", base / "repo"
    home.mkdir()
    build(repo, plans, agents, retries)
    with ModelServer(script) as server:
        env = user_environment(bin_dir, home)
        for configure in CONFIGURE.values():
            env.update(configure(home, server.url))
        done = subprocess.run(
            [sys.executable, "-m", "gsd", "execute-phase", "1"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
    return Ran(done.returncode, done.stdout, done.stderr, repo, server)


@pytest.fixture(scope="module")
def ran(cli_bin: Path) -> Iterator[Ran]:  # noqa: F811
    """The phase of this module's docstring, run once for its tests."""
    base = Path(tempfile.mkdtemp(prefix="gsd-multiagent-"))
    agents = {
        name: (runner, tier, FIXER_MINUTES if name == "fixer" else 2)
        for name, (runner, tier) in AGENTS.items()
    }
    yield execute(cli_bin, base, plans(), agents, script())
    shutil.rmtree(base, ignore_errors=True)


def test_each_author_on_its_cli_wrote_its_file(ran: Ran) -> None:
    assert ran.code == 0, ran.said()
    assert ran.server.misses == [], ran.said()
    for trailer, path, text in (
        ("01-01-1", "src/hello.txt", "hello\n"),
        ("01-01-2", "src/bye.txt", "bye\n"),
    ):
        commit = ran.git("log", "main", "--format=%H", f"--grep=^Gsd-Task: {trailer}$").split()
        assert len(commit) == 1, (trailer, ran.said())
        files = ran.git("show", "--name-only", "--format=", commit[0]).split()
        assert [f for f in files if f.startswith("src/")] == [path], (trailer, files)
        assert ran.git("show", f"{commit[0]}:{path}") == text
    # the reviewer's tasks changed nothing: no commit of theirs touches a file
    for trailer in ("01-01-3", "01-02-2"):
        assert ran.git("log", "main", f"--grep=^Gsd-Task: {trailer}$", "--name-only") == ""


def test_each_route_was_served_to_its_own_cli(ran: Ran) -> None:
    paths = {
        "greeter": "/v1/messages",
        "fixer": "/v1/messages",
        "closer": "/v1/responses",
        "critic": "/v1beta/models/",
        "auditor": "/v1/messages",
        "checker": "/v1/responses",
    }
    for name, path in paths.items():
        calls = ran.calls(name)
        assert len(calls) == (2 if name in ("critic", "fixer") else 1), (name, ran.said())
        assert all(e.path.startswith(path) for call in calls for e in call), name
    [greet] = ran.calls("greeter")  # a write, then the report: two turns
    assert sorted({e.turn for e in greet}) == [0, 1]
    # each call was asked its own task: the server's view of gsd's prompts
    [greeting] = ran.server.prompts("greeter")
    assert "write src/hello.txt" in greeting and "The greeter." in greeting
    first, second = ran.server.prompts("critic")
    assert "review the greeting files" in first and "review them again" in second


def test_the_read_only_reviewer_answered_changes_then_approve(ran: Ran) -> None:
    """gsd's records of each plan's last agent run (SPEC 1's NN-MM-RESULT.txt), read as
    gsd reads a gemini run's output, hold the reviewer's fixed answers in call order."""
    phase = ran.repo / ".planning" / "phases" / "01-mixed"
    first, second = (
        parse_output("gemini", (phase / f"{plan}-RESULT.txt").read_text()).text
        for plan in ("01-01", "01-02")
    )
    assert "- Verdict: changes\n- Findings:\n  - " + FINDING in first, first
    assert "- Verdict: approve\n- Findings: none" in second, second
    assert "changes" not in second, second


def test_a_read_only_reviewer_on_each_cli_answered_its_text(ran: Ran) -> None:
    """The same, for the reviewers on claude and codex: gsd read the answer each CLI
    gave back from the scripted model (its RESULT file, read as gsd reads that CLI's)."""
    phase = ran.repo / ".planning" / "phases" / "01-mixed"
    for plan, runner, expected in (
        ("01-03", "claude", f"- Verdict: reject\n- Findings:\n  - {REJECTED}"),
        ("01-04", "codex", "- Verdict: approve\n- Findings: none"),
    ):
        said = parse_output(runner, (phase / f"{plan}-RESULT.txt").read_text()).text
        assert expected in said and said.endswith("## TASK COMPLETE"), (plan, said)
        assert ran.git("log", "main", f"--grep=^Gsd-Task: {plan}-1$", "--name-only") == ""


def test_a_retry_is_the_routes_next_call(ran: Ran) -> None:
    """The fixer's first attempt wrote its file (what salvage would keep), then timed
    out and was rolled back; the retry got the route's second scenario and its work is
    what was committed."""
    first, _ = ran.calls("fixer")
    wrote = anthropic.tool_results([e.body for e in first])["toolu_0000"]
    assert "successfully" in wrote, wrote
    assert first[-1].turn == 1  # the hung request: the turn after the write
    commit = ran.git("log", "main", "--format=%H", "--grep=^Gsd-Task: 01-02-1$").split()
    assert len(commit) == 1, ran.said()
    assert ran.git("show", f"{commit[0]}:src/fix.txt") == "good\n"
    assert "bad" not in ran.git("log", "main", "-p", "--", "src/fix.txt")
    events = [json.loads(line) for line in (ran.repo / ".planning/logs/01-02.jsonl").open()]
    fixes = [e for e in events if e.get("event") == "result" and e.get("task") == 1]
    assert [(e["success"], e["error_type"]) for e in fixes] == [
        (False, "timeout"),
        (True, None),
    ], fixes


def test_the_timed_out_attempts_write_is_kept_under_its_salvage_ref(ran: Ran) -> None:
    """What claude's own Write tool wrote before its model hung is in git after the
    rollback: the salvage ref of plan 01-02 task 1 attempt 1, off every branch."""
    ref = "refs/gsd/salvage/01-02/1/1"
    assert ran.git("show", f"{ref}:src/fix.txt") == "bad\n", ran.said()
    assert ran.git("diff", "--name-only", f"{ref}^", ref) == "src/fix.txt\n"
    assert ran.git("branch", "--all", "--contains", ref) == ""  # on no branch


def test_a_reviewer_whose_model_fails_or_hangs_fails_its_task(
    cli_bin: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """What a review gate must take for an error, never an approval, played by real
    CLIs: a read-only codex whose model refuses (the CLI exits with an error) and a
    read-only gemini whose model never answers (stopped at its timeout; no retry)."""
    agents = {"breaker": ("codex", "read-only", 2), "sleeper": ("gemini", "read-only", 0.1)}
    plans = {
        f"01-0{number}": PLAN.format(
            plan=f"0{number}",
            wave=1,
            depends="[]",
            files=f"src/{agent}.txt",
            objective="Review the sources.",
            tasks=task(agent, "Task 1: review", f"src/{agent}.txt", "review the sources"),
        )
        for number, agent in ((1, "breaker"), (2, "sleeper"))
    }
    script = Script(
        route("breaker", "ROUTE-breaker", answer("", ending="error"), cli="codex"),
        route("sleeper", "ROUTE-sleeper", answer("", ending="hang"), cli="gemini"),
    )
    (tmp_path / "run").mkdir()
    ran = execute(cli_bin, tmp_path / "run", plans, agents, script, retries=0)
    assert ran.code != 0, ran.said()
    records = [e.model_dump() for e in errorlog.read_all(ran.repo / ".planning")[0]]
    failed = {(r["plan"], r["error_type"]) for r in records}
    assert failed == {("01", "nonzero-exit"), ("02", "timeout")}, (failed, ran.said())
    [broke] = [r for r in records if r["plan"] == "01"]
    assert "the scripted model refuses" in broke["details"], broke
    assert ran.git("log", "main", "--grep=^Gsd-Task:") == ""
    assert ran.server.misses == [], ran.said()
    assert [len(call) for call in ran.calls("sleeper")] == [1], ran.said()
