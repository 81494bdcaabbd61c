"""One cell of the matrix: a CLI, a tier, a worktree or in-place run, root or not.

A cell builds a one-plan project in a fresh git repository (with a bare `origin`, served
by a real `git daemon` on 127.0.0.1 where Landlock has TCP rules), starts
the scripted model server with the cell's scenario, points the CLI at it with a
throwaway HOME, runs `gsd execute-phase 1` as a separate process (as an unprivileged
user when the cell says so) and keeps what is needed to judge it from git and disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gsd.io.confine.sandbox import landlock_abi
from tests.conftest import REPO
from tests.gitremotes import serve_git
from tests.modelserver import anthropic, gemini, responses
from tests.modelserver.scenario import (
    Scenario,
    Step,
    delegate,
    edit,
    mcp,
    shell,
    task_report,
    write,
)
from tests.modelserver.server import Logged, ModelServer

TIERS = ("full", "read+write", "read+shell", "read-only")
CLIS = ("claude", "codex", "gemini")
# the agent file's tools per tier (Claude Code's names; gsd maps them for every runner)
TOOLS = {
    "full": None,
    "read+write": "Read, Grep, Glob, Write, Edit",
    "read+shell": "Read, Grep, Glob, Bash",
    "read-only": "Read, Grep, Glob",
}
CONFIGURE = {
    "claude": anthropic.configure,
    "codex": responses.configure,
    "gemini": gemini.configure,
}
# The safety policy's commands (gsd's docs/inside/policy.md): each must be refused by
# the CLI before it runs. `rm -rf ..` would remove the repository's parent folder.
# (Spelled as the policy lists them; codex 0.169.0 checks its rules only against scripts
# its bash parser reads, so `git reset --hard HEAD~1`, with a tilde, escapes them: the
# other spellings belong to the containment work, docs/RUNNERS.md says what holds them.)
POLICY = ("git push origin HEAD", "git reset --hard", "rm -rf ..")
# Other spellings of a push (issue 20), asked where Landlock has TCP rules (ABI 4+) and
# `origin` is a git daemon: the CLI's own rules refuse what they can express (codex's
# cannot `git -C . push`), and the port rule refuses the connection to the daemon.
NETWORK = ("git -C . push origin HEAD", "true && git push origin HEAD")
TCP_RULES = landlock_abi() >= 4
USER = "gsd-matrix"


@dataclass(frozen=True)
class Cell:
    cli: str
    tier: str
    in_place: bool
    as_user: bool  # an unprivileged user (root otherwise)
    # work: the files and the policy; mcp: one `gsd mcp` tool call; delegate: one call
    # of the CLI's sub-agent tool (refused: a specialist is one level of delegation)
    kind: str = "work"

    @property
    def name(self) -> str:
        where = "in-place" if self.in_place else "worktree"
        who = "user" if self.as_user else "root"
        return f"{self.cli}-{self.kind}-{self.tier}-{where}-{who}"

    @property
    def writes(self) -> bool:
        return self.tier in ("full", "read+write")

    @property
    def shell(self) -> bool:
        return self.tier in ("full", "read+shell")


def scenario(cell: Cell) -> Scenario:
    """The cell's scenario (`work` or `mcp`)."""
    if cell.kind == "mcp":
        return Scenario(steps=(mcp("status"),), final=task_report(), usage=(900, 40))
    if cell.kind == "delegate":
        ask = delegate("Create src/sub.txt holding 'sub'.")
        return Scenario(steps=(ask,), final=task_report(), usage=(900, 40))
    return work_scenario(cell)


def work_scenario(cell: Cell) -> Scenario:
    """Write a file with the write tool, make one with the shell, edit the first, try
    each policy command, then report what the tier let it do."""
    steps: list[Step] = [
        write("src/hello.txt", "hello\n"),
        shell("mkdir -p src && echo from-shell > src/shell_out.txt"),
        edit("src/hello.txt", "hello", "hello, world"),
        *(shell(command) for command in POLICY),
        *(shell(command) for command in (NETWORK if TCP_RULES else ())),
        shell("echo still-alive"),
    ]
    created = (("src/hello.txt",) if cell.writes else ()) + (
        ("src/shell_out.txt",) if cell.tier == "full" else ()
    )
    return Scenario(steps=tuple(steps), final=task_report(created=created), usage=(1200, 80))


@dataclass
class Outcome:
    """What a cell left behind: gsd's exit and output, the server's log, the repo."""

    cell: Cell
    code: int
    out: str
    err: str
    repo: Path
    origin: Path
    log: list[Logged] = field(default_factory=list)
    sent: tuple[int, int] = (0, 0)

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(self.repo), *args],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def pushed(self) -> list[str]:
        """The branches the origin holds (`main` was pushed when the repo was made)."""
        refs = subprocess.run(
            [
                "git",
                "-c",
                "safe.directory=*",
                "--git-dir",
                str(self.origin),
                "for-each-ref",
                "--format=%(refname)",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return refs.split()

    def events(self) -> list[dict[str, Any]]:
        path = self.repo / ".planning" / "logs" / "01-01.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


PLAN = """\
---
phase: 01-matrix
plan: 01
type: execute
wave: 1
depends_on: []
files_modified: [src/hello.txt, src/shell_out.txt]
autonomous: true
must_haves:
  truths:
    - "the greeting files exist"
  artifacts: []
  key_links: []
---

<objective>Make the greeting files.</objective>

<tasks>
<task type="auto" specialist="worker">
  <name>Task 1: greet</name>
  <files>src/hello.txt, src/shell_out.txt</files>
  <action>Write src/hello.txt, then make src/shell_out.txt with the shell.</action>
  <verify><automated>true</automated></verify>
  <done>Both files exist.</done>
</task>
</tasks>
"""


def agent_file(cell: Cell) -> str:
    tools = TOOLS[cell.tier]
    lines = ["---", "name: worker", "description: does the matrix task"]
    lines += [f"tools: {tools}"] if tools is not None else []
    lines += [f"runner: {cell.cli}", "timeout_mins: 2", "---", "The matrix worker.", ""]
    return "\n".join(lines)


def config(cell: Cell) -> dict[str, Any]:
    return {
        "workflow": {"use_worktrees": not cell.in_place},
        "specialists": {"max_retries": 0, "kill_grace_seconds": 2},
        "voltagent": {"fallback_on_error": False},
    }


def build(base: Path, cell: Cell) -> tuple[Path, Path]:
    """The repository (one commit holding the plan, the agent, config) and its origin."""
    repo, origin = base / "repo", base / "origin.git"
    run_git(base, "init", "-q", "--bare", str(origin))
    files = {
        ".planning/phases/01-matrix/01-01-PLAN.md": PLAN,
        ".claude/agents/worker.md": agent_file(cell),
        ".planning/available_agents.md": "- **worker**: does the matrix task\n",
        ".planning/config.json": json.dumps(config(cell), indent=2) + "\n",
        "README.md": "matrix\n",
        # in place, Landlock lets an agent work inside the top-level folders but not
        # create one (it cannot grant the root without its .git): src/ exists
        "src/README.md": "sources\n",
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    run_git(repo, "init", "-q", "-b", "main")
    run_git(repo, "remote", "add", "origin", str(origin))
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "plan")
    run_git(repo, "push", "-q", "origin", "main")
    return repo, origin


def run_git(where: Path, *args: str) -> None:
    env = {**os.environ, **IDENTITY, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(where), *args], check=True, capture_output=True, env=env)


IDENTITY = {
    "GIT_AUTHOR_NAME": "Matrix",
    "GIT_AUTHOR_EMAIL": "matrix@example.invalid",
    "GIT_COMMITTER_NAME": "Matrix",
    "GIT_COMMITTER_EMAIL": "matrix@example.invalid",
}


def run(cell: Cell, cli_bin: Path, timeout: float = 240) -> Outcome:
    """Build the cell's project, serve its scenario, run gsd; the folder is left for the
    test to read and removed by the caller."""
    base = Path(tempfile.mkdtemp(prefix=f"gsd-matrix-{cell.name}-"))
    base.chmod(0o755)
    home = base / "home"
    home.mkdir()
    repo, origin = build(base, cell)
    with ModelServer(scenario(cell)) as server, contextlib.ExitStack() as stack:
        if TCP_RULES:  # `origin` over the network: git://127.0.0.1:<port>/origin.git
            daemon = stack.enter_context(serve_git(origin))
            run_git(repo, "remote", "set-url", "origin", daemon.url)
        env = environment(cell, cli_bin, home, server.url)
        done = execute_phase(base, repo, env, cell.as_user, timeout)
        log = list(server.log)
        sent = server.tokens()
    return Outcome(cell, done.returncode, done.stdout, done.stderr, repo, origin, log, sent)


def execute_phase(
    base: Path, repo: Path, env: dict[str, str], as_user: bool, timeout: float
) -> subprocess.CompletedProcess[str]:
    """`gsd execute-phase 1` in `repo` as a separate process, as USER when `as_user`
    (who is given `base`, the folder holding the repository and its HOME, first)."""
    argv = [sys.executable, "-m", "gsd", "execute-phase", "1"]
    if as_user:
        subprocess.run(["chown", "-R", f"{USER}:{USER}", str(base)], check=True)
        argv = ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", "--", *argv]
    return subprocess.run(
        argv,
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def environment(cell: Cell, cli_bin: Path, home: Path, url: str) -> dict[str, str]:
    env = {**user_environment(cli_bin, home), **CONFIGURE[cell.cli](home, url)}
    if cell.kind == "mcp":
        register_mcp(cell.cli, env)
    return env


def user_environment(cli_bin: Path, home: Path) -> dict[str, str]:
    """What a user's shell holds for gsd and the CLIs: PATH, HOME (`home`), git's identity."""
    node = Path(shutil.which("node") or "/usr/bin/node").parent
    return {
        "PATH": os.pathsep.join(
            [str(cli_bin), str(node), str(Path(sys.executable).parent), os.defpath]
        ),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(REPO),
        "GIT_CONFIG_NOSYSTEM": "1",
        "CI": "1",
        **IDENTITY,
    }


def register_mcp(cli: str, env: dict[str, str]) -> None:
    """`gsd mcp` registered for the user, as README says (`claude mcp add gsd -- gsd
    mcp`), at user scope: a local-scope entry is keyed by the folder and a plan's
    worktree is another folder."""
    gsd = [sys.executable, "-m", "gsd", "mcp"]
    if cli == "claude":
        argv = ["claude", "mcp", "add", "--scope", "user", "gsd", "--", *gsd]
    elif cli == "codex":  # $CODEX_HOME/config.toml [mcp_servers.gsd]
        argv = ["codex", "mcp", "add", "gsd", "--", *gsd]
    elif cli == "gemini":  # 0.61.0: the command, then `--` before its own options
        argv = ["gemini", "mcp", "add", "--scope", "user", "gsd", gsd[0], "--", *gsd[1:]]
    else:
        raise NotImplementedError(cli)
    subprocess.run(argv, env=env, check=True, capture_output=True, cwd=env["HOME"])
