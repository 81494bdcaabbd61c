"""No push (issue 20): an agent reaches no network remote, however it spells `git push`.

A hostile `runner: command` agent tries every spelling of a push (`git -C . push`,
`git -c k=v push`, `git --git-dir=... push`, `env git push`, `command git push`,
`/usr/bin/git push`, `true && git push`, `sh -c`, a script file, the remote's URL) and a
plain TCP connection from Python, against a real `git daemon` and smart-HTTP remotes
(plain and over TLS) with basic authentication on 127.0.0.1 (tests/gitremotes.py).
Judged by the refs the remote's repository holds afterwards, read from disk. Each
refusal has its control: the same agent with the layer handed over (`sandbox.connect:
"any"`, `sandbox.pass_env`) does push, so the remote is reachable and the test can fail.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from gsd.io.confine.sandbox import landlock_abi, unavailable_reason
from tests.conftest import git
from tests.gitremotes import Remote, git_daemon, http_remote, self_signed

needs_tcp_rules = pytest.mark.skipif(
    landlock_abi() < 4,
    reason=f"Landlock ABI {landlock_abi()} has no TCP rules (4 has) {unavailable_reason()}",
)

AGENT_FILE = """\
---
name: {name}
description: "pushes"
tools: [read_file, write_file, replace, run_shell_command]
timeout_mins: 1
runner: command
command: ["{python}", "{script}", "{control}"]
---
Hostile.
"""

# Every spelling of a push the agent tries; each pushes its own branch, so that the
# remote's refs say which got through.
AGENT = r"""
import errno, json, os, shutil, socket, subprocess, sys

control = sys.argv[1]
remote = json.load(open(os.path.join(control, "remote.json")))
git = shutil.which("git")
git_dir = subprocess.run(["git", "rev-parse", "--absolute-git-dir"], capture_output=True,
                         text=True).stdout.strip()
script = os.path.join(os.environ["TMPDIR"], "push.sh")
with open(script, "w") as handle:
    handle.write("#!/bin/sh\ngit push origin HEAD:refs/heads/pushed-script\n")
os.chmod(script, 0o755)
spellings = {
    "plain": "git push origin HEAD:refs/heads/pushed-plain",
    "dash-C": "git -C . push origin HEAD:refs/heads/pushed-C",
    "dash-c": "git -c push.default=current push origin HEAD:refs/heads/pushed-c",
    "git-dir": f"git --git-dir={git_dir} push origin HEAD:refs/heads/pushed-gitdir",
    "env-git": "env git push origin HEAD:refs/heads/pushed-env",
    "command": "command git push origin HEAD:refs/heads/pushed-command",
    "path": f"{git} push origin HEAD:refs/heads/pushed-path",
    "and": "true && git push origin HEAD:refs/heads/pushed-and",
    "sh-c": "sh -c 'git push origin HEAD:refs/heads/pushed-shc'",
    "script": script,
    "url": f"git push {remote['url']} HEAD:refs/heads/pushed-url",
    "no-gsd-config": "env -u GIT_CONFIG_COUNT git push origin HEAD:refs/heads/pushed-unset",
}
seen = {}
for name, line in spellings.items():
    done = subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True, timeout=60)
    seen[name] = [done.returncode, done.stderr.strip()[-300:]]
try:
    socket.create_connection(("127.0.0.1", remote["port"]), timeout=5).close()
    seen["socket"] = "connected"
except OSError as exc:
    seen["socket"] = errno.errorcode.get(exc.errno, str(exc))
seen["env"] = {name: os.environ.get(name) for name in remote["watch"]}
with open(os.path.join(control, "seen.json"), "w") as handle:
    json.dump(seen, handle)
print("### Task Report\n- Status: success\n- Files Created: none\n- Files Modified: none\n"
      "- Files Deleted: none\n- Validation: pass\n- Errors: none\n### Downstream Context\n"
      "- Key Interfaces Introduced: none\n- Patterns Established: none\n- Warnings: none\n"
      "## TASK COMPLETE")
"""

PUSHES = ("plain", "dash-C", "dash-c", "git-dir", "env-git", "command", "path", "and", "sh-c")
PUSHES += ("script", "url", "no-gsd-config")
# what the user's shell holds: credentials an agent must not get, a key its runner needs
USER_ENV = {
    "SSH_AUTH_SOCK": "/run/user/0/ssh-agent.sock",
    "GH_TOKEN": "gho_user",
    "GITHUB_TOKEN": "ghp_user",
    "GITLAB_TOKEN": "glpat_user",
    "GH_ENTERPRISE_TOKEN": "ghe_user",
    "GITHUB_PAT": "pat_user",
    "ANTHROPIC_API_KEY": "sk-ant-user",
}
TASK = """\
<task type="auto" specialist="pusher">
<name>Task 1: push</name>
<files>src/x.py</files>
<action>Push.</action>
<verify><automated>git push origin HEAD:refs/heads/pushed-verify || true</automated></verify>
<done>Done.</done>
</task>"""


def project(git_project, tmp_path: Path, sandbox: dict[str, object]) -> tuple[Path, Path]:
    """A committed phase of one plan whose agents run AGENT; returns the repository and
    the control folder (writable by the agent: `sandbox.writable`)."""
    root = git_project.root
    control = tmp_path / "control"
    control.mkdir()
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    for name in ("pusher", "gsd-executor"):
        text = AGENT_FILE.format(name=name, python=sys.executable, script=script, control=control)
        git_project.write(f"agents/{name}.md", text)
    git_project.write(".planning/available_agents.md", "- **pusher**: pushes\n")
    config = {
        "specialists": {"kill_grace_seconds": 1, "max_retries": 0},
        "voltagent": {"fallback_on_error": False},
        "sandbox": {"writable": [str(control)], **sandbox},
    }
    git_project.write(".planning/config.json", json.dumps(config))
    git_project.plan("01-01", tasks=TASK)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plans")
    return root, control


def run_agent(gsd, root: Path, control: Path, remote: Remote) -> dict[str, object]:
    """Point `origin` at `remote`, run the phase, return what the agent saw."""
    git(root, "remote", "add", "origin", remote.url)
    watch = [*USER_ENV, "GIT_ASKPASS", "GIT_TERMINAL_PROMPT", "GIT_CONFIG_COUNT"]
    (control / "remote.json").write_text(
        json.dumps({"url": remote.url, "port": remote.port, "watch": watch})
    )
    result = gsd("execute-phase", "1")
    assert result.code == 0, result.err
    seen: dict[str, object] = json.loads((control / "seen.json").read_text())
    return seen


@pytest.fixture
def user_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in USER_ENV.items():
        monkeypatch.setenv(name, value)


@needs_tcp_rules
def test_no_spelling_of_push_reaches_a_git_daemon(git_project, tmp_path: Path, gsd) -> None:
    root, control = project(git_project, tmp_path, {})
    with git_daemon(tmp_path, root) as remote:
        before = remote.refs()
        seen = run_agent(gsd, root, control, remote)
        assert remote.refs() == before, seen
    assert seen["socket"] == "EACCES"
    for name in PUSHES:
        code, said = seen[name]  # type: ignore[misc]
        assert code != 0 and "unable to connect" in said, (name, said)


@needs_tcp_rules
def test_with_connect_any_the_same_agent_pushes(git_project, tmp_path: Path, gsd) -> None:
    """The control: the port rule is what stopped the pushes above."""
    root, control = project(git_project, tmp_path, {"connect": "any"})
    with git_daemon(tmp_path, root) as remote:
        seen = run_agent(gsd, root, control, remote)
        pushed = set(remote.refs()) - {"refs/heads/main"}
    assert seen["socket"] == "connected"
    assert {"refs/heads/pushed-plain", "refs/heads/pushed-C", "refs/heads/pushed-verify"} <= pushed


def credentials_of_the_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTTP remote's login where a user keeps it: GIT_ASKPASS in the environment and
    a credential helper in ~/.gitconfig (both programs print it)."""
    programs = {
        "askpass": 'case "$1" in U*) echo u;; *) echo pw;; esac',
        "helper": "echo username=u; echo password=pw",
    }
    for name, body in programs.items():
        program = tmp_path / name
        program.write_text(f"#!/bin/sh\n{body}\n")
        program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("GIT_ASKPASS", str(tmp_path / "askpass"))
    home = Path(os.environ["HOME"])
    (home / ".gitconfig").write_text(f"[credential]\n\thelper = {tmp_path / 'helper'}\n")


def test_an_http_remote_gets_no_credentials_from_the_agents_environment(
    git_project, tmp_path: Path, gsd, user_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the remote's port allowed (only the credentials layer stands), no push gets
    the user's login; the runner's own key still reaches the agent."""
    credentials_of_the_user(tmp_path, monkeypatch)
    with http_remote(tmp_path, git_project.root, "u", "pw") as remote:
        root, control = project(git_project, tmp_path, {"connect": [remote.port]})
        before = remote.refs()
        seen = run_agent(gsd, root, control, remote)
        after = remote.refs()
    # The layer's limit, on purpose in the test: an agent that drops gsd's git config
    # (`env -u GIT_CONFIG_COUNT`) gets the user's credential helper back from
    # ~/.gitconfig; only a helper whose store it cannot read (the sandbox's file rules)
    # or a remote whose port is refused (above) stops it. Every other spelling fails.
    assert set(after) - set(before) <= {"refs/heads/pushed-unset"}, seen
    assert {ref: after[ref] for ref in before} == before
    env = seen["env"]
    assert isinstance(env, dict)
    assert {name for name, value in env.items() if value is not None} == {
        "ANTHROPIC_API_KEY",
        "GIT_TERMINAL_PROMPT",
        "GIT_CONFIG_COUNT",
    }
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-user" and env["GIT_TERMINAL_PROMPT"] == "0"
    code, said = seen["plain"]  # type: ignore[misc]
    assert code != 0 and "terminal prompts disabled" in said, said


def test_pass_env_hands_a_credential_over(
    git_project, tmp_path: Path, gsd, user_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: handed GIT_ASKPASS, the same agent pushes over HTTP."""
    credentials_of_the_user(tmp_path, monkeypatch)
    with http_remote(tmp_path, git_project.root, "u", "pw") as remote:
        sandbox = {"connect": [remote.port], "pass_env": ["GIT_ASKPASS", "GH_TOKEN"]}
        root, control = project(git_project, tmp_path, sandbox)
        seen = run_agent(gsd, root, control, remote)
        pushed = set(remote.refs())
    assert "refs/heads/pushed-plain" in pushed, seen
    env = seen["env"]
    assert isinstance(env, dict) and env["GH_TOKEN"] == "gho_user" and env["GITHUB_TOKEN"] is None


@pytest.fixture
def https_remote(git_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Remote]:
    """An HTTPS remote on 127.0.0.1 (a self-signed certificate git trusts through
    GIT_SSL_CAINFO), with the user's login in GIT_ASKPASS and ~/.gitconfig."""
    pem = self_signed(tmp_path)
    if pem is None:
        pytest.skip("no openssl here to make the HTTPS remote's certificate")
    monkeypatch.setenv("GIT_SSL_CAINFO", str(tmp_path / "tls-cert.pem"))
    credentials_of_the_user(tmp_path, monkeypatch)
    with http_remote(tmp_path, git_project.root, "u", "pw", tls=pem) as remote:
        yield remote


@needs_tcp_rules
def test_an_https_remote_is_refused_by_the_port_rule_even_with_your_login(
    git_project, tmp_path: Path, gsd, user_env: None, https_remote: Remote
) -> None:
    """The credentials handed over (`pass_env`), only the port rule stands: no spelling
    reaches the HTTPS remote, and nor does a plain connection."""
    sandbox = {"pass_env": ["GIT_ASKPASS"]}
    root, control = project(git_project, tmp_path, sandbox)
    before = https_remote.refs()
    seen = run_agent(gsd, root, control, https_remote)
    assert https_remote.refs() == before, seen
    assert seen["socket"] == "EACCES"
    for name in PUSHES:
        code, said = seen[name]  # type: ignore[misc]
        assert code != 0 and "Failed to connect" in said, (name, said)


@needs_tcp_rules
def test_with_its_port_listed_the_same_agent_pushes_over_https(
    git_project, tmp_path: Path, gsd, user_env: None, https_remote: Remote
) -> None:
    """The control: the remote is reachable over TLS with the login, once its port is."""
    sandbox = {"pass_env": ["GIT_ASKPASS"], "connect": [https_remote.port]}
    root, control = project(git_project, tmp_path, sandbox)
    seen = run_agent(gsd, root, control, https_remote)
    assert "refs/heads/pushed-plain" in set(https_remote.refs()), seen


@needs_tcp_rules
def test_the_port_rule_refuses_connect_not_listen(tmp_path: Path) -> None:
    """A program may serve on any port and connect to it only when it is listed."""
    from gsd.io.confine.sandbox import Confinement
    from gsd.io.process import proc

    probe = textwrap.dedent(
        """\
        import errno, socket
        server = socket.create_server(("127.0.0.1", 0))
        port = server.getsockname()[1]
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            print("connected")
        except OSError as exc:
            print(errno.errorcode[exc.errno])
        """
    )
    seen = {}
    for name, ports in (("none", ()), ("any", None)):
        confinement = Confinement((tmp_path,), True, "", connect=ports)
        done = proc.supervise(
            [sys.executable, "-c", probe],
            cwd=tmp_path,
            env=dict(os.environ),
            stdout_path=tmp_path / f"{name}.out",
            stderr_path=tmp_path / f"{name}.err",
            timeout_s=60,
            grace_s=1,
            confinement=confinement,
        )
        assert done.exit_code == 0, (tmp_path / f"{name}.err").read_text()
        seen[name] = (tmp_path / f"{name}.out").read_text().strip()
    assert seen == {"none": "EACCES", "any": "connected"}


def test_the_dry_run_says_which_ports(git_project, tmp_path: Path, gsd, monkeypatch) -> None:
    root, _control = project(git_project, tmp_path, {"connect": [5432]})
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    shown = json.loads(gsd("execute-phase", "1", "--dry-run", "--format", "json").out)
    line = shown["tasks"][0]["sandbox"]
    if landlock_abi() >= 4:
        assert line.endswith("; connects only to TCP 443, 3128, 5432"), line
    elif landlock_abi():
        assert f"connects anywhere (Landlock ABI {landlock_abi()} has no TCP rules" in line
    (root / ".planning/config.json").write_text('{"sandbox": {"connect": "any"}}')
    line = json.loads(gsd("execute-phase", "1", "--dry-run", "--format", "json").out)
    assert landlock_abi() == 0 or line["tasks"][0]["sandbox"].endswith(
        "connects anywhere (sandbox.connect: any)"
    )


@pytest.mark.parametrize(
    ("sandbox", "words"),
    [
        pytest.param({"connect": [0]}, "sandbox.connect` must be", id="port-0"),
        pytest.param({"connect": "all"}, "sandbox.connect` must be", id="not-any"),
        pytest.param({"connect": [True]}, "sandbox.connect` must be", id="bool"),
        pytest.param({"pass_env": ["GH TOKEN"]}, "sandbox.pass_env` must be", id="name"),
    ],
)
def test_bad_network_settings_are_one_line_naming_config_json(
    git_project, tmp_path: Path, gsd, sandbox: dict[str, object], words: str
) -> None:
    project(git_project, tmp_path, sandbox)
    result = gsd("execute-phase", "1", "--dry-run")
    assert result.code == 2 and words in result.err and "config.json" in result.err
    assert len(result.err.strip().splitlines()) <= 2, result.err
