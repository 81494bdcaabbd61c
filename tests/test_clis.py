"""Contract tests: every argv gsd builds, run by the real claude, gemini and codex CLIs.

The CLIs are the versions pinned in tests/clis/pins.txt, installed by `make clis`
(tests/clis/install.sh) into a cache folder outside the clone; without npm or the
registry these tests skip and say why. Each run has an empty HOME, no credentials and
the prompt on stdin: it must get past the argument parser as far as authentication
(or the network, which this machine does not have), and the CLI's own failure message
must come out of gsd's parser and, through `gsd execute-phase`, reach the error log.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from gsd.core.safety.policy import with_extra
from gsd.formats import errorlog
from gsd.formats.agents import Agent
from gsd.formats.runners.invocation import build_argv, parse_output, runner_files
from tests.conftest import REPO, git, slack
from tests.test_runners import TOOLS  # the tools of each tier

INSTALL = REPO / "tests" / "clis" / "install.sh"
VERSIONS = {"claude": "2.1.330 (Claude Code)", "gemini": "0.61.0", "codex": "codex-cli 0.169.0"}
MODELS = {"claude": "sonnet", "gemini": "gemini-2.5-flash", "codex": "gpt-5-codex"}
# What each CLI's parser prints when it refuses an argument: commander (claude),
# yargs (gemini), clap (codex).
PARSE_ERROR = re.compile(
    r"unknown option|error: option|Allowed choices|Unknown argument|Invalid values"
    r"|Not enough non-option|unexpected argument|error: invalid value|^Usage: ",
    re.MULTILINE,
)
# the user's HOME before conftest's isolated_home replaces it: the CLI cache lives there
_REAL_HOME = os.environ.get("HOME", "")
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


class Ran(NamedTuple):
    code: int | None  # None: gsd's test stopped it (it had got as far as the network)
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def cli_bin() -> Path:
    """The folder holding the pinned CLIs (`make clis`), or a skip that says why not."""
    if os.environ.get("GSD_SKIP_CLIS"):
        pytest.skip("GSD_SKIP_CLIS is set: the real CLIs are not installed or run")
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm/node are not installed: `make clis` cannot install the real CLIs")
    env = {**os.environ, "HOME": _REAL_HOME}
    try:
        done = subprocess.run(
            ["sh", str(INSTALL)], capture_output=True, text=True, timeout=900, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.skip("`make clis` took over 15 minutes (is the npm registry reachable?)")
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
        pytest.skip(f"`make clis` could not install the real CLIs: {reason}")
    return Path(done.stdout.strip().splitlines()[-1])


def cli_env(cli_bin: Path, home: Path, **extra: str) -> dict[str, str]:
    """An environment with no credentials: PATH (the CLIs and node), HOME, a locale."""
    node = Path(shutil.which("node") or "/usr/bin/node").parent
    env = {
        "PATH": f"{cli_bin}{os.pathsep}{node}{os.pathsep}{os.defpath}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TMPDIR": str(home),
    }
    return {**env, **extra}


def run_cli(
    cli_bin: Path,
    argv: list[str],
    cwd: Path,
    home: Path,
    *,
    until: str | None = None,
    timeout: float = 60,
    **extra: str,
) -> Ran:
    """Run a CLI with the prompt on stdin; stop it (its whole group) once `until` shows
    in its output (it got that far) or after `timeout` seconds."""
    out, err = home / f"out-{uuid.uuid4().hex}", home / f"err-{uuid.uuid4().hex}"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        child = subprocess.Popen(
            [str(cli_bin / argv[0]), *argv[1:]],
            cwd=cwd,
            env=cli_env(cli_bin, home, **extra),
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        assert child.stdin is not None
        child.stdin.write(b"Say hello. Then print a Task Report.\n")
        child.stdin.close()
        deadline = time.monotonic() + timeout
        code: int | None = None
        while (code := child.poll()) is None and time.monotonic() < deadline:
            if until and re.search(
                until, out.read_text("utf-8", "replace") + err.read_text("utf-8", "replace")
            ):
                break
            time.sleep(0.2)
        if code is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    return Ran(code, out.read_text("utf-8", "replace"), err.read_text("utf-8", "replace"))


def combos(runner: str) -> list[tuple[str, str | None, int | None]]:
    """(tier, model, max_turns): every tier, with and without model and turn limit."""
    return [
        (tier, model, turns)
        for tier in TOOLS
        for model in (None, MODELS[runner])
        for turns in (None, 3)
    ]


def contract_agent(tier: str, runner: str, turns: int | None) -> Agent:
    return Agent(name="contract", tools=TOOLS[tier], runner=runner, max_turns=turns)  # type: ignore[arg-type]


def write_files(agent: Agent, run_dir: Path) -> tuple[list[str], dict[str, str]]:
    """What taskrun adds for a spawn: the runner's files written, its argv and env."""
    extra = runner_files(agent, run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, text in extra.files.items():
        (run_dir / name).write_text(text)
    return extra.argv, extra.env


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    git(root, "init", "-q")
    return root


@pytest.fixture
def secure_dir(cli_bin: Path) -> Iterator[Path]:
    """A folder under the CLI cache (in HOME, not /tmp): gemini reads a system settings
    file only when no folder above it is writable by others."""
    folder = cli_bin.parent.parent.parent / "contract-runs" / uuid.uuid4().hex
    folder.mkdir(parents=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("runner", list(VERSIONS))
def test_the_pinned_version_is_installed(cli_bin: Path, runner: str, tmp_path: Path) -> None:
    ran = run_cli(cli_bin, [runner, "--version"], tmp_path, tmp_path)
    assert ran.code == 0 and VERSIONS[runner] in ran.stdout, ran


def test_doctor_finds_the_real_clis_and_their_versions(
    cli_bin: Path, tmp_path: Path, gsd, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_doctor import run_doctor

    monkeypatch.setenv("PATH", f"{cli_bin}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    _, report = run_doctor(gsd)
    for name, version in VERSIONS.items():
        assert report["runners"][name]["version"] == version, report["runners"][name]


# --- claude -------------------------------------------------------------------------


@pytest.mark.parametrize(("tier", "model", "turns"), combos("claude"))
def test_claude_accepts_every_argv_and_its_failure_reaches_gsd(
    cli_bin: Path, workdir: Path, tmp_path: Path, tier: str, model: str | None, turns: int | None
) -> None:
    """claude-code 2.1.330 without credentials: exit 1 and a JSON error result saying
    "Not logged in"; as root (this machine) the full tier is not refused."""
    argv = build_argv(contract_agent(tier, "claude", turns), model)
    ran = run_cli(cli_bin, [*argv, "--debug"], workdir, tmp_path)
    assert not PARSE_ERROR.search(ran.stderr), ran.stderr
    assert "cannot be used with root" not in ran.stderr
    assert ran.code == 1, ran
    out = parse_output("claude", ran.stdout)
    assert out.structured and out.is_error and "Not logged in" in out.text, ran
    # no deny or allow rule names a tool this version does not know, and gsd's safety
    # policy (on every tier's deny list) draws none of the validator's warnings
    debug = "".join(p.read_text() for p in (tmp_path / ".claude" / "debug").glob("*.txt"))
    assert "matches no known tool" not in debug
    assert not rule_warnings(debug), rule_warnings(debug)


@pytest.mark.parametrize("tools", ["Read, Grep, Bash, Edit, Write", "Read, Grep"])
def test_claude_takes_an_agent_files_own_deny_rules(
    cli_bin: Path, workdir: Path, tmp_path: Path, tools: str
) -> None:
    """A Claude Code agent file's `disallowedTools` (a Bash rule with a specifier, a tool
    claude no longer has, a web tool) on the full and read-only tiers: claude parses
    every rule gsd passes and knows every tool it names."""
    from gsd.formats.agents import parse_agent

    text = (
        f"---\nname: shipper\ntools: {tools}\n"
        "disallowedTools: Bash(git push:*), MultiEdit, WebFetch\n---\nShip it.\n"
    )
    argv = build_argv(parse_agent(text, "shipper.md"), None)
    assert "Bash(git push:*)" in ",".join(argv) and "MultiEdit" not in ",".join(argv)
    ran = run_cli(cli_bin, [*argv, "--debug"], workdir, tmp_path)
    assert not PARSE_ERROR.search(ran.stderr), ran.stderr
    assert ran.code == 1 and "Not logged in" in parse_output("claude", ran.stdout).text, ran
    debug = "".join(p.read_text() for p in (tmp_path / ".claude" / "debug").glob("*.txt"))
    assert "matches no known tool" not in debug, [
        line for line in debug.splitlines() if "matches no known tool" in line
    ]


# claude-code 2.1.330 checks every permission rule when it starts (`OFe` in its bundle:
# the rule grammar, `:*` only at the end, `Write(path)` rules that file checks never
# consult) and logs what it finds as `[WARN] [permissions] Permission deny rule ...`.
def rule_warnings(debug: str) -> list[str]:
    return [
        line
        for line in debug.splitlines()
        if "[permissions]" in line and "Permission deny rule" in line
    ]


POLICY = with_extra(["shell:npm publish", "shell:curl http*", "write:secrets/**", "write:*.p12"])


@pytest.mark.parametrize("tier", list(TOOLS))
def test_claude_takes_the_safety_policy_without_a_warning(
    cli_bin: Path, workdir: Path, tmp_path: Path, tier: str
) -> None:
    """The baseline and config.json's rules, on every tier: claude parses each one and
    its own validator says nothing about any (a `Write(...)` rule, checked alongside,
    shows the warning would come out)."""
    argv = build_argv(contract_agent(tier, "claude", None), None, policy=POLICY)
    deny = argv.index("--disallowedTools") + 1
    argv[deny] += ",Write(**/.env)"  # the control: the rule form gsd does not use
    ran = run_cli(cli_bin, [*argv, "--debug"], workdir, tmp_path)
    assert not PARSE_ERROR.search(ran.stderr), ran.stderr
    assert ran.code == 1 and "Not logged in" in parse_output("claude", ran.stdout).text, ran
    debug = "".join(p.read_text() for p in (tmp_path / ".claude" / "debug").glob("*.txt"))
    assert rule_warnings(debug) and all("Write(**/.env)" in w for w in rule_warnings(debug))
    assert "matches no known tool" not in debug


@pytest.mark.skipif(not AS_ROOT, reason="claude's root check needs uid 0")
def test_claude_refuses_bypass_permissions_as_root(
    cli_bin: Path, workdir: Path, tmp_path: Path
) -> None:
    """Why the full tier as root is acceptEdits with approved tools: the CLI's own check."""
    argv = build_argv(contract_agent("full", "claude", None), None, as_root=False)
    ran = run_cli(cli_bin, argv, workdir, tmp_path)
    assert ran.code == 1
    assert "cannot be used with root/sudo privileges" in ran.stderr


# --- gemini -------------------------------------------------------------------------


@pytest.mark.parametrize(("tier", "model", "turns"), combos("gemini"))
def test_gemini_accepts_every_argv_and_its_stderr_error_reaches_gsd(
    cli_bin: Path, workdir: Path, tmp_path: Path, tier: str, model: str | None, turns: int | None
) -> None:
    """gemini-cli 0.61.0 without credentials: exit 41. Under `--output-format stream-json`
    its error is plain text on stderr (only `json` prints an error object there), so
    gsd reads no structure and the failure's details carry the stderr's last lines."""
    agent = contract_agent(tier, "gemini", turns)
    extra_argv, extra_env = write_files(agent, workdir / ".git" / "gsd" / "runs" / "01-01-1")
    ran = run_cli(cli_bin, [*build_argv(agent, model), *extra_argv], workdir, tmp_path, **extra_env)
    assert not PARSE_ERROR.search(ran.stderr), ran.stderr
    assert ran.code == 41, ran
    out = parse_output("gemini", ran.stdout, None, ran.stderr)
    assert not out.structured and "Please set an Auth method" in ran.stderr


@pytest.mark.parametrize("tier", list(TOOLS))
def test_gemini_trusts_the_worktree_and_reads_gsds_policy_and_settings(
    cli_bin: Path, secure_dir: Path, tmp_path: Path, tier: str
) -> None:
    """With a (fake) key gemini gets past trust, policy and settings to the network:
    no exit 55, no policy or settings warning."""
    repo = secure_dir / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    agent = contract_agent(tier, "gemini", 3)
    extra_argv, extra_env = write_files(agent, repo / ".git" / "gsd" / "runs" / "01-01-1")
    argv = [*build_argv(agent, MODELS["gemini"]), *extra_argv]
    ran = run_cli(
        cli_bin,
        argv,
        repo,
        tmp_path,
        until=r"Attempt 1 failed|fetch failed",
        GEMINI_API_KEY="not-a-real-key",
        **extra_env,
    )
    assert ran.code != 55 and "not running in a trusted directory" not in ran.stderr, ran
    assert "fetch failed" in ran.stderr, ran  # it got as far as the network
    for complaint in ("Policy file", "Invalid configuration", "Security Warning", "Unrecognized"):
        assert complaint not in ran.stderr, ran.stderr
    assert extra_env == {}  # a turn limit goes into a private GEMINI_CLI_HOME (clihome)


def test_gemini_without_trust_exits_55(cli_bin: Path, workdir: Path, tmp_path: Path) -> None:
    """Why gsd passes --skip-trust: an untrusted folder ends a headless run."""
    argv = [
        a
        for a in build_argv(contract_agent("read-only", "gemini", None), None)
        if a != "--skip-trust"
    ]
    ran = run_cli(cli_bin, argv, workdir, tmp_path, GEMINI_API_KEY="not-a-real-key")
    assert ran.code == 55 and "not running in a trusted directory" in ran.stderr


def gemini_core_chunk(cli_bin: Path) -> Path:
    """The bundle file of gemini-cli that exports its policy engine."""
    bundle = cli_bin.parent / "@google" / "gemini-cli" / "bundle"
    for chunk in sorted(bundle.glob("chunk-*.js")):
        text = chunk.read_text("utf-8", "replace")
        if "var PolicyEngine = class" in text and "createPolicyEngineConfig," in text:
            return chunk
    raise AssertionError(f"no chunk of {bundle} exports the policy engine")


SHELL_CASES = [
    ("git push origin main", "deny"),
    ("git push", "deny"),
    ("cd sub && git push", "deny"),
    ("git reset --hard HEAD~1", "deny"),
    ("git clean -fdx", "deny"),
    ("git rebase -i HEAD~3", "deny"),
    ("git commit --amend -m x", "deny"),
    ("git filter-branch --all", "deny"),
    ("rm -rf /home/someone", "deny"),
    ("rm -rf ~/.ssh", "deny"),
    ("rm -rf ../other", "deny"),
    ("rm -r -f /", "deny"),
    ("npm publish", "deny"),
    ("curl https://x", "deny"),
    ("git status", "allow"),
    ("git commit -m x", "allow"),
    ("rm -rf build", "allow"),
    ("npm test", "allow"),
    ("git pushy", "allow"),
    # issue 20: other spellings of a push (gsd.core.safety.policy.SPELLED_OUT)
    ("git -C . push origin HEAD", "deny"),
    ("git -c a=b push", "deny"),
    ("git --git-dir=.git push", "deny"),
    ("true && git push origin HEAD", "deny"),
    ("env git push", "deny"),
    ("command git push", "deny"),
    ("/usr/bin/git push", "deny"),
    ("sh -c 'git push origin HEAD'", "deny"),
    ("git -C . status", "allow"),
    ("git log --oneline", "allow"),
    ("echo gitpush", "allow"),
]
WORKTREE = "/home/u/.local/state/gsd/worktrees/repo-0123456789ab/01-01"  # where gsd keeps them
PATH_CASES = [
    ("src/app.py", "allow"),
    (f"{WORKTREE}/src/app.py", "allow"),
    (".env", "deny"),
    (f"{WORKTREE}/.env.local", "deny"),
    ("conf/server.pem", "deny"),
    ("id.key", "deny"),
    (".git/config", "deny"),
    (f"{WORKTREE}/.git", "deny"),
    (f"{WORKTREE}/.git/HEAD", "deny"),
    ("src/.gitignore", "allow"),
    ("secrets/token", "deny"),
    ("cert.p12", "deny"),
    (".planning/config.json", "deny"),
    (f"{WORKTREE}/.planning/config.json", "deny"),
    (".planning/STATE.md", "allow"),
]


@pytest.mark.parametrize(
    ("tier", "mode"), [("full", "yolo"), ("read+shell", "default"), ("read+write", "auto_edit")]
)
def test_geminis_own_policy_engine_decides_gsds_rules(
    cli_bin: Path, tmp_path: Path, tier: str, mode: str
) -> None:
    """gemini-cli 0.61.0's policy engine (its bundle, through tests/clis/gemini_policy.mjs)
    loads gsd's policy file as `--policy` does and decides tool calls: every rule denies
    what it names and lets the rest through (yolo allows everything else; read+shell's
    allow of the shell sits below the denials)."""
    agent = contract_agent(tier, "gemini", None)
    files = runner_files(agent, tmp_path, policy=POLICY, worktree=Path(WORKTREE))
    policy_file = tmp_path / "gemini-policy.toml"
    policy_file.write_text(files.files["gemini-policy.toml"])
    shell, write = tier in ("read+shell", "full"), tier in ("read+write", "full")
    # outside yolo gemini's own heuristics ask about `rm -rf` ("Command evaluated as
    # dangerous, forcing ASK_USER"), which a headless run refuses
    own = {"rm -rf build": "ask_user"} if mode != "yolo" else {}
    cases = [
        ({"name": "run_shell_command", "args": {"command": c}}, own.get(c, want))
        for c, want in SHELL_CASES
        if shell
    ]
    cases += [
        (
            {
                "name": tool,
                "args": {"file_path": p, "content": "x", "old_string": "a", "new_string": "b"},
            },
            want,
        )
        for p, want in PATH_CASES
        if write
        for tool in ("write_file", "replace")
    ]
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps([call for call, _ in cases]))
    node = shutil.which("node") or "node"
    done = subprocess.run(
        [
            node,
            str(REPO / "tests" / "clis" / "gemini_policy.mjs"),
            str(gemini_core_chunk(cli_bin)),
            str(policy_file),
            mode,
            str(calls),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(cli_bin, tmp_path),
    )
    assert done.returncode == 0, done.stderr
    decided = json.loads(done.stdout.strip().splitlines()[-1])
    wrong = [
        (call["args"], want, got)
        for (call, want), got in zip(cases, decided, strict=True)
        if got != want
    ]
    assert not wrong, wrong


# --- codex --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tier", "model"), sorted({(t, m) for t, m, _ in combos("codex")}, key=str)
)
def test_codex_accepts_every_argv(
    cli_bin: Path, workdir: Path, tmp_path: Path, tier: str, model: str | None
) -> None:
    """codex 0.169.0 has no turn limit; without credentials it goes to the network and
    retries: stopped once its turn has started."""
    argv = build_argv(contract_agent(tier, "codex", 3), model)
    ran = run_cli(cli_bin, argv, workdir, tmp_path, until=r'"type":"turn\.started"', timeout=60)
    assert not PARSE_ERROR.search(ran.stderr), ran.stderr
    assert '"type":"thread.started"' in ran.stdout, ran
    assert parse_output("codex", ran.stdout).structured


# --- through gsd execute-phase -----------------------------------------------------

AGENT_FILE = """\
---
name: contract
description: "runs the real {runner} CLI"
tools: [read_file, glob, search_file_content, run_shell_command, write_file, replace]
timeout_mins: {minutes}
runner: {runner}
---
Contract test persona.
"""


@pytest.mark.parametrize(
    ("runner", "minutes", "said"),
    [
        pytest.param("claude", 2, "Not logged in", id="claude"),
        pytest.param("gemini", 2, "Please set an Auth method", id="gemini"),
        # codex retries the network until gsd's timeout ends it: its stderr says why (its
        # first try comes 2 to 4 s in on a quiet machine, later under load: slack)
        pytest.param("codex", None, "failed to connect", id="codex"),
    ],
)
def test_the_clis_own_message_reaches_the_error_log(
    cli_bin: Path,
    git_project,
    gsd,
    monkeypatch: pytest.MonkeyPatch,
    runner: str,
    minutes: float | None,
    said: str,
) -> None:
    root = git_project.root
    # a first-time user: no state folder yet; the sandbox would not let the CLI create
    # it (codex 0.169.0 then exits 1, "Permission denied (os error 13)"): gsd does
    state = Path.home() / f".{runner}"
    assert not state.exists()
    monkeypatch.setenv("PATH", cli_env(cli_bin, Path.home())["PATH"])
    for name in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    git_project.write(
        "agents/contract.md", AGENT_FILE.format(runner=runner, minutes=minutes or slack(9) / 60)
    )
    git_project.write(".planning/available_agents.md", "- **contract**: test\n")
    git_project.write(
        ".planning/config.json",
        json.dumps(
            {
                "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
                "voltagent": {"fallback_on_error": False},
            }
        ),
    )
    git_project.plan(
        "01-01",
        tasks=(
            '<task type="auto" specialist="contract">\n<name>Task 1</name>\n'
            "<files>src/x.py</files>\n<action>Write it.</action>\n"
            "<verify><automated>true</automated></verify>\n<done>Done.</done>\n</task>"
        ),
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plan")
    result = gsd("execute-phase", "1")
    assert result.code != 0
    records = [r.model_dump() for r in errorlog.read_all(root / ".planning")[0]]
    mine = [r for r in records if r["specialist"] == "contract"]
    assert mine and said in mine[-1]["details"], (records, result.err)
    assert "spawn-failed" not in mine[-1]["error_type"]
    assert state.is_dir() and state.stat().st_mode & 0o777 == 0o700


# --- codex's sandbox holds gsd's policy ---------------------------------------------

CODEX_PROBE = """\
import os, socket, subprocess, sys
def run(*argv):
    return subprocess.run(argv, capture_output=True).returncode == 0
def can_connect():
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=2)
    except ConnectionRefusedError:
        return True  # the network is there, nothing listens
    except OSError:
        return False
    return True
found = {
    "write worktree": run("touch", "made.txt"),
    "write $TMPDIR": run("touch", os.path.join(os.environ["TMPDIR"], "made")),
    "write .git": run("touch", ".git/made"),
    "git commit --amend": run("git", "commit", "-q", "--amend", "-m", "rewritten"),
    "git reset --hard": run("git", "reset", "-q", "--hard", "HEAD"),
    "git push": run("git", "push", "-q", sys.argv[1], "HEAD:refs/heads/pushed"),
    "rm -rf outside": run("rm", "-rf", sys.argv[2]),
    "network": can_connect(),
}
print(repr(found))
"""


@pytest.mark.parametrize("tier", ["read+write", "read-only", "read+shell"])
def test_codexs_sandbox_holds_the_policy_with_gsds_overrides(
    cli_bin: Path, workdir: Path, tmp_path: Path, tier: str
) -> None:
    """Without gsd's sandbox (`confined` False), codex's own sandbox holds the tier:
    `codex sandbox` runs a command under the sandbox `codex exec` gives the agent (the
    `--sandbox` of gsd's argv is the `sandbox_mode` setting). Even with a user's
    config.toml that turns the network on, gsd's `-c` keeps it off; .git stays
    read-only, so no commit, amend, reset or push; outside the worktree (/tmp too)
    nothing goes; the private $TMPDIR gsd gives every spawn stays writable."""
    import ast
    import sys

    git(
        workdir,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "first",
    )
    remote, outside = tmp_path / "remote.git", tmp_path / "outside"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    outside.mkdir()
    private = tmp_path / "private-tmp"
    private.mkdir()
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(
        "[sandbox_workspace_write]\nnetwork_access = true\n"
    )
    argv = build_argv(contract_agent(tier, "codex", None), None)
    sandbox = argv[argv.index("--sandbox") + 1]
    overrides = [a for i, a in enumerate(argv) if argv[i - 1] == "-c" or a == "-c"]
    ran = run_cli(
        cli_bin,
        [
            "codex",
            "sandbox",
            "-c",
            f'sandbox_mode="{sandbox}"',
            *overrides,
            "--",
            sys.executable,
            "-c",
            CODEX_PROBE,
            str(remote),
            str(outside),
        ],
        workdir,
        tmp_path,
        TMPDIR=str(private),
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    assert ran.code == 0, ran
    found = ast.literal_eval(ran.stdout.strip().splitlines()[-1])
    assert found == {
        "write worktree": tier == "read+write",
        "write $TMPDIR": tier == "read+write",
        "write .git": False,
        "git commit --amend": False,
        "git reset --hard": False,
        "git push": False,
        "rm -rf outside": False,
        "network": False,
    }, found
    assert outside.is_dir() and git(remote, "branch", "--list") == ""
